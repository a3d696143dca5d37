package nemogym

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReverifyMatchesNeMoGym re-verifies one run's rollouts three ways:
// NeMo Gym 0.7.0's own `ng eval reverify` (its Python mcqa server), gym's
// against that same Python server, and gym's against its Go mcqa server
// with nothing but gym on PATH. Every output row must be NeMo Gym's, and
// the metrics too; NeMo Gym's `eval profile` must read gym's output.
func TestReverifyMatchesNeMoGym(t *testing.T) {
	h := newHarness(t)
	// Whatever a failed step leaves running from the workspace goes too.
	t.Cleanup(func() { killLeft(h) })
	gymEnv := []string{"PATH=" + buildDir, "HOME=" + filepath.Join(h.work, "home"), "NO_COLOR=1"}
	runGym := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(buildDir, "gym"), args...)
		cmd.Dir, cmd.Env = h.work, gymEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("gym %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// The run: gym's built-in mcqa_example on its replay model, before
	// NeMo Gym's mcqa is in the workspace to shadow gym's.
	runGym("eval", "run", "--benchmark", "mcqa_example", "--model-type", "replay_model", "--split", "benchmark",
		"-o", "results/mcqa.jsonl", "++head_server.port="+strconv.Itoa(freePort(t)))
	h.copyShipped("resources_servers/mcqa")
	h.write("rv.yaml", "mcqa_example_mcqa_resources_server:\n  resources_servers:\n    mcqa:\n      entrypoint: app.py\n      domain: knowledge\n", 0o644)
	files := " --inputs results/mcqa_materialized_inputs.jsonl --rollouts results/mcqa.jsonl"

	// NeMo Gym's reverify never stops the servers it starts, and they
	// hold its output open: its output goes to a file, and what it leaves
	// running is counted and ended here.
	start := time.Now()
	out, err := h.run(context.Background(), "ng eval reverify --config rv.yaml"+files+" -o ng_rv.jsonl ++uv_cache_dir=/var/cache/uv ++head_server.port="+strconv.Itoa(freePort(t))+" > ng_rv.log 2>&1")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(h.work, "ng_rv.log"))
		t.Fatalf("NeMo Gym's eval reverify: %v\n%s%s", err, out, log)
	}
	t.Logf("NeMo Gym's eval reverify: %s", time.Since(start).Round(time.Second))
	t.Logf("NeMo Gym's eval reverify left %d processes running (ended here)", killLeft(h))

	start = time.Now()
	out, err = h.run(context.Background(), h.gym+" eval reverify --config rv.yaml"+files+" -o gym_py_rv.jsonl ++uv_cache_dir=/var/cache/uv ++head_server.port="+strconv.Itoa(freePort(t)))
	if err != nil {
		t.Fatalf("gym eval reverify on NeMo Gym's Python mcqa: %v\n%s", err, out)
	}
	if !strings.Contains(out, "resources_servers/mcqa (python)") {
		t.Errorf("gym did not run NeMo Gym's Python mcqa:\n%s", out)
	}
	t.Logf("gym eval reverify, Python mcqa: %s", time.Since(start).Round(time.Second))
	// gym stops every server it started. (Only the workspace's processes
	// are looked at: other tests may run Ray in the same root.)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		left := rootProcesses(h.root, h.in)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gym eval reverify left behind:\n  %s", strings.Join(left, "\n  "))
		}
	}

	start = time.Now()
	goOut := runGym("eval", "reverify", "--config", "rv.yaml", "--search-dir", h.work, "--inputs", "results/mcqa_materialized_inputs.jsonl",
		"--rollouts", "results/mcqa.jsonl", "-o", "gym_go_rv.jsonl", "++builtin_servers=prefer", "++head_server.port="+strconv.Itoa(freePort(t)))
	if !strings.Contains(goOut, "resources_servers/mcqa (go)") {
		t.Errorf("gym did not verify with its Go mcqa:\n%s", goOut)
	}
	t.Logf("gym eval reverify, Go mcqa: %s", time.Since(start).Round(time.Millisecond))

	want := rowsByRollout(t, h.work, "ng_rv.jsonl")
	if len(want) != 10 {
		t.Fatalf("NeMo Gym re-verified %d rollouts, want 10", len(want))
	}
	for _, file := range []string{"gym_py_rv.jsonl", "gym_go_rv.jsonl"} {
		got := rowsByRollout(t, h.work, file)
		if len(got) != len(want) {
			t.Errorf("%s: %d rollouts, NeMo Gym's %d", file, len(got), len(want))
		}
		for k, w := range want {
			g, ok := got[k]
			if file == "gym_go_rv.jsonl" && ok {
				// gym's Go servers keep the request's objects raw, where
				// pydantic writes every field of its models out; every
				// other field must be NeMo Gym's, and NeMo Gym's extra
				// ones only its defaults.
				g, w = comparable(g, w)
			}
			if !ok || !reflect.DeepEqual(g, w) {
				t.Errorf("%s rollout %s differs from NeMo Gym's:\n  gym: %.600v\n   ng: %.600v", file, k, g, w)
			}
		}
		diffs := metricDiffs(agentMetrics(t, h.work, "ng_rv"), agentMetrics(t, h.work, strings.TrimSuffix(file, ".jsonl")))
		for _, d := range diffs {
			t.Errorf("%s: %s", file, d)
		}
	}

	// NeMo Gym's own reader of a run's files reads gym's reverification.
	out, err = h.run(context.Background(), "ng eval profile --inputs results/mcqa_materialized_inputs.jsonl --rollouts gym_go_rv.jsonl")
	if err != nil || !strings.Contains(out, "Reward profile completion: 10/10 rollout rows (100.00%)") {
		t.Errorf("NeMo Gym's eval profile of gym's output: %v\n%s", err, out)
	}

	// Each resumes the other's partial output: the first 4 rows of a
	// finished one, and only the other 6 are verified again.
	partial := func(from, to string) {
		data, err := os.ReadFile(filepath.Join(h.work, from))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(string(data), "\n")
		h.write(to, strings.Join(lines[:4], ""), 0o644)
	}
	partial("gym_go_rv.jsonl", "ng_resumed.jsonl")
	out, err = h.run(context.Background(), "ng eval reverify --config rv.yaml"+files+" -o ng_resumed.jsonl --resume ++uv_cache_dir=/var/cache/uv ++head_server.port="+strconv.Itoa(freePort(t))+" > ng_resumed.log 2>&1")
	log, _ := os.ReadFile(filepath.Join(h.work, "ng_resumed.log"))
	killLeft(h)
	if err != nil || !strings.Contains(string(log), "- 4 rows already done (in main jsonl)") || !strings.Contains(string(log), "- 6 rows that still need to be run") {
		t.Errorf("NeMo Gym's eval reverify --resume of gym's partial output: %v\n%s%s", err, out, log)
	}
	partial("ng_rv.jsonl", "gym_resumed.jsonl")
	goOut = runGym("eval", "reverify", "--config", "rv.yaml", "--search-dir", h.work, "--inputs", "results/mcqa_materialized_inputs.jsonl",
		"--rollouts", "results/mcqa.jsonl", "-o", "gym_resumed.jsonl", "--resume", "++builtin_servers=prefer", "++head_server.port="+strconv.Itoa(freePort(t)))
	if !strings.Contains(goOut, "4 already done; 0 failed attempts before; 0 failed for good; 0 out of attempts (NEMO_GYM_MAX_ROLLOUT_ATTEMPTS=3); 6 to run") {
		t.Errorf("gym eval reverify --resume of NeMo Gym's partial output:\n%s", goOut)
	}
	for _, file := range []string{"ng_resumed.jsonl", "gym_resumed.jsonl"} {
		got := rowsByRollout(t, h.work, file)
		if len(got) != len(want) {
			t.Errorf("%s: %d rollouts after resuming, want %d", file, len(got), len(want))
		}
		for k, w := range want {
			if g, ok := got[k]; !ok || g["reward"] != w["reward"] {
				t.Errorf("%s rollout %s: reward %v, NeMo Gym's %v", file, k, g["reward"], w["reward"])
			}
		}
	}
	t.Logf("%d rollouts re-verified by gym (Python and Go mcqa) as NeMo Gym re-verifies them; metrics equal; read back by NeMo Gym's eval profile; each resumes the other's partial output", len(want))
}

// rowsByRollout reads a rollouts file as "<task>/<rollout>" -> the row.
func rowsByRollout(t *testing.T, dir, file string) map[string]map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	sort.Strings(lines)
	for i, line := range lines {
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%s line %d: %v", file, i+1, err)
		}
		k := strconv.FormatFloat(row["_ng_task_index"].(float64), 'f', -1, 64) + "/" + strconv.FormatFloat(row["_ng_rollout_index"].(float64), 'f', -1, 64)
		if _, dup := out[k]; dup {
			t.Errorf("%s holds rollout %s twice", file, k)
		}
		out[k] = row
	}
	return out
}

// pydanticDefaults are the verify response fields NeMo Gym's models write
// out at their defaults and gym's Go servers leave out.
var pydanticDefaults = map[string]any{"failure_kind": nil, "failure_reason": nil, "mask_sample": false}

// comparable drops the raw objects from both rows, and NeMo Gym's fields
// that are at their pydantic defaults and absent from gym's.
func comparable(gym, ng map[string]any) (map[string]any, map[string]any) {
	g, n := map[string]any{}, map[string]any{}
	for k, v := range gym {
		if k != "response" && k != "responses_create_params" {
			g[k] = v
		}
	}
	for k, v := range ng {
		if k == "response" || k == "responses_create_params" {
			continue
		}
		if def, ok := pydanticDefaults[k]; ok && reflect.DeepEqual(v, def) {
			if _, inGym := gym[k]; !inGym {
				continue
			}
		}
		n[k] = v
	}
	return g, n
}

// killLeft ends the processes in the root that run from the workspace, and
// says how many there were.
func killLeft(h *harness) int {
	left := rootProcesses(h.root, h.in)
	for _, p := range left {
		pid, _ := strconv.Atoi(strings.Fields(p)[0])
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(left)
}
