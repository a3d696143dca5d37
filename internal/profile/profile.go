// Package profile is `gym eval profile`: NeMo Gym's reward profiling of a
// finished collection, computed offline from its materialized inputs and
// its rollouts.
package profile

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/resources"
	"github.com/nemo-gym-go/gym/internal/rollout"
)

// Options are the inputs of one profile.
type Options struct {
	InputsPath, RolloutsPath string // materialized inputs JSONL, rollouts JSONL
	AllowPartial             bool   // allow_partial_rollouts
	Out                      io.Writer
}

// Summary is what Run reports: the completion counts it prints and the
// files it wrote.
type Summary struct {
	ExpectedRollouts  int // materialized input rows
	CompletedRollouts int // of them, rows with a rollout
	CompletionPct     float64
	// Tasks counts the tasks of the inputs; the other three split them by
	// how many of their materialized rows have a rollout: all, some, none.
	Tasks, CompleteTasks, PartialTasks, MissingTasks              int
	RewardProfilingPath, AgentMetricsPath, RepeatLevelMetricsPath string
}

// Kind says what is wrong with the files.
type Kind int

const (
	// FileNotFound: an input path does not exist.
	FileNotFound Kind = iota + 1
	// BadRow: a line is blank, is not JSON, or lacks a field the profile
	// needs.
	BadRow
	// Mismatch: a rollout key repeats, or inputs and rollouts do not pair
	// up.
	Mismatch
)

// Error is a problem with the files given, which the user fixes by
// changing them or the paths; the CLI exits 1 on it. Path and Line locate
// it when it is about one file (Line is 1-based, 0 for the whole file).
type Error struct {
	Kind Kind
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// key identifies a rollout: (task, rollout).
type key struct{ task, rollout int64 }

func (k key) String() string { return fmt.Sprintf("(%d, %d)", k.task, k.rollout) }

// inputRow is what is kept of a materialized row while the rollouts are
// read: where to find it again, not the row itself.
type inputRow struct {
	line  int
	off   int64
	n     int
	agent string // "" when the row has no agent_ref.name string
	// rolloutLine is the line of its rollout, 0 while none was seen.
	rolloutLine int
}

// task is one task's tally; sample is the materialized row of its lowest
// rollout index that has a rollout, the row NeMo Gym shows as its sample.
type task struct {
	expected, completed int
	sample              *inputRow
	sampleRollout       int64
}

// Run profiles the rollouts against the materialized inputs, writes
// `<rollouts stem>_reward_profiling.jsonl` and `<rollouts stem>_agent_metrics.json`
// next to the rollouts and prints where they are.
func Run(ctx context.Context, o Options) (*Summary, error) {
	for _, f := range []struct{ path, flag string }{{o.InputsPath, "--inputs"}, {o.RolloutsPath, "--rollouts"}} {
		if _, err := os.Stat(f.path); errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{Kind: FileNotFound, Path: f.path, Msg: fmt.Sprintf(
				"Input file not found: '%s' (%s). Check the path is spelled correctly.", f.path, f.flag)}
		} else if err != nil {
			return nil, err
		}
	}
	inputs, err := os.Open(o.InputsPath)
	if err != nil {
		return nil, err
	}
	defer inputs.Close()
	rows, tasks, err := readInputs(ctx, inputs, o.InputsPath)
	if err != nil {
		return nil, err
	}

	prof := resources.NewProfiler(resources.ProfileOptions{
		Sample:   func(t int64) (json.RawMessage, error) { return readSample(inputs, o.InputsPath, tasks[t].sample) },
		Expected: func(t int64) int { return tasks[t].expected },
	})
	if err := readRollouts(ctx, o.RolloutsPath, o.InputsPath, rows, tasks, prof); err != nil {
		return nil, err
	}
	if prof.Len() < len(rows) && !o.AllowPartial {
		return nil, missingError(rows, o.InputsPath, o.RolloutsPath)
	}

	s := summarize(tasks, len(rows), prof.Len())
	stem := rollout.Stem(o.RolloutsPath)
	s.RewardProfilingPath = stem + "_reward_profiling.jsonl"
	s.AgentMetricsPath = stem + "_agent_metrics.json"
	s.RepeatLevelMetricsPath = stem + "_repeat_level_metrics.json"
	err = jsonl.WriteFileAtomic(s.RewardProfilingPath, func(w *bufio.Writer) error {
		return prof.Groups(func(g *resources.Metrics) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			b, err := g.MarshalJSON()
			if err != nil {
				return err
			}
			w.Write(b)
			return w.WriteByte('\n')
		})
	})
	if err != nil {
		return nil, err
	}
	agents, repeats := prof.Agents()
	if err := writeMetricsList(s.AgentMetricsPath, agents); err != nil {
		return nil, err
	}
	if err := writeMetricsList(s.RepeatLevelMetricsPath, repeats); err != nil {
		return nil, err
	}

	if o.Out != nil {
		fmt.Fprintf(o.Out, "Profiling outputs:\n"+
			"Reward profile completion: %d/%d rollout rows (%.2f%%)\n"+
			"Input rows: %d total; %d complete; %d partial; %d without rollouts dropped from output.\n"+
			"Reward profiling outputs: %s\n"+
			"Agent-level metrics: %s\n"+
			"Repeat-level metrics: %s\n",
			s.CompletedRollouts, s.ExpectedRollouts, s.CompletionPct,
			s.Tasks, s.CompleteTasks, s.PartialTasks, s.MissingTasks,
			s.RewardProfilingPath, s.AgentMetricsPath, s.RepeatLevelMetricsPath)
	}
	return s, nil
}

// writeMetricsList writes entries as one JSON array, as orjson writes it.
func writeMetricsList(path string, entries []*resources.Metrics) error {
	return jsonl.WriteFileAtomic(path, func(w *bufio.Writer) error {
		w.WriteByte('[')
		for i, m := range entries {
			if i > 0 {
				w.WriteByte(',')
			}
			b, err := m.MarshalJSON()
			if err != nil {
				return err
			}
			w.Write(b)
		}
		return w.WriteByte(']')
	})
}

// readInputs indexes the materialized rows by key without keeping them:
// a row is read again, by offset, only if it becomes a task's sample.
func readInputs(ctx context.Context, r io.Reader, path string) (map[key]*inputRow, map[int64]*task, error) {
	rows := map[key]*inputRow{}
	tasks := map[int64]*task{}
	agents := map[string]string{}
	lr := newLineReader(r, path)
	for {
		line, err := lr.next(ctx)
		if err == io.EOF {
			return rows, tasks, nil
		}
		if err != nil {
			return nil, nil, err
		}
		m, err := lr.object(line)
		if err != nil {
			return nil, nil, err
		}
		k, err := lr.key(m, line)
		if err != nil {
			return nil, nil, err
		}
		if prev, ok := rows[k]; ok {
			return nil, nil, duplicateError("materialized input", k, path, prev.line, lr.Line)
		}
		row := &inputRow{line: lr.Line, off: lr.Start, n: len(line)}
		// A row that gets no rollout needs no agent, as in NeMo Gym, so a
		// missing one is reported only when a rollout pairs with it.
		if name := m.agentRef.Get("name"); name.Type == gjson.String {
			a, ok := agents[name.Str]
			if !ok {
				a = strings.Clone(name.Str)
				agents[a] = a
			}
			row.agent = a
		}
		rows[k] = row
		t := tasks[k.task]
		if t == nil {
			t = &task{}
			tasks[k.task] = t
		}
		t.expected++
	}
}

// readRollouts pairs every rollout with its materialized row and adds it
// to the profile.
func readRollouts(ctx context.Context, path, inputsPath string, rows map[key]*inputRow, tasks map[int64]*task, prof *resources.Profiler) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	extra := map[key]int{}
	var firstExtra int
	lr := newLineReader(f, path)
	for {
		line, err := lr.next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		m, err := lr.object(line)
		if err != nil {
			return err
		}
		k, err := lr.key(m, line)
		if err != nil {
			return err
		}
		if !m.response.Exists() {
			return lr.rowError(line, `no "response"`)
		}
		if !m.response.IsObject() {
			return lr.rowError(line, fmt.Sprintf(`"response" must be a JSON object, got %s`, clip(m.response.Raw)))
		}
		row := rows[k]
		if row == nil {
			if prev, ok := extra[k]; ok {
				return duplicateError("rollout", k, path, prev, lr.Line)
			}
			extra[k] = lr.Line
			if firstExtra == 0 {
				firstExtra = lr.Line
			}
			continue
		}
		if row.rolloutLine != 0 {
			return duplicateError("rollout", k, path, row.rolloutLine, lr.Line)
		}
		row.rolloutLine = lr.Line
		if row.agent == "" {
			return &Error{Kind: BadRow, Path: inputsPath, Line: row.line, Msg: fmt.Sprintf(
				"Invalid row in '%s' at line %d: agent_ref.name must be a non-empty string (the row of rollout key %v)",
				inputsPath, row.line, k)}
		}
		if err := prof.Add(row.agent, k.task, k.rollout, line); err != nil {
			return lr.rowError(line, err.Error())
		}
		t := tasks[k.task]
		t.completed++
		if t.sample == nil || k.rollout < t.sampleRollout {
			t.sample, t.sampleRollout = row, k.rollout
		}
	}
	if len(extra) > 0 {
		keys := make([]key, 0, len(extra))
		for k := range extra {
			keys = append(keys, k)
		}
		sortKeys(keys)
		return &Error{Kind: Mismatch, Path: path, Line: firstExtra, Msg: fmt.Sprintf(
			"Rollout results contain rows with no matching materialized input rows. "+
				"Found %d extra rollout rows, the first at line %d of '%s'. Extra rollout keys: %s",
			len(keys), firstExtra, path, keyList(keys))}
	}
	return nil
}

func missingError(rows map[key]*inputRow, inputsPath, rolloutsPath string) error {
	var keys []key
	for k, r := range rows {
		if r.rolloutLine == 0 {
			keys = append(keys, k)
		}
	}
	sortKeys(keys)
	return &Error{Kind: Mismatch, Msg: fmt.Sprintf(
		"Materialized input rows and rollout results do not have matching rollout keys. "+
			"'%s' lacks rollout results for %d materialized input rows of '%s'. Missing rollout keys: %s.\n"+
			"Use ++allow_partial_rollouts=true to profile the completed rollouts of a partial collection.",
		rolloutsPath, len(keys), inputsPath, keyList(keys))}
}

func duplicateError(what string, k key, path string, first, second int) error {
	return &Error{Kind: Mismatch, Path: path, Line: second, Msg: fmt.Sprintf(
		"Duplicate %s row for rollout key %v in '%s': lines %d and %d", what, k, path, first, second)}
}

func sortKeys(keys []key) {
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.task, b.task); c != 0 {
			return c
		}
		return cmp.Compare(a.rollout, b.rollout)
	})
}

// keyList writes up to ten keys as NeMo Gym's message lists them.
func keyList(keys []key) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, k := range keys[:min(len(keys), 10)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k.String())
	}
	if len(keys) > 10 {
		b.WriteString(", …")
	}
	b.WriteByte(']')
	return b.String()
}

func summarize(tasks map[int64]*task, expected, completed int) *Summary {
	s := &Summary{ExpectedRollouts: expected, CompletedRollouts: completed, CompletionPct: 100, Tasks: len(tasks)}
	if expected > 0 {
		s.CompletionPct = 100 * float64(completed) / float64(expected)
	}
	for _, t := range tasks {
		switch {
		case t.completed == t.expected:
			s.CompleteTasks++
		case t.completed > 0:
			s.PartialTasks++
		default:
			s.MissingTasks++
		}
	}
	return s
}

// readSample reads a task's sample row back from the inputs and drops its
// indices. Values stay as written, only compacted; a repeated key keeps
// its first place and last value, as the Python dict NeMo Gym dumps does.
func readSample(f io.ReaderAt, path string, row *inputRow) (json.RawMessage, error) {
	line := make([]byte, row.n)
	if _, err := f.ReadAt(line, row.off); err != nil {
		return nil, fmt.Errorf("reading line %d of '%s' again: %w", row.line, path, err)
	}
	type member struct{ key, val string }
	var members []member
	at := map[string]int{}
	gjson.ParseBytes(line).ForEach(func(k, v gjson.Result) bool {
		name := k.String()
		if name == resources.TaskIndexKey || name == resources.RolloutIndexKey {
			return true
		}
		if i, ok := at[name]; ok {
			members[i].val = v.Raw
			return true
		}
		at[name] = len(members)
		members = append(members, member{k.Raw, v.Raw})
		return true
	})
	var b bytes.Buffer
	b.Grow(len(line))
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(m.key)
		b.WriteByte(':')
		if err := json.Compact(&b, []byte(m.val)); err != nil {
			return nil, fmt.Errorf("line %d of '%s' changed while it was profiled: %w", row.line, path, err)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// lineReader reads the rows profiling needs; its errors name the line.
type lineReader struct{ *jsonl.Reader }

func newLineReader(r io.Reader, path string) *lineReader {
	return &lineReader{jsonl.NewReader(r, path)}
}

// next is Next, checking for cancellation every 4096 lines.
func (lr *lineReader) next(ctx context.Context) ([]byte, error) {
	if lr.Line%4096 == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return lr.Next()
}

// members are the top-level fields a row is profiled by.
type members struct{ task, rollout, agentRef, response gjson.Result }

// object parses a line as a JSON object and picks out its members, a
// repeated key keeping its last value as Python's json does.
func (lr *lineReader) object(line []byte) (members, error) {
	var m members
	if len(bytes.Trim(line, " \t\r\n")) == 0 {
		return m, &Error{Kind: BadRow, Path: lr.Path, Line: lr.Line, Msg: fmt.Sprintf(
			"Malformed JSON in '%s' at line %d: the line is blank", lr.Path, lr.Line)}
	}
	if !jsonl.Valid(line) {
		reason := "invalid JSON"
		var v json.RawMessage
		if err := json.Unmarshal(bytes.TrimRight(line, "\r\n"), &v); err != nil {
			reason = err.Error()
		}
		return m, &Error{Kind: BadRow, Path: lr.Path, Line: lr.Line, Msg: fmt.Sprintf(
			"Malformed JSON in '%s' at line %d: %s: %s", lr.Path, lr.Line, reason, jsonl.Excerpt(line))}
	}
	res := gjson.ParseBytes(line)
	if !res.IsObject() {
		return m, lr.rowError(line, "the row must be a JSON object")
	}
	res.ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case resources.TaskIndexKey:
			m.task = v
		case resources.RolloutIndexKey:
			m.rollout = v
		case "agent_ref":
			m.agentRef = v
		case "response":
			m.response = v
		}
		return true
	})
	return m, nil
}

func (lr *lineReader) key(m members, line []byte) (key, error) {
	task, err := lr.index(m.task, resources.TaskIndexKey, line)
	if err != nil {
		return key{}, err
	}
	rollout, err := lr.index(m.rollout, resources.RolloutIndexKey, line)
	return key{task, rollout}, err
}

func (lr *lineReader) index(v gjson.Result, name string, line []byte) (int64, error) {
	if !v.Exists() {
		return 0, lr.rowError(line, "no "+name)
	}
	n, err := strconv.ParseInt(v.Raw, 10, 64)
	if v.Type != gjson.Number || err != nil {
		return 0, lr.rowError(line, fmt.Sprintf("%s must be an integer, got %s", name, clip(v.Raw)))
	}
	return n, nil
}

func (lr *lineReader) rowError(line []byte, problem string) error {
	return &Error{Kind: BadRow, Path: lr.Path, Line: lr.Line, Msg: fmt.Sprintf(
		"Invalid row in '%s' at line %d: %s: %s", lr.Path, lr.Line, problem, jsonl.Excerpt(line))}
}

// clip shortens a value for an error message.
func clip(s string) string {
	if head, cut := jsonl.Clip(s); cut {
		return head + "…"
	}
	return s
}
