package nemogym

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// workloadCase is one manifest-backed workload both CLIs validate: a copy
// of the example NeMo Gym ships, edited to break it (or not). needle is
// what both must report, as each words it.
type workloadCase struct {
	name string
	edit func(manifest, rows string) (string, string)
	// nemo and gym are a part of each CLI's report of the problem; "" for
	// a workload that validates.
	nemo, gym string
	// byPath validates with --manifest: NeMo Gym's catalog leaves out a
	// manifest that fails its schema (and then says the name has none),
	// where gym's validates it by name too.
	byPath bool
}

var workloadCases = []workloadCase{
	{name: "example_single_tool_call"},
	{name: "bad_version", edit: replaceIn("version: 0.1.0", "version: 1.0", ""),
		nemo: "version: Input should be a valid string", gym: `"field":"version","message":"Input should be a valid string`, byPath: true},
	{name: "bad_license", edit: replaceIn("licensing: Apache-2.0", "licensing: Nope-1.0", ""),
		nemo: "licensing: Value error, licensing must be an SPDX license expression", gym: `"field":"licensing","message":"Value error, licensing must be an SPDX license expression`, byPath: true},
	{name: "stale_agent", edit: replaceIn("agent_server: simple_agent", "agent_server: other_agent", ""),
		nemo: `agent_server: manifest="other_agent", config="simple_agent"`, gym: `manifest=\"other_agent\", config=\"simple_agent\"`},
	{name: "benchmark_kind", edit: replaceIn("kind: environment", "kind: benchmark", ""),
		nemo: "manifest requires: canonical_split, standard_prompt_config", gym: "manifest requires: canonical_split, standard_prompt_config", byPath: true},
	{name: "missing_data", edit: replaceIn("jsonl_fpath: resources_servers/example_single_tool_call/data/example.jsonl", "jsonl_fpath: environments/missing_data/data/none.jsonl", ""),
		nemo: "Dataset file was not found: ", gym: `"message":"Dataset file was not found: `},
	{name: "bad_rows", edit: replaceIn("jsonl_fpath: resources_servers/example_single_tool_call/data/example.jsonl", "jsonl_fpath: environments/bad_rows/data/example.jsonl", "{\"responses_create_params\": {\"input\": \"hi\"}}\n{\"responses_create_params\": \n"),
		nemo: "/environments/bad_rows/data/example.jsonl' at line 2", gym: `/environments/bad_rows/data/example.jsonl","line":2,"message":"Malformed JSON`},
	{name: "no_input", edit: replaceIn("jsonl_fpath: resources_servers/example_single_tool_call/data/example.jsonl", "jsonl_fpath: environments/no_input/data/example.jsonl", "{\"responses_create_params\": {\"input\": \"hi\"}}\n{\"responses_create_params\": {\"tools\": []}}\n"),
		nemo: "row 2 is not a valid rollout input at responses_create_params.input: Field required", gym: `"line":2,"message":"Dataset 'example' row is not a valid rollout input at responses_create_params.input: Field required`},
}

// replaceIn edits the manifest; rows, when set, become the workload's own
// dataset file.
func replaceIn(old, new, rows string) func(string, string) (string, string) {
	return func(manifest, _ string) (string, string) { return strings.Replace(manifest, old, new, 1), rows }
}

// TestValidateMatchesNeMoGymValidate runs NeMo Gym 0.7.0's `gym env
// validate NAME --json` and gym's on the same workloads: the example NeMo
// Gym ships and broken copies of it. Both pass or both fail; a pass gives
// the same report, a failure the same problem.
func TestValidateMatchesNeMoGymValidate(t *testing.T) {
	h := newHarness(t)
	h.copyShipped("environments/example_single_tool_call")
	h.copyShipped("resources_servers/example_single_tool_call")
	base, err := os.ReadFile(filepath.Join(h.work, "environments/example_single_tool_call/manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range workloadCases[1:] {
		manifest, rows := c.edit(string(base), "")
		manifest = strings.Replace(manifest, "name: example_single_tool_call", "name: "+c.name, 1)
		data := "resources_servers/example_single_tool_call/data/example.jsonl"
		if rows != "" {
			data = "environments/" + c.name + "/data/example.jsonl"
			h.write(data, rows, 0o644)
		}
		if i := strings.Index(manifest, "jsonl_fpath: "); i >= 0 {
			end := i + strings.IndexByte(manifest[i:], '\n')
			data = strings.TrimPrefix(manifest[i:end], "jsonl_fpath: ")
		}
		h.write("environments/"+c.name+"/manifest.yaml", manifest, 0o644)
		h.write("environments/"+c.name+"/config.yaml", strings.ReplaceAll(brokenConfig, "DATA", data), 0o644)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, c := range workloadCases {
		t.Run(c.name, func(t *testing.T) {
			target := c.name + " --kind environment"
			if c.byPath {
				target = "--manifest environments/" + c.name + "/manifest.yaml"
			}
			nemo, nemoErr := h.run(ctx, "env COLUMNS=100000 gym env validate "+target+" --json")
			ours, oursErr := h.run(ctx, h.gym+" env validate "+target+" --json")
			if c.nemo == "" {
				if nemoErr != nil || oursErr != nil {
					t.Fatalf("NeMo Gym (%v):\n%s\ngym (%v):\n%s", nemoErr, nemo, oursErr, ours)
				}
				var a, b map[string]any
				if err := json.Unmarshal([]byte(lastLine(nemo)), &a); err != nil {
					t.Fatalf("NeMo Gym's report: %v\n%s", err, nemo)
				}
				if err := json.Unmarshal([]byte(lastLine(ours)), &b); err != nil {
					t.Fatalf("gym's report: %v\n%s", err, ours)
				}
				if !reflect.DeepEqual(a, b) {
					t.Errorf("reports differ:\nNeMo Gym %v\ngym      %v", a, b)
				}
				return
			}
			if nemoErr == nil || oursErr == nil {
				t.Fatalf("want both to fail: NeMo Gym (%v):\n%s\ngym (%v):\n%s", nemoErr, nemo, oursErr, ours)
			}
			if !strings.Contains(nemo, c.nemo) {
				t.Errorf("NeMo Gym does not report %q:\n%s", c.nemo, nemo)
			}
			if !strings.Contains(ours, c.gym) {
				t.Errorf("gym does not report %q:\n%s", c.gym, ours)
			}
		})
	}
}

// brokenConfig is the example's composition written out in one file, so
// that each copy's config names its own dataset (DATA).
const brokenConfig = `example_single_tool_call:
  resources_servers:
    example_single_tool_call:
      entrypoint: app.py
      domain: agent
example_single_tool_call_simple_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server:
        type: resources_servers
        name: example_single_tool_call
      model_server:
        type: responses_api_models
        name: policy_model
      datasets:
      - name: example
        type: example
        jsonl_fpath: DATA
`

func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// TestVerifierMatchesNeMoGym runs the verifier fixture NeMo Gym ships for
// example_single_tool_call with NeMo Gym's `gym env test NAME --json` and
// gym's (which runs NeMo Gym's own runner in the server's venv), then both
// CLIs' publication checks and package listings: the same reports.
func TestVerifierMatchesNeMoGym(t *testing.T) {
	h := newHarness(t)
	h.copyShipped("environments/example_single_tool_call")
	h.copyShipped("resources_servers/example_single_tool_call")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	for _, cmd := range []string{
		"env test example_single_tool_call --kind environment --json",
		"env publish example_single_tool_call --kind environment --json",
		"env packages --resources-server example_single_tool_call --json",
	} {
		nemo, err := h.run(ctx, "env COLUMNS=100000 gym "+cmd)
		if err != nil {
			t.Fatalf("NeMo Gym's gym %s: %v\n%s", cmd, err, nemo)
		}
		ours, err := h.run(ctx, h.gym+" "+cmd)
		if err != nil {
			t.Fatalf("gym %s: %v\n%s", cmd, err, ours)
		}
		var a, b any
		if err := json.Unmarshal([]byte(lastLine(nemo)), &a); err != nil {
			t.Fatalf("NeMo Gym's gym %s: %v\n%s", cmd, err, nemo)
		}
		if err := json.Unmarshal([]byte(lastLine(ours)), &b); err != nil {
			t.Fatalf("gym %s: %v\n%s", cmd, err, ours)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("gym %s differs:\nNeMo Gym %v\ngym      %v", cmd, a, b)
		}
	}

	// A fixture expectation that no longer holds fails both.
	fixture := filepath.Join(h.work, "resources_servers/example_single_tool_call/tests/verifier_cases.jsonl")
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(fixture, []byte(strings.Replace(string(data), `"expected_reward":0.0`, `"expected_reward":0.5`, 1)), 0o644)
	nemo, nemoErr := h.run(ctx, "env COLUMNS=100000 gym env test example_single_tool_call --kind environment")
	ours, oursErr := h.run(ctx, h.gym+" env test example_single_tool_call --kind environment")
	want := "Case 'text without weather call' reward mismatch: expected 0.5, observed 0.0"
	if nemoErr == nil || oursErr == nil || !strings.Contains(nemo, want) || !strings.Contains(ours, want) {
		t.Errorf("want both to fail with %q:\nNeMo Gym (%v):\n%s\ngym (%v):\n%s", want, nemoErr, nemo, oursErr, ours)
	}
}

// catalogScript asks NeMo Gym's own validate_environment about every
// manifest-backed workload of its catalog, in one process.
const catalogScript = `import json
from nemo_gym.environment.validation import validate_environment
from nemo_gym.registry import discover_environment_catalog
out = {}
for e in discover_environment_catalog():
    if e.manifest_path is None:
        continue
    try:
        validate_environment(e.manifest_path, e.config_path)
        out[e.kind + "/" + e.name] = ""
    except Exception as error:
        out[e.kind + "/" + e.name] = str(error).split("\n")[0]
print(json.dumps(out))
`

// TestValidateAgreesOnShippedCatalog validates every manifest-backed
// environment and benchmark nemo-gym 0.7.0 ships with both: each passes or
// fails in both, and a failure's first line (NeMo Gym's only problem) is
// among gym's problems.
func TestValidateAgreesOnShippedCatalog(t *testing.T) {
	h := newHarness(t)
	h.write("catalog.py", catalogScript, 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := h.run(ctx, "/opt/nemo-gym/bin/python catalog.py")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var nemo map[string]string
	if err := json.Unmarshal([]byte(lastLine(out)), &nemo); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(nemo) < 100 {
		t.Fatalf("NeMo Gym's catalog has only %d manifests", len(nemo))
	}
	passed := 0
	for key, nemoErr := range nemo {
		kind, name, _ := strings.Cut(key, "/")
		ours, oursErr := h.run(ctx, h.gym+" env validate "+name+" --kind "+kind+" --search-dir "+sitePackages+" --json")
		switch {
		case nemoErr == "" && oursErr != nil:
			t.Errorf("%s: NeMo Gym passes it, gym does not:\n%s", key, ours)
		case nemoErr != "" && oursErr == nil:
			t.Errorf("%s: NeMo Gym fails it (%s), gym does not", key, nemoErr)
		case nemoErr != "":
			// The message names the file NeMo Gym found, where gym names
			// the same one.
			msg, _, _ := strings.Cut(nemoErr, sitePackages)
			if !strings.Contains(ours, jsonEscape(msg)) {
				t.Errorf("%s: gym's problems lack NeMo Gym's %q:\n%s", key, nemoErr, ours)
			}
		default:
			passed++
		}
	}
	t.Logf("%d workloads: %d valid in both, %d invalid in both", len(nemo), passed, len(nemo)-passed)
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

// TestSyncMatchesNeMoGymSync has both CLIs synchronize a stale manifest
// (its agent and dataset mirror) from its config: the same file results.
func TestSyncMatchesNeMoGymSync(t *testing.T) {
	h := newHarness(t)
	h.copyShipped("resources_servers/example_single_tool_call")
	h.copyShipped("environments/example_single_tool_call")
	base, err := os.ReadFile(filepath.Join(h.work, "environments/example_single_tool_call/manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sync_nemo", "sync_gym"} {
		m := strings.Replace(string(base), "name: example_single_tool_call", "name: "+name, 1)
		m = strings.Replace(m, "agent_server: simple_agent", "agent_server: other_agent", 1)
		m = strings.Replace(m, "  num_repeats: 1", "  num_repeats: 4", 1)
		m = strings.Replace(m, "lifecycle: active\n", "lifecycle: active\n# a comment sync drops\n", 1)
		h.write("environments/"+name+"/manifest.yaml", m, 0o644)
		h.write("environments/"+name+"/config.yaml", strings.ReplaceAll(brokenConfig, "DATA", "resources_servers/example_single_tool_call/data/example.jsonl"), 0o644)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := h.run(ctx, "env COLUMNS=100000 gym env validate sync_nemo --kind environment --sync"); err != nil {
		t.Fatalf("NeMo Gym: %v\n%s", err, out)
	}
	if out, err := h.run(ctx, h.gym+" env validate sync_gym --kind environment --sync"); err != nil {
		t.Fatalf("gym: %v\n%s", err, out)
	}
	nemo, _ := os.ReadFile(filepath.Join(h.work, "environments/sync_nemo/manifest.yaml"))
	ours, _ := os.ReadFile(filepath.Join(h.work, "environments/sync_gym/manifest.yaml"))
	if want := strings.Replace(string(nemo), "name: sync_nemo", "name: sync_gym", 1); string(ours) != want {
		t.Errorf("gym's synchronized manifest:\n%s\nNeMo Gym's:\n%s", ours, want)
	}
}
