package resources

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// eachRow yields rows, as a caller of AggregateRows that reads them from a
// file again on each call.
func eachRow(in []json.RawMessage) func(yield func([]byte) error) error {
	return func(yield func([]byte) error) error {
		for _, r := range in {
			if err := yield(bytes.Clone(r)); err != nil {
				return err
			}
		}
		return nil
	}
}

// aggregateBothWays gives Aggregate's reply (or error) and AggregateRows'.
func aggregateBothWays(in []json.RawMessage, hooks MetricsHooks) (want, got string, wantErr, gotErr error) {
	if agg, err := Aggregate(in, hooks); err != nil {
		wantErr = err
	} else {
		b, err := agg.MarshalJSON()
		want, wantErr = string(b), err
	}
	var buf bytes.Buffer
	gotErr = AggregateRows(eachRow(in), hooks, "", &buf)
	return want, buf.String(), wantErr, gotErr
}

// AggregateRows writes Aggregate's bytes, streamed (rows in task order, a
// hook reading them again by task) or not (out of order).
func TestAggregateRowsIsAggregate(t *testing.T) {
	keyHook := MetricsHooks{KeyMetrics: func(agent *Metrics) *Metrics {
		k := NewMetrics()
		v, _ := agent.Get("max/reward")
		k.Set("max/reward", v)
		return k
	}}
	computeHook := MetricsHooks{ComputeMetrics: func(tasks Tasks) (*Metrics, error) { return PassMajorityMetrics(tasks, nil, "answer") }}
	subsetHook := MetricsHooks{ComputeMetrics: func(tasks Tasks) (*Metrics, error) { return SubsetMetrics(tasks, "kind", nil, "answer") }}
	// A hook that reads the tasks twice and sets a metric on each task's
	// group, and one on a task that has none.
	perTaskHook := MetricsHooks{ComputeMetrics: func(tasks Tasks) (*Metrics, error) {
		var list []*Metrics
		for range 2 {
			list = list[:0]
			err := tasks(func(task []Rollout) error {
				pt := NewMetrics()
				pt.Set(TaskIndexKey, task[0].TaskIndex)
				pt.Set("rollouts_seen", int64(len(task)))
				list = append(list, pt)
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		ghost := NewMetrics()
		ghost.Set(TaskIndexKey, int64(99))
		ghost.Set("rollouts_seen", int64(1))
		m := NewMetrics()
		m.Set("tasks_seen", int64(len(list)))
		m.Set("per_task_metrics", append(list, ghost))
		return m, nil
	}}
	tests := []struct {
		name  string
		hooks MetricsHooks
		rows  []string
	}{
		{"empty", MetricsHooks{}, nil},
		{"one", MetricsHooks{}, []string{`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1}`}},
		{"repeats and usage", MetricsHooks{}, []string{
			`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1,"response":{"usage":{"input_tokens":10,"output_tokens":20,"input_tokens_details":{"cached_tokens":0}}}}`,
			`{"_ng_task_index":0,"_ng_rollout_index":1,"reward":0.5,"response":{"usage":{"input_tokens":11,"output_tokens":21}}}`,
			`{"_ng_task_index":1,"_ng_rollout_index":0,"reward":0,"response":{"usage":{"input_tokens":12,"output_tokens":22}}}`,
			`{"_ng_task_index":1,"_ng_rollout_index":1,"reward":1,"response":{"usage":{"input_tokens":13,"output_tokens":23}}}`,
			`{"_ng_task_index":5,"_ng_rollout_index":1,"reward":true,"response":{"usage":{"input_tokens":14,"output_tokens":24}}}`,
		}},
		// A float, a missing value and a new column after the first task
		// turn a column's max and min into floats in every group.
		{"late floats and columns", MetricsHooks{}, []string{
			`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1,"n":3}`,
			`{"_ng_task_index":0,"_ng_rollout_index":1,"reward":0,"n":4}`,
			`{"_ng_task_index":1,"_ng_rollout_index":0,"reward":1,"n":2.5,"late":7,"flag":false}`,
			`{"_ng_task_index":2,"_ng_rollout_index":0,"reward":1,"flag":true}`,
		}},
		{"duplicate rows and rollout order within a task", MetricsHooks{}, []string{
			`{"_ng_task_index":0,"_ng_rollout_index":2,"reward":1}`,
			`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":0}`,
			`{"_ng_task_index":0,"_ng_rollout_index":2,"reward":1}`,
			`{"_ng_task_index":3,"_ng_rollout_index":0,"reward":0.25}`,
			`{"_ng_task_index":3,"_ng_rollout_index":0,"reward":0.25}`,
		}},
		{"no indices", MetricsHooks{}, []string{`{"reward":1}`, `{"reward":0,"_ng_task_index":null}`}},
		{"repeated key", MetricsHooks{}, []string{`{"_ng_task_index":0,"reward":1,"reward":0,"x":1}`, `{"_ng_task_index":0,"_ng_rollout_index":1,"reward":1}`}},
		{"perf", MetricsHooks{}, []string{
			`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1,"ng_perf":{"num_turns":2,"completion_tokens":40,"total_latency_ms":12.5,"token_observability_coverage":1}}`,
			`{"_ng_task_index":1,"_ng_rollout_index":0,"reward":0}`,
			`{"_ng_task_index":2,"_ng_rollout_index":0,"reward":0,"ng_perf":{"num_turns":1,"completion_tokens":10,"total_latency_ms":3}}`,
		}},
		{"key hook", keyHook, []string{`{"_ng_task_index":0,"reward":1}`, `{"_ng_task_index":1,"reward":0}`}},
		{"out of task order", MetricsHooks{}, []string{
			`{"_ng_task_index":3,"_ng_rollout_index":1,"reward":1,"x":1}`,
			`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":0,"x":2.5}`,
			`{"_ng_task_index":3,"_ng_rollout_index":0,"reward":0}`,
		}},
		{"compute hook", computeHook, []string{
			`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1,"answer":"A"}`,
			`{"_ng_task_index":0,"_ng_rollout_index":1,"reward":0,"answer":"B"}`,
			`{"_ng_task_index":1,"_ng_rollout_index":0,"reward":1,"answer":"A"}`,
		}},
		{"subset hook", subsetHook, []string{
			`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1,"answer":"A","kind":"x"}`,
			`{"_ng_task_index":0,"_ng_rollout_index":1,"reward":0,"answer":"B","kind":"x"}`,
			`{"_ng_task_index":1,"_ng_rollout_index":0,"reward":1,"answer":"A","kind":"y"}`,
			`{"_ng_task_index":2,"_ng_rollout_index":0,"reward":0,"answer":null,"kind":"x"}`,
		}},
		{"per-task hook", perTaskHook, []string{
			`{"_ng_task_index":0,"_ng_rollout_index":1,"reward":1}`,
			`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":0}`,
			`{"_ng_task_index":4,"_ng_rollout_index":0,"reward":1}`,
			`{"_ng_task_index":7,"_ng_rollout_index":0,"reward":1}`,
			`{"_ng_task_index":7,"_ng_rollout_index":1,"reward":1}`,
			`{"_ng_task_index":7,"_ng_rollout_index":0,"reward":1}`,
		}},
		{"per-task hook, rows out of order", perTaskHook, []string{
			`{"_ng_task_index":7,"_ng_rollout_index":0,"reward":1}`,
			`{"_ng_task_index":0,"_ng_rollout_index":1,"reward":1}`,
			`{"_ng_task_index":7,"_ng_rollout_index":1,"reward":0}`,
		}},
		{"bad JSON", MetricsHooks{}, []string{`{"_ng_task_index":0,"reward":1}`, `{bad`}},
		{"not an object", MetricsHooks{}, []string{`[1]`}},
		{"bad index", MetricsHooks{}, []string{`{"_ng_task_index":0}`, `{"_ng_task_index":1.5}`}},
		{"bad index after disorder", MetricsHooks{}, []string{`{"_ng_task_index":2}`, `{"_ng_task_index":1}`, `{"_ng_rollout_index":"x"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, got, wantErr, gotErr := aggregateBothWays(rows(tt.rows...), tt.hooks)
			if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
				t.Fatalf("error %v, Aggregate's %v", gotErr, wantErr)
			}
			if wantErr == nil && got != want {
				t.Errorf("AggregateRows:\n%s\nAggregate:\n%s", got, want)
			}
		})
	}
}

// Columns long enough to be spilled in blocks give the same statistics.
func TestAggregateRowsSpilled(t *testing.T) {
	var in []string
	for i := range 3 * 1024 * 3 / 2 {
		in = append(in, fmt.Sprintf(`{"_ng_task_index":%d,"_ng_rollout_index":%d,"reward":%d,"tokens":%d.%d,"odd":%d}`, i/3, i%3, i%2, i*7%1000, i%10, i%5))
		if i%5 == 0 {
			in[len(in)-1] = in[len(in)-1][:len(in[len(in)-1])-len(fmt.Sprint(i%5))-8] + "}"
		}
	}
	dir := t.TempDir()
	want, _, _, _ := aggregateBothWays(rows(in...), MetricsHooks{})
	var got bytes.Buffer
	if err := AggregateRows(eachRow(rows(in...)), MetricsHooks{}, dir, &got); err != nil {
		t.Fatal(err)
	}
	if got.String() != want {
		t.Errorf("spilled:\n%.2000s\nAggregate:\n%.2000s", got.String(), want)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// Many repeats (more than are read one at a time) give the same statistics.
func TestAggregateRowsManyRepeats(t *testing.T) {
	var in []string
	for i := range 3000 {
		in = append(in, fmt.Sprintf(`{"_ng_task_index":%d,"_ng_rollout_index":%d,"reward":%d.%d}`, i/40, i%40, i%3, i%7))
	}
	want, _, _, _ := aggregateBothWays(rows(in...), MetricsHooks{})
	var got bytes.Buffer
	if err := AggregateRows(eachRow(rows(in...)), MetricsHooks{}, t.TempDir(), &got); err != nil {
		t.Fatal(err)
	}
	if got.String() != want {
		t.Errorf("AggregateRows:\n%.2000s\nAggregate:\n%.2000s", got.String(), want)
	}
}

// The handler's in-process aggregation answers what its route answers.
func TestHandlerAggregateRowsIsTheRoute(t *testing.T) {
	h, err := Handler(Options{
		Verify:  func(context.Context, *VerifyRequest) (*Verdict, error) { return &Verdict{}, nil },
		Metrics: MetricsHooks{KeyMetrics: func(agent *Metrics) *Metrics { return agent }},
	})
	if err != nil {
		t.Fatal(err)
	}
	in := rows(`{"_ng_task_index":0,"reward":1}`, `{"_ng_task_index":0,"_ng_rollout_index":1,"reward":0}`, `{"_ng_task_index":4,"reward":1,"x":2}`)
	body, _ := json.Marshal(map[string]any{"verify_responses": in})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/aggregate_metrics", bytes.NewReader(body)))
	ra, ok := h.(RowAggregator)
	if !ok {
		t.Fatalf("the handler (%T) is not a RowAggregator", h)
	}
	var got bytes.Buffer
	if err := ra.AggregateRows(eachRow(in), t.TempDir(), &got); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusOK || got.String() != rec.Body.String() {
		t.Errorf("AggregateRows:\n%s\nthe route (%d):\n%s", got.String(), rec.Code, rec.Body.String())
	}
	err = ra.AggregateRows(eachRow(rows(`{"_ng_task_index":1.5}`)), "", &got)
	if err == nil || !strings.HasPrefix(err.Error(), "aggregate_metrics: verify_responses[0]._ng_task_index must be an integer") {
		t.Errorf("a bad row: %v", err)
	}
}

// FuzzAggregateRows: any rows, in any order, give Aggregate's reply or its
// error.
func FuzzAggregateRows(f *testing.F) {
	f.Add("{\"_ng_task_index\":0,\"reward\":1}\n{\"_ng_task_index\":0,\"_ng_rollout_index\":1,\"reward\":0.5,\"x\":true}\n{\"_ng_task_index\":2,\"reward\":1,\"response\":{\"usage\":{\"t\":3}}}")
	f.Add("{\"_ng_task_index\":1,\"_ng_rollout_index\":1,\"r\":1.5}\n{\"_ng_task_index\":0}")
	f.Add("{\"_ng_task_index\":0,\"ng_perf\":{\"num_turns\":2}}\n{\"_ng_task_index\":1,\"n\":2}")
	f.Add("{\"_ng_task_index\":0,\"r\":-0.0}\n{\"_ng_task_index\":0,\"_ng_rollout_index\":1,\"r\":0}\n{\"_ng_task_index\":1,\"r\":-0}")
	f.Fuzz(func(t *testing.T, in string) {
		var lines []string
		if in != "" {
			lines = strings.Split(in, "\n")
		}
		want, got, wantErr, gotErr := aggregateBothWays(rows(lines...), MetricsHooks{})
		if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
			t.Fatalf("error %v, Aggregate's %v", gotErr, wantErr)
		}
		if wantErr == nil && got != want {
			t.Fatalf("AggregateRows:\n%s\nAggregate:\n%s", got, want)
		}
	})
}

// A rows source that fails while a hook reads it fails the aggregate.
func TestAggregateRowsHookReadError(t *testing.T) {
	in := rows(`{"_ng_task_index":0,"reward":1}`, `{"_ng_task_index":1,"reward":0}`)
	broken := errors.New("disk gone")
	readings := 0
	source := func(yield func(row []byte) error) error {
		if readings++; readings == 2 { // the hook's first reading
			return broken
		}
		return eachRow(in)(yield)
	}
	hooks := MetricsHooks{ComputeMetrics: func(tasks Tasks) (*Metrics, error) { return PassMajorityMetrics(tasks, nil, "") }}
	if err := AggregateRows(source, hooks, "", io.Discard); !errors.Is(err, broken) {
		t.Errorf("AggregateRows = %v, want the reading's error", err)
	}
}
