package workload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
)

const baseManifest = `name: demo
version: 0.1.0
kind: environment
integration_profile: custom-gym-verifier
domain: other
description: A demo.
modality: text
licensing: Apache-2.0
authors:
- someone
reward:
  range: [0.0, 1.0]
  higher_is_better: true
resources_server: demo
agent_server: simple_agent
model_server: policy_model
datasets:
- name: example
  type: example
  jsonl_fpath: resources_servers/demo/data/example.jsonl
`

const baseConfig = `demo_resources:
  resources_servers:
    demo:
      entrypoint: app.py
      domain: other
demo_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server:
        type: resources_servers
        name: demo_resources
      model_server:
        type: responses_api_models
        name: policy_model
      datasets:
      - name: example
        type: example
        jsonl_fpath: resources_servers/demo/data/example.jsonl
`

const baseRows = `{"responses_create_params": {"input": "hi"}}
{"responses_create_params": {"input": [{"role": "user", "content": "hi"}]}, "extra": 1}
`

const noModelSeed = `policy_base_url: ""
policy_api_key: ""
policy_model_name: ""
policy_model: {responses_api_models: {dummy_model: {entrypoint: app.py}}}
`

// workspace is a component root holding one workload: path → content.
type workspace map[string]string

func baseWorkspace() workspace {
	return workspace{
		"environments/demo/manifest.yaml":           baseManifest,
		"environments/demo/config.yaml":             baseConfig,
		"resources_servers/demo/data/example.jsonl": baseRows,
	}
}

func (w workspace) write(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for rel, content := range w {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func options(t *testing.T, root, manifest string) Options {
	t.Helper()
	seed, err := pyyaml.Load([]byte(noModelSeed), "<seed>")
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Manifest: filepath.Join(root, manifest),
		Env:      config.Env{LookupEnv: func(string) (string, bool) { return "", false }, Cwd: root, Home: root},
		Cwd:      root,
		Seed:     seed,
	}
}

// wantProblem is a problem a case must report: the file (relative to the
// workspace), line, field, and a part of the message.
type wantProblem struct {
	file  string
	line  int
	field string
	msg   string
}

// checkProblems checks that err is an *InvalidError reporting exactly the
// problems wanted, files relative to root.
func checkProblems(t *testing.T, root string, err error, wanted []wantProblem) {
	t.Helper()
	var invalid *InvalidError
	if !errors.As(err, &invalid) {
		t.Fatalf("err = %v, want an *InvalidError", err)
	}
	if len(invalid.Problems) != len(wanted) {
		t.Errorf("got %d problems, want %d:\n%v", len(invalid.Problems), len(wanted), err)
	}
	for _, want := range wanted {
		found := false
		for _, p := range invalid.Problems {
			rel, _ := filepath.Rel(root, p.File)
			if rel == want.file && p.Line == want.line && p.Field == want.field && strings.Contains(p.Message, want.msg) {
				found = true
			}
		}
		if !found {
			t.Errorf("no problem %s:%d %s %q in:\n%v", want.file, want.line, want.field, want.msg, err)
		}
	}
}

func edit(path, old, new string) func(workspace) {
	return func(w workspace) {
		if !strings.Contains(w[path], old) {
			panic("test edit: " + path + " has no " + old)
		}
		w[path] = strings.Replace(w[path], old, new, 1)
	}
}

func manifestEdit(old, new string) func(workspace) {
	return edit("environments/demo/manifest.yaml", old, new)
}

const mf = "environments/demo/manifest.yaml"

func TestValidateRules(t *testing.T) {
	cases := []struct {
		name  string
		edits []func(workspace)
		want  []wantProblem
	}{
		{name: "valid"},
		{"missing name", []func(workspace){manifestEdit("name: demo\n", "")}, []wantProblem{{mf, 1, "name", "Field required"}}},
		{"version read as a float", []func(workspace){manifestEdit("version: 0.1.0", "version: 1.0")}, []wantProblem{{mf, 2, "version", "Input should be a valid string"}}},
		{"unknown kind", []func(workspace){manifestEdit("kind: environment", "kind: thing")}, []wantProblem{{mf, 3, "kind", "Input should be 'environment' or 'benchmark'"}}},
		{"kind against its tree", []func(workspace){manifestEdit("kind: environment", "kind: benchmark")}, []wantProblem{
			{mf, 3, "kind", "does not match its location under 'environments/'"},
			{mf, 1, "manifest", "manifest requires: canonical_split, standard_prompt_config"},
			{mf, 1, "manifest", "a benchmark manifest requires a benchmark dataset"},
		}},
		{"unknown profile", []func(workspace){manifestEdit("integration_profile: custom-gym-verifier", "integration_profile: mine")}, []wantProblem{{mf, 4, "integration_profile", "Input should be 'custom-gym-verifier'"}}},
		{"unknown domain", []func(workspace){manifestEdit("domain: other", "domain: cooking")}, []wantProblem{{mf, 5, "domain", "Input should be"}}},
		{"empty description", []func(workspace){manifestEdit("description: A demo.", `description: "  "`)}, []wantProblem{{mf, 6, "description", "String should have at least 1 character"}}},
		{"unknown license", []func(workspace){manifestEdit("licensing: Apache-2.0", "licensing: Nope-1.0")}, []wantProblem{{mf, 8, "licensing", "Unknown license: 'nope-1.0'"}}},
		{"bad license expression", []func(workspace){manifestEdit("licensing: Apache-2.0", "licensing: MIT AND")}, []wantProblem{{mf, 8, "licensing", "Invalid license expression: 'MIT AND'"}}},
		{"no authors", []func(workspace){manifestEdit("authors:\n- someone", "authors: []")}, []wantProblem{{mf, 9, "authors", "at least 1 item"}}},
		{"duplicate authors", []func(workspace){manifestEdit("- someone", "- someone\n- someone")}, []wantProblem{{mf, 11, "authors.1", "authors must be unique"}}},
		{"reward range reversed", []func(workspace){manifestEdit("range: [0.0, 1.0]", "range: [1.0, 0.0]")}, []wantProblem{{mf, 12, "reward.range", "ordered with lower <= upper"}}},
		{"reward range of three", []func(workspace){manifestEdit("range: [0.0, 1.0]", "range: [0.0, 0.5, 1.0]")}, []wantProblem{{mf, 12, "reward.range", "exactly 2 items"}}},
		{"reward range not finite", []func(workspace){manifestEdit("range: [0.0, 1.0]", "range: [0.0, .inf]")}, []wantProblem{{mf, 12, "reward.range.1", "finite number"}}},
		{"reward without direction", []func(workspace){manifestEdit("  higher_is_better: true\n", "")}, []wantProblem{{mf, 12, "reward.higher_is_better", "Field required"}}},
		{"extra field", []func(workspace){manifestEdit("modality: text", "modality: text\ncolour: red")}, []wantProblem{{mf, 8, "colour", "Extra inputs are not permitted"}}},
		{"resources_server left out", []func(workspace){manifestEdit("resources_server: demo\n", "")}, []wantProblem{{mf, 1, "resources_server", "Field required"}}},
		{"benchmark dataset without prepare_script", []func(workspace){manifestEdit("  type: example", "  type: benchmark")}, []wantProblem{{mf, 18, "datasets.0", "a benchmark dataset requires: prepare_script"}}},
		{"num_repeats below one", []func(workspace){manifestEdit("  type: example", "  type: example\n  num_repeats: 0")}, []wantProblem{{mf, 20, "datasets.0.num_repeats", "greater than or equal to 1"}}},
		{"dataset without a name", []func(workspace){manifestEdit("- name: example\n  type: example", "- type: example")}, []wantProblem{{mf, 18, "datasets.0.name", "Field required"}}},
		{"rollout driver not a callable", []func(workspace){manifestEdit("model_server: policy_model", "model_server: policy_model\nrollout_driver: not callable")}, []wantProblem{{mf, 17, "rollout_driver", "String should match pattern"}}},
		{"rollout driver on the wrong profile", []func(workspace){manifestEdit("model_server: policy_model", "model_server: policy_model\nrollout_driver: pkg.mod:run")}, []wantProblem{
			{mf, 1, "manifest", "rollout_driver is only valid for the external-rollout-driver profile"},
			{mf, 17, "rollout_driver", "stale: manifest=\"pkg.mod:run\", config=null"},
			{mf, 17, "rollout_driver", "Rollout driver module was not found"},
		}},
		{"name against its path", []func(workspace){manifestEdit("name: demo", "name: other")}, []wantProblem{{mf, 1, "name", "Manifest identity name 'other' does not match its catalog path 'demo'."}}},
		{"stale agent_server", []func(workspace){manifestEdit("agent_server: simple_agent", "agent_server: other_agent")}, []wantProblem{{mf, 15, "agent_server", `manifest="other_agent", config="simple_agent"`}}},
		{"stale datasets", []func(workspace){manifestEdit("  type: example", "  type: example\n  num_repeats: 2")}, []wantProblem{{mf, 18, "datasets", `"num_repeats": 2`}}},
		{"config not found", []func(workspace){manifestEdit("modality: text", "modality: text\nconfig_path: nope.yaml")}, []wantProblem{{mf, 8, "config_path", "Gym config was not found"}}},
		{"absolute config_path", []func(workspace){manifestEdit("modality: text", "modality: text\nconfig_path: /etc/x.yaml")}, []wantProblem{{mf, 8, "config_path", "config_path must be relative."}}},
		{"config_path escaping the catalog", []func(workspace){manifestEdit("modality: text", "modality: text\nconfig_path: ../../x.yaml")}, []wantProblem{{mf, 8, "config_path", "escapes catalog tree"}}},
		{"config names a server it lacks", []func(workspace){edit("environments/demo/config.yaml", "name: demo_resources", "name: demo_resourcez")}, []wantProblem{{"environments/demo/config.yaml", 11, "", "ServerRefNotFoundError"}}},
		{"two resources servers with datasets", []func(workspace){edit("environments/demo/config.yaml", "      domain: other\n", "      domain: other\n      datasets:\n      - {name: a, type: example, jsonl_fpath: a.jsonl}\nother_resources:\n  resources_servers:\n    demo:\n      entrypoint: app.py\n      domain: other\n      datasets:\n      - {name: b, type: example, jsonl_fpath: b.jsonl}\n")}, []wantProblem{{"environments/demo/config.yaml", 14, "", "exactly one dataset-bearing instance; found resources servers: demo_resources, other_resources"}}},
		{"no agent with datasets", []func(workspace){edit("environments/demo/config.yaml", "      datasets:\n      - name: example\n        type: example\n        jsonl_fpath: resources_servers/demo/data/example.jsonl\n", "")}, []wantProblem{
			{"environments/demo/config.yaml", 0, "", "exactly one dataset-bearing agent instance; found: none."},
		}},
		{"dataset file missing", []func(workspace){func(w workspace) { delete(w, "resources_servers/demo/data/example.jsonl") }}, []wantProblem{{mf, 20, "datasets.0.jsonl_fpath", "Dataset file was not found"}}},
		{"malformed row", []func(workspace){edit("resources_servers/demo/data/example.jsonl", `, "extra": 1}`, `, "extra": }`)}, []wantProblem{{"resources_servers/demo/data/example.jsonl", 2, "", "Malformed JSON"}}},
		{"blank row", []func(workspace){edit("resources_servers/demo/data/example.jsonl", "\n{", "\n\n{")}, []wantProblem{{"resources_servers/demo/data/example.jsonl", 2, "", "Malformed JSON"}}},
		{"row not an object", []func(workspace){edit("resources_servers/demo/data/example.jsonl", `{"responses_create_params": {"input": "hi"}}`, `[1]`)}, []wantProblem{{"resources_servers/demo/data/example.jsonl", 1, "", "must contain a JSON object"}}},
		{"row without params", []func(workspace){edit("resources_servers/demo/data/example.jsonl", `{"responses_create_params": {"input": "hi"}}`, `{"x": 1}`)}, []wantProblem{{"resources_servers/demo/data/example.jsonl", 1, "", "at responses_create_params: Field required"}}},
		{"row with an unknown param", []func(workspace){edit("resources_servers/demo/data/example.jsonl", `{"input": "hi"}`, `{"input": "hi", "colour": 1}`)}, []wantProblem{{"resources_servers/demo/data/example.jsonl", 1, "", "at responses_create_params.colour: Extra inputs are not permitted"}}},
		{"row without input", []func(workspace){edit("resources_servers/demo/data/example.jsonl", `{"input": "hi"}`, `{"temperature": 1}`)}, []wantProblem{{"resources_servers/demo/data/example.jsonl", 1, "", "at responses_create_params.input: Field required"}}},
		{"empty dataset", []func(workspace){func(w workspace) { w["resources_servers/demo/data/example.jsonl"] = "" }}, []wantProblem{{mf, 20, "datasets.0.jsonl_fpath", "is empty"}}},
		{"yaml syntax error", []func(workspace){manifestEdit("modality: text", "modality: [text")}, []wantProblem{{mf, 7, "", "Malformed YAML"}}},
		{"not a mapping", []func(workspace){func(w workspace) { w[mf] = "- a\n- b\n" }}, []wantProblem{{mf, 1, "", "expected a YAML mapping"}}},
		{"several problems at once", []func(workspace){manifestEdit("version: 0.1.0", "version: 1.0"), manifestEdit("licensing: Apache-2.0", "licensing: Nope"), func(w workspace) { delete(w, "resources_servers/demo/data/example.jsonl") }}, []wantProblem{
			{mf, 2, "version", "valid string"}, {mf, 8, "licensing", "Unknown license"}, {mf, 20, "datasets.0.jsonl_fpath", "not found"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := baseWorkspace()
			for _, e := range tc.edits {
				e(w)
			}
			root := w.write(t)
			report, err := Validate(context.Background(), options(t, root, mf))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if report.Datasets[0].Rows != 2 || report.InferredProfile != ProfileVerifier || len(report.Warnings) != 0 {
					t.Fatalf("report = %+v", report)
				}
				return
			}
			checkProblems(t, root, err, tc.want)
		})
	}
}

func TestValidateSync(t *testing.T) {
	w := baseWorkspace()
	manifestEdit("agent_server: simple_agent", "agent_server: other_agent")(w)
	manifestEdit("  type: example", "  type: example\n  num_repeats: 3")(w)
	root := w.write(t)
	o := options(t, root, mf)
	o.Sync = true
	report, err := Validate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(report.SynchronizedFields, ",") != "agent_server,datasets" {
		t.Errorf("synchronized %q", report.SynchronizedFields)
	}
	data, _ := os.ReadFile(filepath.Join(root, mf))
	for _, want := range []string{"agent_server: simple_agent\n", "  num_repeats: 1\n", "experimental: true\n", "determinism: unknown\n", "lifecycle: active\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("rewritten manifest lacks %q:\n%s", want, data)
		}
	}
	o.Sync = false
	if report, err := Validate(context.Background(), o); err != nil || len(report.SynchronizedFields) != 0 {
		t.Fatalf("after sync: %v %+v", err, report)
	}
}

func TestValidateProfileWarning(t *testing.T) {
	w := baseWorkspace()
	manifestEdit("integration_profile: custom-gym-verifier", "integration_profile: custom-gym-agent-loop")(w)
	report, err := Validate(context.Background(), options(t, w.write(t), mf))
	if err != nil {
		t.Fatal(err)
	}
	want := "Declared integration_profile 'custom-gym-agent-loop' does not match inferred profile 'custom-gym-verifier' (selected agent implementation is simple_agent)."
	if len(report.Warnings) != 1 || report.Warnings[0] != want {
		t.Errorf("warnings %q", report.Warnings)
	}
}

const benchManifest = `name: bench
version: 1.0.0
kind: benchmark
integration_profile: custom-gym-verifier
domain: math
description: A benchmark.
modality: text
licensing: MIT
authors: [someone]
reward: {range: [0, 1], higher_is_better: true}
resources_server: demo
agent_server: simple_agent
model_server: policy_model
canonical_split: benchmark
standard_prompt_config: benchmarks/bench/prompt.yaml
datasets:
- name: bench
  type: benchmark
  jsonl_fpath: benchmarks/bench/data/bench.jsonl
  prepare_script: benchmarks/bench/prepare.py
  prompt_config: benchmarks/bench/prompt.yaml
`

const benchConfig = `demo_resources:
  resources_servers:
    demo:
      entrypoint: app.py
      domain: math
bench_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: demo_resources}
      model_server: {type: responses_api_models, name: policy_model}
      datasets:
      - name: bench
        type: benchmark
        jsonl_fpath: benchmarks/bench/data/bench.jsonl
        prepare_script: benchmarks/bench/prepare.py
        prompt_config: benchmarks/bench/prompt.yaml
`

const bm = "benchmarks/bench/manifest.yaml"

func benchWorkspace() workspace {
	return workspace{
		bm:                                  benchManifest,
		"benchmarks/bench/config.yaml":      benchConfig,
		"benchmarks/bench/prepare.py":       "import json\n\n\ndef prepare():\n    return None\n",
		"benchmarks/bench/prompt.yaml":      "system: Be brief.\nuser: \"{question}\"\n",
		"benchmarks/bench/data/bench.jsonl": `{"question": "1+1?", "expected_answer": "2"}` + "\n",
	}
}

func TestValidateBenchmark(t *testing.T) {
	cases := []struct {
		name  string
		edits []func(workspace)
		want  []wantProblem
	}{
		{name: "valid"},
		{"prepare script without prepare()", []func(workspace){edit("benchmarks/bench/prepare.py", "def prepare():", "async def prepare():")}, []wantProblem{{bm, 20, "datasets.0.prepare_script", "must define synchronous prepare()"}}},
		{"prepare script missing", []func(workspace){func(w workspace) { delete(w, "benchmarks/bench/prepare.py") }}, []wantProblem{{bm, 20, "datasets.0.prepare_script", "Dataset prepare script was not found"}}},
		{"prompt config missing", []func(workspace){func(w workspace) { delete(w, "benchmarks/bench/prompt.yaml") }}, []wantProblem{{bm, 21, "datasets.0.prompt_config", "Could not materialize benchmark dataset 'bench'"}}},
		{"a row lacking a template field", []func(workspace){edit("benchmarks/bench/data/bench.jsonl", `"question"`, `"query"`)}, []wantProblem{{"benchmarks/bench/data/bench.jsonl", 1, "", "references field 'question'"}}},
		{"a row with its own input", []func(workspace){edit("benchmarks/bench/data/bench.jsonl", `{"question"`, `{"responses_create_params": {"input": "x"}, "question"`)}, []wantProblem{{"benchmarks/bench/data/bench.jsonl", 1, "", "mutually exclusive"}}},
		{"dataset prompt against the standard one", []func(workspace){edit(bm, "  prompt_config: benchmarks/bench/prompt.yaml", "  prompt_config: benchmarks/bench/other.yaml"), edit("benchmarks/bench/config.yaml", "prompt_config: benchmarks/bench/prompt.yaml", "prompt_config: benchmarks/bench/other.yaml"), func(w workspace) { w["benchmarks/bench/other.yaml"] = "user: \"{question}\"\n" }},
			[]wantProblem{{bm, 17, "datasets", "Benchmark dataset prompt_config must match standard_prompt_config for: bench"}}},
		{"prepared prompts need inputs", []func(workspace){edit(bm, "standard_prompt_config: benchmarks/bench/prompt.yaml\n", "prompt_source: prepared\n"), edit(bm, "  prompt_config: benchmarks/bench/prompt.yaml\n", ""), edit("benchmarks/bench/config.yaml", "        prompt_config: benchmarks/bench/prompt.yaml\n", "")},
			[]wantProblem{{"benchmarks/bench/data/bench.jsonl", 1, "", "declares prepared prompts but has no responses_create_params.input"}}},
		{"a benchmark without its split", []func(workspace){edit(bm, "canonical_split: benchmark\n", "")}, []wantProblem{{bm, 1, "manifest", "manifest requires: canonical_split"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := benchWorkspace()
			for _, e := range tc.edits {
				e(w)
			}
			root := w.write(t)
			report, err := Validate(context.Background(), options(t, root, bm))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if d := report.Datasets[0]; d.Rows != 1 || d.PromptConfig == nil || !strings.HasSuffix(*d.PromptConfig, "benchmarks/bench/prompt.yaml") {
					t.Fatalf("dataset report %+v", d)
				}
				return
			}
			checkProblems(t, root, err, tc.want)
		})
	}
}

func TestValidateDatasetOwner(t *testing.T) {
	// Datasets on the resources server, routed by the agent that points at
	// it; an agent: pin must name one of those.
	w := baseWorkspace()
	edit("environments/demo/config.yaml", "      datasets:\n      - name: example\n        type: example\n        jsonl_fpath: resources_servers/demo/data/example.jsonl\n", "")(w)
	edit("environments/demo/config.yaml", "      domain: other\n", "      domain: other\n      datasets:\n      - name: example\n        type: example\n        jsonl_fpath: resources_servers/demo/data/example.jsonl\n        agent: demo_agent\n")(w)
	manifestEdit("model_server: policy_model", "model_server: policy_model\ndataset_owner: demo_resources")(w)
	root := w.write(t)
	report, err := Validate(context.Background(), options(t, root, mf))
	if err != nil {
		t.Fatal(err)
	}
	if report.Components[1].Name != "demo_agent" {
		t.Errorf("components %+v", report.Components)
	}

	edit("environments/demo/config.yaml", "agent: demo_agent", "agent: nobody")(w)
	_, err = Validate(context.Background(), options(t, w.write(t), mf))
	if err == nil || !strings.Contains(err.Error(), "the dataset pins agent 'nobody', but no agent of that name references resources server 'demo_resources'") {
		t.Errorf("err = %v", err)
	}

	manifestEdit("dataset_owner: demo_resources", "dataset_owner: nobody")(w)
	_, err = Validate(context.Background(), options(t, w.write(t), mf))
	if err == nil || !strings.Contains(err.Error(), "manifest.yaml:17: dataset_owner: dataset_owner 'nobody' must name a dataset-bearing resources server or agent instance.") {
		t.Errorf("err = %v", err)
	}
}

func TestValidateStopsWhenCancelled(t *testing.T) {
	w := baseWorkspace()
	w["resources_servers/demo/data/example.jsonl"] = strings.Repeat(`{"responses_create_params": {"input": "hi"}}`+"\n", 5000)
	root := w.write(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("interrupted")
	cancel(stop)
	if _, err := Validate(ctx, options(t, root, mf)); !errors.Is(err, stop) {
		t.Fatalf("err = %v, want the cancellation", err)
	}
}
