package rollout

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/resources"
)

// BenchmarkMaterialize: rows materialized per second, with an override
// merged and two repeats each.
func BenchmarkMaterialize(b *testing.B) {
	dir := b.TempDir()
	var in strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&in, `{"responses_create_params":{"input":[{"role":"user","content":"question %d with some words in it"}]},"expected_answer":"%d"}`+"\n", i, i)
	}
	input := writeFile(b, dir, "in.jsonl", in.String())
	o := MaterializeOptions{InputPath: input, OutputPath: filepath.Join(dir, "out.jsonl"), AgentName: "agent",
		Repeats: Repeats{All: 2}, Overrides: []byte(`{"temperature":0.7}`)}
	b.SetBytes(int64(in.Len()))
	b.ResetTimer()
	for range b.N {
		if _, err := Materialize(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkCollect: the collector's own cost per rollout against an agent
// that answers at once (dispatch, stamping, routing, durable appends).
func BenchmarkCollect(b *testing.B) {
	agent := fakeAgent(b, nil)
	dir := b.TempDir()
	const n = 5000
	input := writeFile(b, dir, "in.jsonl", rows(n, "agent"))
	b.ResetTimer()
	for range b.N {
		o := runOptions(b, dir, input, agent.URL)
		o.Collect.Concurrency = 64
		o.Aggregator = nil
		if _, err := Run(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rollouts/s")
}

// BenchmarkAggregateRequest: streaming the stripped rollouts of a run to
// an aggregator, from a file in (task, rollout) order (a merged one) and
// from one as collection writes it (each pair of tasks swapped), whose
// rollouts are located one by one.
func BenchmarkAggregateRequest(b *testing.B) {
	for _, order := range []struct {
		name string
		task func(i int) int
	}{{"in-order", func(i int) int { return i }}, {"collected", func(i int) int { return i ^ 1 }}} {
		b.Run(order.name, func(b *testing.B) {
			dir := b.TempDir()
			var out strings.Builder
			for i := range 20000 {
				fmt.Fprintf(&out, `{"responses_create_params":{"input":"q"},"response":{"output":[{"type":"message","content":[{"type":"output_text","text":"%s"}]}],"usage":{"input_tokens":10,"output_tokens":20}},"reward":1,"agent_ref":{"name":"agent"},"_ng_task_index":%d,"_ng_rollout_index":0}`+"\n", strings.Repeat("x", 500), order.task(i))
			}
			path := writeFile(b, dir, "out.jsonl", out.String())
			agg := countingAggregator{}
			b.SetBytes(int64(out.Len()))
			b.ResetTimer()
			for range b.N {
				rows, err := ReadMetricsRows(dir, path)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := WriteAggregateMetrics(context.Background(), rows, agg, filepath.Join(dir, "m.json"), discard{}); err != nil {
					b.Fatal(err)
				}
				rows.Close()
			}
			os.Remove(filepath.Join(dir, "m.json"))
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// countingAggregator reads the whole body and answers with its row count.
type countingAggregator struct{}

func (countingAggregator) AggregateMetrics(_ context.Context, _ string, in AggregateInput, reply io.Writer) error {
	rc := in.Body()
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	n := len(gjson.GetBytes(data, "verify_responses").Array())
	_, err = fmt.Fprintf(reply, `{"agent_metrics":{"n":%d},"key_metrics":{"n":%d},"group_level_metrics":[]}`, n, n)
	return err
}

// BenchmarkAggregateMemory: `gym eval aggregate`'s work (merge four shards
// written out of order, then the metrics of a Go resources server, without
// hooks, with a compute_metrics hook, or with model-call capture's ng_perf)
// over recorded rollouts, each made distinct; reports the peak of the heap
// (live and not yet collected), sampled every millisecond, in bytes per
// rollout and in MiB, which must not grow with the rollouts.
func BenchmarkAggregateMemory(b *testing.B) {
	recorded, err := os.ReadFile("../../resources_servers/example_single_tool_call/data/example_rollouts.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(recorded)), "\n")
	verify := func(context.Context, *resources.VerifyRequest) (*resources.Verdict, error) {
		return &resources.Verdict{}, nil
	}
	plain, err := resources.Handler(resources.Options{Verify: verify})
	if err != nil {
		b.Fatal(err)
	}
	// mcqa's and math_with_judge's compute_metrics hook, which reads the
	// rollouts twice, a task at a time.
	hooked, err := resources.Handler(resources.Options{Verify: verify, Metrics: resources.MetricsHooks{
		ComputeMetrics: func(tasks resources.Tasks) (*resources.Metrics, error) {
			return resources.PassMajorityMetrics(tasks, nil, "extracted_answer")
		},
	}})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		h    http.Handler
		n    int
	}{{"plain", plain, 10000}, {"plain", plain, 100000}, {"hooks", hooked, 10000}, {"hooks", hooked, 100000}, {"hooks", hooked, 400000},
		{"perf", plain, 10000}, {"perf", plain, 100000}, {"perf", plain, 400000}} {
		h, n := c.h, c.n
		b.Run(c.name+"/"+strconv.Itoa(n), func(b *testing.B) {
			dir := b.TempDir()
			var shards [4]strings.Builder
			for i := n - 1; i >= 0; i-- {
				task := i / 4
				row := `{"agent_ref":{"name":"agent"},"_ng_task_index":` + strconv.Itoa(task) + `,"_ng_rollout_index":` + strconv.Itoa(i%4) +
					`,"id":` + strconv.Itoa(i) + `,"extracted_answer":"` + string(rune('A'+i%3)) + `",` + lines[i%len(lines)][1:]
				if c.name == "perf" { // model-call capture's ng_perf
					row = row[:len(row)-1] + `,"ng_perf":{"num_turns":` + strconv.Itoa(1+i%3) + `,"prompt_tokens":` + strconv.Itoa(100+i%97) +
						`,"completion_tokens":` + strconv.Itoa(i%53) + `,"total_latency_ms":` + strconv.FormatFloat(float64(i%1000)/7, 'f', -1, 64) + `}}`
				}
				shards[task%4].WriteString(row + "\n")
			}
			var files []string
			for i := range shards {
				files = append(files, writeFile(b, dir, "shard_"+strconv.Itoa(i)+".jsonl", shards[i].String()))
			}
			output := filepath.Join(dir, "all.jsonl")
			b.ResetTimer()
			var peak uint64
			for range b.N {
				runtime.GC()
				stop := sampleHeap(&peak)
				if _, err := MergeShards(files, output); err != nil {
					b.Fatal(err)
				}
				rows, err := ReadMetricsRows(dir, output)
				if err != nil {
					b.Fatal(err)
				}
				agg := InProcess{Handler: func(string) (http.Handler, error) { return h, nil }}
				if _, err := WriteAggregateMetrics(context.Background(), rows, agg, PathsFor(output).Metrics, discard{}); err != nil {
					b.Fatal(err)
				}
				rows.Close()
				stop()
			}
			b.ReportMetric(float64(peak)/float64(n), "peak-heap-B/row")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/row")
		})
	}
}

// sampleHeap records the largest live heap (runtime/metrics' heap objects)
// into peak until the returned stop is called.
func sampleHeap(peak *uint64) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			*peak = max(*peak, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

// BenchmarkIndentStream: laying out a metrics file of 10k tasks' group
// metrics, as WriteAggregateMetrics does.
func BenchmarkIndentStream(b *testing.B) {
	var doc strings.Builder
	doc.WriteString(`[{"agent_ref":{"name":"agent"},"group_level_metrics":[`)
	for i := range 10000 {
		if i > 0 {
			doc.WriteByte(',')
		}
		fmt.Fprintf(&doc, `{"_ng_task_index":%d,"mean/reward":0.5,"max/reward":1,"min/reward":0,"median/reward":0.5,"std/reward":0.5,"mean/input_tokens":88.0,"mean/output_tokens":%d}`, i, i%97)
	}
	doc.WriteString(`],"key_metrics":{"mean/reward":0.5}}]`)
	src := doc.String()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if err := indentStream(io.Discard, strings.NewReader(src), "  "); err != nil {
			b.Fatal(err)
		}
	}
}
