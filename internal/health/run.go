// Package health is NeMo Gym 0.7.0's post-run rollout quality
// verification (nemo_gym/rollout_health.py, nemo_gym/health): checks read
// each persisted rollout and its canonical ng_trajectory and return
// evidence; verdicts (healthy, unhealthy, unobserved) are derived from it
// per rollout and per task, and written to quality_summary.json and
// rollout_verdicts.jsonl.
package health

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/extsort"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/tidwall/gjson"
)

// The report files, written into the run directory.
const (
	SummaryFile  = "quality_summary.json"
	VerdictsFile = "rollout_verdicts.jsonl"
)

// key is a task, rollout or stage index as NeMo Gym keeps it: an integer
// or a string (isStr), or none.
type key struct { // 32 bytes in this field order; a digest holds three
	s     string
	n     int64
	isStr bool
	none  bool
}

func (k key) String() string {
	switch {
	case k.none:
		return "None"
	case k.isStr:
		return k.s
	}
	return strconv.FormatInt(k.n, 10)
}

func (k key) appendJSON(b []byte) []byte {
	switch {
	case k.none:
		return append(b, "null"...)
	case k.isStr:
		return tree.AppendOrjsonString(b, k.s)
	}
	return strconv.AppendInt(b, k.n, 10)
}

// toKey coerces an index as pydantic's int | str does: integers, bools and
// whole floats become integers, strings stay; anything else is an error.
func toKey(v any, allowNone bool) (key, bool) {
	switch x := v.(type) {
	case nil:
		return key{none: true}, allowNone
	case string:
		return key{isStr: true, s: x}, true
	case bool, json.Number:
		n, err := laxInt(x)
		return key{n: n}, err == nil
	}
	return key{}, false
}

// Digest is what one rollout record's checks found.
type Digest struct {
	Task, Rollout, Stage key
	RolloutID            string
	Verdict              string
	Findings             []Finding
	// unobserved has bit i set when Registry[i] could not be checked: a
	// digest is kept for every rollout until the reports are written, so
	// it is kept small.
	unobserved uint32

	captureObserved, policyCallsObserved bool
	endedOnError                         bool
	modelCalls, successfulCalls          int
	callErrors, duplicatedCalls          int
	errorsByStatus                       map[string]int // nil when no call failed
	transcriptPrompt, transcriptComplete int64
	capturePrompt, captureCompletion     int64
}

// registryIndex is each check's position in Registry.
var registryIndex = func() map[string]int {
	m := map[string]int{}
	for i, c := range Registry {
		m[c.ID] = i
	}
	return m
}()

func (d *Digest) markUnobserved(id string) { d.unobserved |= 1 << registryIndex[id] }

// Unobserved lists the checks the rollout's evidence did not allow, in
// Registry order.
func (d *Digest) Unobserved() []string { return unobservedChecks(d.unobserved) }

func unobservedChecks(bits uint32) []string {
	var out []string
	for i, c := range Registry {
		if bits&(1<<i) != 0 {
			out = append(out, c.ID)
		}
	}
	return out
}

// line is one non-blank line of a rollouts file: which, and where.
type line struct {
	ordinal    int
	source     int // the file's position in the run's list
	lineNumber int
}

// trimASCII strips what bytes.strip() strips.
func trimASCII(b []byte) []byte { return bytes.Trim(b, " \t\n\r\x0b\x0c") }

// recordFields is what the checks read of a record, as json.loads gives
// it: its indexes and ids (a task or rollout index that is absent is not
// one that is null), its ng_trajectory and its transcript's token counts.
type recordFields struct {
	task, rollout                any
	hasTask, hasRollout          bool
	stage, rolloutID, trajectory any
	usage                        tokenUsage
}

// tokenUsage is a transcript's usage: input/output tokens, or the Chat
// Completions names, each counted only as a non-negative integer; present
// when both are.
type tokenUsage struct {
	prompt, completion int64
	present            bool
}

// decode reads a record as json.loads does (a parse error is
// JSONDecodeError, a value that is not an object ValueError) but keeps
// only the fields the checks read, without building the record: a
// transcript's response and request are most of it and no check reads
// them. The response's members are found in the same read.
func decode(raw []byte) (recordFields, string) {
	raw = trimASCII(raw)
	var scratch, responseScratch [32]jsonl.Member
	members, response, object, valid := jsonl.MembersWithin(raw, "response", scratch[:0], responseScratch[:0])
	if !valid || !utf8.Valid(raw) {
		return recordFields{}, "JSONDecodeError"
	}
	if !object {
		return recordFields{}, "ValueError"
	}
	var f recordFields
	for _, member := range members {
		v := member.Value(raw)
		switch string(member.Name(raw)) {
		case "_ng_task_index":
			f.task, f.hasTask = value(jsonl.ParseInPlace(v)), true
		case "_ng_rollout_index":
			f.rollout, f.hasRollout = value(jsonl.ParseInPlace(v)), true
		case "stage_index":
			f.stage = value(jsonl.ParseInPlace(v))
		case "_ng_rollout_id":
			f.rolloutID = value(jsonl.ParseInPlace(v))
		case "ng_trajectory":
			f.trajectory = value(jsonl.ParseInPlace(v))
		}
	}
	f.usage = usageOf(raw, response)
	return f, ""
}

// tokenKeys are the members of a usage object usageOf reads.
var tokenKeys = [...]string{"input_tokens", "prompt_tokens", "output_tokens", "completion_tokens"}

// usageOf reads the token counts of the record raw from its (last)
// response's members, found as the record was read. Of a repeated member
// the last counts, as json.loads keeps it.
func usageOf(raw []byte, response []jsonl.Member) tokenUsage {
	var usage gjson.Result
	for _, m := range response {
		if string(m.Name(raw)) == "usage" {
			usage = jsonl.ParseInPlace(m.Value(raw))
		}
	}
	if !usage.IsObject() {
		return tokenUsage{}
	}
	var counts [len(tokenKeys)]gjson.Result
	usage.ForEach(func(k, v gjson.Result) bool {
		if i := slices.Index(tokenKeys[:], k.Str); i >= 0 {
			counts[i] = v
		}
		return true
	})
	// The first name of a pair, when given, else the second.
	pick := func(first, second gjson.Result) (int64, bool) {
		v := first
		if !v.Exists() {
			v = second
		}
		if v.Type != gjson.Number || !isIntText(v.Raw) {
			return 0, false
		}
		n, err := strconv.ParseInt(v.Raw, 10, 64)
		return n, err == nil && n >= 0
	}
	p, pok := pick(counts[0], counts[1])
	c, cok := pick(counts[2], counts[3])
	return tokenUsage{prompt: p, completion: c, present: pok && cok}
}

// value builds what encoding/json's decoding into any with UseNumber
// builds from a validated value, without its second scan: objects keep
// the last of a repeated key, strings are copied out of the line (a
// digest outlives it).
func value(r gjson.Result) any {
	switch r.Type {
	case gjson.String:
		return strings.Clone(r.Str)
	case gjson.Number:
		return json.Number(strings.Clone(r.Raw))
	case gjson.True:
		return true
	case gjson.False:
		return false
	case gjson.Null:
		return nil
	}
	if r.IsArray() {
		out := []any{}
		r.ForEach(func(_, v gjson.Result) bool {
			out = append(out, value(v))
			return true
		})
		return out
	}
	out := map[string]any{}
	r.ForEach(func(k, v gjson.Result) bool {
		out[strings.Clone(k.Str)] = value(v)
		return true
	})
	return out
}

// BadIndexError is a record whose task, rollout or stage index is
// neither an integer nor a string: NeMo Gym stops with a traceback, gym
// names the line.
type BadIndexError struct {
	Path  string
	Line  int
	Key   string
	Value string
}

func (e *BadIndexError) Error() string {
	return fmt.Sprintf("%s:%d: %s is %s; a rollout's index must be an integer or a string", e.Path, e.Line, e.Key, e.Value)
}

// digest checks raw, the text of line l of the rollouts file at path.
func digest(path string, l line, raw []byte, ignored map[string]bool) (*Digest, error) {
	record, parseErr := decode(raw)
	rawTask := record.task
	if !record.hasTask {
		if parseErr != "" {
			rawTask = fmt.Sprintf("__unreadable_record__:input-%d:line-%d", l.source, l.lineNumber)
		} else {
			rawTask = json.Number(strconv.Itoa(l.ordinal))
		}
	}
	rawRollout := record.rollout
	if !record.hasRollout {
		rawRollout = json.Number("0")
	}
	d := &Digest{}
	for _, f := range []struct {
		name      string
		raw       any
		dst       *key
		allowNone bool
	}{{"_ng_task_index", rawTask, &d.Task, false}, {"_ng_rollout_index", rawRollout, &d.Rollout, false}, {"stage_index", record.stage, &d.Stage, true}} {
		k, ok := toKey(f.raw, f.allowNone)
		if !ok {
			return nil, &BadIndexError{Path: path, Line: l.lineNumber, Key: f.name, Value: pyRepr(f.raw)}
		}
		*f.dst = k
	}
	rawTraj := record.trajectory
	var trajRolloutID any
	if m, ok := rawTraj.(map[string]any); ok {
		trajRolloutID = m["rollout_id"]
	}
	switch {
	case truthy(record.rolloutID):
		d.RolloutID = pyStr(record.rolloutID)
	case truthy(trajRolloutID):
		d.RolloutID = pyStr(trajRolloutID)
	default:
		d.RolloutID = pyStr(rawTask) + "-" + pyStr(rawRollout)
	}

	var traj *trajectory
	trajErr := ""
	if parseErr == "" && rawTraj != nil {
		var err error
		if traj, err = parseTrajectory(rawTraj); err != nil {
			traj, trajErr = nil, "ValidationError"
		}
	}
	observed := traj != nil && !traj.hasGap("trajectory_projection_failed")
	turnsObserved := observed && !traj.hasGap("turns_unavailable")
	scopeComplete := observed && !traj.hasGap("turn_model_call_scope_incomplete")
	callsObserved := observed && !traj.hasGap(incompleteCallGaps...)
	var calls []*call
	var turnB, ownedB bindings
	if observed {
		for i := range traj.calls {
			calls = append(calls, &traj.calls[i])
		}
		turnB, ownedB = bind(traj, calls)
	}

	for _, spec := range Registry {
		if spec.Scope != "rollout" || ignored[spec.ID] {
			continue
		}
		if parseErr != "" {
			if spec.ID == "record_unreadable" {
				d.Findings = append(d.Findings, Finding{Check: spec.ID,
					Locator: []kv{{"source_file", path}, {"line", l.lineNumber}},
					Detail:  []kv{{"reason", "rollout record is unreadable"}, {"error", parseErr}}})
			} else {
				d.markUnobserved(spec.ID)
			}
			continue
		}
		if trajErr != "" && spec.ID == "record_unreadable" {
			d.Findings = append(d.Findings, Finding{Check: spec.ID, Detail: []kv{{"reason", "canonical trajectory is unreadable"}, {"error", trajErr}}})
			continue
		}
		if (spec.reads&readsTrajectory != 0 && !observed) ||
			(spec.reads&readsTurns != 0 && !turnsObserved) ||
			(spec.reads&readsObservedCalls != 0 && !(callsObserved && len(calls) > 0)) {
			d.markUnobserved(spec.ID)
			continue
		}
		b := &turnB
		if spec.reads&readsOwnedCalls != 0 {
			b = &ownedB
		}
		if spec.reads&(readsOwnedCalls|readsBoundCalls) != 0 {
			has := len(b.matched) > 0
			if spec.ID == "trajectory_capture_mismatch" {
				has = b.observed() || len(traj.contradictions()) > 0
			}
			if !callsObserved || !has {
				d.markUnobserved(spec.ID)
				continue
			}
		}
		if spec.ID == "rollout_token_count_mismatch" && (!scopeComplete || !b.complete() || len(b.matched) == 0 || !record.usage.present ||
			slices.ContainsFunc(b.matched, func(c *call) bool { return c.tokensIn == nil || c.tokensOut == nil })) {
			d.markUnobserved(spec.ID)
			continue
		}
		if spec.ID == "model_call_runaway_generation" && slices.ContainsFunc(b.matched, func(c *call) bool {
			return c.finishReason != nil && lengthLimitReasons[*c.finishReason] && c.response == nil
		}) {
			d.markUnobserved(spec.ID)
			continue
		}
		findings, exc := runCheck(spec.ID, record.usage, traj, calls, b)
		if exc != "" {
			d.markUnobserved(spec.ID)
			if !ignored["check_execution_error"] {
				d.Findings = append(d.Findings, Finding{Check: "check_execution_error", Detail: []kv{
					{"reason", "check raised an unexpected exception"}, {"failed_check", spec.ID}, {"error", string(exc)}}})
			}
			continue
		}
		d.Findings = append(d.Findings, findings...)
	}
	switch {
	case len(d.Findings) > 0:
		d.Verdict = "unhealthy"
	case d.unobserved != 0:
		d.Verdict = "unobserved"
	default:
		d.Verdict = "healthy"
	}
	identities := map[string]int{}
	for _, c := range calls {
		if c.failed() {
			d.callErrors++
			status := "unknown"
			if c.statusCode != nil {
				status = strconv.FormatInt(*c.statusCode, 10)
			}
			if d.errorsByStatus == nil {
				d.errorsByStatus = map[string]int{}
			}
			d.errorsByStatus[status]++
		}
		if id := c.identity(); id != "" {
			identities[id]++
		}
		d.capturePrompt += tokenCount(c.tokensIn)
		d.captureCompletion += tokenCount(c.tokensOut)
	}
	for _, n := range identities {
		if n > 1 {
			d.duplicatedCalls += n - 1
		}
	}
	for _, c := range turnB.matched {
		if c.successful() {
			d.successfulCalls++
		}
	}
	d.captureObserved = len(calls) > 0
	d.policyCallsObserved = scopeComplete && turnB.complete()
	d.modelCalls = len(calls)
	d.endedOnError = endedOnFailedCall(calls)
	d.transcriptPrompt, d.transcriptComplete = record.usage.prompt, record.usage.completion
	return d, nil
}

// checkAll digests the non-blank lines of the files, numbered per file and
// counted across them, a batch at a time: a batch is read, then checked by
// the workers, then each digest is given to add in line order, so a large
// file is never held whole. The error is the first in line order, after
// any file that does not open.
func checkAll(ctx context.Context, paths []string, workers int, ignored map[string]bool, add func(*Digest) error) error {
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	const batchLines, batchBytes = 1024, 8 << 20
	type pending struct {
		l          line
		start, end int // in arena
	}
	var batch []pending
	var arena []byte
	errs := make([]error, batchLines)
	digests := make([]*Digest, batchLines)
	flush := func() error {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		var wg sync.WaitGroup
		for w := range min(workers, len(batch)) {
			wg.Go(func() {
				for i := w; i < len(batch); i += workers {
					p := batch[i]
					digests[i], errs[i] = digest(paths[p.l.source], p.l, arena[p.start:p.end], ignored)
				}
			})
		}
		wg.Wait()
		for i := range batch {
			if errs[i] != nil {
				return errs[i]
			}
			if err := add(digests[i]); err != nil {
				return err
			}
			digests[i] = nil
		}
		batch, arena = batch[:0], arena[:0]
		return nil
	}
	ordinal := 0
	for source, f := range files {
		r := bufio.NewReaderSize(f, 1<<16)
		n := 0
		for {
			start, blank := len(arena), true
			var err error
			for {
				var chunk []byte
				chunk, err = r.ReadSlice('\n')
				arena = append(arena, chunk...)
				blank = blank && len(trimASCII(chunk)) == 0
				if err != bufio.ErrBufferFull {
					break
				}
			}
			if len(arena) > start {
				n++
				if blank {
					arena = arena[:start]
				} else {
					batch = append(batch, pending{line{ordinal: ordinal, source: source, lineNumber: n}, start, len(arena)})
					ordinal++
				}
			}
			if len(batch) == batchLines || len(arena) >= batchBytes {
				if ferr := flush(); ferr != nil {
					return ferr
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
	}
	return flush()
}

// Result is one health check: the summary written to quality_summary.json,
// whose task rows stay on disk until Close.
type Result struct {
	summary      *summary
	SummaryPath  string
	VerdictsPath string
}

// Close releases the task rows' scratch file.
func (r *Result) Close() { r.summary.tasks.Close() }

// Options are a health check's inputs.
type Options struct {
	Rollouts  []string
	OutputDir string // "" is the first rollouts file's directory
	Workers   int    // 0 is min(CPUs, 8)
	Ignored   []string
}

// Run checks every rollout of the files and writes both reports.
func Run(ctx context.Context, o Options) (*Result, error) {
	ignoredList, err := NormalizeIgnored(o.Ignored)
	if err != nil {
		return nil, err
	}
	ignored := map[string]bool{}
	for _, id := range ignoredList {
		ignored[id] = true
	}
	if len(o.Rollouts) == 0 {
		return nil, &UsageError{"at least one rollout JSONL path is required"}
	}
	for _, p := range o.Rollouts {
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			return nil, &UsageError{"Rollout JSONL not found: " + p}
		}
	}
	workers := o.Workers
	if workers == 0 {
		workers = min(runtime.NumCPU(), 8)
	}
	if workers < 1 {
		return nil, &UsageError{"workers must be at least 1"}
	}
	dir := o.OutputDir
	if dir == "" {
		dir = filepath.Dir(o.Rollouts[0])
	}
	// The scratch files of a large check go beside its reports.
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	t := newTally(dir, ignoredList, ignored)
	res := &Result{summary: t.s, SummaryPath: pathJoin(dir, SummaryFile), VerdictsPath: pathJoin(dir, VerdictsFile)}
	err = checkAll(ctx, o.Rollouts, workers, ignored, t.add)
	if err == nil {
		err = t.finish(res.VerdictsPath)
	}
	if err == nil {
		err = writeSummary(res.SummaryPath, t.s)
	}
	if err != nil {
		t.close()
		if t.s.tasks != nil {
			t.s.tasks.Close()
		}
		return nil, err
	}
	return res, nil
}

// SummaryJSON is the summary as compact JSON, as --json prints it.
func (r *Result) SummaryJSON() []byte {
	var b bytes.Buffer
	r.summary.writeJSON(&b, "")
	return b.Bytes()
}

func writeSummary(path string, s *summary) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	err = s.writeJSON(bw, "  ")
	if err == nil {
		err = bw.Flush()
	}
	return errors.Join(err, f.Close())
}

// exactOrder is keyOrder with its one tie between unequal keys — None and
// the string "None" — broken.
func exactOrder(a, b key) int {
	return cmp.Or(keyOrder(a, b), cmp.Compare(kindOf(a), kindOf(b)))
}

func kindOf(k key) int {
	switch {
	case k.none:
		return 2
	case k.isStr:
		return 1
	}
	return 0
}

type repeat struct {
	verdict       string
	policyCalls   bool
	successfulMax int
}

type coverage struct{ evaluated, unobserved, ignored int }

type taskRow struct {
	name                            string
	isStr                           bool // a string task, sorted after the integers
	repeats, healthy, unhealthy, un int
	flags                           []string
}

type summary struct {
	ignored    []string
	records    int
	captures   int
	coverage   map[string]*coverage
	verdicts   map[string]int
	issues     map[string]int
	errTotal   int
	byStatus   map[string]int
	affected   int
	endedOnErr int
	replayed   int
	dupRollout int
	tokens     [4]int64
	tasks      *extsort.Sorter[taskRow] // in the summary's order
}

// jw writes orjson's layouts: compact (indent "") or OPT_INDENT_2.
type jw struct{ tree.OrjsonWriter }

func (w *jw) value(v any) {
	switch x := v.(type) {
	case nil:
		w.B = append(w.B, "null"...)
	case string:
		w.B = tree.AppendOrjsonString(w.B, x)
	case int:
		w.B = strconv.AppendInt(w.B, int64(x), 10)
	case int64:
		w.B = strconv.AppendInt(w.B, x, 10)
	case bool:
		w.B = strconv.AppendBool(w.B, x)
	case []string:
		w.Open('[')
		for _, s := range x {
			w.Element()
			w.value(s)
		}
		w.Close(']')
	case []kv:
		w.Open('{')
		for _, m := range x {
			w.Key(m.key)
			w.value(m.val)
		}
		w.Close('}')
	case func(*jw):
		x(w)
	}
}

// writeJSON writes the summary as NeMo Gym's orjson does, compact or
// with indent, a task at a time: the tasks table has a row per task.
func (s *summary) writeJSON(out io.Writer, indent string) error {
	w := &jw{tree.OrjsonWriter{Indent: indent}}
	counts := func(m map[string]*coverage, id string) []kv {
		c := m[id]
		return []kv{{"evaluated", c.evaluated}, {"unobserved", c.unobserved}, {"ignored", c.ignored}}
	}
	var cov, issues []kv
	for _, c := range Registry {
		cov = append(cov, kv{c.ID, counts(s.coverage, c.ID)})
		issues = append(issues, kv{c.ID, s.issues[c.ID]})
	}
	statuses := make([]kv, 0, len(s.byStatus))
	for _, k := range slices.Sorted(mapKeys(s.byStatus)) {
		statuses = append(statuses, kv{k, s.byStatus[k]})
	}
	var err error
	flush := func() {
		if err == nil && len(w.B) > 0 {
			_, err = out.Write(w.B)
		}
		w.B = w.B[:0]
	}
	tasks := func(w *jw) {
		w.Open('{')
		terr := s.tasks.Each(func(t taskRow) error {
			w.Key(t.name)
			w.value([]kv{{"repeats", t.repeats}, {"healthy", t.healthy}, {"unhealthy", t.unhealthy}, {"unobserved", t.un}, {"flags", t.flags}})
			if len(w.B) >= 64<<10 {
				flush()
			}
			return nil
		})
		if err == nil {
			err = terr
		}
		w.Close('}')
	}
	w.value([]kv{
		{"run", []kv{
			{"ignored_checks", s.ignored},
			{"artifacts", []kv{{"records", s.records}, {"captures", s.captures}, {"coverage", cov}}},
			{"verdicts", []kv{{"healthy", s.verdicts["healthy"]}, {"unhealthy", s.verdicts["unhealthy"]}, {"unobserved", s.verdicts["unobserved"]}}},
			{"issues", issues},
			{"stats", []kv{
				{"model_call_errors", []kv{{"total", s.errTotal}, {"by_status", statuses}, {"rollouts_affected", s.affected}, {"ended_on_error", s.endedOnErr}}},
				{"duplicated_calls", []kv{{"replayed", s.replayed}, {"rollouts", s.dupRollout}}},
				{"tokens", []kv{{"prompt", s.tokens[0]}, {"completion", s.tokens[1]}, {"capture_prompt", s.tokens[2]}, {"capture_completion", s.tokens[3]}}},
			}},
		}},
		{"tasks", tasks},
	})
	flush()
	return err
}

func mapKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// keyOrder sorts integers before strings (and none), each in order.
func keyOrder(a, b key) int {
	rank := func(k key) int {
		if !k.isStr && !k.none {
			return 0
		}
		return 1
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return cmp.Compare(ra, rb)
	}
	if rank(a) == 0 {
		return cmp.Compare(a.n, b.n)
	}
	return strings.Compare(a.String(), b.String())
}

func orEmpty(d []kv) []kv {
	if d == nil {
		return []kv{}
	}
	return d
}

// Report is the line printed after a check (format_health_report).
func Report(r *Result) string {
	s := r.summary
	checked := s.verdicts["healthy"] + s.verdicts["unhealthy"] + s.verdicts["unobserved"]
	note := ""
	if len(s.ignored) > 0 {
		note = " (ignored: " + strings.Join(s.ignored, ", ") + ")"
	}
	return fmt.Sprintf("Rollout health: %d checked, %d healthy, %d unhealthy, %d unobserved%s\nQuality summary: %s",
		checked, s.verdicts["healthy"], s.verdicts["unhealthy"], s.verdicts["unobserved"], note, r.SummaryPath)
}

// RunDir checks a run directory's rollouts (rollouts.jsonl unless
// rolloutsFile says otherwise, relative to the directory) and writes the
// reports into the directory.
func RunDir(ctx context.Context, dir, rolloutsFile string, workers int, ignored []string) (*Result, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, &UsageError{"Run directory not found: " + dir}
	}
	if rolloutsFile == "" {
		rolloutsFile = "rollouts.jsonl"
	}
	return Run(ctx, Options{Rollouts: []string{pathJoin(dir, rolloutsFile)}, OutputDir: dir, Workers: workers, Ignored: ignored})
}

// pathJoin is pathlib's a / b: b when absolute; "." parts and doubled
// separators dropped, ".." kept, so printed paths read as NeMo Gym's.
func pathJoin(a, b string) string {
	if !filepath.IsAbs(b) {
		b = a + "/" + b
	}
	var parts []string
	for _, p := range strings.Split(b, "/") {
		if p != "" && p != "." {
			parts = append(parts, p)
		}
	}
	joined := strings.Join(parts, "/")
	if filepath.IsAbs(b) {
		return "/" + joined
	}
	if joined == "" {
		return "."
	}
	return joined
}
