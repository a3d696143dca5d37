package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/capture"
	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/openai"
	"github.com/nemo-gym-go/gym/internal/progress"
	"github.com/nemo-gym-go/gym/internal/server"
)

// RequestFailedClass is the failure class of a rollout whose /run call
// failed after every retry (an error status, a timeout, no answer). NeMo
// Gym aborts the whole collection on it; gym records the rollout in the
// failures file, carries on, and retries it on --resume.
const RequestFailedClass = "rollout_request_failed"

// CollectOptions are the inputs of the dispatch loop.
type CollectOptions struct {
	// MaxAttempts is NEMO_GYM_MAX_ROLLOUT_ATTEMPTS: a rollout with that
	// many failed attempts is not tried again.
	MaxAttempts int
	// Concurrency bounds the rollouts in flight.
	Concurrency int
	// AgentURL gives an agent instance's base URL.
	AgentURL func(ctx context.Context, agent string) (string, error)
	// Client posts to the agents; its timeout and retries are the
	// per-rollout ones.
	Client   *server.Client
	Progress progress.Reporter
	// Log receives notices (the resume summary).
	Log io.Writer
	// Capture is where model servers capture the rollouts' calls
	// (observability_enabled): each rollout's capture is cleared before it
	// runs and joined into its result after.
	Capture []*capture.Store
	// Tokens is training-token capture (token_id_capture), nil when off.
	Tokens *TokenCapture
	// GCBudget is the heap collection may grow to between collections
	// while it keeps little alive (server.StartGCBudget), 0 to leave the
	// process's GC alone; aggregation after it runs at the process's.
	GCBudget uint64
	// Processors is how many threads run Go code while collecting
	// (runtime.GOMAXPROCS), 0 to leave the process's. After the
	// collection the runtime has its own default back
	// (runtime.SetDefaultGOMAXPROCS), automatic updates included, so it
	// is for a process that chose no number of its own and collects once.
	Processors int
}

// TokenCapture is what the collector does with training-token capture:
// clears the rollouts' captures before they run and, with Settings.Rebuild,
// rebuilds each result's output from its capture (capture.Finalize),
// retiring the capture once the row is on disk.
type TokenCapture struct {
	Store    *capture.TokenStore
	Settings capture.TokenSettings
	// Participates says whether an agent instance's rollouts are captured
	// (its token_id_capture flag, or all_agents).
	Participates func(agent string) bool
}

// MaskFractionError stops a collection whose rollouts are mostly masked:
// NeMo Gym's max_mask_fraction.
type MaskFractionError struct {
	Masked, Finalized int
	Limit             float64
	Reasons           []string // in first-seen order
	Counts            map[string]int
}

func (e *MaskFractionError) Error() string {
	reasons := make([]string, len(e.Reasons))
	for i, r := range e.Reasons {
		reasons[i] = fmt.Sprintf("%s: %d", interp.PythonStrRepr(r), e.Counts[r])
	}
	return fmt.Sprintf("%d/%d finalized rollouts (%.1f%%) are masked, exceeding token_id_capture.max_mask_fraction=%s. Mask reasons: {%s}. Aborting instead of collecting mostly token-less data.",
		e.Masked, e.Finalized, 100*float64(e.Masked)/float64(e.Finalized), tree.PythonFloatRepr(e.Limit), strings.Join(reasons, ", "))
}

// Summary counts what a collection did.
type Summary struct {
	Rollouts int // materialized rollouts
	Standings
	// This run's rollouts.
	Dispatched, Succeeded, Failed, RequestFailed, NotPersisted int
}

// RequestFailuresError reports rollouts whose /run call failed; they are
// in the failures file and --resume tries them again.
type RequestFailuresError struct {
	Failed, Dispatched int
	FailuresPath       string
}

func (e *RequestFailuresError) Error() string {
	return fmt.Sprintf("%d of %d rollouts failed to run (their rows and errors are in %s); run the same command with --resume to retry them", e.Failed, e.Dispatched, e.FailuresPath)
}

// collect runs every materialized rollout that is not done yet (sum
// counts them against st: countRollouts) through its agent's /run and
// appends each result, as it completes, to the output (successes) or the
// failures file. A rollout cut short by cancellation is written nowhere,
// so --resume runs it again: every rollout ends up in the output exactly
// once.
func collect(ctx context.Context, p Paths, st *resumeState, sum *Summary, o CollectOptions) (*Summary, error) {
	if o.GCBudget > 0 {
		defer server.StartGCBudget(o.GCBudget)()
	}
	if o.Processors > 0 {
		runtime.GOMAXPROCS(o.Processors)
		defer runtime.SetDefaultGOMAXPROCS()
	}
	out, err := openAppender(p.Output)
	if err != nil {
		return nil, err
	}
	fails, err := openAppender(p.Failures)
	if err != nil {
		out.Close()
		return nil, err
	}
	c := &collector{o: o, materialized: p.Materialized, out: out, fails: fails, sum: sum}
	if len(o.Capture) > 0 && o.Log != nil {
		fmt.Fprintln(o.Log, "Clearing existing model-call captures for rollouts being dispatched")
	}
	o.Progress.Start(sum.Rollouts-sum.Terminal-sum.Maxed, sum.Cached)
	runErr := c.dispatch(ctx, st)
	o.Progress.Finish()
	if t := &c.tokens; t.finalized > 0 && o.Log != nil {
		fmt.Fprintf(o.Log, "Training-token capture: %d rollouts rebuilt from their captured tokens, %d of them masked (mask_sample).\n", t.finalized, t.masked)
	}
	if err := errors.Join(out.Close(), fails.Close()); err != nil {
		return sum, err
	}
	if runErr != nil {
		return sum, runErr
	}
	if err := c.firstWriteError(); err != nil {
		return sum, err
	}
	if err := ctx.Err(); err != nil {
		return sum, context.Cause(ctx)
	}
	if sum.RequestFailed > 0 {
		return sum, &RequestFailuresError{Failed: sum.RequestFailed, Dispatched: sum.Dispatched, FailuresPath: p.Failures}
	}
	return sum, nil
}

// checkAgents finds the agents materialized rollouts name (agents, from
// their materialization) before any runs: an agent that does not exist
// (or servers that cannot be reached) would fail every one of its
// rollouts the same way, so it is one error, up front. Only when one
// fails is the file read (findAgents), to name the first rollout that
// uses it.
func checkAgents(ctx context.Context, materialized string, agents []string, agentURL func(context.Context, string) (string, error)) error {
	if agentURL == nil {
		return nil
	}
	for _, agent := range agents {
		if _, err := agentURL(ctx, agent); err != nil {
			return findAgents(ctx, materialized, agentURL)
		}
	}
	return nil
}

// findAgents finds every agent the materialized rollouts name, in the
// file's order: the error names the first rollout whose agent fails.
func findAgents(ctx context.Context, materialized string, agentURL func(context.Context, string) (string, error)) error {
	if agentURL == nil {
		return nil
	}
	checked := map[string]bool{}
	return eachRecord(materialized, func(lr *lineReader, row *record) error {
		agent := row.agent()
		if checked[agent] {
			return nil
		}
		checked[agent] = true
		if _, err := agentURL(ctx, agent); err != nil {
			return fmt.Errorf("agent %q, named by rollout %d (task %d) and maybe others: %w", agent, lr.Line, row.peek(TaskIndexKey).Int(), err)
		}
		return nil
	})
}

// countRollouts counts the materialized rollouts by where st says each
// stands.
func countRollouts(materialized string, st *resumeState, maxAttempts int) (*Summary, error) {
	sum := &Summary{}
	err := eachRecord(materialized, func(lr *lineReader, row *record) error {
		k, ok := row.key()
		if !ok {
			return lr.errorf("a materialized row lacks %s or %s; materialize again without --resume", TaskIndexKey, RolloutIndexKey)
		}
		sum.Rollouts++
		sum.count(st, k, maxAttempts)
		return nil
	})
	return sum, err
}

type collector struct {
	o            CollectOptions
	materialized string
	out, fails   *appender
	mu           sync.Mutex
	sum          *Summary
	writeErr     error
	producerOnce sync.Once
	joinFailOnce sync.Once
	tokens       tokenTally
}

// tokenTally counts the rollouts training-token capture finalized.
type tokenTally struct {
	clearOnce, maskOnce sync.Once
	finalized, masked   int
	reasons             []string
	counts              map[string]int
}

// clearCapture removes what an earlier run captured under the rollout's
// key, so that its capture holds this run's calls only.
func clearCapture(stores []*capture.Store, body []byte) error {
	key, err := capture.Key(body)
	if err != nil || key == "" {
		return err
	}
	for _, s := range stores {
		if err := s.Clear(key); err != nil {
			return fmt.Errorf("clearing the model-call capture of rollout %s: %w", key, err)
		}
	}
	return nil
}

func (c *collector) dispatch(ctx context.Context, st *resumeState) error {
	conc := max(c.o.Concurrency, 1)
	slots := make(chan struct{}, conc)
	var wg sync.WaitGroup
	err := eachRecord(c.materialized, func(lr *lineReader, row *record) error {
		k, _ := row.key()
		if st.standing(k, c.o.MaxAttempts) != standingToRun {
			return nil
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return errStop
		}
		if c.firstWriteError() != nil {
			<-slots
			return errStop
		}
		// As gjson held it: from its opening brace.
		rec := row.from(len(row.raw) - len(bytes.TrimLeft(row.raw, " \t\r\n")))
		if n := st.attempts[k]; n > 0 {
			body, err := sjson.SetBytes(rec.raw, AttemptIndexKey, n)
			if err != nil {
				return err
			}
			rec.parse(body)
		}
		if len(c.o.Capture) > 0 {
			if err := clearCapture(c.o.Capture, rec.raw); err != nil {
				return lr.errorf("%v", err)
			}
		}
		agent := row.agent()
		if err := c.clearTokens(rec.raw, agent); err != nil {
			return lr.errorf("%v", err)
		}
		c.mu.Lock()
		c.sum.Dispatched++
		c.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			c.run(ctx, rec, agent)
		}()
		return nil
	})
	wg.Wait()
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// errStop ends the dispatch loop early without being an error itself.
var errStop = errors.New("stop dispatching")

func (c *collector) firstWriteError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeErr
}

// run is one rollout: POST the row to its agent's /run, stamp the result
// and route it.
func (c *collector) run(ctx context.Context, row *record, agent string) {
	body := row.raw
	started := time.Now()
	result, err := c.post(ctx, agent, body)
	latencyMS := float64(time.Since(started)) / float64(time.Millisecond)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		// The attempt ended early: what it captured is not the whole of it.
		if key, _ := capture.Key(body); key != "" {
			for _, s := range c.o.Capture {
				s.MarkIncomplete(key)
			}
		}
		failure, ferr := requestFailure(body, err)
		c.record(c.fails, failure, ferr, progress.Outcome{Failed: true}, func(s *Summary) { s.RequestFailed++; s.Failed++ })
		return
	}
	stamped, route, err := stamp(result, row)
	if err != nil {
		failure, ferr := requestFailure(body, fmt.Errorf("agent %s answered /run with something that is not a JSON object: %w", agent, err))
		c.record(c.fails, failure, ferr, progress.Outcome{Failed: true}, func(s *Summary) { s.RequestFailed++; s.Failed++ })
		return
	}
	if len(c.o.Capture) > 0 {
		joined, observations, err := capture.Join(stamped, body, c.o.Capture, &latencyMS)
		if err != nil {
			c.joinFailOnce.Do(func() {
				if c.o.Log != nil {
					fmt.Fprintf(c.o.Log, "Warning: the model-call capture of rollout (%d, %d) (and maybe others) is not in its row: %v\n", row.peek(TaskIndexKey).Int(), row.peek(RolloutIndexKey).Int(), err)
				}
			})
		}
		stamped = joined
		if observations {
			c.producerOnce.Do(func() {
				if c.o.Log != nil {
					fmt.Fprintln(c.o.Log, "Warning: an agent sent ng_agent_observations; gym joins the model-call capture into ng_model_call_capture (with the calls' payloads) and leaves the agent's observations and trajectory as it sent them, where NeMo Gym would merge them.")
				}
			})
		}
	}
	var build *capture.TokenBuild
	stamped, build = c.finalizeTokens(stamped, agent)
	if len(c.o.Capture) > 0 || c.participates(agent) {
		route = routeOf(stamped)
	}
	switch {
	case route.noPersist:
		c.record(nil, nil, nil, progress.Outcome{Failed: true}, func(s *Summary) { s.NotPersisted++ })
	case route.failed:
		c.record(c.fails, stamped, nil, progress.Outcome{Failed: true}, func(s *Summary) { s.Failed++ })
	default:
		var retire func()
		if build.Retirable() {
			store := c.o.Tokens.Store
			retire = func() {
				if err := build.Retire(store); err != nil && c.o.Log != nil {
					fmt.Fprintf(c.o.Log, "Warning: could not retire the token capture of rollout (%d, %d); its files stay: %v\n",
						gjson.GetBytes(stamped, TaskIndexKey).Int(), gjson.GetBytes(stamped, RolloutIndexKey).Int(), err)
				}
			}
		}
		c.recordThen(c.out, stamped, retire, progress.Outcome{Reward: route.reward, HasReward: route.hasReward}, func(s *Summary) { s.Succeeded++ })
	}
}

// route is what decides where a result goes, read as gjson.Get reads
// each member (the first of a repeated key).
type route struct {
	noPersist, failed bool
	reward            float64
	hasReward         bool
}

// routeNames are the members a route reads, in route.read's order.
var routeNames = [...]string{"_ng_no_persist", "_ng_failure_class", "reward"}

// read takes what a member says of the route, if it is the first of its
// name (seen says which have been read).
func (r *route) read(name, value []byte, seen *[len(routeNames)]bool) {
	for i, routeName := range routeNames {
		if seen[i] || string(name) != routeName {
			continue
		}
		seen[i] = true
		v := jsonl.ParseInPlace(value)
		switch i {
		case 0:
			r.noPersist = v.Bool()
		case 1:
			r.failed = v.Type != gjson.Null
		case 2:
			r.reward, r.hasReward = v.Num, v.Type == gjson.Number
		}
		return
	}
}

// routeOf reads a result's route.
func routeOf(result []byte) route {
	var rec record
	rec.parse(result)
	var r route
	var seen [len(routeNames)]bool
	for _, m := range rec.members {
		r.read(m.Name(result), m.Value(result), &seen)
	}
	return r
}

// participates is whether the rollouts of agent take part in
// training-token capture.
func (c *collector) participates(agent string) bool {
	return c.o.Tokens != nil && c.o.Tokens.Participates(agent)
}

// clearTokens removes what an earlier run captured of the rollout's
// training tokens, so that its capture holds this attempt's calls only.
func (c *collector) clearTokens(body []byte, agent string) error {
	if !c.participates(agent) || c.o.Tokens.Store == nil {
		return nil
	}
	key, err := capture.Key(body)
	if err != nil || key == "" {
		return err
	}
	c.tokens.clearOnce.Do(func() {
		if c.o.Log != nil {
			fmt.Fprintln(c.o.Log, "Clearing existing token captures for rollouts being dispatched")
		}
	})
	if err := c.o.Tokens.Store.Delete(key); err != nil {
		return fmt.Errorf("clearing the token capture of rollout %s: %w", key, err)
	}
	return nil
}

// finalizeTokens rebuilds a result from its rollout's training-token
// capture, counts it, and stops the collection past max_mask_fraction.
func (c *collector) finalizeTokens(result []byte, agent string) ([]byte, *capture.TokenBuild) {
	if !c.participates(agent) || !c.o.Tokens.Settings.Rebuild || c.o.Tokens.Store == nil {
		return result, nil
	}
	result, build := c.o.Tokens.Store.Finalize(result)
	if build == nil {
		return result, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &c.tokens
	t.finalized++
	if build.Masked {
		t.masked++
		if t.counts == nil {
			t.counts = map[string]int{}
		}
		for _, r := range build.Reasons {
			if t.counts[r] == 0 {
				t.reasons = append(t.reasons, r)
			}
			t.counts[r]++
		}
		t.maskOnce.Do(func() {
			if c.o.Log != nil {
				fmt.Fprintf(c.o.Log, "Warning: rollout (%d, %d) was captured incompletely or ambiguously (%s); it is marked for masking (mask_sample) rather than trained on. The count of masked rollouts follows the collection.\n",
					gjson.GetBytes(result, TaskIndexKey).Int(), gjson.GetBytes(result, RolloutIndexKey).Int(), gjson.GetBytes(result, "_ng_token_capture").Raw)
			}
		})
	}
	s := c.o.Tokens.Settings
	if s.MaxMaskFraction >= 0 && int64(t.finalized) >= s.MinSamples && float64(t.masked)/float64(t.finalized) > s.MaxMaskFraction && c.writeErr == nil {
		c.writeErr = &MaskFractionError{Masked: t.masked, Finalized: t.finalized, Limit: s.MaxMaskFraction,
			Reasons: append([]string(nil), t.reasons...), Counts: maps.Clone(t.counts)}
	}
	return result, build
}

func (c *collector) post(ctx context.Context, agent string, body []byte) ([]byte, error) {
	if agent == "" {
		return nil, fmt.Errorf("the row has no %s.name", AgentRefKey)
	}
	base, err := c.o.AgentURL(ctx, agent)
	if err != nil {
		return nil, err
	}
	reply, _, err := c.o.Client.PostJSON(ctx, base+"/run", body, nil)
	return reply, err
}

func (c *collector) record(to *appender, line []byte, buildErr error, outcome progress.Outcome, count func(*Summary)) {
	err := buildErr
	if err == nil && to != nil {
		err = to.writeLine(line)
	}
	c.counted(err, outcome, count)
}

// recordThen is record of a line with something to do once it is on
// disk (nothing when then is nil).
func (c *collector) recordThen(to *appender, line []byte, then func(), outcome progress.Outcome, count func(*Summary)) {
	if then == nil {
		c.record(to, line, nil, outcome, count)
		return
	}
	c.counted(to.writeLineThen(line, then), outcome, count)
}

func (c *collector) counted(err error, outcome progress.Outcome, count func(*Summary)) {
	c.mu.Lock()
	if err != nil {
		if c.writeErr == nil {
			c.writeErr = err
		}
		c.mu.Unlock()
		return
	}
	count(c.sum)
	c.mu.Unlock()
	c.o.Progress.Add(outcome)
}

// identityKeys are the row's keys a result carries, in the order NeMo
// Gym's collector sets them.
var identityKeys = [...]string{TaskIndexKey, RolloutIndexKey, AgentRefKey, SkillsRefKey, AttemptIndexKey, RolloutIDKey}

// stamp copies the row's identity onto the agent's result, as NeMo Gym's
// collector does, and compacts it onto one line: each identity key the row
// has replaces the result's own (the first, in place) or is appended at
// the end, in identityKeys' order. The read that checks the result finds
// its members, and whether it is already compact (then its values are
// copied as they are), and the line is built from them, with the result's
// route.
func stamp(result []byte, row *record) ([]byte, route, error) {
	var scratch [32]jsonl.Member
	members, object, valid, spaced := jsonl.MembersLayout(result, scratch[:0])
	if !valid {
		return nil, route{}, errors.New(jsonError(result))
	}
	if !object {
		return nil, route{}, fmt.Errorf("got %s", jsonl.Excerpt(compactValid(nil, result)))
	}
	type identity struct {
		key    string
		raw    []byte
		placed bool
	}
	var ids [len(identityKeys)]identity
	n := 0
	for _, k := range identityKeys {
		if v := row.value(k); v != nil {
			ids[n] = identity{key: k, raw: v}
			n++
		}
	}
	out := make([]byte, 0, len(result)+128)
	out = append(out, '{')
	var r route
	var routed [len(routeNames)]bool
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(append(out, result[m.KeyStart:m.KeyEnd]...), ':')
		name, value := m.Name(result), m.Value(result)
		placed := false
		for j := range ids[:n] {
			if id := &ids[j]; !id.placed && string(name) == id.key {
				out = append(out, id.raw...)
				id.placed, placed = true, true
				break
			}
		}
		switch {
		case placed:
		case spaced:
			out = compactValid(out, value)
		default:
			out = append(out, value...)
		}
		r.read(name, value, &routed)
	}
	written := len(members)
	for _, id := range ids[:n] {
		if id.placed {
			continue
		}
		if written > 0 {
			out = append(out, ',')
		}
		written++
		out = append(append(append(append(out, '"'), id.key...), `":`...), id.raw...)
	}
	return append(out, '}'), r, nil
}

// compactValid appends src to dst without the white space outside its
// strings, as json.Compact does; src must be valid JSON, which it does not
// check again (json.Compact's own validation costs four times a
// gjson.ValidBytes).
func compactValid(dst, src []byte) []byte {
	start := 0
	for i := 0; i < len(src); {
		switch src[i] {
		case '"':
			i = min(jsonl.StringEnd(src, i), len(src))
		case ' ', '\t', '\n', '\r':
			dst = append(dst, src[start:i]...)
			i++
			start = i
		default:
			i++
		}
	}
	return append(dst, src[start:]...)
}

// requestFailure is the failures-file row of a rollout whose /run failed:
// the row as sent, the class and the error.
func requestFailure(body []byte, cause error) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, body); err != nil {
		return nil, err
	}
	out, err := sjson.SetBytes(buf.Bytes(), "_ng_failure_class", RequestFailedClass)
	if err != nil {
		return nil, err
	}
	return sjson.SetRawBytes(out, "_ng_failure_error", openai.AppendJSONString(nil, cause.Error()))
}

func sumValues(m map[key]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// truncateFile empties a file, creating it if needed.
func truncateFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}
