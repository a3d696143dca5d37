package dataset

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/pyjson"
)

// Server types, as the keys of a server instance's config.
const (
	agentsType    = "responses_api_agents"
	resourcesType = "resources_servers"
	modelsType    = "responses_api_models"
	envType       = "environment_servers"
)

// licenses are the values NeMo Gym's DatasetConfig.license accepts.
var licenses = []string{
	"Apache 2.0", "MIT", "Creative Commons Attribution 4.0 International",
	"Creative Commons Attribution-ShareAlike 4.0 International", "CC BY-SA 4.0", "CC BY-NC 3.0",
	"NVIDIA Internal Use Only, Do Not Distribute", "NVIDIA Evaluation Dataset License Agreement",
	"TBD", "GNU General Public License v3.0",
}

// instance is a server instance of the config.
type instance struct {
	name       string // its top-level key
	serverType string
	impl       string // the implementation (directory) name
	inner      *tree.Node
}

// Dataset is one entry of a server instance's `datasets:` list, checked as
// NeMo Gym's DatasetConfig / BenchmarkDatasetConfig check it.
type Dataset struct {
	Declarer   *instance
	Name, Type string
	JSONLPath  string
	NumRepeats int
	Benchmark  bool // a BenchmarkDatasetConfig

	PrepareScript string // "" for none
	PrepareDeps   []string
	PromptConfig  string // benchmark only; "" for none
	Agent         string // benchmark only: the agent pinned to run it; "" for none
	Taskset       string
	License       any // string or nil

	// The download source, and the legacy identifiers mirrored from it.
	source, gitlab, hf pyjson.Object
	where              string
}

// instances lists the config's server instances in config order.
func instances(resolved *tree.Node) []*instance {
	var out []*instance
	for _, e := range resolved.Entries {
		if e.Value == nil || e.Value.Kind != tree.Map {
			continue
		}
		for _, st := range []string{agentsType, resourcesType, modelsType, envType} {
			impls := e.Value.Get(st)
			if impls == nil || impls.Kind != tree.Map || impls.Len() == 0 || impls.Entries[0].Value.Kind != tree.Map {
				continue
			}
			out = append(out, &instance{name: e.Key, serverType: st, impl: impls.Entries[0].Key, inner: impls.Entries[0].Value})
			break
		}
	}
	return out
}

// declarations are the datasets of the agents and resources servers, in
// config order; a model server may not declare any.
func declarations(insts []*instance) ([]Dataset, error) {
	var out []Dataset
	var models []string
	for _, in := range insts {
		list := in.inner.Get("datasets")
		if list == nil || list.Kind == tree.Null {
			continue
		}
		where := in.name + "." + in.serverType + "." + in.impl + ".datasets"
		if list.Kind != tree.List {
			return nil, fmt.Errorf("%s must be a list, got %s%s", where, list.Kind, originOf(list))
		}
		if len(list.Items) == 0 {
			continue
		}
		switch in.serverType {
		case modelsType:
			models = append(models, in.name)
			continue
		case envType:
			continue
		}
		for i, item := range list.Items {
			d, err := parseDataset(in, item, fmt.Sprintf("%s[%d]", where, i))
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
	}
	if len(models) > 0 {
		slices.Sort(models)
		return nil, fmt.Errorf("Datasets cannot be declared on model servers: %s. Declare them on the resources server that owns their task schema (or on the agent for self-contained environments).", pyStrList(models))
	}
	return out, nil
}

func originOf(n *tree.Node) string {
	if n.Origin.File != "" && n.Origin.Line > 0 {
		return fmt.Sprintf(" (%s:%d)", n.Origin.File, n.Origin.Line)
	}
	return ""
}

func parseDataset(in *instance, item *tree.Node, at string) (Dataset, error) {
	d := Dataset{Declarer: in, NumRepeats: 1, where: at}
	if item.Kind != tree.Map {
		return d, fmt.Errorf("%s must be a mapping, got %s%s", at, item.Kind, originOf(item))
	}
	bad := func(key, msg string) error {
		v := item.Get(key)
		o := ""
		if v != nil {
			o = originOf(v)
		}
		return fmt.Errorf("%s.%s %s%s", at, key, msg, o)
	}
	str := func(key string, required bool) (string, bool, error) {
		v := item.Get(key)
		switch {
		case v == nil || v.Kind == tree.Null:
			if required {
				return "", false, fmt.Errorf("%s.%s is required%s", at, key, originOf(item))
			}
			return "", false, nil
		case v.Kind != tree.String:
			return "", false, bad(key, fmt.Sprintf("must be a string, got %s", v.Kind))
		}
		return v.Str, true, nil
	}
	var err error
	if d.Name, _, err = str("name", true); err != nil {
		return d, err
	}
	if d.Type, _, err = str("type", true); err != nil {
		return d, err
	}
	if d.JSONLPath, _, err = str("jsonl_fpath", true); err != nil {
		return d, err
	}
	switch d.Type {
	case "train", "validation", "example":
	case "benchmark":
		d.Benchmark = true
	default:
		return d, bad("type", fmt.Sprintf("is %q; it must be one of train, validation, example, benchmark", d.Type))
	}
	// NeMo Gym requires a benchmark's prepare_script; gym's built-in
	// benchmarks ship their rows and have none, so gym takes it as optional.
	if d.PrepareScript, _, err = str("prepare_script", false); err != nil {
		return d, err
	}
	var has bool
	if d.Taskset, has, err = str("taskset", false); err != nil {
		return d, err
	}
	if has && d.Taskset == "" {
		return d, bad("taskset", "must not be empty")
	}
	if v := item.Get("num_repeats"); v != nil && v.Kind != tree.Null {
		if v.Kind != tree.Int || v.Int < 1 {
			return d, bad("num_repeats", "must be an integer of at least 1")
		}
		d.NumRepeats = int(v.Int)
	}
	if v := item.Get("prepare_dependencies"); v != nil && v.Kind != tree.Null {
		if v.Kind != tree.List {
			return d, bad("prepare_dependencies", "must be a list of strings")
		}
		for _, it := range v.Items {
			if it.Kind != tree.String {
				return d, bad("prepare_dependencies", "must be a list of strings")
			}
			d.PrepareDeps = append(d.PrepareDeps, it.Str)
		}
	}
	if d.Benchmark {
		if d.PromptConfig, _, err = str("prompt_config", false); err != nil {
			return d, err
		}
		if d.Agent, _, err = str("agent", false); err != nil {
			return d, err
		}
		return d, nil
	}
	if lic, ok, err := str("license", false); err != nil {
		return d, err
	} else if ok {
		if !slices.Contains(licenses, lic) {
			return d, bad("license", fmt.Sprintf("is %q; it must be one of %s", lic, pyStrList(licenses)))
		}
		d.License = lic
	}
	if (d.Type == "train" || d.Type == "validation") && d.License == nil {
		return d, fmt.Errorf("%s: A license is required for %s%s", at, d.Name, originOf(item))
	}
	return d, d.parseSources(item, at)
}

// parseSources reads source, gitlab_identifier and huggingface_identifier
// and mirrors them into each other as NeMo Gym's normalize_dataset_source
// does.
func (d *Dataset) parseSources(item *tree.Node, at string) error {
	fields := func(key string, n *tree.Node, spec []string, optional map[string]bool) (pyjson.Object, error) {
		if n.Kind != tree.Map {
			return nil, fmt.Errorf("%s.%s must be a mapping%s", at, key, originOf(n))
		}
		var o pyjson.Object
		for _, f := range spec {
			v := n.Get(f)
			switch {
			case (v == nil || v.Kind == tree.Null) && optional[f]:
				o = append(o, pyjson.Member{Key: f, Value: nil})
			case v == nil || v.Kind == tree.Null:
				return nil, fmt.Errorf("%s.%s.%s is required%s", at, key, f, originOf(n))
			case v.Kind != tree.String:
				return nil, fmt.Errorf("%s.%s.%s must be a string, got %s%s", at, key, f, v.Kind, originOf(v))
			default:
				o = append(o, pyjson.Member{Key: f, Value: v.Str})
			}
		}
		return o, nil
	}
	gitlabFields := []string{"dataset_name", "version", "artifact_fpath"}
	hfFields := []string{"repo_id", "artifact_fpath"}
	hfOptional := map[string]bool{"artifact_fpath": true}
	var legacy []string
	for _, key := range []string{"gitlab_identifier", "huggingface_identifier"} {
		n := item.Get(key)
		if n == nil || n.Kind == tree.Null {
			continue
		}
		var err error
		if key == "gitlab_identifier" {
			d.gitlab, err = fields(key, n, gitlabFields, nil)
		} else {
			d.hf, err = fields(key, n, hfFields, hfOptional)
		}
		if err != nil {
			return err
		}
		legacy = append(legacy, key)
	}
	if n := item.Get("source"); n != nil && n.Kind != tree.Null {
		if len(legacy) > 0 {
			quoted := make([]string, len(legacy))
			for i, l := range legacy {
				quoted[i] = "'" + l + "'"
			}
			return fmt.Errorf("%s: Specify a dataset source once for '%s': set only one of ['source', %s]. Prefer the unified `source:` block.", at, d.Name, strings.Join(quoted, ", "))
		}
		t := n.Get("type")
		if n.Kind != tree.Map || t == nil || t.Kind != tree.String || (t.Str != "gitlab" && t.Str != "huggingface") {
			return fmt.Errorf("%s.source needs a type of gitlab or huggingface%s", at, originOf(n))
		}
		var err error
		if t.Str == "gitlab" {
			if d.gitlab, err = fields("source", n, gitlabFields, nil); err != nil {
				return err
			}
		} else if d.hf, err = fields("source", n, hfFields, hfOptional); err != nil {
			return err
		}
		legacy = []string{"source"}
	}
	if len(legacy) == 1 {
		if d.gitlab != nil {
			d.source = append(pyjson.Object{{Key: "type", Value: "gitlab"}}, d.gitlab...)
		} else {
			d.source = append(pyjson.Object{{Key: "type", Value: "huggingface"}}, d.hf...)
		}
	}
	return nil
}

// configDump is the dataset's model_dump(mode="json") without the routing
// fields (agent, taskset), and, when forSidecar, without a DatasetConfig's
// preparation fields: the head of NeMo Gym's metrics files.
func (d *Dataset) configDump(forSidecar bool) pyjson.Object {
	o := pyjson.Object{{Key: "name", Value: d.Name}, {Key: "type", Value: d.Type}}
	if d.Benchmark {
		var prompt, script any
		if d.PromptConfig != "" {
			prompt = pyPath(d.PromptConfig)
		}
		if d.PrepareScript != "" {
			script = pyPath(d.PrepareScript)
		}
		deps := make([]any, len(d.PrepareDeps))
		for i, s := range d.PrepareDeps {
			deps[i] = s
		}
		return append(o,
			pyjson.Member{Key: "jsonl_fpath", Value: pyPath(d.JSONLPath)},
			pyjson.Member{Key: "prepare_script", Value: script},
			pyjson.Member{Key: "prompt_config", Value: prompt},
			pyjson.Member{Key: "num_repeats", Value: d.NumRepeats},
			pyjson.Member{Key: "prepare_dependencies", Value: deps})
	}
	o = append(o, pyjson.Member{Key: "jsonl_fpath", Value: d.JSONLPath})
	if !forSidecar {
		if d.PrepareScript != "" {
			o = append(o, pyjson.Member{Key: "prepare_script", Value: pyPath(d.PrepareScript)})
		}
		if len(d.PrepareDeps) > 0 {
			o = append(o, pyjson.Member{Key: "prepare_dependencies", Value: d.PrepareDeps})
		}
	}
	nullable := func(o pyjson.Object) any {
		if o == nil {
			return nil
		}
		return o
	}
	return append(o,
		pyjson.Member{Key: "num_repeats", Value: d.NumRepeats},
		pyjson.Member{Key: "source", Value: nullable(d.source)},
		pyjson.Member{Key: "gitlab_identifier", Value: nullable(d.gitlab)},
		pyjson.Member{Key: "huggingface_identifier", Value: nullable(d.hf)},
		pyjson.Member{Key: "license", Value: d.License})
}

// pyPath is str(Path(p)): repeated and trailing slashes and "."
// components dropped, ".." kept.
func pyPath(p string) string {
	abs := strings.HasPrefix(p, "/")
	var parts []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			parts = append(parts, c)
		}
	}
	s := strings.Join(parts, "/")
	switch {
	case abs:
		return "/" + s
	case s == "":
		return "."
	}
	return s
}

// pyStrList is repr() of a list of strings.
func pyStrList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}
