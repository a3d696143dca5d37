package dataset

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// copyTree copies testdata directory src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func loadYAML(t *testing.T, path string) *tree.Node {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	root, err := pyyaml.Load(data, path)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// options collates in dir, which stands for the working directory and
// the only search root.
func options(dir string, cfg *tree.Node, mode, out string) CollateOptions {
	return CollateOptions{
		Config:    cfg,
		Mode:      mode,
		OutputDir: out,
		Resolve: func(p string) string {
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			if _, err := os.Stat(p); err != nil {
				return ""
			}
			return p
		},
		Abs: func(p string) string {
			if filepath.IsAbs(p) {
				return p
			}
			return filepath.Join(dir, p)
		},
		Out:  io.Discard,
		Warn: io.Discard,
	}
}

// TestCollateAsNeMoGym collates testdata/toy in both modes and compares
// every file with the one NeMo Gym 0.7.0 wrote (testdata/toy.golden).
func TestCollateAsNeMoGym(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "testdata/toy", dir)
	cfg := loadYAML(t, filepath.Join(dir, "resources_servers/toy/configs/toy.yaml"))
	var warn bytes.Buffer
	for _, run := range []struct{ mode, out string }{{ModeExample, "out_ex"}, {ModeTrain, "out_tr"}} {
		o := options(dir, cfg, run.mode, run.out)
		o.Warn = &warn
		if err := Collate(context.Background(), o); err != nil {
			t.Fatalf("%s: %v", run.mode, err)
		}
	}
	n := 0
	err := filepath.WalkDir("testdata/toy.golden", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("testdata/toy.golden", p)
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Errorf("gym wrote no %s", rel)
			return nil
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from NeMo Gym's:\n gym: %s\n  ng: %s", rel, got, want)
		}
		n++
		return nil
	})
	if err != nil || n < 19 {
		t.Fatalf("compared %d files: %v", n, err)
	}
	for _, w := range []string{"example.jsonl:4: responses_create_params is missing", "example.jsonl:5: responses_create_params.bogus_param is not a Responses create parameter", "stripped legacy agent_ref from 1 rows"} {
		if !strings.Contains(warn.String(), w) {
			t.Errorf("warnings lack %q:\n%s", w, warn.String())
		}
	}
}

// TestCollateConflicts checks that a metrics file that disagrees gets a
// _conflict.json beside it and fails the run, unless overwriting.
func TestCollateConflicts(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "testdata/toy", dir)
	cfg := loadYAML(t, filepath.Join(dir, "resources_servers/toy/configs/toy.yaml"))
	sidecar := filepath.Join(dir, "resources_servers/toy/data/example_b_metrics.json")
	stale := "{\n    \"name\": \"example_b\",\n    \"Number of examples\": 5,\n    \"Temperature\": {\"Average\": 0.6001}\n}"
	if err := os.WriteFile(sidecar, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Collate(context.Background(), options(dir, cfg, ModeExample, "out"))
	if err == nil || !strings.Contains(err.Error(), "Found conflicting aggregate metrics") || !strings.Contains(err.Error(), "example_b_metrics_conflict.json") {
		t.Fatalf("err = %v", err)
	}
	if got, _ := os.ReadFile(sidecar); string(got) != stale {
		t.Error("the stale metrics file was rewritten")
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("collation went on after a conflict")
	}
	want, _ := os.ReadFile("testdata/toy.golden/resources_servers/toy/data/example_b_metrics.json")
	if got, _ := os.ReadFile(filepath.Join(dir, "resources_servers/toy/data/example_b_metrics_conflict.json")); !bytes.Equal(got, want) {
		t.Errorf("conflict file:\n%s\nwant\n%s", got, want)
	}
	// Within tolerance is no conflict: only the count differs above.
	os.WriteFile(sidecar, []byte(`{"name": "example_b", "Temperature": {"Average": 0.6001}}`), 0o644)
	if err := Collate(context.Background(), options(dir, cfg, ModeExample, "out")); err != nil {
		t.Fatalf("a difference within tolerance: %v", err)
	}
	os.WriteFile(sidecar, []byte(stale), 0o644)
	o := options(dir, cfg, ModeExample, "out")
	o.OverwriteConflicts = true
	if err := Collate(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(sidecar); !bytes.Equal(got, want) {
		t.Error("overwrite_metrics_conflicts did not write the new metrics")
	}
}

func TestCollateErrors(t *testing.T) {
	for _, tc := range []struct {
		name, config, mode, want string
		files                    map[string]string
		download                 bool
	}{
		{name: "missing example", mode: ModeExample, config: agentWith(`{name: ex, type: example, jsonl_fpath: data/ex.jsonl}`),
			want: "data/ex.jsonl\nYou must provide the above missing example jsonl files!"},
		{name: "missing train without download", mode: ModeTrain, config: agentWith(`{name: tr, type: train, jsonl_fpath: data/tr.jsonl, license: MIT, huggingface_identifier: {repo_id: org/ds}}`),
			want: "Run with --download (+should_download=true)"},
		{name: "download names the command", mode: ModeTrain, download: true, config: agentWith(`{name: tr, type: train, jsonl_fpath: data/tr.jsonl, license: MIT, huggingface_identifier: {repo_id: org/ds}}`),
			want: "- tr: gym dataset download --repo-id org/ds --split train -o data/tr.jsonl"},
		{name: "download from gitlab", mode: ModeTrain, download: true, config: agentWith(`{name: va, type: validation, jsonl_fpath: data/va.jsonl, license: MIT, source: {type: gitlab, dataset_name: d, version: 0.0.1, artifact_fpath: v.jsonl}}`),
			want: "gym dataset download --storage gitlab --name d --revision 0.0.1 --artifact v.jsonl -o data/va.jsonl"},
		{name: "a benchmark is prepared", mode: ModeTrain, download: true, config: agentWith(`{name: b, type: benchmark, jsonl_fpath: data/b.jsonl, prepare_script: benchmarks/b/prepare.py}`),
			want: "run `gym eval prepare --config <config path>` (its prepare_script is benchmarks/b/prepare.py)"},
		{name: "no source", mode: ModeTrain, download: true, config: agentWith(`{name: tr, type: train, jsonl_fpath: data/tr.jsonl, license: MIT}`),
			want: "it names no source to download from"},
		{name: "a license is required", mode: ModeTrain, config: agentWith(`{name: tr, type: train, jsonl_fpath: data/tr.jsonl}`),
			want: "A license is required for tr"},
		{name: "an unknown license", mode: ModeTrain, config: agentWith(`{name: tr, type: train, jsonl_fpath: data/tr.jsonl, license: WTFPL}`),
			want: `license is "WTFPL"; it must be one of ['Apache 2.0'`},
		{name: "an unknown type", mode: ModeTrain, config: agentWith(`{name: x, type: test, jsonl_fpath: data/x.jsonl}`),
			want: `type is "test"; it must be one of train, validation, example, benchmark`},
		{name: "a benchmark with no prepare_script and no file", mode: ModeTrain, download: true, config: agentWith(`{name: b, type: benchmark, jsonl_fpath: data/b.jsonl}`),
			want: "- b: it names no source to download from"},
		{name: "source and a legacy identifier", mode: ModeTrain, config: agentWith(`{name: tr, type: train, jsonl_fpath: t.jsonl, license: MIT, source: {type: huggingface, repo_id: a/b}, huggingface_identifier: {repo_id: a/b}}`),
			want: "Specify a dataset source once for 'tr': set only one of ['source', 'huggingface_identifier']"},
		{name: "datasets on a model server", mode: ModeExample, config: "m:\n  responses_api_models:\n    openai_model:\n      datasets: [{name: e, type: example, jsonl_fpath: e.jsonl}]\n",
			want: "Datasets cannot be declared on model servers: ['m']"},
		{name: "a taskset with no route", mode: ModeExample, config: agentWith(`{name: ex, type: example, jsonl_fpath: ex.jsonl, taskset: t1}`),
			want: "No Environment Server route for taskset 't1'; set environment_server_routes."},
		{name: "a taskset routed to an agent that is not the declaring one", mode: ModeExample,
			config: agentWith(`{name: ex, type: example, jsonl_fpath: ex.jsonl, taskset: t1}`) + "b:\n  responses_api_agents:\n    simple_agent: {}\nenv:\n  environment_servers:\n    legacy_agent:\n      agent_server: {name: b}\nenvironment_server_routes: {t1: env}\n",
			want:   "Taskset 't1' must route to its declaring agent 'a'."},
		{name: "a taskset routed to an Environment Server without agents", mode: ModeExample,
			config: agentWith(`{name: ex, type: example, jsonl_fpath: ex.jsonl, taskset: t1}`) + "env:\n  environment_servers:\n    legacy_agent:\n      agent_server: {name: nobody}\nenvironment_server_routes: {t1: env}\n",
			want:   "Environment Server 'env' references 'nobody', which is not an agent."},
		{name: "a taskset whose row is already a task", mode: ModeExample,
			config: agentWith(`{name: ex, type: example, jsonl_fpath: ex.jsonl, taskset: t1}`) + "env:\n  environment_servers:\n    legacy_agent:\n      agent_server: {name: a}\nenvironment_server_routes: {t1: env}\n",
			files:  map[string]string{"ex.jsonl": "{\"task_id\": {\"taskset\": \"t\", \"task_id\": \"1\"}, \"task_input\": {}}\n"},
			want:   "ex.jsonl:1: taskset t1: Expected a flat dataset row, not an already materialized task"},
		{name: "a line that is not JSON", mode: ModeExample, config: agentWith(`{name: ex, type: example, jsonl_fpath: ex.jsonl}`),
			files: map[string]string{"ex.jsonl": "{\"responses_create_params\": {\"input\": \"a\"}}\n{\"responses_create_params\": \n"},
			want:  "ex.jsonl:2: not a JSON value: Expecting value: line 1 column 29 (char 28)"},
		{name: "a blank line", mode: ModeExample, config: agentWith(`{name: ex, type: example, jsonl_fpath: ex.jsonl}`),
			files: map[string]string{"ex.jsonl": "{\"responses_create_params\": {\"input\": \"a\"}}\n\n"},
			want:  "ex.jsonl:2: not a JSON value: Expecting value"},
		{name: "not UTF-8", mode: ModeExample, config: agentWith(`{name: ex, type: example, jsonl_fpath: ex.jsonl}`),
			files: map[string]string{"ex.jsonl": "{\"a\": \"\xff\"}\n"},
			want:  "ex.jsonl:1: not UTF-8 text"},
		{name: "numbers and strings under one key", mode: ModeExample, config: agentWith(`{name: ex, type: example, jsonl_fpath: ex.jsonl}`),
			files: map[string]string{"ex.jsonl": "{\"responses_create_params\": {\"input\": \"a\"}, \"k\": 1}\n{\"responses_create_params\": {\"input\": \"a\"}, \"k\": \"one\"}\n"},
			want:  `ex.jsonl:2: key "k" mixes numbers and strings`},
		{name: "a row that is not an object", mode: ModeExample, config: agentWith(`{name: ex, type: example, jsonl_fpath: ex.jsonl}`),
			files: map[string]string{"ex.jsonl": "{\"responses_create_params\": {\"input\": \"a\"}}\n[1]\n"},
			want:  "ex.jsonl:2: the row is a list, not a JSON object"},
		{name: "a benchmark row the prompt cannot fill", mode: ModeTrain, config: agentWith(`{name: b, type: benchmark, jsonl_fpath: b.jsonl, prompt_config: p.yaml}`),
			files: map[string]string{"b.jsonl": "{\"question\": \"q\"}\n{\"problem\": \"q\"}\n", "p.yaml": "user: \"{question}\"\n"},
			want:  "b.jsonl:2: Prompt template references field 'question' but the data row only has fields: ['problem']"},
		{name: "a benchmark row with an input and a prompt", mode: ModeTrain, config: agentWith(`{name: b, type: benchmark, jsonl_fpath: b.jsonl, prompt_config: p.yaml}`),
			files: map[string]string{"b.jsonl": "{\"question\": \"q\", \"responses_create_params\": {\"input\": \"x\"}}\n", "p.yaml": "user: \"{question}\"\n"},
			want:  "b.jsonl:1: Some rows have responses_create_params.input but prompt_config is also specified"},
		{name: "a missing prompt config", mode: ModeTrain, config: agentWith(`{name: b, type: benchmark, jsonl_fpath: b.jsonl, prompt_config: p.yaml}`),
			files: map[string]string{"b.jsonl": "{\"question\": \"q\"}\n"},
			want:  `prompt_config p.yaml of dataset "b" not found in any search root`},
		{name: "a bad mode", mode: "training", config: agentWith(`{name: ex, type: example, jsonl_fpath: ex.jsonl}`),
			want: `mode is "training"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
			}
			cfg, err := pyyaml.Load([]byte(tc.config), "c.yaml")
			if err != nil {
				t.Fatal(err)
			}
			o := options(dir, cfg, tc.mode, "out")
			o.ShouldDownload = tc.download
			err = Collate(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant one containing %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
				t.Error("output written despite the error")
			}
			if m, _ := filepath.Glob(filepath.Join(dir, "*_metrics.json")); len(m) > 0 {
				t.Errorf("metrics written despite the error: %v", m)
			}
		})
	}
}

// TestCollateTaskDataSchema checks what gym says of a Python task_data.py
// schema it cannot run: a warning, or an error when asked for outright.
func TestCollateTaskDataSchema(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "testdata/toy", dir)
	os.WriteFile(filepath.Join(dir, "resources_servers/toy/task_data.py"), []byte("TaskData = dict\n"), 0o644)
	cfg := loadYAML(t, filepath.Join(dir, "resources_servers/toy/configs/toy.yaml"))
	var warn bytes.Buffer
	o := options(dir, cfg, ModeExample, "out")
	o.Warn = &warn
	if err := Collate(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(warn.String(), `the rows of dataset "example_b" are not checked against `+filepath.Join(dir, "resources_servers/toy/task_data.py")) {
		t.Errorf("warnings:\n%s", warn.String())
	}
	os.WriteFile(filepath.Join(dir, "resources_servers/toy/dataset_metrics.py"), []byte("def compute_task_metrics(t): return {}\n"), 0o644)
	warn.Reset()
	o = options(dir, cfg, ModeExample, "out1")
	o.Warn = &warn
	if err := Collate(context.Background(), o); err != nil || !strings.Contains(warn.String(), "dataset_metrics.py (compute_task_metrics) are not in the metrics") {
		t.Errorf("%v\n%s", err, warn.String())
	}
	o = options(dir, cfg, ModeExample, "out2")
	o.TaskDataValidation = "error"
	if err := Collate(context.Background(), o); err == nil || !strings.Contains(err.Error(), "task_data_validation=error") {
		t.Errorf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out2")); err == nil {
		t.Error("output written despite the error")
	}
	o = options(dir, cfg, ModeExample, "out3")
	o.TaskDataValidation = "off"
	warn.Reset()
	o.Warn = &warn
	if err := Collate(context.Background(), o); err != nil || strings.Contains(warn.String(), "task_data.py") || !strings.Contains(warn.String(), "dataset_metrics.py") {
		t.Errorf("off: %v\n%s", err, warn.String())
	}
}

func agentWith(dataset string) string {
	return "a:\n  responses_api_agents:\n    simple_agent:\n      entrypoint: app.py\n      datasets: [" + dataset + "]\n"
}

func TestPaths(t *testing.T) {
	for _, tc := range []struct{ in, suffix, want string }{
		{"data/x.jsonl", "_metrics.json", "data/x_metrics.json"},
		{"./data//x.tar.jsonl", "_prepare.jsonl", "data/x.tar_prepare.jsonl"},
		{"x.", "_m.json", "x._m.json"},
		{".hidden", "_m.json", ".hidden_m.json"},
		{"/abs/d/y.jsonl/", "_m.json", "/abs/d/y_m.json"},
	} {
		if got := withSuffix(tc.in, tc.suffix); got != tc.want {
			t.Errorf("withSuffix(%q, %q) = %q, want %q", tc.in, tc.suffix, got, tc.want)
		}
	}
}

func TestRoundMetric(t *testing.T) {
	// Python: round(x, 2) for |x| >= 1, else round(x, 3).
	for _, tc := range []struct{ in, want float64 }{
		{2.675, 2.67}, {1.005, 1.0}, {0.0005, 0.001}, {0.0015, 0.002}, {0.1235, 0.123}, {-1.125, -1.12}, {118.8, 118.8}, {48.6898, 48.69}, {-0.0, -0.0},
	} {
		if got := roundMetric(tc.in); got != tc.want {
			t.Errorf("roundMetric(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
