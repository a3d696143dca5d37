package rollout

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/openai"
)

// The row keys rollout collection reads and writes.
const (
	TaskIndexKey    = "_ng_task_index"
	RolloutIndexKey = "_ng_rollout_index"
	AttemptIndexKey = "_ng_attempt_index"
	RolloutIDKey    = "_ng_rollout_id"
	AgentRefKey     = "agent_ref"
	SkillsRefKey    = "skills_ref"
	ParamsKey       = "responses_create_params"
	DefaultAgentKey = "_default"
)

// Repeats is num_repeats: how many rollouts each row gets, the same for
// every row, or per agent with "_default" for the rest.
type Repeats struct {
	All      int
	PerAgent map[string]int
}

func (r Repeats) forAgent(agent string) (int, bool) {
	if r.PerAgent == nil {
		return max(r.All, 1), true
	}
	if n, ok := r.PerAgent[agent]; ok {
		return n, true
	}
	n, ok := r.PerAgent[DefaultAgentKey]
	return n, ok
}

// MaterializeOptions are the inputs of row materialization.
type MaterializeOptions struct {
	InputPath string
	// InputFlag names where InputPath came from in messages, e.g. --input.
	InputFlag string
	// OutputPath is <stem>_materialized_inputs.jsonl.
	OutputPath string
	// AgentName is given to rows with no agent_ref.
	AgentName string
	// Limit keeps the first Limit lines of the input (0: all).
	Limit int
	// Shard keeps the rollouts of its tasks only. Every row up to Limit is
	// still read and checked: a task's index depends on the lines before
	// it, and every shard of a bad input fails as the whole run would.
	Shard   Shard
	Repeats Repeats
	// AddSeed is num_repeats_add_seed: each rollout's extra_body gets its
	// rollout index as the seed.
	AddSeed bool
	// Interleave is interleave_repeats: the rollouts are written (and so
	// dispatched) round by round, every task's rollout 0 first (abcabc,
	// not aabbcc), each round in input order.
	Interleave bool
	Prompt     *Prompt
	// Overrides is the responses_create_params config object, merged over
	// each row's own (top-level keys only, overrides win); nil for none.
	Overrides json.RawMessage
	// Warnings receives notices that do not stop the run.
	Warnings io.Writer
}

// MaterializeStats counts what materialization read and wrote.
type MaterializeStats struct {
	Rows, Tasks, Rollouts int
	// Agents are the agents the rollouts written name, each once.
	Agents []string
}

// Materialize turns input rows into the rollouts to run, as NeMo Gym's
// _preprocess_rows_from_config does: the prompt applied, agent_ref filled
// in, config overrides merged, a task index per distinct line (identical
// lines are one task, which is how dataset repeats become rollouts of one
// task) and a rollout index per repeat. It streams: memory does not grow
// with the input beyond a hash per distinct line. The output file is
// whole or absent.
func Materialize(ctx context.Context, o MaterializeOptions) (MaterializeStats, error) {
	var stats MaterializeStats
	in, err := os.Open(o.InputPath)
	if errors.Is(err, os.ErrNotExist) {
		return stats, &InputError{Path: o.InputPath, Msg: fmt.Sprintf("Input file not found: '%s' (%s). Check the path is spelled correctly.", o.InputPath, o.InputFlag)}
	}
	if err != nil {
		return stats, err
	}
	defer in.Close()

	m := &materializer{o: o, taskOf: map[[16]byte]int64{}, rollouts: map[int64]int{}, agentsSeen: map[string]bool{}, wroteAgent: map[string]bool{}}
	err = jsonl.WriteFileAtomic(o.OutputPath, func(out *bufio.Writer) error {
		w := io.Writer(out)
		if o.Interleave {
			spill, err := newRoundSpill(o.OutputPath)
			if err != nil {
				return err
			}
			defer spill.Close()
			m.spill, w = spill, spill
		}
		lr := newLineReader(in, o.InputPath)
		for o.Limit <= 0 || lr.Line < o.Limit {
			if err := ctx.Err(); err != nil {
				return err
			}
			line, err := lr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if err := m.row(lr, line, w); err != nil {
				return err
			}
		}
		stats.Rows = lr.Line
		if err := m.problems(); err != nil {
			return err
		}
		if m.spill != nil {
			return m.spill.writeRounds(out)
		}
		return nil
	})
	stats.Tasks, stats.Rollouts, stats.Agents = len(m.rollouts), m.written, m.agentsWritten
	if err != nil {
		return stats, err
	}
	if o.Repeats.PerAgent != nil && o.Warnings != nil {
		for _, k := range sortedKeys(o.Repeats.PerAgent) {
			if k != DefaultAgentKey && !m.agentsSeen[k] {
				fmt.Fprintf(o.Warnings, "Warning: num_repeats names agent %q, which no row uses\n", k)
			}
		}
	}
	return stats, nil
}

type materializer struct {
	o          MaterializeOptions
	taskOf     map[[16]byte]int64
	nextTask   int64
	rollouts   map[int64]int // rollouts so far per task
	agentsSeen map[string]bool
	written    int
	// agentsWritten are the agents of the rows written so far, each once,
	// and wroteAgent each of them.
	agentsWritten []string
	wroteAgent    map[string]bool
	// Problems reported together at the end, as NeMo Gym does.
	prebaked     []int
	noAgent      []int
	noRepeats    []int
	noRepeatsFor map[string]bool
	buf          bytes.Buffer
	spill        *roundSpill // set when interleaving
	rec          record      // the row being read
}

func (m *materializer) row(lr *lineReader, line []byte, w io.Writer) error {
	index := lr.Line - 1
	raw := bytes.TrimRight(line, "\r\n")
	if len(bytes.TrimSpace(raw)) == 0 {
		return lr.errorf("Malformed JSON in '%s' at line %d: the line is blank", lr.Path, lr.Line)
	}
	if !m.rec.parse(raw) {
		return lr.errorf("Malformed JSON in '%s' at line %d: %s", lr.Path, lr.Line, jsonError(raw))
	}
	// JSON text is UTF-8 (RFC 8259); Python's json refuses anything else,
	// and a row passed on would carry the bad bytes into every output.
	if !utf8.Valid(raw) {
		at := len(raw)
		for i := 0; i < len(raw); {
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				at = i
				break
			}
			i += size
		}
		return lr.errorf("the line is not valid UTF-8 (a bad byte 0x%02x at byte %d); re-encode the file as UTF-8", raw[at], at+1)
	}
	if !m.rec.object {
		return lr.errorf("a row must be a JSON object, got %s", jsonl.Excerpt(raw))
	}
	// The row's own task index, before anything is set.
	ownTask := m.rec.peek(TaskIndexKey)
	// m.rec is the row until the overrides change it (stale): sjson
	// copies what it edits, and the prompt's edit is read again.
	row := raw
	stale := false
	var err error

	if p := m.o.Prompt; p != nil {
		parsed := m.rec.result()
		if hasInput(parsed) {
			m.prebaked = append(m.prebaked, index)
		} else {
			if row, err = p.apply(row, parsed); err != nil {
				return lr.errorf("%v", err)
			}
			m.rec.parse(row)
		}
	}

	if m.o.AgentName != "" && m.rec.value(AgentRefKey) == nil {
		m.rec.appendMember(AgentRefKey, append(append([]byte(`{"name":`), openai.AppendJSONString(nil, m.o.AgentName)...), '}'))
		row = m.rec.raw
	}
	agent := m.rec.nested(AgentRefKey, "name")
	if agent.Type != gjson.String || agent.Str == "" {
		m.noAgent = append(m.noAgent, index)
	}
	m.agentsSeen[agent.Str] = true

	params := m.rec.peek(ParamsKey)
	if !params.Exists() {
		return lr.errorf("the row has no %s: give the rows a %s object, or a --prompt-config that builds its input from the row's fields", ParamsKey, ParamsKey)
	}
	if !params.IsObject() {
		return lr.errorf("%s must be an object, got %s", ParamsKey, jsonl.Excerpt([]byte(params.Raw)))
	}
	if len(m.o.Overrides) > 0 {
		merged := []byte(params.Raw)
		var err error
		gjson.ParseBytes(m.o.Overrides).ForEach(func(k, v gjson.Result) bool {
			merged, err = sjson.SetRawBytes(merged, gjson.Escape(k.Str), []byte(v.Raw))
			return err == nil
		})
		if err != nil {
			return err
		}
		if row, err = sjson.SetRawBytes(row, ParamsKey, merged); err != nil {
			return err
		}
		stale = true
	}

	task, err := m.taskIndex(lr, ownTask, line)
	if err != nil {
		return err
	}
	repeats, ok := m.o.Repeats.forAgent(agent.Str)
	if !ok {
		m.noRepeats = append(m.noRepeats, index)
		if m.noRepeatsFor == nil {
			m.noRepeatsFor = map[string]bool{}
		}
		m.noRepeatsFor[agent.Str] = true
		return nil
	}
	if repeats < 1 {
		return lr.errorf("num_repeats for agent %q is %d; it must be at least 1", agent.Str, repeats)
	}
	if len(m.prebaked) > 0 || len(m.noAgent) > 0 {
		// The run fails at the end; keep reading only to name every row.
		return nil
	}
	if !m.o.Shard.Keeps(task) {
		return nil
	}
	if stale || m.rec.spaced {
		m.rec.parse(compactValid(make([]byte, 0, len(row)), row))
	}
	if !m.wroteAgent[agent.Str] {
		m.wroteAgent[agent.Str] = true
		m.agentsWritten = append(m.agentsWritten, agent.Str)
	}
	for range repeats {
		rollout := m.rollouts[task]
		m.rollouts[task]++
		out, err := stampRepeat(&m.rec, task, rollout, m.o.AddSeed)
		if err != nil {
			return lr.errorf("%v", err)
		}
		m.buf.Reset()
		m.buf.Write(out)
		m.buf.WriteByte('\n')
		if m.spill != nil {
			m.spill.round(rollout, m.buf.Len())
		}
		if _, err := w.Write(m.buf.Bytes()); err != nil {
			return err
		}
		m.written++
	}
	return nil
}

// stampRepeat is one repeat's line of a compacted row: its indexes set as
// sjson sets them (the first of each replaced in place, a missing one
// appended at the end), built in one copy from the row's members; then
// its seed.
func stampRepeat(row *record, task int64, rollout int, addSeedToo bool) ([]byte, error) {
	names := [2]string{TaskIndexKey, RolloutIndexKey}
	values := [2]int64{task, int64(rollout)}
	at := [2]int{row.index(TaskIndexKey), row.index(RolloutIndexKey)}
	raw := row.raw
	out := make([]byte, 0, len(raw)+64)
	last := 0
	for i, m := range row.members {
		for k := range names {
			if at[k] == i {
				out = strconv.AppendInt(append(out, raw[last:m.ValueStart]...), values[k], 10)
				last = m.ValueEnd
			}
		}
	}
	out = append(out, raw[last:len(raw)-1]...)
	members := len(row.members)
	for k, name := range names {
		if at[k] >= 0 {
			continue
		}
		if members++; members > 1 {
			out = append(out, ',')
		}
		out = strconv.AppendInt(append(append(append(out, '"'), name...), `":`...), values[k], 10)
	}
	out = append(out, '}')
	if addSeedToo {
		return addSeed(out, rollout)
	}
	return out, nil
}

// taskIndex keeps a row's own _ng_task_index, or gives the line the index
// of the first identical line.
func (m *materializer) taskIndex(lr *lineReader, own gjson.Result, line []byte) (int64, error) {
	if v := own; v.Exists() {
		if v.Type != gjson.Number || !isIntLiteral(v.Raw) {
			return 0, lr.errorf("%s must be an integer, got %s", TaskIndexKey, v.Raw)
		}
		return v.Int(), nil
	}
	sum := sha256.Sum256(line)
	var key [16]byte
	copy(key[:], sum[:])
	t, ok := m.taskOf[key]
	if !ok {
		t = m.nextTask
		m.nextTask++
		m.taskOf[key] = t
	}
	return t, nil
}

func (m *materializer) problems() error {
	var msgs []string
	if len(m.prebaked) > 0 {
		msgs = append(msgs, fmt.Sprintf("rows %s already have a non-empty %s.input, and a prompt config (%s) would replace it: use one or the other", intList(m.prebaked), ParamsKey, m.o.Prompt.Path))
	}
	if len(m.noAgent) > 0 {
		msgs = append(msgs, fmt.Sprintf("No agent specified for rows %s: give --agent NAME, or an agent_ref {\"name\": ...} in each row", intList(m.noAgent)))
	}
	if len(m.noRepeats) > 0 {
		msgs = append(msgs, fmt.Sprintf("num_repeats has no entry for agents %s (rows %s) and no %q", strings.Join(sortedKeys(m.noRepeatsFor), ", "), intList(m.noRepeats), DefaultAgentKey))
	}
	if len(msgs) == 0 {
		return nil
	}
	return &InputError{Path: m.o.InputPath, Msg: strings.Join(msgs, "; ")}
}

// addSeed sets responses_create_params.metadata.extra_body to the JSON
// text of the existing extra_body object plus "seed", written as Python's
// json.dumps writes it, since NeMo Gym's metadata values are strings.
func addSeed(row []byte, seed int) ([]byte, error) {
	const path = ParamsKey + ".metadata.extra_body"
	existing := gjson.GetBytes(row, path)
	obj := gjson.Parse("{}")
	switch {
	case existing.IsObject():
		obj = existing
	case existing.Type == gjson.String && jsonl.ValidString(existing.Str) && gjson.Parse(existing.Str).IsObject():
		obj = gjson.Parse(existing.Str)
	case existing.Exists() && existing.Type != gjson.Null:
		return nil, fmt.Errorf("%s is %s; num_repeats_add_seed needs an object there", path, existing.Raw)
	}
	withSeed, err := sjson.SetBytes([]byte(obj.Raw), "seed", seed)
	if err != nil {
		return nil, err
	}
	return sjson.SetBytes(row, path, pyJSONDumps(gjson.ParseBytes(withSeed)))
}

// pyJSONDumps writes v as Python's json.dumps does by default: ", " and
// ": " separators and non-ASCII escaped.
func pyJSONDumps(v gjson.Result) string {
	var b strings.Builder
	var walk func(v gjson.Result)
	walk = func(v gjson.Result) {
		switch {
		case v.IsObject():
			b.WriteByte('{')
			first := true
			v.ForEach(func(k, val gjson.Result) bool {
				if !first {
					b.WriteString(", ")
				}
				first = false
				b.WriteString(pyASCII(string(openai.AppendJSONString(nil, k.Str))))
				b.WriteString(": ")
				walk(val)
				return true
			})
			b.WriteByte('}')
		case v.IsArray():
			b.WriteByte('[')
			for i, item := range v.Array() {
				if i > 0 {
					b.WriteString(", ")
				}
				walk(item)
			}
			b.WriteByte(']')
		case v.Type == gjson.String:
			b.WriteString(pyASCII(string(openai.AppendJSONString(nil, v.Str))))
		case v.Type == gjson.True:
			b.WriteString("true")
		case v.Type == gjson.False:
			b.WriteString("false")
		case v.Type == gjson.Null:
			b.WriteString("null")
		default:
			b.WriteString(v.Raw)
		}
	}
	walk(v)
	return b.String()
}

func nonEmpty(v gjson.Result) bool {
	switch {
	case v.Type == gjson.Null:
		return false
	case v.Type == gjson.String:
		return v.Str != ""
	case v.IsArray():
		return len(v.Array()) > 0
	case v.IsObject():
		return len(v.Map()) > 0
	}
	return true
}

// jsonError says what is wrong with malformed JSON, with the byte offset.
func jsonError(raw []byte) string {
	var v any
	err := json.Unmarshal(raw, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	if err != nil {
		return err.Error()
	}
	return "invalid JSON"
}

func intList(v []int) string {
	const shown = 20
	parts := make([]string, 0, min(len(v), shown))
	for i, n := range v {
		if i == shown {
			parts = append(parts, fmt.Sprintf("… %d more", len(v)-shown))
			break
		}
		parts = append(parts, strconv.Itoa(n))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
