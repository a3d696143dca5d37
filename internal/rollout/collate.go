package rollout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/openai"
)

// Dataset is one entry of a `datasets:` list, of an agent instance or of a
// resources server instance (NeMo Gym 0.7.0 declares them there: the
// resources server defines what the rows mean), with the agent that runs it.
type Dataset struct {
	Agent         string // the agent instance that runs it
	Name          string
	Type          string // train, validation, benchmark or example
	JSONLPath     string // as configured
	PromptConfig  string // as configured; "" for none
	PrepareScript string // as configured; "" for none
	NumRepeats    int
}

// AgentDatasets lists the datasets of a resolved config, in config order,
// each with the agent that runs it: the declaring agent, or for a dataset
// declared on a resources server, its `agent:` pin (which must name an
// agent referencing that server) or else the one agent that references the
// server, as NeMo Gym's resolve_dataset_agent decides.
func AgentDatasets(resolved *tree.Node) ([]Dataset, error) {
	var out []Dataset
	for _, e := range resolved.Entries {
		if e.Value.Kind != tree.Map {
			continue
		}
		serverType := ""
		for _, t := range []string{"responses_api_agents", "resources_servers"} {
			if impls := e.Value.Get(t); impls != nil && impls.Kind == tree.Map && impls.Len() > 0 {
				serverType = t
				break
			}
		}
		if serverType == "" {
			continue
		}
		impl := e.Value.Get(serverType).Entries[0]
		list := impl.Value.Get("datasets")
		if list == nil || list.Kind == tree.Null {
			continue
		}
		where := e.Key + "." + serverType + "." + impl.Key + ".datasets"
		if list.Kind != tree.List {
			return nil, fmt.Errorf("%s must be a list, got %s", where, list.Kind)
		}
		for i, item := range list.Items {
			at := fmt.Sprintf("%s[%d]", where, i)
			if item.Kind != tree.Map {
				return nil, fmt.Errorf("%s must be a mapping, got %s", at, item.Kind)
			}
			d := Dataset{Agent: e.Key, NumRepeats: 1}
			for _, f := range []struct {
				key      string
				dst      *string
				required bool
			}{{"name", &d.Name, true}, {"type", &d.Type, true}, {"jsonl_fpath", &d.JSONLPath, true}, {"prompt_config", &d.PromptConfig, false}, {"prepare_script", &d.PrepareScript, false}} {
				v := item.Get(f.key)
				switch {
				case v == nil || v.Kind == tree.Null:
					if f.required {
						return nil, fmt.Errorf("%s.%s is required", at, f.key)
					}
				case v.Kind == tree.String:
					*f.dst = v.Str
				default:
					return nil, fmt.Errorf("%s.%s must be a string, got %s", at, f.key, v.Kind)
				}
			}
			if v := item.Get("num_repeats"); v != nil && v.Kind != tree.Null {
				if v.Kind != tree.Int || v.Int < 1 {
					return nil, fmt.Errorf("%s.num_repeats must be an integer of at least 1, got %s", at, describeNode(v))
				}
				d.NumRepeats = int(v.Int)
			}
			if serverType == "resources_servers" {
				agent, err := datasetAgent(resolved, e.Key, item.Get("agent"), at)
				if err != nil {
					return nil, err
				}
				d.Agent = agent
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// datasetAgent is the agent that runs a dataset declared on the resources
// server instance rs: the pin, which must be an agent referencing rs, or
// the one agent referencing rs.
func datasetAgent(resolved *tree.Node, rs string, pin *tree.Node, at string) (string, error) {
	var refs []string
	for _, e := range resolved.Entries {
		impls := e.Value.Get("responses_api_agents")
		if e.Value.Kind != tree.Map || impls == nil || impls.Kind != tree.Map || impls.Len() == 0 {
			continue
		}
		ref := impls.Entries[0].Value.Get("resources_server")
		if name := ref.Get("name"); ref != nil && ref.Kind == tree.Map && name != nil && name.Kind == tree.String && name.Str == rs {
			refs = append(refs, e.Key)
		}
	}
	if pin != nil && pin.Kind != tree.Null {
		if pin.Kind != tree.String || !slices.Contains(refs, pin.Str) {
			return "", fmt.Errorf("%s.agent is %s, which is not an agent referencing resources server %s (agents that do: %s)", at, describeNode(pin), rs, listOrNone(refs))
		}
		return pin.Str, nil
	}
	switch len(refs) {
	case 1:
		return refs[0], nil
	case 0:
		return "", fmt.Errorf("%s: no agent references resources server %s, so nothing can run this dataset; add an agent whose resources_server names %s", at, rs, rs)
	}
	return "", fmt.Errorf("%s: agents %s all reference resources server %s; say which runs this dataset with agent: <name> in it", at, strings.Join(refs, ", "), rs)
}

func describeNode(n *tree.Node) string {
	switch n.Kind {
	case tree.Int:
		return fmt.Sprint(n.Int)
	case tree.String:
		return fmt.Sprintf("%q", n.Str)
	}
	return n.Kind.String()
}

// CollateOptions are the inputs of e2e data collation.
type CollateOptions struct {
	Datasets []Dataset
	Split    string
	// OutputPath is <stem>/preprocessed_datasets/<split>.jsonl.
	OutputPath string
	// Resolve finds a configured path over the search roots; "" when it
	// exists nowhere.
	Resolve func(path string) string
}

// CollatePath is where collation writes a split for a run's output.
func CollatePath(output, split string) string {
	return filepath.Join(Stem(output), "preprocessed_datasets", split+".jsonl")
}

// MissingDataError is a dataset whose JSONL file is nowhere to be found.
type MissingDataError struct {
	Dataset Dataset
}

func (e *MissingDataError) Error() string {
	d := e.Dataset
	msg := fmt.Sprintf("dataset %q of agent %s: %s not found in any search root", d.Name, d.Agent, d.JSONLPath)
	if d.Type == "benchmark" {
		return msg + "; prepare it first with `gym eval prepare` and the same --benchmark/--config flags"
	}
	return msg + "; gym does not download datasets (Hugging Face, GitLab): fetch the file and put it there, or point jsonl_fpath at it"
}

// Collate builds the rollout input of one split, as NeMo Gym's e2e data
// preparation does: every dataset of that type, in config order, each row
// repeated num_repeats times (aabbcc), a benchmark's prompt applied, and
// agent_ref naming the agent that owns the dataset.
func Collate(ctx context.Context, o CollateOptions) error {
	var chosen []Dataset
	var types []string
	for _, d := range o.Datasets {
		if d.Type == o.Split {
			chosen = append(chosen, d)
		} else if !slices.Contains(types, d.Type) {
			types = append(types, d.Type)
		}
	}
	if len(chosen) == 0 {
		return fmt.Errorf("no dataset of type %q in the config (its datasets have types %s); pick another --split or add a dataset", o.Split, listOrNone(types))
	}
	type source struct {
		d      Dataset
		path   string
		prompt *Prompt
	}
	var sources []source
	for _, d := range chosen {
		p := o.Resolve(d.JSONLPath)
		if p == "" {
			return &MissingDataError{Dataset: d}
		}
		s := source{d: d, path: p}
		if d.PromptConfig != "" && d.Type == "benchmark" {
			pp := o.Resolve(d.PromptConfig)
			if pp == "" {
				return fmt.Errorf("dataset %q of agent %s: prompt_config %s not found in any search root", d.Name, d.Agent, d.PromptConfig)
			}
			var err error
			if s.prompt, err = LoadPrompt(pp); err != nil {
				return err
			}
		}
		sources = append(sources, s)
	}
	if err := os.MkdirAll(filepath.Dir(o.OutputPath), 0o755); err != nil {
		return err
	}
	return jsonl.WriteFileAtomic(o.OutputPath, func(w *bufio.Writer) error {
		for _, s := range sources {
			ref := []byte(`{"type":"responses_api_agents","name":`)
			ref = append(openai.AppendJSONString(ref, s.d.Agent), '}')
			f, err := os.Open(s.path)
			if err != nil {
				return err
			}
			lr := newLineReader(f, s.path)
			err = collateFile(ctx, lr, s.prompt, ref, s.d.NumRepeats, w)
			f.Close()
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func collateFile(ctx context.Context, lr *lineReader, prompt *Prompt, ref []byte, repeats int, w io.Writer) error {
	var buf bytes.Buffer
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, err := lr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		raw := bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		if !jsonl.Valid(raw) || !gjson.ParseBytes(raw).IsObject() {
			return lr.errorf("Malformed JSON in '%s' at line %d: %s", lr.Path, lr.Line, jsonError(raw))
		}
		row := bytes.Clone(raw)
		if prompt != nil {
			parsed := gjson.ParseBytes(raw)
			if hasInput(parsed) {
				return lr.errorf("the row already has a non-empty %s.input, and the dataset's prompt_config (%s) would replace it", ParamsKey, prompt.Path)
			}
			if row, err = prompt.apply(row, parsed); err != nil {
				return lr.errorf("%v", err)
			}
		}
		row, err = sjson.SetRawBytes(row, AgentRefKey, ref)
		if err != nil {
			return err
		}
		buf.Reset()
		if err := json.Compact(&buf, row); err != nil {
			return err
		}
		buf.WriteByte('\n')
		for range repeats {
			if _, err := w.Write(buf.Bytes()); err != nil {
				return err
			}
		}
	}
}

func listOrNone(v []string) string {
	if len(v) == 0 {
		return "none"
	}
	return strings.Join(v, ", ")
}
