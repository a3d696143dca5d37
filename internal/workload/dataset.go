package workload

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"

	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/rollout"
)

// maxRowProblems is how many bad rows of one dataset are listed; the rest
// are counted.
const maxRowProblems = 20

// requestParams are the fields of NeMo Gym's
// NeMoGymResponseCreateParamsNonStreaming, which forbids any other.
var requestParams = []string{"background", "include", "input", "instructions", "max_output_tokens", "max_tool_calls",
	"metadata", "model", "parallel_tool_calls", "previous_response_id", "prompt", "reasoning", "service_tier", "store",
	"context_management", "conversation", "moderation", "prompt_cache_key", "prompt_cache_retention", "safety_identifier",
	"stream_options", "temperature", "text", "tool_choice", "tools", "top_logprobs", "top_p", "truncation", "user", "stream"}

func loadPrompt(path string) (*rollout.Prompt, error) { return rollout.LoadPrompt(path) }

// checkDataset is _validate_dataset: the prepare script and prompt config
// of a benchmark dataset, then every row, which must be a JSON object
// that makes a valid rollout input (after the prompt config, if any).
func (r *run) checkDataset(i int, d Dataset) (DatasetReport, bool) {
	m := r.m
	field := fmt.Sprintf("datasets.%d", i)
	at := func(sub, msg string) {
		r.problems = append(r.problems, Problem{File: m.Path, Line: r.datasetLine(i, sub), Field: field + "." + sub, Message: msg})
	}
	before := len(r.problems)
	var prompt *rollout.Prompt
	var promptPath string
	if d.Type == DatasetBenchmark {
		script := r.resolve(d.PrepareScript)
		if src, err := os.ReadFile(script); err != nil {
			at("prepare_script", "Dataset prepare script was not found: "+script)
		} else if !pythonDefines(src, "prepare", false) {
			at("prepare_script", fmt.Sprintf("Dataset prepare script '%s' must define synchronous prepare().", script))
		}
		if m.PromptSource == PromptTemplate {
			cfg, sub := d.PromptConfig, "prompt_config"
			if cfg == "" {
				cfg, sub = m.StandardPromptConfig, ""
			}
			if cfg == "" {
				at("prompt_config", fmt.Sprintf("Benchmark dataset '%s' has no prompt_config and the manifest has no standard_prompt_config.", d.Name))
			} else {
				promptPath = r.resolve(cfg)
				p, err := loadPrompt(promptPath)
				switch {
				case err != nil && sub == "":
					r.manifestProblem("standard_prompt_config", fmt.Sprintf("Could not materialize benchmark dataset '%s': %v", d.Name, err))
				case err != nil:
					at(sub, fmt.Sprintf("Could not materialize benchmark dataset '%s': %v", d.Name, err))
				default:
					prompt = p
				}
			}
		}
	}
	path := r.resolve(d.JSONLPath)
	// Rows meant for a prompt config that did not load cannot be checked
	// as rollout inputs; only that they are JSON objects.
	promptFailed := d.Type == DatasetBenchmark && m.PromptSource == PromptTemplate && prompt == nil
	rows, ok := r.checkRows(d, path, prompt, promptFailed, func(msg string) { at("jsonl_fpath", msg) })
	if !ok || len(r.problems) > before {
		return DatasetReport{}, false
	}
	rep := DatasetReport{Name: d.Name, Type: d.Type, Path: path, Rows: rows}
	if promptPath != "" {
		rep.PromptConfig = &promptPath
	}
	return rep, true
}

// datasetLine is where datasets[i].sub is written (the dataset's own
// line when sub is absent).
func (r *run) datasetLine(i int, sub string) int {
	if r.m.doc != nil {
		if ds := r.m.doc.Get("datasets"); ds != nil && ds.Kind == tree.List && i < len(ds.Items) {
			item := ds.Items[i]
			if n := item.Get(sub); n != nil && n.Origin.Line > 0 {
				return n.Origin.Line
			}
			return item.Origin.Line
		}
	}
	return r.m.Line("datasets")
}

// checkRows reads a dataset file and checks each row; a problem with a
// row names the data file and the row's line. It returns the row count and
// whether the file could be read at all.
func (r *run) checkRows(d Dataset, path string, prompt *rollout.Prompt, objectsOnly bool, fileProblem func(string)) (int, bool) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		fileProblem("Dataset file was not found: " + path)
		return 0, false
	}
	if err != nil {
		fileProblem(fmt.Sprintf("Could not read dataset '%s': %v", path, err))
		return 0, false
	}
	defer f.Close()
	rd := jsonl.NewReader(bufio.NewReader(f), path)
	rows, bad := 0, 0
	for {
		line, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fileProblem(fmt.Sprintf("Could not read dataset '%s': %v", path, err))
			return rows, false
		}
		rows++
		// A dataset may hold millions of rows: an interrupt must not wait.
		if rows%1024 == 0 && r.ctx.Err() != nil {
			return rows, false
		}
		if msg := checkRow(d, line, prompt, r.m.PromptSource, objectsOnly); msg != "" {
			bad++
			if bad <= maxRowProblems {
				r.problems = append(r.problems, Problem{File: path, Line: rd.Line, Message: msg})
			}
		}
	}
	if bad > maxRowProblems {
		r.problems = append(r.problems, Problem{File: path, Message: fmt.Sprintf("%d more rows of dataset '%s' are not valid rollout inputs", bad-maxRowProblems, d.Name)})
	}
	if rows == 0 {
		fileProblem(fmt.Sprintf("Dataset '%s' is empty.", path))
		return 0, false
	}
	return rows, true
}

// checkRow says what is wrong with one row, "" if nothing.
func checkRow(d Dataset, line []byte, prompt *rollout.Prompt, promptSource string, objectsOnly bool) string {
	var row map[string]json.RawMessage
	if err := json.Unmarshal(line, &row); err != nil || row == nil {
		var v any
		if json.Unmarshal(line, &v) == nil {
			return "a dataset row must contain a JSON object, got " + jsonKind(v)
		}
		return fmt.Sprintf("Malformed JSON: %v", err)
	}
	if objectsOnly {
		return ""
	}
	if promptSource == PromptPrepared && d.Type == DatasetBenchmark {
		var params map[string]json.RawMessage
		if json.Unmarshal(row["responses_create_params"], &params) != nil || emptyJSON(params["input"]) {
			return fmt.Sprintf("Benchmark dataset '%s' row declares prepared prompts but has no responses_create_params.input.", d.Name)
		}
	}
	if prompt != nil {
		applied, err := prompt.Apply(line)
		if err != nil {
			return fmt.Sprintf("Could not materialize benchmark dataset '%s': %v", d.Name, err)
		}
		row = nil
		if err := json.Unmarshal(applied, &row); err != nil {
			return fmt.Sprintf("Could not materialize benchmark dataset '%s': %v", d.Name, err)
		}
	}
	if loc, msg := runRequestProblem(row); msg != "" {
		return fmt.Sprintf("Dataset '%s' row is not a valid rollout input at %s: %s", d.Name, loc, msg)
	}
	return ""
}

// runRequestProblem checks a row as NeMo Gym's BaseRunRequest does, down
// to the top-level fields of responses_create_params (the items of its
// input and tools are not checked here).
func runRequestProblem(row map[string]json.RawMessage) (loc, msg string) {
	raw, ok := row["responses_create_params"]
	if !ok {
		return "responses_create_params", "Field required"
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(raw, &params); err != nil || params == nil {
		return "responses_create_params", "Input should be a valid dictionary or object to extract fields from"
	}
	var extra []string
	for k := range params {
		if !slices.Contains(requestParams, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return "responses_create_params." + extra[0], "Extra inputs are not permitted"
	}
	in, ok := params["input"]
	if !ok {
		return "responses_create_params.input", "Field required"
	}
	var v any
	if json.Unmarshal(in, &v) != nil {
		return "responses_create_params.input", "Input should be a valid string"
	}
	switch v.(type) {
	case string, []any:
		return "", ""
	}
	return "responses_create_params.input", "Input should be a string or a list of input items, got " + jsonKind(v)
}

func emptyJSON(raw json.RawMessage) bool {
	var v any
	if raw == nil || json.Unmarshal(raw, &v) != nil {
		return true
	}
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	case bool:
		return !v
	case float64:
		return v == 0
	}
	return false
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// DumpManifest writes a manifest as NeMo Gym's dump_manifest does: every
// field in schema order, None left out, config_path only when it is not
// config.yaml, prompt_source only when it is not template, and
// resources_server always (null, and last, when there is none).
func DumpManifest(m *Manifest) func(*bufio.Writer) error {
	return func(w *bufio.Writer) error {
		_, err := w.Write(pyyaml.Dump(manifestTree(m), pyyaml.Options{}))
		return err
	}
}

func manifestTree(m *Manifest) *tree.Node {
	n := tree.NewMap()
	str := func(key, v string) {
		if v != "" {
			n.Set(key, tree.NewString(v))
		}
	}
	str("name", m.Name)
	str("version", m.Version)
	n.Set("experimental", tree.NewBool(m.Experimental))
	str("kind", m.Kind)
	str("integration_profile", m.IntegrationProfile)
	str("domain", m.Domain)
	str("description", m.Description)
	str("modality", m.Modality)
	str("licensing", m.Licensing)
	authors := tree.NewList()
	for _, a := range m.Authors {
		authors.Items = append(authors.Items, tree.NewString(a))
	}
	n.Set("authors", authors)
	reward := tree.NewMap()
	reward.Set("range", tree.NewList(tree.NewFloat(m.Reward.Low), tree.NewFloat(m.Reward.High)))
	reward.Set("higher_is_better", tree.NewBool(m.Reward.HigherIsBetter))
	n.Set("reward", reward)
	str("determinism", m.Determinism)
	if m.ConfigPath != "config.yaml" {
		str("config_path", m.ConfigPath)
	}
	str("dataset_owner", m.DatasetOwner)
	str("resources_server", m.ResourcesServer)
	str("agent_server", m.AgentServer)
	datasets := tree.NewList()
	for _, d := range m.Datasets {
		dn := tree.NewMap()
		dn.Set("name", tree.NewString(d.Name))
		dn.Set("type", tree.NewString(d.Type))
		dn.Set("jsonl_fpath", tree.NewString(d.JSONLPath))
		if d.PrepareScript != "" {
			dn.Set("prepare_script", tree.NewString(d.PrepareScript))
		}
		if d.PromptConfig != "" {
			dn.Set("prompt_config", tree.NewString(d.PromptConfig))
		}
		dn.Set("num_repeats", tree.NewInt(int64(d.NumRepeats)))
		datasets.Items = append(datasets.Items, dn)
	}
	n.Set("datasets", datasets)
	str("model_server", m.ModelServer)
	str("rollout_driver", m.RolloutDriver)
	str("grading_mode", m.GradingMode)
	str("session_model", m.SessionModel)
	str("state", m.State)
	str("sandbox", m.Sandbox)
	str("canonical_split", m.CanonicalSplit)
	if m.PromptSource != PromptTemplate {
		str("prompt_source", m.PromptSource)
	}
	str("standard_prompt_config", m.StandardPromptConfig)
	if a := m.AdoptedFrom; a != nil {
		an := tree.NewMap()
		an.Set("source", tree.NewString(a.Source))
		an.Set("ref", tree.NewString(a.Ref))
		an.Set("reconciled", tree.NewString(a.Reconciled))
		n.Set("adopted_from", an)
	}
	str("lifecycle", m.Lifecycle)
	if m.ResourcesServer == "" {
		// Required even when null; NeMo Gym adds it back last.
		n.Set("resources_server", tree.NewNull())
	}
	return n
}
