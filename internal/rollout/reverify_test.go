package rollout

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
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/configtest"
	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/progress"
	"github.com/nemo-gym-go/gym/internal/resources"
	"github.com/nemo-gym-go/gym/internal/server"
)

// reverifyWorld is a finished run (materialized inputs, rollouts, maybe a
// failures file) and a resources server built on gym's resources base
// whose verifier gives reward 1 when the answer is the row's expected one.
type reverifyWorld struct {
	t        testing.TB
	dir      string
	inputs   string
	rollouts string
	url      string
	mode     resources.ReverifyMode
	calls    atomic.Int64
	// behave, when set, may fail a /verify: a status to answer instead.
	behave func(task int64) int
	// judgeFails are the tasks whose judge call fails.
	judgeFails map[string]bool
	mu         sync.Mutex
}

const reverifyConfig = `
agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: rs}
      model_server: {type: responses_api_models, name: policy_model}
rs:
  resources_servers:
    fake:
      entrypoint: app.py
      domain: other
      judge: {judge_model_server: {type: responses_api_models, name: judge}}
judge:
  responses_api_models:
    fake_model: {entrypoint: app.py}
policy_model:
  responses_api_models:
    fake_model: {entrypoint: app.py}
`

func answerResponse(text string) string {
	return `{"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":` + string(mustJSON(text)) + `,"annotations":[]}]}]}`
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// newReverifyWorld writes n tasks: task i expects "A", and its rollout
// answered "A" when i is even; the rollouts were scored reward 0.5 by an
// older verifier.
func newReverifyWorld(t testing.TB, n int) *reverifyWorld {
	t.Helper()
	w := &reverifyWorld{t: t, dir: t.TempDir(), mode: resources.ReverifyStateless, judgeFails: map[string]bool{}}
	w.inputs = filepath.Join(w.dir, "run_materialized_inputs.jsonl")
	w.rollouts = filepath.Join(w.dir, "run.jsonl")
	var in, out strings.Builder
	for i := range n {
		fmt.Fprintf(&in, `{"responses_create_params":{"input":"q%d"},"expected":"A","agent_ref":{"type":"responses_api_agents","name":"agent"},"_ng_task_index":%d,"_ng_rollout_index":0}`+"\n", i, i)
		answer := "B"
		if i%2 == 0 {
			answer = "A"
		}
		fmt.Fprintf(&out, `{"responses_create_params":{"input":"q%d"},"response":%s,"reward":0.5,"expected":"A","_ng_task_index":%d,"_ng_rollout_index":0,"agent_ref":{"type":"responses_api_agents","name":"agent"}}`+"\n", i, answerResponse(answer), i)
	}
	w.write(w.inputs, in.String())
	w.write(w.rollouts, out.String())
	srv := httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(srv.Close)
	w.url = srv.URL
	return w
}

func (w *reverifyWorld) write(path, content string) {
	w.t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

func (w *reverifyWorld) serve(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	mode := w.mode
	w.mu.Unlock()
	h, err := resources.Handler(resources.Options{
		ReverifyMode: mode,
		Fields:       []resources.FieldSpec{{Name: "expected", Kind: resources.String, Required: true}},
		Verify: func(_ context.Context, req *resources.VerifyRequest) (*resources.Verdict, error) {
			if w.judgeFails[gjson.GetBytes(req.ResponsesCreateParams, "input").Str] {
				return nil, &resources.JudgeError{Err: errors.New("judge unreachable")}
			}
			reward := 0.0
			if req.OutputText() == req.String("expected") {
				reward = 1
			}
			return &resources.Verdict{Reward: reward, Fields: req.Echo("expected")}, nil
		},
	})
	if err != nil {
		w.t.Error(err)
		return
	}
	if r.URL.Path == "/verify" {
		w.calls.Add(1)
		if w.behave != nil {
			body, _ := io.ReadAll(r.Body)
			if status := w.behave(gjson.GetBytes(body, TaskIndexKey).Int()); status != 0 {
				rw.WriteHeader(status)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
	}
	h.ServeHTTP(rw, r)
}

func (w *reverifyWorld) routes() *Routes {
	w.t.Helper()
	global, err := pyyaml.Load([]byte(reverifyConfig), "test.yaml")
	if err != nil {
		w.t.Fatal(err)
	}
	r, err := NewRoutes(global)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func (w *reverifyWorld) options(output string, edit func(*ReverifySettings)) ReverifyOptions {
	s := ReverifySettings{Inputs: w.inputs, Rollouts: w.rollouts, Output: filepath.Join(w.dir, output), Concurrency: 4}
	if edit != nil {
		edit(&s)
	}
	return ReverifyOptions{
		ReverifySettings: s,
		Routes:           w.routes(),
		MaxAttempts:      3,
		Client:           server.NewClient(server.ClientOptions{MaxRetries: -1, Timeout: 5 * time.Second}),
		ServerURL: func(_ context.Context, name string) (string, error) {
			if name != "rs" {
				return "", fmt.Errorf("no server %s", name)
			}
			return w.url, nil
		},
		Progress: progress.New(progress.Options{Mode: progress.None}),
		Out:      io.Discard,
		Log:      io.Discard,
	}
}

func (w *reverifyWorld) reverify(ctx context.Context, output string, edit func(*ReverifySettings)) (*ReverifySummary, error) {
	w.t.Helper()
	plan, err := PlanReverify(context.Background(), w.options(output, edit))
	if err != nil {
		return nil, err
	}
	return plan.Run(ctx)
}

// rewards reads a rollouts file as task → reward, failing on a key seen twice.
func rewardsIn(t *testing.T, path string) map[int64]float64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]float64{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		row := gjson.Parse(line)
		task := row.Get(TaskIndexKey).Int()
		if _, dup := out[task]; dup {
			t.Fatalf("%s holds task %d twice", path, task)
		}
		out[task] = row.Get("reward").Float()
	}
	return out
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}

func TestReverifyRecomputesRewardsBesideTheRun(t *testing.T) {
	w := newReverifyWorld(t, 6)
	before, _ := os.ReadFile(w.rollouts)
	sum, err := w.reverify(context.Background(), "out/rv.jsonl", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := rewardsIn(t, sum.Paths.Output)
	for task := range int64(6) {
		want := 0.0
		if task%2 == 0 {
			want = 1
		}
		if got[task] != want {
			t.Errorf("task %d: reward %v, want %v", task, got[task], want)
		}
	}
	if sum.Succeeded != 6 || sum.Dispatched != 6 || sum.Unsafe || !sum.MetricsWritten {
		t.Errorf("summary %+v", sum)
	}
	// A row is the /verify answer with the rollout's identity stamped on.
	first, _ := os.ReadFile(sum.Paths.Output)
	row := gjson.Parse(strings.SplitN(string(first), "\n", 2)[0])
	var keys []string
	row.ForEach(func(k, _ gjson.Result) bool { keys = append(keys, k.Str); return true })
	if want := "responses_create_params,response,reward,expected,_ng_task_index,_ng_rollout_index,agent_ref"; strings.Join(keys, ",") != want {
		t.Errorf("row keys %s, want %s", strings.Join(keys, ","), want)
	}
	if countLines(t, sum.Paths.Failures) != 0 {
		t.Error("failures written")
	}
	metrics, err := os.ReadFile(filepath.Join(w.dir, "out/rv_aggregate_metrics.json"))
	if err != nil || !gjson.GetBytes(metrics, `0.agent_metrics.mean/reward`).Exists() {
		t.Errorf("metrics: %v %s", err, metrics)
	}
	if after, _ := os.ReadFile(w.rollouts); !bytes.Equal(before, after) {
		t.Error("the run's rollouts changed")
	}
}

func TestReverifyModeGuard(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    resources.ReverifyMode
		force   bool
		wantErr bool
		output  string
	}{
		{name: "stateless", mode: resources.ReverifyStateless, output: "rv.jsonl"},
		{name: "stateless with force keeps the name", mode: resources.ReverifyStateless, force: true, output: "rv.jsonl"},
		{name: "unsupported", mode: resources.ReverifyUnsupported, wantErr: true},
		{name: "unknown", mode: resources.ReverifyUnknown, wantErr: true},
		{name: "unsupported with force", mode: resources.ReverifyUnsupported, force: true, output: "unsafe_rv.jsonl"},
		{name: "unknown with force", mode: resources.ReverifyUnknown, force: true, output: "unsafe_rv.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newReverifyWorld(t, 4)
			w.mode = tc.mode
			sum, err := w.reverify(context.Background(), "rv.jsonl", func(s *ReverifySettings) { s.Force = tc.force })
			var modeErr *ReverifyModeError
			if tc.wantErr {
				if !errors.As(err, &modeErr) || !strings.Contains(err.Error(), "['rs']") {
					t.Fatalf("err = %v, want the reverify_mode refusal naming rs", err)
				}
				if w.calls.Load() != 0 {
					t.Error("rollouts were verified despite the refusal")
				}
				for _, name := range []string{"rv.jsonl", "rv_failures.jsonl", "unsafe_rv.jsonl"} {
					if _, err := os.Stat(filepath.Join(w.dir, name)); err == nil {
						t.Errorf("%s written", name)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := filepath.Base(sum.Paths.Output); got != tc.output {
				t.Errorf("output %s, want %s", got, tc.output)
			}
			if sum.Unsafe != (tc.output != "rv.jsonl") {
				t.Errorf("unsafe = %v", sum.Unsafe)
			}
			if _, err := os.Stat(PathsFor(sum.Paths.Output).Metrics); err != nil {
				t.Error(err)
			}
			if countLines(t, sum.Paths.Output) != 4 {
				t.Errorf("%d rows", countLines(t, sum.Paths.Output))
			}
		})
	}
}

func TestReverifyExistingOutput(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing string // file in dir before the run
		edit     func(*ReverifySettings)
		wantErr  string
		wantRows int
	}{
		{name: "refused", existing: "rv.jsonl", wantErr: "Output file already exists: '"},
		{name: "its failures file too", existing: "rv_failures.jsonl", wantErr: "rv_failures.jsonl'. Pass --overwrite"},
		{name: "overwritten", existing: "rv.jsonl", edit: func(s *ReverifySettings) { s.Overwrite = true }, wantRows: 4},
		{name: "an unsafe one, found after the guard", existing: "unsafe_rv.jsonl", edit: func(s *ReverifySettings) { s.Force = true }, wantErr: "unsafe_rv.jsonl"},
		{name: "an unsafe one overwritten", existing: "unsafe_rv.jsonl", edit: func(s *ReverifySettings) { s.Force, s.Overwrite = true, true }, wantRows: 4},
		{name: "a plain one beside an unsafe run is not in the way", existing: "rv.jsonl", edit: func(s *ReverifySettings) { s.Force = true }, wantRows: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newReverifyWorld(t, 4)
			if strings.HasPrefix(tc.existing, UnsafePrefix) || tc.name == "a plain one beside an unsafe run is not in the way" {
				w.mode = resources.ReverifyUnsupported
			}
			w.write(filepath.Join(w.dir, tc.existing), `{"_ng_task_index":0,"_ng_rollout_index":0,"reward":9}`+"\n"+`{"_ng_task_index":7,"_ng_rollout_index":0,"reward":9}`+"\n")
			sum, err := w.reverify(context.Background(), "rv.jsonl", tc.edit)
			if tc.wantErr != "" {
				var exists *OutputExistsError
				if !errors.As(err, &exists) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if w.calls.Load() != 0 {
					t.Error("verified despite the refusal")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := rewardsIn(t, sum.Paths.Output); len(got) != tc.wantRows || got[0] != 1 {
				t.Errorf("rewards %v", got)
			}
		})
	}
}

func TestReverifyLimit(t *testing.T) {
	w := newReverifyWorld(t, 5)
	sum, err := w.reverify(context.Background(), "rv.jsonl", func(s *ReverifySettings) { s.Limit = 2 })
	if err != nil {
		t.Fatal(err)
	}
	got := rewardsIn(t, sum.Paths.Output)
	if len(got) != 2 || got[0] != 1 || got[1] != 0 || w.calls.Load() != 2 {
		t.Errorf("rewards %v after %d calls", got, w.calls.Load())
	}
	// Resuming with a larger limit does only the new ones.
	sum, err = w.reverify(context.Background(), "rv.jsonl", func(s *ReverifySettings) { s.Limit, s.Resume = 4, true })
	if err != nil {
		t.Fatal(err)
	}
	if got := rewardsIn(t, sum.Paths.Output); len(got) != 4 || sum.Cached != 2 || sum.Dispatched != 2 {
		t.Errorf("rewards %v, summary %+v", got, sum)
	}
}

// A reverification cut part-way (the context cancelled, then a torn last
// line as a kill leaves) resumes to exactly one row per rollout, verifying
// only those missing.
func TestReverifyResumeAfterCut(t *testing.T) {
	const n = 12
	w := newReverifyWorld(t, n)
	ctx, cancel := context.WithCancel(context.Background())
	w.behave = func(task int64) int {
		if w.calls.Load() == 5 {
			cancel()
			time.Sleep(50 * time.Millisecond)
		}
		return 0
	}
	sum, err := w.reverify(ctx, "rv.jsonl", func(s *ReverifySettings) { s.Concurrency = 1 })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the cancellation", err)
	}
	done := countLines(t, sum.Paths.Output)
	if done == 0 || done >= n {
		t.Fatalf("%d rows after the cut", done)
	}
	f, err := os.OpenFile(sum.Paths.Output, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"responses_create_params":{"inp`)
	f.Close()

	// Without --resume the partial output is in the way.
	var exists *OutputExistsError
	if _, err := w.reverify(context.Background(), "rv.jsonl", nil); !errors.As(err, &exists) {
		t.Fatalf("err = %v, want the output refused", err)
	}
	w.behave = nil
	before := w.calls.Load()
	sum, err = w.reverify(context.Background(), "rv.jsonl", func(s *ReverifySettings) { s.Resume = true })
	if err != nil {
		t.Fatal(err)
	}
	if got := rewardsIn(t, sum.Paths.Output); len(got) != n {
		t.Errorf("%d rollouts after resuming, want %d", len(got), n)
	}
	if calls := w.calls.Load() - before; calls != int64(n-done) || sum.Cached != done {
		t.Errorf("resume verified %d (cached %d), want %d", calls, sum.Cached, n-done)
	}
	// Once complete, resuming does nothing.
	sum, err = w.reverify(context.Background(), "rv.jsonl", func(s *ReverifySettings) { s.Resume = true })
	if err != nil || sum.Dispatched != 0 || countLines(t, sum.Paths.Output) != n {
		t.Errorf("err %v, summary %+v", err, sum)
	}
}

// A /verify that still fails after its retries is a row in the failures
// file, the others go on, and --resume verifies it again.
func TestReverifyRequestFailuresAreResumed(t *testing.T) {
	w := newReverifyWorld(t, 6)
	w.behave = func(task int64) int {
		if task == 3 {
			return http.StatusBadRequest
		}
		return 0
	}
	sum, err := w.reverify(context.Background(), "rv.jsonl", nil)
	var failures *VerifyFailuresError
	if !errors.As(err, &failures) || failures.Failed != 1 {
		t.Fatalf("err = %v, want one verify failure", err)
	}
	if !sum.MetricsWritten || countLines(t, sum.Paths.Output) != 5 {
		t.Errorf("summary %+v", sum)
	}
	fails, _ := os.ReadFile(sum.Paths.Failures)
	row := gjson.ParseBytes(bytes.TrimSpace(fails))
	if row.Get("_ng_failure_class").Str != VerifyRequestFailedClass || row.Get(TaskIndexKey).Int() != 3 || !strings.Contains(row.Get("_ng_failure_error").Str, "HTTP 400") {
		t.Errorf("failure row %s", fails)
	}
	w.behave = nil
	sum, err = w.reverify(context.Background(), "rv.jsonl", func(s *ReverifySettings) { s.Resume = true })
	if err != nil || sum.Dispatched != 1 || len(rewardsIn(t, sum.Paths.Output)) != 6 {
		t.Errorf("err %v, summary %+v", err, sum)
	}
}

// --judge-failed-only carries the successes through and verifies only the
// judge failures of the run's failures file, each once; --append adds them
// to an existing file, and running it again adds nothing.
func TestReverifyJudgeFailedOnly(t *testing.T) {
	w := newReverifyWorld(t, 6)
	w.mode = resources.ReverifyUnsupported // the guard does not apply
	// Tasks 4 and 5 failed in the run: 4's judge twice, 5 otherwise.
	var kept, failed strings.Builder
	for i, line := range strings.Split(strings.TrimSpace(readString(t, w.rollouts)), "\n") {
		switch i {
		case 4:
			failed.WriteString(strings.Replace(line, `"reward":0.5`, `"reward":0.0,"_ng_failure_class":"judge_failed"`, 1) + "\n")
			failed.WriteString(strings.Replace(line, `"reward":0.5`, `"reward":0.0,"_ng_failure_class":"judge_failed"`, 1) + "\n")
		case 5:
			failed.WriteString(strings.Replace(line, `"reward":0.5`, `"_ng_failure_class":"rollout_request_failed"`, 1) + "\n")
		default:
			kept.WriteString(line + "\n")
		}
	}
	w.write(w.rollouts, kept.String())
	w.write(filepath.Join(w.dir, "run_failures.jsonl"), failed.String())

	sum, err := w.reverify(context.Background(), "rec.jsonl", func(s *ReverifySettings) { s.JudgeFailedOnly = true })
	if err != nil {
		t.Fatal(err)
	}
	got := rewardsIn(t, sum.Paths.Output)
	if len(got) != 5 || got[0] != 0.5 || got[4] != 1 || sum.Seeded != 4 || sum.Dispatched != 1 || sum.Unsafe {
		t.Errorf("rewards %v, summary %+v", got, sum)
	}
	if _, ok := got[5]; ok {
		t.Error("a failure that was not the judge's was verified")
	}

	// Appended onto the run's own rollouts, twice: the second adds nothing.
	for range 2 {
		sum, err = w.reverify(context.Background(), "run.jsonl", func(s *ReverifySettings) { s.JudgeFailedOnly, s.Append = true, true })
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := rewardsIn(t, w.rollouts); len(got) != 5 || got[4] != 1 || sum.Seeded != 0 || sum.Dispatched != 0 {
		t.Errorf("rewards %v, summary %+v", got, sum)
	}

	// A judge that still fails leaves the row in the output's failures file.
	w2 := newReverifyWorld(t, 2)
	w2.judgeFails["q1"] = true
	lines := strings.Split(strings.TrimSpace(readString(t, w2.rollouts)), "\n")
	w2.write(w2.rollouts, lines[0]+"\n")
	w2.write(filepath.Join(w2.dir, "run_failures.jsonl"), strings.Replace(lines[1], `"reward":0.5`, `"_ng_failure_class":"judge_failed"`, 1)+"\n")
	sum, err = w2.reverify(context.Background(), "rec.jsonl", func(s *ReverifySettings) { s.JudgeFailedOnly = true })
	if err != nil {
		t.Fatal(err)
	}
	if countLines(t, sum.Paths.Output) != 1 || countLines(t, sum.Paths.Failures) != 1 || sum.FailureCounts[JudgeFailedClass] != 1 {
		t.Errorf("summary %+v", sum)
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestReverifyPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inputs   string
		rollouts string
		edit     func(*ReverifySettings)
		wantErr  string
	}{
		{name: "no input for a rollout", inputs: `{"_ng_task_index":0,"_ng_rollout_index":0,"expected":"A","agent_ref":{"name":"agent"}}`,
			rollouts: `{"_ng_task_index":0,"_ng_rollout_index":0,"response":{},"agent_ref":{"name":"agent"}}` + "\n" + `{"_ng_task_index":1,"_ng_rollout_index":0,"response":{},"agent_ref":{"name":"agent"}}`,
			wantErr:  "run.jsonl:2: no materialized input row in "},
		{name: "no response", inputs: `{"_ng_task_index":0,"_ng_rollout_index":0}`,
			rollouts: `{"_ng_task_index":0,"_ng_rollout_index":0,"_ng_result_type":"episode","agent_ref":{"name":"agent"}}`,
			wantErr:  "run.jsonl:1: rollout (task 0, rollout 0) of result type 'episode' has no `response`"},
		{name: "an agent the config lacks", inputs: `{"_ng_task_index":0,"_ng_rollout_index":0,"agent_ref":{"name":"other"}}`,
			rollouts: `{"_ng_task_index":0,"_ng_rollout_index":0,"response":{},"agent_ref":{"name":"other"}}`,
			wantErr:  `run.jsonl:1: cannot find a resources server for the rollout (agent_ref.name="other", task_source=None); the config's agents are agent`},
		{name: "a rollout twice", inputs: `{"_ng_task_index":0,"_ng_rollout_index":0,"agent_ref":{"name":"agent"}}`,
			rollouts: `{"_ng_task_index":0,"_ng_rollout_index":0,"response":{},"agent_ref":{"name":"agent"}}` + "\n" + `{"_ng_task_index":0,"_ng_rollout_index":0,"response":{},"agent_ref":{"name":"agent"}}`,
			wantErr:  "run.jsonl:2: rollout (0, 0) is here a second time (first at line 1)"},
		{name: "an input twice", inputs: `{"_ng_task_index":0,"_ng_rollout_index":0}` + "\n" + `{"_ng_task_index":0,"_ng_rollout_index":0}`,
			rollouts: "", wantErr: "run_materialized_inputs.jsonl:2: a second materialized input for rollout (0, 0)"},
		{name: "a rollout without indices", inputs: `{"_ng_task_index":0,"_ng_rollout_index":0}`, rollouts: `{"response":{}}`,
			wantErr: "run.jsonl:1: the rollout lacks _ng_task_index or _ng_rollout_index"},
		{name: "malformed rollouts", inputs: `{"_ng_task_index":0,"_ng_rollout_index":0}`, rollouts: `{"response":`,
			wantErr: "Malformed JSON in"},
		{name: "no failures file to recover from", inputs: "", rollouts: "", edit: func(s *ReverifySettings) { s.JudgeFailedOnly = true },
			wantErr: "run_failures.jsonl: no failures file beside --rollouts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newReverifyWorld(t, 0)
			w.write(w.inputs, tc.inputs+"\n")
			w.write(w.rollouts, tc.rollouts+"\n")
			_, err := PlanReverify(context.Background(), w.options("rv.jsonl", tc.edit))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
	w := newReverifyWorld(t, 1)
	for _, out := range []string{"run.jsonl", "run_materialized_inputs.jsonl"} {
		for _, judge := range []bool{false, true} {
			o := w.options(out, func(s *ReverifySettings) { s.Overwrite, s.JudgeFailedOnly = true, judge })
			if _, err := PlanReverify(context.Background(), o); err == nil || !strings.Contains(err.Error(), "the output is one of the files re-verified") {
				t.Errorf("-o %s (judge-failed-only %v): err = %v", out, judge, err)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := PlanReverify(ctx, w.options("rv.jsonl", nil)); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled plan: err = %v", err)
	}
	o := w.options("rv.jsonl", nil)
	o.Rollouts = filepath.Join(w.dir, "missing.jsonl")
	if _, err := PlanReverify(context.Background(), o); err == nil || !strings.Contains(err.Error(), "missing.jsonl: cannot read it (--rollouts)") {
		t.Errorf("err = %v", err)
	}
}

func TestVerifyPayload(t *testing.T) {
	for _, tc := range []struct {
		name, input, rollout, want, wantErr string
	}{
		{name: "flat input", input: `{"responses_create_params":{},"expected":"A","_ng_task_index":0}`,
			rollout: `{"response":{"id":"r"},"reward":1,"expected":"B"}`,
			want:    `{"responses_create_params":{},"expected":"A","_ng_task_index":0,"response":{"id":"r"}}`},
		{name: "task_input flattened with its task_data", input: `{"task_id":"t","task_input":{"q":1,"task_data":{"a":2,"q":1}},"_ng_task_index":0}`,
			rollout: `{"response":{}}`,
			want:    `{"_ng_task_index":0,"a":2,"q":1,"response":{}}`},
		{name: "task_data that disagrees", input: `{"task_input":{"q":1,"task_data":{"q":2}}}`, rollout: `{"response":{}}`,
			wantErr: "conflicting task field 'q'"},
		{name: "task_data not an object", input: `{"task_input":{"task_data":[1]}}`, rollout: `{"response":{}}`,
			wantErr: "task_input.task_data must be an object"},
		{name: "verifier artifacts come from the rollout", input: `{"x":1}`, rollout: `{"response":{},"deliverables_dir":"/d","reference_ids":[1],"_ng_failure_class":"judge_failed"}`,
			want: `{"x":1,"response":{},"deliverables_dir":"/d","reference_ids":[1]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := verifyPayload(gjson.Parse(tc.input), gjson.Parse(tc.rollout))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("got %s, %v\nwant %s", got, err, tc.want)
			}
		})
	}
}

func TestRoutes(t *testing.T) {
	const agents = `
a1: {responses_api_agents: {simple_agent: {resources_server: {type: resources_servers, name: rs1}}}}
rs1: {resources_servers: {x: {}}}
rs2: {resources_servers: {x: {}}}
env: {environment_servers: {legacy_agent: {resources_server: {type: resources_servers, name: rs2}}}}
`
	for _, tc := range []struct {
		name, config, row, want, wantErr, warning string
	}{
		{name: "by agent", config: agents, row: `{"agent_ref":{"name":"a1"}}`, want: "rs1"},
		{name: "task_source wins", config: agents, row: `{"agent_ref":{"name":"a1"},"task_source":"rs2"}`, want: "rs2"},
		{name: "task_source that is no resources server", config: agents, row: `{"agent_ref":{"name":"a1"},"task_source":"a1"}`, want: "rs1"},
		{name: "by environment server", config: agents, row: `{"agent_ref":{"name":"a1"},"_ng_environment_server":"env"}`, want: "rs2"},
		{name: "an unknown agent", config: agents, row: `{"agent_ref":{"name":"zz"}}`, wantErr: `agent_ref.name="zz"`},
		{name: "the only resources server", config: "rs: {resources_servers: {x: {}}}", row: `{"agent_ref":{"name":"zz"}}`, want: "rs",
			warning: "every rollout goes to its only resources server rs"},
		{name: "no resources server", config: "m: {responses_api_models: {x: {}}}", wantErr: "no resources server found in the config"},
		{name: "several and no agent", config: "r1: {resources_servers: {x: {}}}\nr2: {resources_servers: {x: {}}}", wantErr: "several resources servers (r1, r2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			global, err := pyyaml.Load([]byte(tc.config), "c.yaml")
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewRoutes(global)
			var got string
			if err == nil {
				if !strings.Contains(r.Warning, tc.warning) || (tc.warning == "") != (r.Warning == "") {
					t.Errorf("warning %q", r.Warning)
				}
				got, err = r.For(gjson.Parse(tc.row))
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestServersFor(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(reverifyConfig+"other_rs: {resources_servers: {fake: {entrypoint: app.py, domain: other}}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := configtest.Settings(t, "+config_paths=["+path+"]")
	resolved, err := s.Result.Resolved(false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range ServersFor(s.Result, resolved, []string{"rs"}) {
		names = append(names, in.Name)
	}
	if strings.Join(names, ",") != "rs,judge" {
		t.Errorf("servers %v, want the resources server and the judge it references", names)
	}
}

func TestReadReverifySettings(t *testing.T) {
	req := []string{"++materialized_inputs_jsonl_fpath=m.jsonl", "++rollouts_jsonl_fpath=r.jsonl", "++output_jsonl_fpath=o.jsonl"}
	for _, tc := range []struct {
		name    string
		tokens  []string
		check   func(t *testing.T, r ReverifySettings)
		wantErr string
		usage   bool
	}{
		{name: "defaults", tokens: req, check: func(t *testing.T, r ReverifySettings) {
			if r.Inputs != "m.jsonl" || r.Rollouts != "r.jsonl" || r.Output != "o.jsonl" || r.Limit != 0 || r.Concurrency != DefaultConcurrency || r.Force {
				t.Errorf("%+v", r)
			}
		}},
		{name: "every key", tokens: append(req, "++limit=3", "++num_samples_in_parallel=2", "++force=true", "++overwrite=true", "++resume_from_cache=true",
			"++disable_aggregation=true", "++input_format=gym", "++retry_terminal_timeouts=true"), check: func(t *testing.T, r ReverifySettings) {
			if r.Limit != 3 || r.Concurrency != 2 || !r.Force || !r.Overwrite || !r.Resume || !r.DisableAggregation || strings.Join(r.Ignored, ",") != "retry_terminal_timeouts" {
				t.Errorf("%+v", r)
			}
		}},
		{name: "judge recovery appended", tokens: append(req, "++judge_failed_only=true", "++append=true"), check: func(t *testing.T, r ReverifySettings) {
			if !r.JudgeFailedOnly || !r.Append {
				t.Errorf("%+v", r)
			}
		}},
		{name: "required", tokens: []string{"++output_jsonl_fpath=o"}, wantErr: "materialized_inputs_jsonl_fpath, rollouts_jsonl_fpath", usage: true},
		{name: "append alone", tokens: append(req, "++append=true"), wantErr: "only valid together with judge_failed_only", usage: true},
		{name: "append and overwrite", tokens: append(req, "++judge_failed_only=true", "++append=true", "++overwrite=true"), wantErr: "mutually exclusive", usage: true},
		{name: "limit zero", tokens: append(req, "++limit=0"), wantErr: "limit (--limit) is 0: it must be at least 1", usage: true},
		{name: "concurrency zero", tokens: append(req, "++num_samples_in_parallel=0"), wantErr: "num_samples_in_parallel (--concurrency) is 0", usage: true},
		{name: "a limit that is no number", tokens: append(req, "++limit=many"), wantErr: "limit must be an integer"},
		{name: "ATIF", tokens: append(req, "++input_format=atif"), wantErr: "gym does not implement ATIF reverification"},
		{name: "another format", tokens: append(req, "++input_format=csv"), wantErr: "it must be gym or atif", usage: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ReadReverifySettings(configtest.Settings(t, tc.tokens...))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				var missing *config.MissingSettingsError
				var bad *config.BadSettingError
				if usage := errors.As(err, &missing) || errors.As(err, &bad); usage != tc.usage {
					t.Errorf("usage error = %v, want %v", usage, tc.usage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, r)
		})
	}
}

// FuzzVerifyPayload: any pair of rows gives a clear error or a /verify body
// that is one JSON object holding the rollout's response.
func FuzzVerifyPayload(f *testing.F) {
	f.Add(`{"a":1,"_ng_task_index":0}`, `{"response":{"x":[1]}}`)
	f.Add(`{"task_input":{"q":1,"task_data":{"q":1,"z":null}},"task_id":3}`, `{"response":1,"reference_ids":[2]}`)
	f.Add(`{"task_input":{"task_data":"x"}}`, `{"response":{}}`)
	f.Add(`[1]`, `{"response":{}}`)
	f.Add(`{"a.b":1,"task_input":{"a.b":2,"task_data":{"a.b":2}}}`, `{}`)
	f.Fuzz(func(t *testing.T, input, rollout string) {
		if !gjson.Valid(input) || !gjson.Valid(rollout) {
			return
		}
		out, err := verifyPayload(gjson.Parse(input), gjson.Parse(rollout))
		if err != nil {
			return
		}
		if !json.Valid(out) || !gjson.ParseBytes(out).IsObject() {
			t.Fatalf("body %s is not a JSON object", out)
		}
		if got, want := gjson.GetBytes(out, "response").Raw, gjson.Get(rollout, "response").Raw; !sameJSON(got, want) {
			t.Fatalf("response %s, want %s", got, want)
		}
	})
}

// BenchmarkReverify re-verifies a run of 2,000 rollouts against a resources
// server on gym's base, over loopback HTTP.
func BenchmarkReverify(b *testing.B) {
	w := newReverifyWorld(b, 2000)
	b.ResetTimer()
	for range b.N {
		plan, err := PlanReverify(context.Background(), w.options("rv.jsonl", func(s *ReverifySettings) { s.Overwrite, s.Concurrency = true, 64 }))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := plan.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(2000*b.N)/b.Elapsed().Seconds(), "rollouts/s")
}
