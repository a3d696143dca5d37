package rollout

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestParseShard(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Shard
	}{
		{"0/1", Shard{0, 1}},
		{"2/4", Shard{2, 4}},
		{" 1 / 3 ", Shard{1, 3}},
	} {
		got, err := ParseShard(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if again, err := ParseShard(got.String()); err != nil || again != got {
			t.Errorf("%v does not survive String: %q gives %v, %v", got, got.String(), again, err)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"3/2", "the index must be from 0 to 1"},
		{"2/2", "the index must be from 0 to 1"},
		{"-1/4", "the index must be from 0 to 3"},
		{"0/0", "the count must be at least 1"},
		{"0/-2", "the count must be at least 1"},
		{"a/b", "I/N"},
		{"1", "I/N"},
		{"", "I/N"},
		{"1/2/3", "I/N"},
		{"1.5/3", "I/N"},
	} {
		_, err := ParseShard(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseShard(%q): %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
}

// shardInput has identical lines (one task, several rollouts), a row with
// its own task index and, past the limit, rows a limited run never reads.
const shardInput = `{"responses_create_params":{},"q":0}
{"responses_create_params":{},"q":1}
{"responses_create_params":{},"q":0}
{"responses_create_params":{},"q":2}
{"responses_create_params":{},"q":3,"_ng_task_index":10}
{"responses_create_params":{},"q":4}
{"responses_create_params":{},"q":5}
{"responses_create_params":{},"q":6}
`

// The shards of a run are disjoint, keep every repeat of a task together,
// and together are exactly the unsharded run, indices and all; a limit
// applies before the shard.
func TestMaterializeShards(t *testing.T) {
	for _, limit := range []int{0, 6} {
		dir := t.TempDir()
		base := MaterializeOptions{InputPath: writeFile(t, dir, "in.jsonl", shardInput), AgentName: "a", Limit: limit, Repeats: Repeats{All: 2}}
		materialize := func(shard Shard) ([]string, MaterializeStats) {
			o := base
			o.Shard = shard
			o.OutputPath = filepath.Join(dir, "out_"+strings.ReplaceAll(shard.String(), "/", "_")+".jsonl")
			stats, err := Materialize(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(o.OutputPath)
			return strings.SplitAfter(string(data), "\n"), stats
		}
		whole, wholeStats := materialize(Shard{})
		const n = 3
		var union []string
		tasks := 0
		for i := range n {
			lines, stats := materialize(Shard{i, n})
			for _, l := range lines {
				if l == "" {
					continue
				}
				if task := gjson.Get(l, TaskIndexKey).Int(); task%n != int64(i) {
					t.Errorf("limit %d: shard %d/%d holds task %d: %s", limit, i, n, task, l)
				}
				union = append(union, l)
			}
			if stats.Rows != wholeStats.Rows || stats.Rollouts != len(lines)-1 {
				t.Errorf("limit %d: shard %d/%d stats %+v for %d rollouts of %d rows", limit, i, n, stats, len(lines)-1, wholeStats.Rows)
			}
			tasks += stats.Tasks
		}
		slices.Sort(union)
		whole = slices.DeleteFunc(whole, func(l string) bool { return l == "" })
		slices.Sort(whole)
		if !slices.Equal(union, whole) {
			t.Errorf("limit %d: the shards together are\n%s\nthe unsharded run is\n%s", limit, strings.Join(union, ""), strings.Join(whole, ""))
		}
		if tasks != wholeStats.Tasks {
			t.Errorf("limit %d: the shards count %d tasks, the unsharded run %d", limit, tasks, wholeStats.Tasks)
		}
		if want := map[int]int{0: 7, 6: 5}[limit]; wholeStats.Tasks != want {
			t.Errorf("limit %d: %d tasks, want %d", limit, wholeStats.Tasks, want)
		}
	}
}

// A pre-empted shard resumes into exactly its own rollouts; resuming it
// with another shard is refused before anything runs, since it would run
// rollouts another shard owns.
func TestRunShardResume(t *testing.T) {
	agent := fakeAgent(t, nil)
	dir := t.TempDir()
	o := runOptions(t, dir, writeFile(t, dir, "in.jsonl", rows(9, "agent")), agent.URL)
	o.Materialize.Shard = Shard{1, 3}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	full, _ := os.ReadFile(o.Paths.Output)
	lines := strings.SplitAfter(string(full), "\n")
	if len(lines) != 4 {
		t.Fatalf("shard 1/3 of 9 tasks wrote %q, want 3 rollouts", full)
	}
	writeFile(t, dir, filepath.Base(o.Paths.Output), lines[0])

	o.Resume = true
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Cached != 1 || res.Summary.Dispatched != 2 {
		t.Errorf("resume: %+v, want 1 cached and 2 run", res.Summary)
	}
	var got []int64
	for _, r := range readLines(t, o.Paths.Output) {
		got = append(got, r.Get(TaskIndexKey).Int())
	}
	slices.Sort(got)
	if !slices.Equal(got, []int64{1, 4, 7}) {
		t.Errorf("after resume the shard holds tasks %v, want [1 4 7]", got)
	}

	for _, other := range []Shard{{0, 3}, {1, 2}} {
		o.Materialize.Shard = other
		_, err = Run(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), "shard "+other.String()) || !strings.Contains(err.Error(), "without --resume") {
			t.Errorf("resume as shard %v: %v, want an error naming the shard and the fix", other, err)
		}
	}
}

// A requeued array task cannot know whether its first run wrote anything:
// --resume with nothing to resume is a fresh run.
func TestResumeWithNothingToResumeStartsFresh(t *testing.T) {
	agent := fakeAgent(t, nil)
	dir := t.TempDir()
	o := runOptions(t, dir, writeFile(t, dir, "in.jsonl", rows(6, "agent")), agent.URL)
	o.Resume = true
	var log strings.Builder
	o.Log = &log
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Succeeded != 6 || len(readLines(t, o.Paths.Output)) != 6 || !res.MetricsWritten {
		t.Errorf("summary %+v, metrics written %v: want all 6 rollouts run and scored", res.Summary, res.MetricsWritten)
	}
	if !strings.Contains(log.String(), "starting from the beginning") {
		t.Errorf("log %q does not say the run starts afresh", log.String())
	}
}
