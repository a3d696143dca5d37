package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/progress"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Failure classes of reverification.
const (
	// VerifyRequestFailedClass is a rollout whose /verify call failed after
	// every retry. NeMo Gym aborts the whole reverification on it; gym
	// records it in the failures file, carries on, and verifies it again on
	// --resume.
	VerifyRequestFailedClass = "verify_request_failed"
	// JudgeFailedClass and JudgeInvalidClass are the failures
	// --judge-failed-only recovers: the judge call failed, or its verdict
	// could not be scored.
	JudgeFailedClass  = "judge_failed"
	JudgeInvalidClass = "judge_invalid"
)

// UnsafePrefix starts the output's name when --force re-verified against a
// resources server that does not declare itself stateless.
const UnsafePrefix = "unsafe_"

// RecoveryWarning is printed at the start of a --judge-failed-only run.
const RecoveryWarning = "WARNING: judge-failed-only recovery merges rewards from TWO sources — the successful rollouts in " +
	"--rollouts were scored by the ORIGINAL run's verifier/judge, while the recovered rows are scored by the " +
	"CURRENT verification config. If any crucial parameter (judge model, judge prompt/params, verifier config, " +
	"etc.) changed between the original run and this recovery, the merged rewards are inconsistent. Ensure the " +
	"verification config matches the original run."

// ReverifyOptions are the inputs of one `gym eval reverify`.
type ReverifyOptions struct {
	// ReverifySettings hold the paths, made absolute by the caller.
	ReverifySettings
	Routes *Routes
	// MaxAttempts is NEMO_GYM_MAX_ROLLOUT_ATTEMPTS, for --resume.
	MaxAttempts int
	// Client reaches the resources servers; ServerURL gives one's base URL.
	Client    *server.Client
	ServerURL func(ctx context.Context, name string) (string, error)
	Progress  progress.Reporter
	// Out receives the results summary, Log the notices.
	Out, Log io.Writer
}

// ReverifyPlan is a checked reverification: every rollout to verify has
// its input and its resources server, and the servers it needs are known,
// before any server starts or any file is written.
type ReverifyPlan struct {
	o ReverifyOptions
	// Verifiers are the resources servers the rollouts to verify go to;
	// Servers adds those that aggregate the rows carried into the output
	// (--judge-failed-only, --append). Both sorted.
	Verifiers, Servers []string
	// Rows is the number of rollouts selected (after --limit).
	Rows   int
	source string
	inputs map[key]rowRef
	// present are the keys the output holds once the successes are seeded
	// (--judge-failed-only): never verified again.
	present map[key]struct{}
}

// OutputExistsError refuses to clobber an earlier reverification.
type OutputExistsError struct{ Path string }

func (e *OutputExistsError) Error() string {
	return fmt.Sprintf("Output file already exists: '%s'. Pass --overwrite to delete it and start fresh, or --resume to continue from it.", e.Path)
}

// ReverifyModeError is a resources server that does not declare its
// verifier stateless, without --force.
type ReverifyModeError struct{ Servers []string }

func (e *ReverifyModeError) Error() string {
	return fmt.Sprintf("Resource server(s) %s have reverify_mode=UNSUPPORTED or UNKNOWN. Rewards computed by reverification may be incorrect. Pass --force (++force=true) to override (output will be prefixed with '%s').",
		pyList(e.Servers), UnsafePrefix)
}

// VerifyFailuresError reports rollouts whose /verify call failed; they are
// in the failures file and --resume verifies them again.
type VerifyFailuresError struct {
	Failed, Dispatched int
	FailuresPath       string
}

func (e *VerifyFailuresError) Error() string {
	return fmt.Sprintf("%d of %d rollouts could not be verified (their rows and errors are in %s); run the same command with --resume to retry them", e.Failed, e.Dispatched, e.FailuresPath)
}

func pyList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// PlanReverify reads the inputs and checks every rollout that will be
// verified: its materialized input, its response, its resources server.
// Cancelling ctx stops the reading.
func PlanReverify(ctx context.Context, o ReverifyOptions) (*ReverifyPlan, error) {
	for _, f := range []struct{ path, flag string }{{o.Inputs, "--inputs"}, {o.Rollouts, "--rollouts"}} {
		if _, err := os.Stat(f.path); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, &InputError{Path: f.path, Msg: fmt.Sprintf("cannot read it (%s): %v", f.flag, err)}
		}
	}
	// Only a recovery appended onto the run's own rollouts writes where it
	// reads; anything else would clear the rollouts before reading them.
	for _, in := range []string{o.Inputs, o.Rollouts} {
		if samePath(in, o.Output) && !(o.Append && in == o.Rollouts) {
			return nil, &InputError{Path: o.Output, Msg: "the output is one of the files re-verified; write it elsewhere (or recover judge failures into the rollouts with --judge-failed-only --append)"}
		}
	}
	p := &ReverifyPlan{o: o, source: o.Rollouts, inputs: map[key]rowRef{}}
	err := eachRecord(o.Inputs, func(lr *lineReader, row *record) error {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		k, ok := row.key()
		if !ok {
			return lr.errorf("the materialized input lacks %s or %s", TaskIndexKey, RolloutIndexKey)
		}
		if _, dup := p.inputs[k]; dup {
			return lr.errorf("a second materialized input for rollout %s", k)
		}
		p.inputs[k] = rowRef{k, 0, lr.Start, lr.Size}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if o.JudgeFailedOnly {
		p.source = PathsFor(o.Rollouts).Failures
		if _, err := os.Stat(p.source); err != nil {
			return nil, &InputError{Path: p.source, Msg: "no failures file beside --rollouts, so there are no judge failures to recover"}
		}
		if err := eachRecord(p.source, func(lr *lineReader, row *record) error {
			if row.value("stage_index") != nil {
				return lr.errorf("--judge-failed-only does not support multi-stage rows (stage_index); resume the multi-stage rollout collection so stage identity and adaptive references are preserved")
			}
			return nil
		}); err != nil {
			return nil, err
		}
		p.present = map[key]struct{}{}
		if o.Append || o.Resume {
			if err := addKeys(o.Output, p.present); err != nil {
				return nil, err
			}
		}
		if err := addKeys(o.Rollouts, p.present); err != nil {
			return nil, err
		}
	}
	verifiers, servers := map[string]bool{}, map[string]bool{}
	err = p.walk(func(lr *lineReader, _ key, payload []byte) error {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		p.Rows++
		rs, err := o.Routes.For(gjson.ParseBytes(payload))
		if err != nil {
			return lr.errorf("%v", err)
		}
		verifiers[rs], servers[rs] = true, true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !o.DisableAggregation {
		carried := []string{}
		if o.JudgeFailedOnly {
			carried = append(carried, o.Rollouts)
			if o.Append {
				carried = append(carried, o.Output)
			}
		}
		for _, path := range carried {
			if err := eachRecord(path, func(lr *lineReader, row *record) error {
				rs, err := o.Routes.For(row.result())
				if err != nil {
					return lr.errorf("its metrics need %v (or pass --disable-aggregation)", err)
				}
				servers[rs] = true
				return nil
			}); err != nil {
				return nil, err
			}
		}
	}
	p.Verifiers, p.Servers = sortedKeys(verifiers), sortedKeys(servers)
	// Without --force the output keeps its name, so a clash is refused
	// now, before any server starts.
	if !o.Force || o.JudgeFailedOnly {
		if err := p.checkOutputFree(PathsFor(o.Output)); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// addKeys adds the keys of a rollouts file's rows to set; a missing file
// adds none.
func addKeys(path string, set map[key]struct{}) error {
	return eachRecord(path, func(_ *lineReader, row *record) error {
		if k, ok := row.key(); ok {
			set[k] = struct{}{}
		}
		return nil
	})
}

// walk visits, in file order, each rollout selected for verification with
// its /verify body: with --judge-failed-only only the judge failures whose
// key the output will not hold, each key once; at most Limit of them.
func (p *ReverifyPlan) walk(visit func(lr *lineReader, k key, payload []byte) error) error {
	inputs, err := openRows([]string{p.o.Inputs})
	if err != nil {
		return err
	}
	defer inputs.Close()
	seen := map[key]int{}
	n := 0
	var buf []byte
	err = eachRecord(p.source, func(lr *lineReader, row *record) error {
		if p.o.Limit > 0 && n >= p.o.Limit {
			return errStop
		}
		k, ok := row.key()
		if p.o.JudgeFailedOnly {
			class := row.peek("_ng_failure_class").Str
			if class != JudgeFailedClass && class != JudgeInvalidClass {
				return nil
			}
			if _, done := p.present[k]; done && ok {
				return nil
			}
			if _, dup := seen[k]; dup && ok {
				return nil
			}
		}
		if !ok {
			return lr.errorf("the rollout lacks %s or %s, so it cannot be matched to its materialized input", TaskIndexKey, RolloutIndexKey)
		}
		if first, dup := seen[k]; dup {
			return lr.errorf("rollout %s is here a second time (first at line %d); the output would hold it twice", k, first)
		}
		seen[k] = lr.Line
		ref, ok := p.inputs[k]
		if !ok {
			return lr.errorf("no materialized input row in %s has rollout %s", p.o.Inputs, k)
		}
		line, err := inputs.read(ref, buf)
		if err != nil {
			return err
		}
		buf = line
		payload, err := verifyPayload(gjson.ParseBytes(line), row.result())
		if err != nil {
			return lr.errorf("%v", err)
		}
		n++
		return visit(lr, k, payload)
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// ReverifySummary counts what a reverification did.
type ReverifySummary struct {
	Paths Paths
	// Unsafe is set when --force re-verified against servers that are not
	// stateless (the output is prefixed unsafe_); Warning says which.
	Unsafe  bool
	Warning string
	// Seeded are the successes carried into the output (--judge-failed-only).
	Seeded   int
	Selected int
	Standings
	Dispatched, Succeeded, Failed int
	RequestFailed, NotPersisted   int
	FailureCounts                 map[string]int
	MetricsWritten                bool
}

// Run checks the resources servers' reverify_mode, prepares the output,
// verifies every selected rollout not done yet and aggregates. A run that
// is cancelled returns the context's cause after writing everything that
// finished; --resume verifies the rest.
func (p *ReverifyPlan) Run(ctx context.Context) (*ReverifySummary, error) {
	o := p.o
	sum := &ReverifySummary{Selected: p.Rows, FailureCounts: map[string]int{}}
	prefix := ""
	if !o.JudgeFailedOnly {
		bad, err := p.checkModes(ctx)
		if err != nil {
			return nil, err
		}
		if len(bad) > 0 {
			if !o.Force {
				return nil, &ReverifyModeError{Servers: bad}
			}
			prefix = UnsafePrefix
			sum.Unsafe = true
			sum.Warning = fmt.Sprintf("WARNING: resource server(s) %s have reverify_mode=UNSUPPORTED or UNKNOWN. Rewards computed by reverification may be incorrect. Output is prefixed with '%s'.", pyList(bad), UnsafePrefix)
			fmt.Fprintln(o.Log, sum.Warning)
		}
	}
	paths := PathsFor(filepath.Join(filepath.Dir(o.Output), prefix+filepath.Base(o.Output)))
	sum.Paths = paths
	if err := p.prepareOutput(paths); err != nil {
		return sum, err
	}

	st := newResumeState()
	switch {
	case o.Resume:
		if !exists(paths.Output) && !exists(paths.Failures) {
			fmt.Fprintln(o.Log, "Nothing to resume: neither the output nor its failures file exists; verifying from the beginning.")
		}
		var err error
		if st, err = readResume(paths.Output, paths.Failures); err != nil {
			return sum, err
		}
	case o.Append:
		if _, err := repairTail(paths.Output); err != nil {
			return sum, err
		}
	}
	if o.JudgeFailedOnly {
		fmt.Fprintln(o.Log, RecoveryWarning)
		n, err := seed(o.Rollouts, paths.Output)
		if err != nil {
			return sum, err
		}
		sum.Seeded = n
		fmt.Fprintf(o.Log, "Recovery mode: seeded %d successful rollout(s) into %s\n", n, paths.Output)
	}
	err := p.walk(func(_ *lineReader, k key, _ []byte) error {
		sum.count(st, k, o.MaxAttempts)
		return nil
	})
	if err != nil {
		return sum, err
	}
	if o.Resume {
		st.logResume(o.Log, sum.Selected, "to re-verify", sum.Standings, o.MaxAttempts)
	}
	if sum.Selected-sum.Cached-sum.Terminal-sum.Maxed == 0 {
		fmt.Fprintln(o.Log, "WARNING: Nothing to be re-verified.")
	}

	dispatchErr := p.dispatch(ctx, paths, st, sum)
	var failures *VerifyFailuresError
	if dispatchErr != nil && !errors.As(dispatchErr, &failures) {
		return sum, dispatchErr
	}
	metrics := "None"
	if o.DisableAggregation {
		fmt.Fprintln(o.Log, "Skipping aggregate-metrics computation because disable_aggregation=True. Run `gym eval aggregate` after all shards finish to compute the global metrics.")
	} else {
		rows, err := ReadMetricsRows(filepath.Dir(paths.Metrics), paths.Output)
		if err != nil {
			return sum, err
		}
		defer rows.Close()
		if rows.Rows() > 0 {
			agg, err := p.aggregator(paths.Output)
			if err != nil {
				return sum, err
			}
			if _, err := WriteAggregateMetrics(ctx, rows, agg, paths.Metrics, o.Out); err != nil {
				return sum, err
			}
			sum.MetricsWritten = true
			metrics = paths.Metrics
		}
	}
	fmt.Fprintf(o.Out, "Finished rollout reverification! View results at:\nRe-verified rollouts: %s\nAggregate metrics: %s\n", paths.Output, metrics)
	if missing := sum.Failed + sum.NotPersisted; missing > 0 {
		fmt.Fprintf(o.Out, "Rollouts missing from the score: %d of %d re-verified this run (%s; see %s)\n", missing, sum.Dispatched, countsByName(sum.FailureCounts), paths.Failures)
	}
	if sum.Warning != "" {
		fmt.Fprintln(o.Log, sum.Warning)
	}
	return sum, dispatchErr
}

// countsByName writes counts as "2 judge_failed, 1 verify_request_failed".
func countsByName(m map[string]int) string {
	var out []string
	for _, name := range sortedKeys(m) {
		out = append(out, fmt.Sprintf("%d %s", m[name], name))
	}
	return strings.Join(out, ", ")
}

// samePath reports whether two paths name one file (or, when either does
// not exist yet, are the same path).
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}

func newGet(ctx context.Context, url string) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// checkModes asks each resources server the rollouts go to for its
// reverify_mode and returns those that are not stateless, sorted.
func (p *ReverifyPlan) checkModes(ctx context.Context) ([]string, error) {
	var bad []string
	for _, rs := range p.Verifiers {
		base, err := p.o.ServerURL(ctx, rs)
		if err != nil {
			return nil, err
		}
		req, err := newGet(ctx, base+"/reverify_mode")
		if err != nil {
			return nil, err
		}
		resp, err := p.o.Client.Do(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("resources server %s: GET /reverify_mode: %w", rs, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("resources server %s: GET /reverify_mode: %w", rs, err)
		}
		var mode string
		if json.Unmarshal(body, &mode) != nil || (mode != "stateless" && mode != "unsupported" && mode != "unknown") {
			return nil, fmt.Errorf("resources server %s: GET /reverify_mode answered %s, not one of \"stateless\", \"unsupported\", \"unknown\"", rs, jsonl.Excerpt(body))
		}
		if mode != "stateless" {
			bad = append(bad, rs)
		}
	}
	sort.Strings(bad)
	return bad, nil
}

// prepareOutput refuses to clobber an earlier output (and its failures
// file) unless --overwrite, which deletes them; --resume and --append
// reuse them.
func (p *ReverifyPlan) prepareOutput(paths Paths) error {
	if err := os.MkdirAll(filepath.Dir(paths.Output), 0o755); err != nil {
		return err
	}
	for _, path := range []string{paths.Output, paths.Failures, paths.Metrics} {
		jsonl.RemoveStaleTemps(path)
	}
	if err := p.checkOutputFree(paths); err != nil {
		return err
	}
	if p.o.Append || p.o.Resume {
		return nil
	}
	for _, path := range []string{paths.Output, paths.Failures} {
		if !exists(path) {
			continue
		}
		if err := os.Remove(path); err != nil {
			return err
		}
		fmt.Fprintf(p.o.Log, "Deleted existing output file: '%s'\n", path)
	}
	return nil
}

// checkOutputFree refuses an existing output or failures file unless
// --overwrite, --resume or --append says what to do with it.
func (p *ReverifyPlan) checkOutputFree(paths Paths) error {
	if p.o.Append || p.o.Resume || p.o.Overwrite {
		return nil
	}
	for _, path := range []string{paths.Output, paths.Failures} {
		if exists(path) {
			return &OutputExistsError{Path: path}
		}
	}
	return nil
}

// seed copies the successes into the output, each key once and none the
// output already holds, and returns how many it copied.
func seed(successes, output string) (int, error) {
	present := map[key]struct{}{}
	if err := addKeys(output, present); err != nil {
		return 0, err
	}
	out, err := openAppender(output)
	if err != nil {
		return 0, err
	}
	n := 0
	err = eachRecord(successes, func(_ *lineReader, row *record) error {
		if k, ok := row.key(); ok {
			if _, dup := present[k]; dup {
				return nil
			}
			present[k] = struct{}{}
		}
		var c bytes.Buffer
		if err := json.Compact(&c, row.raw); err != nil {
			return err
		}
		n++
		return out.writeLine(c.Bytes())
	})
	return n, errors.Join(err, out.Close())
}

// aggregator asks each agent's resources server for its metrics, as NeMo
// Gym's reverification does (the agents are not running). The server is
// the one the agent's rows route to; rows of one agent that route to
// different servers cannot be aggregated as one agent.
func (p *ReverifyPlan) aggregator(output string) (Aggregator, error) {
	byAgent := map[string]string{}
	err := eachRecord(output, func(lr *lineReader, row *record) error {
		rs, err := p.o.Routes.For(row.result())
		if err != nil {
			return lr.errorf("%v", err)
		}
		agent := row.agent()
		if prev, ok := byAgent[agent]; ok && prev != rs {
			return lr.errorf("agent %s has rollouts verified by %s and by %s; aggregate them separately with `gym eval aggregate`", agent, prev, rs)
		}
		byAgent[agent] = rs
		return nil
	})
	if err != nil {
		return nil, err
	}
	return AgentServers{Client: p.o.Client, AgentURL: func(ctx context.Context, agent string) (string, error) {
		return p.o.ServerURL(ctx, byAgent[agent])
	}}, nil
}
