package nemogym

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nemoGym is NeMo Gym 0.7.0's own CLI inside the root.
const nemoGym = "/opt/nemo-gym/bin/gym"

// gymRun makes a run with gym's replay model, capturing its model calls
// so that its rollouts carry ng_trajectory.
func (h *harness) gymRun(ctx context.Context, dir, benchmark, output string, extra ...string) {
	h.t.Helper()
	line := "cd " + filepath.Join(h.in, dir) + " && " + h.gym + " eval run --benchmark " + benchmark +
		" --model-type replay_model --split benchmark -o " + output + " --no-health-check" +
		" ++observability_enabled=true ++model_call_capture_dir=" + filepath.Join(h.in, dir, output+".calls") + " " + strings.Join(extra, " ")
	if out, err := h.run(ctx, "/bin/bash -c '"+line+"'"); err != nil {
		h.t.Fatalf("%s: %v\n%s", line, err, out)
	}
}

func (h *harness) read(rel string) string {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(h.work, rel))
	if err != nil {
		h.t.Fatal(err)
	}
	return string(b)
}

func (h *harness) copyFile(src, rel string) {
	h.t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		h.t.Fatal(err)
	}
	h.write(rel, string(b), 0o644)
}

// TestHealthCheckMatchesNeMoGym runs NeMo Gym's `gym eval health-check`
// and gym's on the same runs — gym's own (replay model, captured calls),
// NeMo Gym's example rollouts, and a file made to trip every check — in
// same-named directories: the printed report, the --json summary and both
// report files must be equal byte for byte.
func TestHealthCheckMatchesNeMoGym(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h.gymRun(ctx, ".", "mcqa_example", "made/mcqa/rollouts.jsonl", "--num-repeats 2")
	h.gymRun(ctx, ".", "example_single_tool_call", "made/tool/rollouts.jsonl")
	runs := map[string]string{
		"mcqa": h.read("made/mcqa/rollouts.jsonl"),
		"tool": h.read("made/tool/rollouts.jsonl"),
	}
	mixed, err := os.ReadFile(filepath.Join("..", "..", "internal", "health", "testdata", "mixed.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	runs["mix"] = string(mixed)
	if ex, err := os.ReadFile("/work/shared/data/nemo-gym-examples/example_single_tool_call/example_rollouts.jsonl"); err == nil {
		runs["example"] = string(ex)
	}
	for name, content := range runs {
		for _, side := range []string{"ngside", "gymside"} {
			h.write(filepath.Join(side, name, "rollouts.jsonl"), content, 0o644)
		}
	}
	for name := range runs {
		for _, args := range []string{"", " --json", " --ignore-checks agent_turn_hollow,task_no_successful_model_calls --workers 1"} {
			t.Run(name+args, func(t *testing.T) {
				ngOut, err := h.run(ctx, "/bin/bash -c 'cd ngside && "+nemoGym+" eval health-check "+name+args+"'")
				if err != nil {
					t.Fatalf("NeMo Gym: %v\n%s", err, ngOut)
				}
				gymOut, err := h.run(ctx, "/bin/bash -c 'cd gymside && "+h.gym+" eval health-check "+name+args+"'")
				if err != nil {
					t.Fatalf("gym: %v\n%s", err, gymOut)
				}
				if gymOut != ngOut {
					t.Errorf("output\n gym %s\n  ng %s", gymOut, ngOut)
				}
				for _, f := range []string{"quality_summary.json", "rollout_verdicts.jsonl"} {
					if g, n := h.read(filepath.Join("gymside", name, f)), h.read(filepath.Join("ngside", name, f)); g != n {
						t.Errorf("%s differs:\n gym %s\n  ng %s", f, g, n)
					}
				}
			})
		}
	}
}

// TestCompareMatchesNeMoGym compares a baseline run of a built-in
// benchmark with a candidate whose first task's answer key was changed
// (a pass→fail flip), with a run of other repeats, and the first two as
// aggregates without repeat-level metrics, by NeMo Gym's `gym
// eval compare` and gym's: the markdown must be equal but for the time it
// was generated, the JSON equal up to the last bits of the intervals, and
// the printed recap the same lines.
func TestCompareMatchesNeMoGym(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "benchmarks", "mcqa_example", "data", "mcqa_example_benchmark.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if i == 0 {
			var row map[string]any
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatal(err)
			}
			row["expected_answer"] = "J"
			b, _ := json.Marshal(row)
			line = string(b)
		}
		rows = append(rows, line)
	}
	// A working directory whose copy of the dataset wins over the built-in one.
	h.write("cand/benchmarks/mcqa_example/data/mcqa_example_benchmark.jsonl", strings.Join(rows, "\n")+"\n", 0o644)
	h.write("base/.keep", "", 0o644)
	h.write("more/.keep", "", 0o644)
	h.gymRun(ctx, "base", "mcqa_example", "run/rollouts.jsonl", "--num-repeats 3")
	h.gymRun(ctx, "cand", "mcqa_example", "run/rollouts.jsonl", "--num-repeats 3")
	h.gymRun(ctx, "more", "mcqa_example", "run/rollouts.jsonl", "--num-repeats 2")
	// Aggregates written before repeat-level statistics existed: compare
	// rebuilds them from the rollout summaries.
	for _, side := range []string{"base", "cand"} {
		var entries []map[string]any
		if err := json.Unmarshal([]byte(h.read(side+"/run/rollouts_aggregate_metrics.json")), &entries); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			delete(e, "repeat_level_metrics")
			metrics := e["agent_metrics"].(map[string]any)
			for k := range metrics {
				if strings.Contains(k, "_across_repeats/") || k == "num_repeats" {
					delete(metrics, k)
				}
			}
		}
		b, _ := json.Marshal(entries)
		h.write("legacy_"+side+"/run/rollouts_aggregate_metrics.json", string(b), 0o644)
	}
	for _, c := range []struct{ name, args string }{
		{"flip", "--baseline base/run/rollouts.jsonl --candidates cand/run/rollouts.jsonl"},
		{"repeats", "--baseline base/run/rollouts.jsonl --candidates more/run/rollouts.jsonl --report-format both --agent mcqa_example_mcqa_simple_agent"},
		{"legacy", "--baseline legacy_base/run/rollouts.jsonl --candidates legacy_cand/run/rollouts.jsonl"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Both write to the same directory in turn, so the reports name the
			// same paths.
			report := "report_" + c.name
			ngOut, err := h.run(ctx, nemoGym+" eval compare "+c.args+" -o "+report)
			if err != nil {
				t.Fatalf("NeMo Gym: %v\n%s", err, ngOut)
			}
			if err := os.Rename(filepath.Join(h.work, report), filepath.Join(h.work, "ng_"+c.name)); err != nil {
				t.Fatal(err)
			}
			gymOut, err := h.run(ctx, h.gym+" eval compare "+c.args+" -o "+report)
			if err != nil {
				t.Fatalf("gym: %v\n%s", err, gymOut)
			}
			if err := os.Rename(filepath.Join(h.work, report), filepath.Join(h.work, "gym_"+c.name)); err != nil {
				t.Fatal(err)
			}
			// The recap after the key-metrics table is the same lines.
			recap := func(out string) string { return out[strings.Index(out, "Baseline:  "):] }
			if g, n := recap(gymOut), recap(ngOut); g != n {
				t.Errorf("recap\n gym %s\n  ng %s", g, n)
			}
			noTime := func(md string) string {
				var keep []string
				for _, l := range strings.Split(md, "\n") {
					if !strings.HasPrefix(l, "Generated 20") {
						keep = append(keep, l)
					}
				}
				return strings.Join(keep, "\n")
			}
			g, n := noTime(h.read("gym_"+c.name+"/compare_report.md")), noTime(h.read("ng_"+c.name+"/compare_report.md"))
			if g != n {
				t.Errorf("compare_report.md differs:\n gym %s\n  ng %s", g, n)
			}
			var gj, nj map[string]any
			if err := json.Unmarshal([]byte(h.read("gym_"+c.name+"/compare_report.json")), &gj); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(h.read("ng_"+c.name+"/compare_report.json")), &nj); err != nil {
				t.Fatal(err)
			}
			delete(gj, "generated_at")
			delete(nj, "generated_at")
			if diff := jsonDiff("", gj, nj); diff != "" {
				t.Errorf("compare_report.json: %s", diff)
			}
		})
	}
}

// jsonDiff is the first place two JSON values differ, numbers compared to
// 1e-9 of their size (the t quantiles agree with scipy's to about 1e-15).
func jsonDiff(at string, a, b any) string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return fmt.Sprintf("%s: %v, NeMo Gym %v", at, a, b)
		}
		for k := range x {
			if d := jsonDiff(at+"."+k, x[k], y[k]); d != "" {
				return d
			}
		}
		return ""
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return fmt.Sprintf("%s: %v, NeMo Gym %v", at, a, b)
		}
		for i := range x {
			if d := jsonDiff(at+"["+strconv.Itoa(i)+"]", x[i], y[i]); d != "" {
				return d
			}
		}
		return ""
	case float64:
		y, ok := b.(float64)
		if !ok || math.Abs(x-y) > 1e-9*math.Max(1, math.Abs(y)) {
			return fmt.Sprintf("%s: %v, NeMo Gym %v", at, a, b)
		}
		return ""
	}
	if !reflect.DeepEqual(a, b) {
		return fmt.Sprintf("%s: %v, NeMo Gym %v", at, a, b)
	}
	return ""
}
