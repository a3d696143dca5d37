package nemogym

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
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
	// NeMo Gym's collector merges with the capture and gym's keeps as sent
	// (README compatibility table): the trajectories are not compared.
	sameCaptures(t, readCaptured(t, filepath.Join(h.work, "gym.jsonl")), readCaptured(t, filepath.Join(h.work, "ng.jsonl")), false)
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
	if code := servers.stop(t, syscall.SIGINT); code != 0 {
		t.Errorf("gym env start exited %d after SIGINT", code)
	}
	h.assertNothingLeft(t, 20*time.Second)
}
