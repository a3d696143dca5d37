package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/progress"
	"github.com/nemo-gym-go/gym/internal/server"
)

// fakeAgent answers /run with the row plus a reward, and /aggregate_metrics
// with the number of rollouts it was given. behave may change a reply.
func fakeAgent(t testing.TB, behave func(row gjson.Result) (status int, body []byte, delay time.Duration)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/run":
			row := gjson.ParseBytes(body)
			status, reply, delay := http.StatusOK, []byte(nil), time.Duration(0)
			if behave != nil {
				status, reply, delay = behave(row)
			}
			if reply == nil {
				reply, _ = sjson.SetBytes(body, "reward", float64(row.Get(TaskIndexKey).Int()%2))
				reply, _ = sjson.DeleteBytes(reply, AgentRefKey)
			}
			time.Sleep(delay)
			w.WriteHeader(status)
			w.Write(reply)
		case "/aggregate_metrics":
			n := len(gjson.GetBytes(body, "verify_responses").Array())
			fmt.Fprintf(w, `{"group_level_metrics":[],"agent_metrics":{"n":%d},"key_metrics":{"n":%d}}`, n, n)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func rows(n int, agent string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"responses_create_params":{"input":"q%d"},"agent_ref":{"name":%q}}`+"\n", i, agent)
	}
	return b.String()
}

func runOptions(t testing.TB, dir, input, agentURL string) RunOptions {
	client := server.NewClient(server.ClientOptions{MaxRetries: -1, Timeout: 5 * time.Second})
	urls := func(_ context.Context, agent string) (string, error) {
		if agent != "agent" {
			return "", fmt.Errorf("unknown agent %q", agent)
		}
		return agentURL, nil
	}
	return RunOptions{
		Paths:       PathsFor(filepath.Join(dir, "out.jsonl")),
		Materialize: MaterializeOptions{InputPath: input, InputFlag: "--input", Repeats: Repeats{All: 1}},
		Collect: CollectOptions{MaxAttempts: 3, Concurrency: 4, AgentURL: urls, Client: client,
			Progress: progress.New(progress.Options{Mode: progress.None})},
		Aggregator: AgentServers{Client: client, AgentURL: urls},
		Out:        io.Discard,
		Log:        io.Discard,
	}
}

func readLines(t testing.TB, path string) []gjson.Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []gjson.Result
	for i, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if l == "" {
			continue
		}
		if !gjson.Valid(l) {
			t.Fatalf("%s line %d is not JSON: %q", path, i+1, l)
		}
		out = append(out, gjson.Parse(l))
	}
	return out
}

func TestRunRoutesResults(t *testing.T) {
	agent := fakeAgent(t, func(row gjson.Result) (int, []byte, time.Duration) {
		switch row.Get(TaskIndexKey).Int() {
		case 1:
			return http.StatusOK, []byte(`{"reward":0,"_ng_failure_class":"judge_failed"}`), 0
		case 2:
			return http.StatusOK, []byte(`{"reward":0,"_ng_no_persist":true}`), 0
		case 3:
			return http.StatusInternalServerError, []byte(`"boom"`), 0
		}
		return http.StatusOK, nil, 0
	})
	dir := t.TempDir()
	o := runOptions(t, dir, writeFile(t, dir, "in.jsonl", rows(5, "agent")), agent.URL)
	res, err := Run(context.Background(), o)
	var rf *RequestFailuresError
	if !errors.As(err, &rf) || rf.Failed != 1 {
		t.Fatalf("Run: %v, want one request failure", err)
	}
	s := res.Summary
	if s.Succeeded != 2 || s.Failed != 2 || s.RequestFailed != 1 || s.NotPersisted != 1 || s.Dispatched != 5 {
		t.Errorf("summary %+v", s)
	}
	out := readLines(t, o.Paths.Output)
	if len(out) != 2 {
		t.Fatalf("output has %d rows, want 2", len(out))
	}
	for _, r := range out {
		if r.Get(AgentRefKey+".name").Str != "agent" || !r.Get(RolloutIndexKey).Exists() {
			t.Errorf("result not stamped with agent_ref and indices: %s", r.Raw)
		}
	}
	fails := readLines(t, o.Paths.Failures)
	classes := map[string]bool{}
	for _, f := range fails {
		classes[f.Get("_ng_failure_class").Str] = true
	}
	if len(fails) != 2 || !classes["judge_failed"] || !classes[RequestFailedClass] {
		t.Errorf("failures: %v", fails)
	}
	metrics, _ := os.ReadFile(o.Paths.Metrics)
	if !res.MetricsWritten || gjson.GetBytes(metrics, "0.agent_metrics.n").Int() != 2 || string(res.Metrics[0].KeyMetrics) != `{"n":2}` {
		t.Errorf("metrics over the successes only: %s", metrics)
	}

	// Resume: only the failed and unpersisted rollouts run again, the
	// request failure with its attempt index.
	var seen atomic.Int64
	var attempt atomic.Int64
	agent2 := fakeAgent(t, func(row gjson.Result) (int, []byte, time.Duration) {
		seen.Add(1)
		if row.Get(TaskIndexKey).Int() == 3 {
			attempt.Store(row.Get(AttemptIndexKey).Int())
		}
		return http.StatusOK, nil, 0
	})
	o = runOptions(t, dir, o.Materialize.InputPath, agent2.URL)
	o.Resume = true
	res, err = Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if seen.Load() != 3 || attempt.Load() != 1 || res.Summary.Cached != 2 {
		t.Errorf("resume ran %d rollouts (want 3), attempt index %d (want 1), cached %d (want 2)", seen.Load(), attempt.Load(), res.Summary.Cached)
	}
	if got := len(readLines(t, o.Paths.Output)); got != 5 {
		t.Errorf("after resume the output has %d rows, want 5", got)
	}
}

func TestResumeSkipsMaxedAndTerminal(t *testing.T) {
	dir := t.TempDir()
	p := PathsFor(filepath.Join(dir, "out.jsonl"))
	writeFile(t, dir, "in.jsonl", rows(3, "agent"))
	writeFile(t, dir, filepath.Base(p.Materialized), `{"agent_ref":{"name":"agent"},"_ng_task_index":0,"_ng_rollout_index":0}
{"agent_ref":{"name":"agent"},"_ng_task_index":1,"_ng_rollout_index":0}
{"agent_ref":{"name":"agent"},"_ng_task_index":2,"_ng_rollout_index":0}
`)
	writeFile(t, dir, "out.jsonl", `{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1,"agent_ref":{"name":"agent"}}`+"\n"+`{"_ng_task_index":9,"_ng_rollo`)
	writeFile(t, dir, filepath.Base(p.Failures), strings.Repeat(`{"_ng_task_index":1,"_ng_rollout_index":0,"_ng_failure_class":"x"}`+"\n", 3)+
		`{"_ng_task_index":2,"_ng_rollout_index":0,"_ng_failure_class":"x","_ng_failure_terminal":true}`+"\n")
	var calls atomic.Int64
	agent := fakeAgent(t, func(gjson.Result) (int, []byte, time.Duration) { calls.Add(1); return 200, nil, 0 })
	o := runOptions(t, dir, filepath.Join(dir, "in.jsonl"), agent.URL)
	o.Resume = true
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 0 || res.Summary.Maxed != 1 || res.Summary.Terminal != 1 || res.Summary.Cached != 1 {
		t.Errorf("calls %d, summary %+v", calls.Load(), res.Summary)
	}
	if data, _ := os.ReadFile(p.Output); strings.Contains(string(data), "_ng_rollo\n") || !strings.HasSuffix(string(data), "}\n") {
		t.Errorf("the torn line was not cut: %q", data)
	}
}

// A resume refused because an agent cannot be found (its servers not up
// yet, say) leaves the results as they were: a torn last line is cut only
// by the resume that runs.
func TestRefusedResumeLeavesTheResults(t *testing.T) {
	agent := fakeAgent(t, nil)
	dir := t.TempDir()
	o := runOptions(t, dir, writeFile(t, dir, "in.jsonl", rows(2, "agent")), agent.URL)
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	p := o.Paths
	f, err := os.OpenFile(p.Output, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"_ng_task`)
	f.Close()
	before, _ := os.ReadFile(p.Output)
	o.Resume = true
	o.Collect.AgentURL = func(context.Context, string) (string, error) { return "", errors.New("servers down") }
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "servers down") {
		t.Fatalf("got %v, want the agent's error", err)
	}
	if after, _ := os.ReadFile(p.Output); !bytes.Equal(after, before) {
		t.Errorf("the refused resume changed the results:\n%q\nbefore\n%q", after, before)
	}
}

func TestUnknownAgentFailsBeforeAnyRollout(t *testing.T) {
	var calls atomic.Int64
	agent := fakeAgent(t, func(gjson.Result) (int, []byte, time.Duration) { calls.Add(1); return 200, nil, 0 })
	dir := t.TempDir()
	o := runOptions(t, dir, writeFile(t, dir, "in.jsonl", rows(1, "agent")+rows(2, "nobody")), agent.URL)
	_, err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), `agent "nobody", named by rollout 2 (task 1)`) || !strings.Contains(err.Error(), `unknown agent "nobody"`) {
		t.Fatalf("got %v, want an error naming the agent and its first row", err)
	}
	if calls.Load() != 0 {
		t.Errorf("%d rollouts ran before the error", calls.Load())
	}
}

// Materializing names the agents of the rollouts it wrote, each once, for
// the run to look for: a row of another shard may name one this shard's
// servers do not have.
func TestMaterializedAgentsAreThoseWritten(t *testing.T) {
	agent := fakeAgent(t, nil)
	dir := t.TempDir()
	o := runOptions(t, dir, writeFile(t, dir, "in.jsonl", rows(4, "agent")+rows(1, "nobody")), agent.URL)
	o.Materialize.Shard = Shard{Index: 1, Count: 2} // tasks 1 and 3; nobody's is 4
	urls := o.Collect.AgentURL
	o.Collect.AgentURL = func(ctx context.Context, name string) (string, error) {
		if name == "nobody" {
			return "", errors.New(`unknown agent "nobody"`)
		}
		return urls(ctx, name)
	}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.Rollouts != 2 || res.Materialized.Rollouts != 2 || !slices.Equal(res.Materialized.Agents, []string{"agent"}) {
		t.Errorf("summary %+v, materialized %+v; want agent's two rollouts of this shard", res.Summary, res.Materialized)
	}
}

// The crash test: a child process collecting rollouts is SIGKILLed at
// random instants, again and again, each time resumed; at the end the
// output must hold every rollout exactly once and no torn line.
const crashChildEnv = "GYM_ROLLOUT_CRASH_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		os.Exit(crashChild(spec))
	}
	os.Exit(m.Run())
}

func crashChild(spec string) int {
	var c struct {
		Dir, Input, Agent string
		Resume            bool
	}
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	o := runOptions(&testing.T{}, c.Dir, c.Input, c.Agent)
	o.Resume = c.Resume
	o.Collect.Concurrency = 8
	if _, err := Run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestKilledRunsResumeToExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many processes")
	}
	const total = 3000
	agent := fakeAgent(t, func(gjson.Result) (int, []byte, time.Duration) {
		return 200, nil, time.Duration(rand.IntN(2000)) * time.Microsecond
	})
	dir := t.TempDir()
	input := writeFile(t, dir, "in.jsonl", rows(total, "agent"))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := func(resume bool, killAfter time.Duration) (killed bool) {
		spec, _ := json.Marshal(map[string]any{"Dir": dir, "Input": input, "Agent": agent.URL, "Resume": resume})
		cmd := exec.Command(self, "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+string(spec))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if killAfter > 0 {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("child failed before the kill: %v", err)
				}
				return false
			case <-time.After(killAfter):
				cmd.Process.Signal(syscall.SIGKILL)
				<-done
				return true
			}
		}
		if err := <-done; err != nil {
			t.Fatalf("final run: %v", err)
		}
		return false
	}
	kills := 0
	for i := 0; kills < 12 && i < 40; i++ {
		if run(i > 0, time.Duration(5+rand.IntN(120))*time.Millisecond) {
			kills++
		}
	}
	if kills < 10 {
		t.Fatalf("only %d runs were killed before finishing; make the work longer", kills)
	}
	run(true, 0)

	p := PathsFor(filepath.Join(dir, "out.jsonl"))
	seen := map[key]int{}
	for _, r := range readLines(t, p.Output) {
		var rec record
		rec.parse([]byte(r.Raw))
		k, ok := rec.key()
		if !ok {
			t.Fatalf("row without indices: %s", r.Raw)
		}
		seen[k]++
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("rollout %v is in the output %d times", k, n)
		}
	}
	if len(seen) != total {
		t.Errorf("the output holds %d distinct rollouts, want %d", len(seen), total)
	}
	if data, _ := os.ReadFile(p.Output); len(data) > 0 && data[len(data)-1] != '\n' {
		t.Error("the output ends in a torn line")
	}
	t.Logf("%d kills, %d rollouts exactly once", kills, len(seen))

}

// A fresh run whose input is bad leaves the previous run's files alone.
func TestBadInputKeepsThePreviousRun(t *testing.T) {
	agent := fakeAgent(t, nil)
	dir := t.TempDir()
	o := runOptions(t, dir, writeFile(t, dir, "in.jsonl", rows(3, "agent")), agent.URL)
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(o.Paths.Output)
	for _, input := range []string{filepath.Join(dir, "typo.jsonl"), writeFile(t, dir, "bad.jsonl", "{\n"), writeFile(t, dir, "other.jsonl", rows(1, "nobody"))} {
		o.Materialize.InputPath = input
		if _, err := Run(context.Background(), o); err == nil {
			t.Fatalf("%s: no error", input)
		}
		after, _ := os.ReadFile(o.Paths.Output)
		if string(after) != string(before) || len(readLines(t, o.Paths.Materialized)) != 3 {
			t.Fatalf("%s: the previous run's files changed", input)
		}
	}
}

// A run killed while writing leaves temporary files beside its outputs;
// the next run, fresh or resumed, removes them.
func TestRunRemovesTemporaryFilesEarlierRunsLeft(t *testing.T) {
	agent := fakeAgent(t, nil)
	dir := t.TempDir()
	o := runOptions(t, dir, writeFile(t, dir, "in.jsonl", rows(2, "agent")), agent.URL)
	var stale []string
	for _, p := range []string{o.Paths.Output, o.Paths.Materialized + ".next", o.Paths.Failures, o.Paths.Metrics} {
		name := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".1234abcd.tmp")
		stale = append(stale, writeFile(t, filepath.Dir(name), filepath.Base(name), "torn"))
	}
	other := writeFile(t, dir, ".someone-elses.jsonl.1.tmp", "keep")
	for _, resume := range []bool{false, true} {
		o.Resume = resume
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		for _, s := range stale {
			if _, err := os.Stat(s); err == nil {
				t.Errorf("resume=%v: %s is still there", resume, s)
			}
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a temporary file of another output was removed: %v", err)
	}
}

// Collection runs at its own GC budget and gives the process's GC target back.
func TestCollectGCPercent(t *testing.T) {
	restore := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(restore) })
	var during atomic.Int64
	agent := fakeAgent(t, func(gjson.Result) (int, []byte, time.Duration) {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		during.Store(int64(p))
		return http.StatusOK, []byte(`{"reward":1}`), 0
	})
	dir := t.TempDir()
	o := runOptions(t, dir, writeFile(t, dir, "in.jsonl", rows(1, "agent")), agent.URL)
	o.Aggregator = nil
	o.Collect.Concurrency = 1
	o.Collect.GCBudget = 1 << 40 // far above this test's live heap
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if during.Load() < 1000 {
		t.Errorf("GC percent while collecting %d, want the budget's thousands", during.Load())
	}
	if after := debug.SetGCPercent(100); after != 100 {
		t.Errorf("GC percent after the run %d, want the process's 100", after)
	}
}

// Collection runs Go code on the threads it is given, then gives the
// runtime its own default back.
func TestCollectProcessors(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	runtime.SetDefaultGOMAXPROCS()
	defaultProcs := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(defaultProcs + 2)
	var during atomic.Int64
	agent := fakeAgent(t, func(gjson.Result) (int, []byte, time.Duration) {
		during.Store(int64(runtime.GOMAXPROCS(0)))
		return http.StatusOK, []byte(`{"reward":1}`), 0
	})
	dir := t.TempDir()
	o := runOptions(t, dir, writeFile(t, dir, "in.jsonl", rows(1, "agent")), agent.URL)
	o.Aggregator = nil
	o.Collect.Processors = 1
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if during.Load() != 1 {
		t.Errorf("GOMAXPROCS while collecting %d, want 1", during.Load())
	}
	if after := runtime.GOMAXPROCS(0); after != defaultProcs {
		t.Errorf("GOMAXPROCS after the run %d, want the runtime's default %d", after, defaultProcs)
	}
}
