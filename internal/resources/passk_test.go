package resources

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// tasksOf builds tasks from rollout objects, one JSON array per task.
func tasksOf(t *testing.T, tasks ...string) Tasks {
	t.Helper()
	var out [][]Rollout
	for ti, task := range tasks {
		var raws []json.RawMessage
		if err := json.Unmarshal([]byte(task), &raws); err != nil {
			t.Fatal(err)
		}
		var rs []Rollout
		for ri, r := range raws {
			rs = append(rs, Rollout{TaskIndex: int64(ti), RolloutIndex: int64(ri), Raw: r})
		}
		out = append(out, rs)
	}
	return TasksOf(out)
}

func passMajority(t *testing.T, tasks Tasks, score ScoreFunc, answerKey string) *Metrics {
	t.Helper()
	m, err := PassMajorityMetrics(tasks, score, answerKey)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func subsetMetrics(t *testing.T, tasks Tasks, subsetKey string, score ScoreFunc, answerKey string) *Metrics {
	t.Helper()
	m, err := SubsetMetrics(tasks, subsetKey, score, answerKey)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func expectMetrics(t *testing.T, m *Metrics, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		got, ok := m.Float(k)
		if math.IsNaN(v) {
			if ok {
				t.Errorf("%s = %v, want it absent", k, got)
			}
			continue
		}
		if !ok || math.Abs(got-v) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
}

func TestPassMajority(t *testing.T) {
	// Upstream's test_compute_metrics_handles_no_answer and friends.
	m := passMajority(t, tasksOf(t,
		`[{"reward":0.0,"extracted_answer":null},{"reward":1.0,"extracted_answer":"42"}]`,
	), nil, "extracted_answer")
	expectMetrics(t, m, map[string]float64{
		"pass@1/no_answer": 50, "pass@2/no_answer": 100, "pass@1[avg-of-2]/no_answer": 50,
		"pass@1/accuracy": 50, "pass@2/accuracy": 100, "pass@1[avg-of-1]/accuracy": 0, "pass@1[avg-of-2]/accuracy": 50,
		"majority@1/accuracy": 0, "majority@2/accuracy": 100,
		// std of the per-run pass@1 values [0, 100].
		"pass@1[avg-of-2]/accuracy/std_dev_across_runs": math.Sqrt(5000),
		"pass@1[avg-of-2]/accuracy/std_err_across_runs": math.Sqrt(5000) / math.Sqrt(2),
	})
	ps, _ := m.Get("per_sample_aggregate")
	if b, _ := ps.(*Metrics).MarshalJSON(); string(b) != `{"accuracy":[0.0,100.0],"no_answer":[100.0,0.0]}` {
		t.Errorf("per_sample_aggregate %s", b)
	}

	m = passMajority(t, tasksOf(t,
		`[{"reward":1.0,"extracted_answer":"A"},{"reward":1.0,"extracted_answer":"A"}]`,
		`[{"reward":0.0,"extracted_answer":null},{"reward":0.0,"extracted_answer":null}]`,
	), nil, "extracted_answer")
	expectMetrics(t, m, map[string]float64{"majority@2/accuracy": 50}) // no answers → 0

	// Ties average the tied scores; only the first k rollouts vote, and
	// null answers among them are dropped rather than replaced (errata E5).
	m = passMajority(t, tasksOf(t,
		`[{"reward":0.0,"extracted_answer":"B"},{"reward":1.0,"extracted_answer":"C"},{"reward":1.0,"extracted_answer":"C"}]`,
		`[{"reward":0.0,"extracted_answer":null},{"reward":1.0,"extracted_answer":"7"},{"reward":0.0,"extracted_answer":"8"}]`,
	), nil, "extracted_answer")
	expectMetrics(t, m, map[string]float64{
		"majority@2/accuracy": (0.5 + 1.0) / 2 * 100,
		"majority@3/accuracy": (1.0 + 0.5) / 2 * 100,
		// 0/1 scores: 1 - C(incorrect, k)/C(n, k) per task.
		"pass@1/accuracy": ((1 - 1.0/3) + (1 - 2.0/3)) / 2 * 100,
		"pass@2/accuracy": (1 + (1 - 1.0/3)) / 2 * 100,
	})

	// Numbers compare by value when voting: 7 and 7.0 are one answer.
	m = passMajority(t, tasksOf(t, `[{"reward":1,"extracted_answer":7},{"reward":1.0,"extracted_answer":7.0},{"reward":0,"extracted_answer":8}]`), nil, "extracted_answer")
	expectMetrics(t, m, map[string]float64{"majority@3/accuracy": 100})

	// Continuous scores: pass@k is the max of the first k.
	m = passMajority(t, tasksOf(t, `[{"reward":0.25},{"reward":0.75},{"reward":0.5}]`), nil, "")
	expectMetrics(t, m, map[string]float64{
		"pass@1/accuracy": 25, "pass@2/accuracy": 75, "pass@3/accuracy": 75,
		"majority@1/accuracy": math.NaN(), "pass@1/no_answer": math.NaN(),
	})

	// Tasks with fewer rollouts drop out of pass@k for larger k.
	m = passMajority(t, tasksOf(t, `[{"reward":1}]`, `[{"reward":0},{"reward":0}]`), nil, "")
	expectMetrics(t, m, map[string]float64{"pass@1/accuracy": 50, "pass@2/accuracy": 0, "pass@1[avg-of-2]/accuracy": 50})

	if passMajority(t, TasksOf(nil), nil, "x").Len() != 0 {
		t.Error("no tasks: want no metrics")
	}
}

func TestPassMajorityCustomScores(t *testing.T) {
	score := func(r Rollout) []Score {
		v, _ := r.Number("library_reward")
		out := []Score{{"symbolic_accuracy", v}}
		if raw, ok := r.Value("judge_evaluations"); ok && string(raw) != "null" {
			reward, _ := r.Number("reward")
			out = append(out, Score{"judge_accuracy", reward})
		}
		return out
	}
	m := passMajority(t, tasksOf(t,
		`[{"reward":1.0,"library_reward":0.0,"judge_evaluations":[{}],"extracted_answer":"x"},{"reward":1.0,"library_reward":1.0,"judge_evaluations":null,"extracted_answer":"y"}]`,
	), score, "extracted_answer")
	var names []string
	for _, k := range m.Keys() {
		if strings.HasPrefix(k, "pass@1/") {
			names = append(names, k)
		}
	}
	if fmt.Sprint(names) != "[pass@1/judge_accuracy pass@1/no_answer pass@1/symbolic_accuracy]" {
		t.Errorf("score names in order: %v", names)
	}
	expectMetrics(t, m, map[string]float64{"pass@1/judge_accuracy": 100, "pass@2/symbolic_accuracy": 100, "pass@1/symbolic_accuracy": 50})
}

func TestSubsetMetrics(t *testing.T) {
	m := subsetMetrics(t, tasksOf(t,
		`[{"reward":1,"difficulty":"easy"},{"reward":1}]`,
		`[{"reward":0,"difficulty":"hard"},{"reward":1}]`,
		`[{"reward":0,"difficulty":""},{"reward":0}]`,
		`[{"reward":1,"difficulty":"easy"},{"reward":0}]`,
	), "difficulty", nil, "")
	expectMetrics(t, m, map[string]float64{"easy/pass@1/accuracy": 75, "hard/pass@1/accuracy": 50, "easy/pass@2/accuracy": 100})
	for _, k := range m.Keys() {
		if strings.Contains(k, "per_sample_aggregate") || strings.HasPrefix(k, "/") {
			t.Errorf("unexpected key %s", k)
		}
	}
	if !strings.HasPrefix(m.Keys()[0], "easy/") {
		t.Errorf("subsets in first-seen order: %v", m.Keys()[:2])
	}
}

func TestHighestKMetrics(t *testing.T) {
	m := NewMetrics()
	for _, k := range []string{
		"mean/reward", "pass@1/accuracy", "pass@2/accuracy", "pass@2/no_answer", "pass@10/accuracy", "pass@10/no_answer",
		"pass@1[avg-of-10]/accuracy", "pass@1[avg-of-10]/accuracy/std_dev_across_runs", "pass@1[avg-of-2]/accuracy",
		"majority@10/accuracy", "easy/pass@10/accuracy",
	} {
		m.Set(k, 1.0)
	}
	tests := []struct {
		pattern          string
		include, exclude []string
		want             string
	}{
		{"pass@{k}", nil, nil, "[pass@10/accuracy pass@10/no_answer]"},
		{"pass@{k}", []string{"accuracy"}, nil, "[pass@10/accuracy]"},
		{"pass@{k}", nil, []string{"no_answer"}, "[pass@10/accuracy]"},
		{"pass@{k}", []string{}, nil, "[]"},
		{"pass@1[avg-of-{k}]", nil, nil, "[pass@1[avg-of-10]/accuracy]"},
		{"majority@{k}", nil, nil, "[majority@10/accuracy]"},
		{"maj@{k}", nil, nil, "[]"},
	}
	for _, tc := range tests {
		if got := fmt.Sprint(HighestKMetrics(m, tc.pattern, tc.include, tc.exclude).Keys()); got != tc.want {
			t.Errorf("HighestKMetrics(%s, %v, %v) = %s, want %s", tc.pattern, tc.include, tc.exclude, got, tc.want)
		}
	}
}

func TestSubsetNames(t *testing.T) {
	m := subsetMetrics(t, tasksOf(t,
		`[{"reward":1,"level":3}]`, `[{"reward":1,"level":2.5}]`, `[{"reward":1,"level":true}]`,
		`[{"reward":1,"level":0}]`, `[{"reward":1,"level":false}]`, `[{"reward":1,"level":null}]`, `[{"reward":1,"level":["x"]}]`,
	), "level", nil, "")
	var subsets []string
	for _, k := range m.Keys() {
		if strings.HasSuffix(k, "/pass@1/accuracy") {
			subsets = append(subsets, strings.TrimSuffix(k, "/pass@1/accuracy"))
		}
	}
	// Python's str() of truthy values; falsy and unhashable ones are skipped.
	if fmt.Sprint(subsets) != "[3 2.5 True]" {
		t.Errorf("subsets %v", subsets)
	}
}
