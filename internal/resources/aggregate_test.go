package resources

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

func rows(lines ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(lines))
	for i, l := range lines {
		out[i] = json.RawMessage(l)
	}
	return out
}

func mustAggregate(t *testing.T, in []json.RawMessage, hooks MetricsHooks) (*AggregateMetrics, string) {
	t.Helper()
	agg, err := Aggregate(in, hooks)
	if err != nil {
		t.Fatal(err)
	}
	out, err := agg.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return agg, string(out)
}

func TestAggregateEmpty(t *testing.T) {
	_, out := mustAggregate(t, nil, MetricsHooks{ComputeMetrics: func(Tasks) (*Metrics, error) { panic("not called on empty input") }})
	if out != `{"group_level_metrics":[],"agent_metrics":{},"key_metrics":{},"repeat_level_metrics":[]}` {
		t.Errorf("empty: %s", out)
	}
}

// TestAggregateOneRollout: one sample has no sample std; RewardProfiler
// reports 0, and max/min of integer columns stay integers.
func TestAggregateOneRollout(t *testing.T) {
	_, out := mustAggregate(t, rows(`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"response":{"usage":{"input_tokens":60,"output_tokens":30,"input_tokens_details":{"cached_tokens":0}}}}`), MetricsHooks{})
	want := `{"group_level_metrics":[{"_ng_task_index":0,` +
		`"mean/reward":1.0,"mean/input_tokens":60.0,"mean/output_tokens":30.0,` +
		`"max/reward":1.0,"max/input_tokens":60,"max/output_tokens":30,` +
		`"min/reward":1.0,"min/input_tokens":60,"min/output_tokens":30,` +
		`"median/reward":1.0,"median/input_tokens":60.0,"median/output_tokens":30.0,` +
		`"std/reward":0.0,"std/input_tokens":0.0,"std/output_tokens":0.0,` +
		`"sample":{"agent_ref":{"name":"agent"}},"num_rollouts":1,"expected_num_rollouts":1,"missing_num_rollouts":0,"reward_profile_completion_pct":100.0,` +
		`"rollout_infos":[{"rollout_id":"0:0","_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"input_tokens":60,"output_tokens":30}]}],` +
		`"agent_metrics":{"mean/reward":1.0,"mean/input_tokens":60.0,"mean/output_tokens":30.0,` +
		`"max/reward":1.0,"max/input_tokens":60,"max/output_tokens":30,` +
		`"min/reward":1.0,"min/input_tokens":60,"min/output_tokens":30,` +
		`"median/reward":1.0,"median/input_tokens":60.0,"median/output_tokens":30.0,` +
		`"std/reward":0.0,"std/input_tokens":0.0,"std/output_tokens":0.0,"num_repeats":1},` +
		`"key_metrics":{"mean/reward":1.0,"mean/input_tokens":60.0,"mean/output_tokens":30.0},"repeat_level_metrics":[]}`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestAggregateGroups(t *testing.T) {
	agg, _ := mustAggregate(t, rows(
		`{"_ng_task_index":1,"_ng_rollout_index":1,"reward":0.0,"parse_failed":true,"extracted_answer":"B","response":{"usage":{"output_tokens":10}}}`,
		`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1,"parse_failed":false,"response":{"usage":{"output_tokens":20}}}`,
		`{"_ng_task_index":1,"_ng_rollout_index":0,"reward":1.0,"parse_failed":false,"response":{"usage":{"output_tokens":30}}}`,
		`{"_ng_task_index":1,"_ng_rollout_index":2,"reward":0.5,"parse_failed":false,"response":{"usage":{"output_tokens":40}},"score":7}`,
	), MetricsHooks{})
	if len(agg.GroupLevelMetrics) != 2 {
		t.Fatalf("%d groups", len(agg.GroupLevelMetrics))
	}
	g0, g1 := agg.GroupLevelMetrics[0], agg.GroupLevelMetrics[1]
	check := func(name string, m *Metrics, key string, want any) {
		t.Helper()
		got, ok := m.Get(key)
		if wf, isFloat := want.(float64); isFloat {
			if gf, ok := got.(float64); !ok || math.Abs(gf-wf) > 1e-12 {
				t.Errorf("%s %s = %v (%T), want %v", name, key, got, got, want)
			}
			return
		}
		if want == nil {
			if ok {
				t.Errorf("%s %s = %v, want it absent", name, key, got)
			}
			return
		}
		if got != want {
			t.Errorf("%s %s = %v (%T), want %v (%T)", name, key, got, got, want, want)
		}
	}
	check("group 0", g0, TaskIndexKey, int64(0))
	check("group 0", g0, "num_rollouts", 1)
	// Task 0's std is 0: the group has no column with two values.
	check("group 0", g0, "std/reward", 0.0)
	// score is missing in task 0: no statistic, and std stays NaN there.
	check("group 0", g0, "mean/score", nil)
	check("group 0", g0, "std/score", nil)
	check("group 1", g1, "num_rollouts", 3)
	check("group 1", g1, "mean/reward", 0.5)
	check("group 1", g1, "median/reward", 0.5)
	check("group 1", g1, "std/reward", 0.5)
	check("group 1", g1, "mean/parse_failed", 1.0/3)
	check("group 1", g1, "max/parse_failed", int64(1))
	// reward mixes 1 and 1.0: pandas types the column float.
	check("group 1", g1, "max/reward", 1.0)
	check("group 1", g1, "max/output_tokens", int64(40))
	// score appears once in the group while others have two values: NaN std.
	check("group 1", g1, "mean/score", 7.0)
	check("group 1", g1, "std/score", nil)
	// score is missing from some rollouts, so its column is float.
	check("group 1", g1, "max/score", 7.0)

	am := agg.AgentMetrics
	check("agent", am, "mean/reward", 2.5/4)
	check("agent", am, "std/reward", math.Sqrt((0.390625+0.140625+0.140625+0.015625)/3))
	check("agent", am, "median/output_tokens", 25.0)
	check("agent", am, "std/score", nil)
	check("agent", am, "mean/score", 7.0)
	if am.Len() == 0 || am.Keys()[0] != "mean/reward" {
		t.Errorf("agent metrics order: %v", am.Keys())
	}
	for _, k := range am.Keys() {
		if strings.Contains(k, "_ng_") || strings.Contains(k, "extracted_answer") {
			t.Errorf("agent metric %s profiles an index or a string", k)
		}
	}

	infos, _ := g1.Get("rollout_infos")
	var ids []string
	for _, info := range infos.([]json.RawMessage) {
		var r struct {
			ID string `json:"rollout_id"`
		}
		json.Unmarshal(info, &r)
		ids = append(ids, r.ID)
	}
	if fmt.Sprint(ids) != "[1:0 1:1 1:2]" {
		t.Errorf("rollout_infos order %v, want by rollout index", ids)
	}
	if b := infos.([]json.RawMessage)[2]; string(b) != `{"rollout_id":"1:2","_ng_task_index":1,"_ng_rollout_index":2,"reward":0.5,"output_tokens":40,"parse_failed":0,"score":7}` {
		t.Errorf("rollout_info %s", b)
	}
}

// TestAggregateUsageWins: a usage number overrides a top-level field of
// the same name, as result | usage does in NeMo Gym.
func TestAggregateUsageWins(t *testing.T) {
	agg, _ := mustAggregate(t, rows(`{"input_tokens":1,"reward":0.0,"response":{"usage":{"input_tokens":99,"total_tokens":100}}}`), MetricsHooks{})
	if v, _ := agg.AgentMetrics.Get("mean/input_tokens"); v != 99.0 {
		t.Errorf("mean/input_tokens = %v, want usage's 99", v)
	}
	if v, _ := agg.AgentMetrics.Get("max/total_tokens"); v != int64(100) {
		t.Errorf("max/total_tokens = %v", v)
	}
	if v, _ := agg.GroupLevelMetrics[0].Get(TaskIndexKey); v != int64(0) {
		t.Errorf("missing _ng_task_index defaults to 0, got %v", v)
	}
}

func TestAggregateHooks(t *testing.T) {
	var seen [][]int64
	hooks := MetricsHooks{
		ComputeMetrics: func(tasks Tasks) (*Metrics, error) {
			tasks(func(task []Rollout) error {
				var ids []int64
				for _, r := range task {
					ids = append(ids, r.TaskIndex*10+r.RolloutIndex)
				}
				seen = append(seen, ids)
				return nil
			})
			m := NewMetrics()
			m.Set("mean/reward", -1.0) // overrides in place
			m.Set("custom", 42)
			pt := NewMetrics()
			pt.Set(TaskIndexKey, 3)
			pt.Set("task_note", "hard")
			m.Set("per_task_metrics", []*Metrics{pt})
			return m, nil
		},
		KeyMetrics: func(agent *Metrics) *Metrics {
			k := NewMetrics()
			v, _ := agent.Get("custom")
			k.Set("custom", v)
			return k
		},
	}
	agg, _ := mustAggregate(t, rows(
		`{"_ng_task_index":3,"_ng_rollout_index":1,"reward":1}`,
		`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":0}`,
		`{"_ng_task_index":3,"_ng_rollout_index":0,"reward":0}`,
	), hooks)
	if fmt.Sprint(seen) != "[[0] [31 30]]" {
		t.Errorf("compute_metrics saw %v, want tasks in order, rollouts in arrival order", seen)
	}
	if v, _ := agg.AgentMetrics.Get("mean/reward"); v != -1.0 || agg.AgentMetrics.Keys()[0] != "mean/reward" {
		t.Errorf("custom mean/reward %v at %v", v, agg.AgentMetrics.Keys())
	}
	if _, ok := agg.AgentMetrics.Get("per_task_metrics"); ok {
		t.Error("per_task_metrics left in agent_metrics")
	}
	if v, _ := agg.GroupLevelMetrics[1].Get("task_note"); v != "hard" {
		t.Errorf("per_task_metrics not merged into task 3: %v", v)
	}
	if b, _ := agg.KeyMetrics.MarshalJSON(); string(b) != `{"custom":42}` {
		t.Errorf("key metrics %s", b)
	}
}

func TestAggregateErrors(t *testing.T) {
	for _, in := range []string{`[1]`, `"x"`, `{"_ng_task_index":"3"}`, `{"_ng_task_index":1.5}`, `{bad`} {
		if _, err := Aggregate(rows(in), MetricsHooks{}); err == nil {
			t.Errorf("Aggregate(%s): want an error", in)
		}
	}
}

// TestProfilerIsAggregate: over one agent's rollouts added in key order,
// the Profiler computes exactly Aggregate's groups and agent metrics.
func TestProfilerIsAggregate(t *testing.T) {
	in := []struct {
		task, rollout int64
		raw           string
	}{
		{0, 0, `{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1,"response":{"usage":{"output_tokens":20}}}`},
		{0, 1, `{"_ng_task_index":0,"_ng_rollout_index":1,"reward":0.5,"parse_failed":false,"response":{"usage":{"output_tokens":30}}}`},
		{2, 0, `{"_ng_task_index":2,"_ng_rollout_index":0,"reward":0.0,"parse_failed":true,"response":{}}`},
	}
	var raws []string
	p := NewProfiler(ProfileOptions{})
	for _, r := range in {
		raws = append(raws, r.raw)
		if err := p.Add("agent", r.task, r.rollout, []byte(r.raw)); err != nil {
			t.Fatal(err)
		}
	}
	agg, _ := mustAggregate(t, rows(raws...), MetricsHooks{})
	var groups []*Metrics
	if err := p.Groups(func(g *Metrics) error { groups = append(groups, g); return nil }); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(groups)
	want, _ := json.Marshal(agg.GroupLevelMetrics)
	if string(got) != string(want) {
		t.Errorf("groups\n got %s\nwant %s", got, want)
	}
	agents, _ := p.Agents()
	if len(agents) != 1 {
		t.Fatalf("%d agents", len(agents))
	}
	if ref, _ := agents[0].Get("agent_ref"); string(ref.(json.RawMessage)) != `{"name":"agent"}` {
		t.Errorf("agent_ref %s", ref)
	}
	agents[0].Delete("agent_ref")
	// num_repeats is compute_aggregate_metrics' own, not the profile's.
	agg.AgentMetrics.Delete("num_repeats")
	got, _ = agents[0].MarshalJSON()
	want, _ = agg.AgentMetrics.MarshalJSON()
	if string(got) != string(want) {
		t.Errorf("agent metrics\n got %s\nwant %s", got, want)
	}
}

// TestProfilerOrder: rollouts added in any order are profiled in (task,
// rollout) order, columns included; agents come in name order; the sample
// and expected count come from the options.
func TestProfilerOrder(t *testing.T) {
	type rollout struct {
		agent         string
		task, rollout int64
		raw           string
	}
	add := func(p *Profiler, rs []rollout) {
		for _, r := range rs {
			if err := p.Add(r.agent, r.task, r.rollout, []byte(r.raw)); err != nil {
				t.Fatal(err)
			}
		}
	}
	sorted := []rollout{
		{"zed", 0, 0, `{"reward":1.0,"a":1}`},
		{"zed", 0, 1, `{"reward":0.0,"b":2}`},
		{"amy", 1, 0, `{"c":3,"reward":1.0}`},
		{"zed", 2, 0, `{"reward":0.5}`},
	}
	shuffled := []rollout{sorted[2], sorted[3], sorted[1], sorted[0]}
	opts := ProfileOptions{
		Sample: func(task int64) (json.RawMessage, error) {
			return json.RawMessage(fmt.Sprintf(`{"task":%d}`, task)), nil
		},
		Expected: func(task int64) int { return 4 },
	}
	dump := func(rs []rollout) string {
		p := NewProfiler(opts)
		add(p, rs)
		var b strings.Builder
		p.Groups(func(g *Metrics) error {
			j, _ := g.MarshalJSON()
			b.Write(append(j, '\n'))
			return nil
		})
		agents, _ := p.Agents()
		j, _ := json.Marshal(agents)
		b.Write(j)
		return b.String()
	}
	want := dump(sorted)
	if got := dump(shuffled); got != want {
		t.Errorf("added out of order:\n%s\nin order:\n%s", got, want)
	}
	for _, s := range []string{
		`{"_ng_task_index":0,"mean/reward":0.5,"mean/a":1.0,"mean/b":2.0,`,
		`"sample":{"task":0},"num_rollouts":2,"expected_num_rollouts":4,"missing_num_rollouts":2,"reward_profile_completion_pct":50.0,`,
		`[{"mean/reward":1.0,"mean/c":3.0,"max/reward":1.0,"max/c":3.0,"min/reward":1.0,"min/c":3.0,"median/reward":1.0,"median/c":3.0,"std/reward":0.0,"std/c":0.0,"agent_ref":{"name":"amy"}},{"mean/reward":0.5,`,
		`"std/reward":0.5,"mean_across_repeats/mean/a":1.0,`,
		`"mean_across_repeats/mean/reward":0.375,"median_across_repeats/mean/reward":0.375,"std_across_repeats/mean/reward":0.5303300858899106,"min_across_repeats/mean/reward":0.0,"max_across_repeats/mean/reward":0.75,`,
		`"se_across_repeats/mean/b":0.0,"agent_ref":{"name":"zed"}}]`,
	} {
		if !strings.Contains(want, s) {
			t.Errorf("profile lacks %s:\n%s", s, want)
		}
	}
	if err := NewProfiler(opts).Add("a", 0, 0, []byte(`[1]`)); err == nil {
		t.Error("Add of an array: want an error")
	}
}

func BenchmarkAggregate10k(b *testing.B) {
	in := make([]json.RawMessage, 10000)
	for i := range in {
		in[i] = json.RawMessage(fmt.Sprintf(`{"_ng_task_index":%d,"_ng_rollout_index":%d,"reward":%d.0,"extracted_answer":"%c","library_reward":%d.0,"judge_evaluations":null,"response":{"usage":{"input_tokens":%d,"output_tokens":%d,"total_tokens":%d,"input_tokens_details":{"cached_tokens":0}}}}`,
			i/8, i%8, i%3%2, 'A'+i%4, i%2, 200+i%50, 1000+i%700, 1200+i%750))
	}
	hooks := MetricsHooks{ComputeMetrics: func(tasks Tasks) (*Metrics, error) { return PassMajorityMetrics(tasks, nil, "extracted_answer") }}
	b.ReportAllocs()
	for b.Loop() {
		agg, err := Aggregate(in, hooks)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := agg.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}
