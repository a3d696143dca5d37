package rollout

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/resources"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestAggregateBytes")

// Shards of a run with two agents, out of order, with repeats, a rollout
// written twice, usage, ng_perf, a column that turns float or appears
// late, a blank line and a row that is not compact.
const (
	shard0 = `{"agent_ref":{"name":"b"},"_ng_task_index":2,"_ng_rollout_index":1,"reward":1,"response":{"output":[{"type":"message"}],"usage":{"input_tokens":5,"output_tokens":7}},"responses_create_params":{"input":"x"},"extracted_answer":"A"}
{"agent_ref":{"name":"a"},"_ng_task_index":1,"_ng_rollout_index":0,"reward":0.5,"response":{"usage":{"input_tokens":3,"output_tokens":4}},"extracted_answer":"B","n":1}

{"agent_ref": {"name": "a"}, "_ng_task_index": 0, "_ng_rollout_index": 1, "reward": true, "flag": false, "extracted_answer": "A", "n": 2}
{"agent_ref":{"name":"b"},"_ng_task_index":0,"_ng_rollout_index":0,"reward":0,"ng_perf":{"num_turns":2,"completion_tokens":9,"total_latency_ms":3.5},"extracted_answer":"C"}
`
	shard1 = `{"agent_ref":{"name":"a"},"_ng_task_index":0,"_ng_rollout_index":0,"reward":1,"n":2.5,"extracted_answer":"A","ng_trajectory":[1,2,3]}
{"agent_ref":{"name":"a"},"_ng_task_index":1,"_ng_rollout_index":0,"reward":0.5,"response":{"usage":{"input_tokens":3,"output_tokens":4}},"extracted_answer":"B","n":1}
{"agent_ref":{"name":"b"},"_ng_task_index":2,"_ng_rollout_index":0,"reward":0,"extracted_answer":"A","ng_perf":{"num_turns":1,"completion_tokens":4,"total_latency_ms":1}}
{"agent_ref":{"name":"a"},"_ng_task_index":3,"_ng_rollout_index":1,"reward":0,"late":3,"extracted_answer":"D"}
{"agent_ref":{"name":"b"},"_ng_task_index":1,"_ng_rollout_index":0,"reward":1,"extracted_answer":"B"}
`
	// In order for longer than a sorter holds in the test's second run,
	// then out of order: located again in a second pass.
	lateDisorder = `{"agent_ref":{"name":"a"},"_ng_task_index":0,"_ng_rollout_index":0,"reward":1,"extracted_answer":"A"}
{"agent_ref":{"name":"a"},"_ng_task_index":1,"_ng_rollout_index":0,"reward":0,"extracted_answer":"B"}
{"agent_ref":{"name":"a"},"_ng_task_index":2,"_ng_rollout_index":0,"reward":1,"extracted_answer":"C"}
{"agent_ref":{"name":"a"},"_ng_task_index":0,"_ng_rollout_index":1,"reward":0,"extracted_answer":"D"}
`
)

// TestAggregateBytes: what `gym eval aggregate` writes, to the byte, for
// shards aggregated as they are (out of order) and merged first (in
// order), by a resources server without hooks, with compute_metrics hooks,
// and through the HTTP route; and the errors for bad lines. The golden
// files were written by the aggregation before it streamed (-update
// rewrites them).
func TestAggregateBytes(t *testing.T) {
	verify := func(context.Context, *resources.VerifyRequest) (*resources.Verdict, error) {
		return &resources.Verdict{}, nil
	}
	plain, err := resources.Handler(resources.Options{Verify: verify})
	if err != nil {
		t.Fatal(err)
	}
	hooked, err := resources.Handler(resources.Options{Verify: verify, Metrics: resources.MetricsHooks{
		ComputeMetrics: func(tasks resources.Tasks) (*resources.Metrics, error) {
			return resources.PassMajorityMetrics(tasks, nil, "extracted_answer")
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	route := http.HandlerFunc(plain.ServeHTTP) // only the route, not the handler's own aggregation
	tests := []struct {
		name    string
		shards  []string
		merge   bool
		handler http.Handler
	}{
		{"shards", []string{shard0, shard1}, false, plain},
		{"merged", []string{shard0, shard1}, true, plain},
		{"merged_hooks", []string{shard0, shard1}, true, hooked},
		{"shards_hooks", []string{shard0, shard1}, false, hooked},
		{"merged_route", []string{shard0, shard1}, true, route},
		{"baseline", []string{shard1, shard0}, true, nil},
		{"late_disorder", []string{lateDisorder}, false, plain},
		{"late_disorder_merged", []string{lateDisorder}, true, plain},
		{"bad_line", []string{shard0, shard1 + "{\"agent_ref\":{\"name\":\"a\"},bad\n"}, false, plain},
		{"bad_line_merge", []string{shard0 + "{bad\n", shard1}, true, plain},
		{"no_agent", []string{shard0 + `{"_ng_task_index":9,"_ng_rollout_index":0,"reward":1}` + "\n"}, false, plain},
		{"bad_reward", []string{shard1 + `{"agent_ref":{"name":"a"},"_ng_task_index":9,"_ng_rollout_index":0,"reward":"1"}` + "\n"}, false, plain},
		{"bad_index", []string{`{"agent_ref":{"name":"a"},"_ng_task_index":1.5,"_ng_rollout_index":0,"reward":1}` + "\n"}, false, plain},
		{"bad_index_baseline", []string{`{"agent_ref":{"name":"a"},"_ng_task_index":1.5,"_ng_rollout_index":0,"reward":1}` + "\n"}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var files []string
			for i, s := range tt.shards {
				files = append(files, writeFile(t, dir, "shard_"+string(rune('0'+i))+".jsonl", s))
			}
			got := aggregateForTest(dir, files, tt.merge, tt.handler)
			// Sorters that spill every two rollouts write the same.
			defer func(n int) { sortChunk = n }(sortChunk)
			sortChunk = 2
			if spilled := aggregateForTest(dir, files, tt.merge, tt.handler); spilled != got {
				t.Errorf("sorted in runs of 2:\n%s\nin memory:\n%s", spilled, got)
			}
			golden := filepath.Join("testdata", "aggregate", tt.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("got:\n%s\nwant (%s):\n%s", got, golden, want)
			}
		})
	}
}

// aggregateForTest runs what `gym eval aggregate` runs and returns the
// merged file, what was printed and the metrics file, or the error; dir is
// written $DIR.
func aggregateForTest(dir string, files []string, merge bool, h http.Handler) string {
	var out bytes.Buffer
	output := filepath.Join(dir, "all.jsonl")
	run := func() error {
		if merge {
			if _, err := MergeShards(files, output); err != nil {
				return err
			}
			merged, err := os.ReadFile(output)
			if err != nil {
				return err
			}
			out.WriteString("merged:\n")
			out.Write(merged)
			files = []string{output}
		}
		rows, err := ReadMetricsRows(dir, files...)
		if err != nil {
			return err
		}
		if h == nil {
			h = baselineMetrics{}
		}
		handler := func(string) (http.Handler, error) { return h, nil }
		path := PathsFor(output).Metrics
		if _, err := WriteAggregateMetrics(context.Background(), rows, InProcess{Handler: handler}, path, &out); err != nil {
			return err
		}
		metrics, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out.WriteString("metrics:\n")
		out.Write(metrics)
		return nil
	}
	if err := run(); err != nil {
		out.WriteString("error: " + err.Error() + "\n")
	}
	return strings.ReplaceAll(out.String(), dir, "$DIR")
}

// Rollouts already in order are indexed without spilling a thing: with
// no temporary directory to write to, neither the system's nor the one
// given for stripped rows, any number of them is read.
func TestInOrderRowsNeedNoSpill(t *testing.T) {
	dir := t.TempDir()
	defer func(n int) { sortChunk = n }(sortChunk)
	sortChunk = 4
	t.Setenv("TMPDIR", filepath.Join(dir, "missing"))
	for _, rows := range []int{3, 4, 5, 9} {
		var b strings.Builder
		for i := range rows {
			fmt.Fprintf(&b, `{"agent_ref":{"name":"a"},"_ng_task_index":%d,"_ng_rollout_index":0,"reward":1}`+"\n", i)
		}
		m, err := ReadMetricsRows(filepath.Join(dir, "missing"), writeFile(t, dir, fmt.Sprintf("r%d.jsonl", rows), b.String()))
		if err != nil {
			t.Fatalf("%d rows in order: %v", rows, err)
		}
		m.Close()
	}
}
