package nemogym

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// capturedRow is what a collector joined into one rollout's row.
type capturedRow struct {
	Task    int `json:"_ng_task_index"`
	Capture struct {
		RolloutID string `json:"rollout_id"`
		Metrics   struct {
			NumCalls  int  `json:"num_calls"`
			TokensIn  *int `json:"tokens_in"`
			TokensOut *int `json:"tokens_out"`
		} `json:"metrics"`
		Calls []struct {
			ResponseID string `json:"response_id"`
			Dialect    string `json:"dialect"`
			StatusCode int    `json:"status_code"`
			ModelRef   struct {
				Name string `json:"name"`
			} `json:"model_ref"`
		} `json:"calls"`
		Gaps []json.RawMessage `json:"gaps"`
	} `json:"ng_model_call_capture"`
	Trajectory struct {
		ModelCalls []struct {
			Response json.RawMessage `json:"response"`
		} `json:"model_calls"`
	} `json:"ng_trajectory"`
}

func readCaptured(t *testing.T, path string) map[int]capturedRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[int]capturedRow{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r capturedRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rows[r.Task] = r
	}
	return rows
}

// sameCaptures holds gym's rows against NeMo Gym's, collected from the
// same servers: per rollout, the same calls (count, dialect, status,
// response ids, tokens) and no gaps; with trajectories, the same answers in
// ng_trajectory too.
func sameCaptures(t *testing.T, gymRows, ngRows map[int]capturedRow, trajectories bool) {
	t.Helper()
	if len(gymRows) != 5 || len(ngRows) != 5 {
		t.Fatalf("%d rows from gym, %d from NeMo Gym", len(gymRows), len(ngRows))
	}
	for task, g := range gymRows {
		n := ngRows[task]
		if g.Capture.Metrics.NumCalls == 0 || len(g.Capture.Gaps) > 0 || len(n.Capture.Gaps) > 0 {
			t.Errorf("task %d: gym joined %d calls (gaps %s), NeMo Gym %d (gaps %s)", task, g.Capture.Metrics.NumCalls, g.Capture.Gaps, n.Capture.Metrics.NumCalls, n.Capture.Gaps)
			continue
		}
		if g.Capture.RolloutID != n.Capture.RolloutID || len(g.Capture.Calls) != len(n.Capture.Calls) {
			t.Errorf("task %d: gym %s with %d calls, NeMo Gym %s with %d", task, g.Capture.RolloutID, len(g.Capture.Calls), n.Capture.RolloutID, len(n.Capture.Calls))
			continue
		}
		if trajectories && (len(g.Trajectory.ModelCalls) != len(g.Capture.Calls) || len(n.Trajectory.ModelCalls) != len(n.Capture.Calls)) {
			t.Errorf("task %d: ng_trajectory holds %d calls from gym, %d from NeMo Gym, for %d captured", task, len(g.Trajectory.ModelCalls), len(n.Trajectory.ModelCalls), len(g.Capture.Calls))
			continue
		}
		for i := range g.Capture.Calls {
			gc, nc := g.Capture.Calls[i], n.Capture.Calls[i]
			if gc != nc {
				t.Errorf("task %d call %d: gym %+v, NeMo Gym %+v", task, i, gc, nc)
			}
			if trajectories && string(g.Trajectory.ModelCalls[i].Response) != string(n.Trajectory.ModelCalls[i].Response) {
				t.Errorf("task %d call %d: the captured answers differ:\ngym:      %.300s\nNeMo Gym: %.300s", task, i, g.Trajectory.ModelCalls[i].Response, n.Trajectory.ModelCalls[i].Response)
			}
		}
		if *g.Capture.Metrics.TokensIn != *n.Capture.Metrics.TokensIn || *g.Capture.Metrics.TokensOut != *n.Capture.Metrics.TokensOut {
			t.Errorf("task %d: tokens gym %d/%d, NeMo Gym %d/%d", task, *g.Capture.Metrics.TokensIn, *g.Capture.Metrics.TokensOut, *n.Capture.Metrics.TokensIn, *n.Capture.Metrics.TokensOut)
		}
	}
}

// volatile are the trajectory fields that differ from run to run: times,
// durations and the ids the model servers mint.
var volatile = map[string]bool{"timestamp": true, "started_at": true, "completed_at": true, "duration_ms": true, "total_latency_ms": true, "latency_ttft_ms": true, "model_call_id": true}

// trajectories are each row's ng_trajectory and ng_perf, by task, with
// the volatile fields blanked and the captured calls left out (each model
// server captures its own request and answer).
func trajectories(t *testing.T, path string) map[int]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blank func(v any) any
	blank = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				if volatile[k] && val != nil {
					x[k] = "<volatile>"
				} else {
					x[k] = blank(val)
				}
			}
		case []any:
			for i := range x {
				x[i] = blank(x[i])
			}
		}
		return v
	}
	out := map[int]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var row struct {
			Task       int            `json:"_ng_task_index"`
			Trajectory map[string]any `json:"ng_trajectory"`
			Perf       map[string]any `json:"ng_perf"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		delete(row.Trajectory, "model_calls")
		b, _ := json.Marshal(map[string]any{"ng_trajectory": blank(row.Trajectory), "ng_perf": blank(row.Perf)})
		out[row.Task] = string(b)
	}
	return out
}

// sameTrajectories holds two collections' trajectories to each other.
func sameTrajectories(t *testing.T, what string, a, b map[int]string) {
	t.Helper()
	if len(a) != 5 || len(b) != 5 {
		t.Fatalf("%s: %d and %d rows", what, len(a), len(b))
	}
	for task, x := range a {
		if !strings.Contains(x, `"invocations":[{`) || !strings.Contains(x, `"ng_perf":{`) {
			t.Errorf("%s, task %d: no agent trajectory or no ng_perf: %s", what, task, x)
		}
		if x != b[task] {
			t.Errorf("%s, task %d:\n%s\n%s", what, task, x, b[task])
		}
	}
}

// pythonTrajectories are gym's rows of NeMo Gym's Python simple_agent,
// kept by TestPythonCaptureJoinedByGym for TestGoCaptureJoinedByNeMoGym to
// hold gym's Go simple_agent to.
var pythonTrajectories map[int]string

// collectCaptured runs one collector --no-serve against the servers behind
// head, with capture on in calls, into out.
func collectCaptured(t *testing.T, h *harness, collector, head, calls, out string) {
	t.Helper()
	line := collector + " eval run --no-serve -a example_single_tool_call_simple_agent -i resources_servers/example_single_tool_call/data/example.jsonl -o " + out +
		" ++head_server.port=" + head + " ++observability_enabled=true ++model_call_capture_dir=" + filepath.Join(h.in, calls)
	if output, err := h.run(context.Background(), line); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, output)
	}
}

// NeMo Gym's Python model server (its openai_model in front of gym's
// replay model) writes the capture, and gym's collector joins the same
// calls from it as NeMo Gym's own collector does.
func TestPythonCaptureJoinedByGym(t *testing.T) {
	h := newHarness(t)
	h.copyShipped("resources_servers/example_single_tool_call/data")
	model, ng, head := h.startNeMoGymServers(t, " ++observability_enabled=true ++model_call_capture_dir="+filepath.Join(h.in, "calls"))
	collectCaptured(t, h, h.gym, head, "calls", "gym.jsonl")
	collectCaptured(t, h, "ng", head, "calls", "ng.jsonl")
	// NeMo Gym's Python simple_agent sends its own ng_trajectory, which
	// both collectors merge with the capture, and summarise in ng_perf.
	sameCaptures(t, readCaptured(t, filepath.Join(h.work, "gym.jsonl")), readCaptured(t, filepath.Join(h.work, "ng.jsonl")), true)
	pythonTrajectories = trajectories(t, filepath.Join(h.work, "gym.jsonl"))
	sameTrajectories(t, "the Python agent, collected by gym and by NeMo Gym", pythonTrajectories, trajectories(t, filepath.Join(h.work, "ng.jsonl")))
	for _, b := range []*background{ng, model} {
		if code := b.stop(t, syscall.SIGINT); code != 0 {
			t.Errorf("env start exited %d after SIGINT", code)
		}
	}
	h.assertNothingLeft(t, 20*time.Second)
}

// gym's Go model server writes the capture (its agent, resources server
// and replay model, with NeMo Gym's Python relay environment server in
// front, which NeMo Gym's collector dispatches through), and NeMo Gym's
// collector joins from it what gym's own does, trajectories included.
func TestGoCaptureJoinedByNeMoGym(t *testing.T) {
	h := newHarness(t)
	h.copyShipped("resources_servers/example_single_tool_call/data")
	h.copyShipped("environment_servers/legacy_agent")
	h.write("front.yaml", legacyFront, 0o644)
	head := strconv.Itoa(freePort(t))
	servers := h.start(context.Background(), h.gym+" env start --resources-server example_single_tool_call --model-type replay_model --config front.yaml ++uv_cache_dir=/var/cache/uv ++head_server.port="+head+
		" ++observability_enabled=true ++model_call_capture_dir="+filepath.Join(h.in, "calls"))
	servers.waitFor(t, "All 4 / 4 servers ready", startTimeout)
	collectCaptured(t, h, h.gym, head, "calls", "gym.jsonl")
	collectCaptured(t, h, "ng", head, "calls", "ng.jsonl")
	sameCaptures(t, readCaptured(t, filepath.Join(h.work, "gym.jsonl")), readCaptured(t, filepath.Join(h.work, "ng.jsonl")), true)
	goTrajectories := trajectories(t, filepath.Join(h.work, "gym.jsonl"))
	sameTrajectories(t, "the Go agent, collected by gym and by NeMo Gym", goTrajectories, trajectories(t, filepath.Join(h.work, "ng.jsonl")))
	if pythonTrajectories == nil {
		t.Log("TestPythonCaptureJoinedByGym did not run first: gym's Go simple_agent is not compared with NeMo Gym's Python one")
	} else {
		sameTrajectories(t, "gym's Go agent and NeMo Gym's Python agent", goTrajectories, pythonTrajectories)
	}
	if code := servers.stop(t, syscall.SIGINT); code != 0 {
		t.Errorf("gym env start exited %d after SIGINT", code)
	}
	h.assertNothingLeft(t, 20*time.Second)
}
