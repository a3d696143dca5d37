package resources

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/tidwall/gjson"
)

// RowAggregator is a handler that computes /aggregate_metrics in process
// from the rows themselves, without the request's JSON array: what
// `gym eval aggregate` uses, where a run's rows need not fit in memory.
type RowAggregator interface {
	// AggregateRows is AggregateRows with the handler's hooks.
	AggregateRows(rows func(yield func(row []byte) error) error, dir string, w io.Writer) error
}

// handler is a resources server's routes, and its aggregation for callers
// in the same process.
type handler struct {
	http.Handler
	hooks MetricsHooks
}

func (h handler) AggregateRows(rows func(yield func(row []byte) error) error, dir string, w io.Writer) error {
	if err := AggregateRows(rows, h.hooks, dir, w); err != nil {
		return fmt.Errorf("aggregate_metrics: %w", err)
	}
	return nil
}

// AggregateRows writes the /aggregate_metrics reply over the verify
// responses rows yields, the bytes Aggregate and MarshalJSON give for them.
// rows is called more than once and must yield the same rows each time; a
// row is only read during its yield.
//
// When the rows come in ascending task order, nothing of a rollout is
// held: a first pass finds the columns and spills their values to a
// temporary file in dir ("" for the system's), the agent-level statistics
// are computed one column at a time (the medians need all of a column's
// values), a ComputeMetrics hook reads the rows again a task at a time, and
// a last pass writes each task's group as soon as its rollouts are read.
// Otherwise the rows are held and Aggregate runs.
func AggregateRows(rows func(yield func(row []byte) error) error, hooks MetricsHooks, dir string, w io.Writer) error {
	s, err := profileRows(rows, dir)
	if s != nil {
		defer s.close()
	}
	if err != nil || s != nil {
		if err == nil {
			err = s.write(rows, hooks, w)
		}
		return err
	}
	var held []json.RawMessage
	err = rows(func(row []byte) error {
		held = append(held, bytes.Clone(row))
		return nil
	})
	if err != nil {
		return err
	}
	agg, err := Aggregate(held, hooks)
	if err != nil {
		return err
	}
	held = nil
	return writeAggregate(w, agg, func(emit func(*Metrics) error) error {
		for i, g := range agg.GroupLevelMetrics {
			if err := emit(g); err != nil {
				return err
			}
			agg.GroupLevelMetrics[i] = nil // written: it can go
		}
		return nil
	})
}

// writeAggregate writes what a.MarshalJSON writes, with the groups that groups
// emits one at a time in place of a.GroupLevelMetrics, so that a reply is
// never held whole.
func writeAggregate(w io.Writer, a *AggregateMetrics, groups func(emit func(*Metrics) error) error) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(`{"group_level_metrics":[`)
	var buf []byte
	first := true
	err := groups(func(m *Metrics) error {
		var err error
		if buf, err = m.appendJSON(buf[:0]); err != nil {
			return err
		}
		if !first {
			bw.WriteByte(',')
		}
		first = false
		bw.Write(buf)
		return nil
	})
	if err != nil {
		return err
	}
	rest := *a
	rest.GroupLevelMetrics = nil
	if buf, err = rest.MarshalJSON(); err != nil {
		return err
	}
	// The rest follows the groups: MarshalJSON wrote their (empty) list
	// first.
	const empty = `{"group_level_metrics":[]`
	if !bytes.HasPrefix(buf, []byte(empty)) {
		return fmt.Errorf("aggregate_metrics: the reply does not start with its groups: %.40s", buf)
	}
	bw.WriteByte(']')
	bw.Write(buf[len(empty):])
	return bw.Flush()
}

// rowStats is the first pass of AggregateRows: the columns, and every
// value of each with its repeat.
type rowStats struct {
	p       *profiler
	values  *valueSpill
	repeats []repeatRows
	repeat  map[int64]int // rollout index → repeats[i]
	last    []int64       // the last task each repeat had
	tasks   int
	perf    *perfSummarizer
}

func (s *rowStats) close() {
	s.values.close()
	s.perf.close()
}

// errUnordered stops the first pass at a task before the previous one.
var errUnordered = errors.New("the rows are not in task order")

// profileRows is the first pass; nil (and no error) when the rows are not
// in ascending task order, so that a task's group cannot be written as
// soon as it is read.
func profileRows(rows func(yield func(row []byte) error) error, dir string) (*rowStats, error) {
	s := &rowStats{p: &profiler{colIndex: map[string]int{}}, repeat: map[int64]int{}, values: &valueSpill{dir: dir}, perf: newPerfSummarizer(dir, perfChunk)}
	p := s.p
	i := 0
	var prevTask int64
	err := rows(func(raw []byte) error {
		top, task, rollout, err := p.parseVerifyResponse(i, raw)
		if err != nil {
			return err
		}
		if i > 0 && task < prevTask {
			return errUnordered
		}
		if i == 0 || task != prevTask {
			s.tasks++
		}
		if perf := gjson.GetBytes(raw, "ng_perf"); perf.IsObject() {
			if err := s.perf.add(perf); err != nil {
				return err
			}
		}
		row, _ := p.record(top, task, rollout, 0, nil, true, false)
		r, ok := s.repeat[rollout]
		if !ok {
			r = len(s.repeats)
			s.repeat[rollout] = r
			s.repeats = append(s.repeats, repeatRows{key: rollout})
			s.last = append(s.last, 0)
		}
		rep := &s.repeats[r]
		if rep.tasks == 0 || s.last[r] != task {
			rep.tasks++
			s.last[r] = task
		}
		for _, c := range row.cells {
			if err := s.values.add(c.col, r, c.value); err != nil {
				return err
			}
		}
		prevTask = task
		i++
		return nil
	})
	if errors.Is(err, errUnordered) {
		s.close()
		return nil, nil
	}
	return s, err
}

// write is the second pass: the reply, its groups written one task at a
// time, in the layout of AggregateMetrics.MarshalJSON.
func (s *rowStats) write(rows func(yield func(row []byte) error) error, hooks MetricsHooks, w io.Writer) error {
	p := s.p
	if p.n == 0 {
		out, err := (&AggregateMetrics{GroupLevelMetrics: []*Metrics{}, AgentMetrics: NewMetrics(), KeyMetrics: NewMetrics()}).MarshalJSON()
		if err == nil {
			_, err = w.Write(out)
		}
		return err
	}
	// The statistics a column at a time, over the agent, then over each
	// repeat, in passes over its spilled values: nothing per rollout is
	// held.
	stats := make([]columnStats, len(p.cols))
	perRepeat := make([][]repeatColumn, len(s.repeats))
	present := make([][]bool, len(s.repeats))
	for c := range p.cols {
		var err error
		stats[c], err = scanDescribe(func(fn func(float64)) error {
			return s.values.column(c, func(_ int, x float64) { fn(x) })
		})
		if err != nil {
			return err
		}
		// One repeat has no repeat-level metrics (repeatMetrics).
		if len(s.repeats) < 2 {
			continue
		}
		// Many repeats (past fewRepeats) are split in one reading, which
		// holds the column, rather than read once each.
		var byRepeat [][]float64
		if len(s.repeats) > fewRepeats {
			byRepeat = make([][]float64, len(s.repeats))
			err := s.values.column(c, func(r int, x float64) { byRepeat[r] = append(byRepeat[r], x) })
			if err != nil {
				return err
			}
		}
		for r := range s.repeats {
			var st repeatColumn
			var ok bool
			if byRepeat != nil {
				st, ok = summarizeRepeat(byRepeat[r])
			} else if st, ok, err = scanSummarizeRepeat(func(fn func(float64)) error {
				return s.values.column(c, func(repeat int, x float64) {
					if repeat == r {
						fn(x)
					}
				})
			}); err != nil {
				return err
			}
			perRepeat[r] = append(perRepeat[r], st)
			present[r] = append(present[r], ok)
		}
	}
	agent := NewMetrics()
	p.setDescribed(stats, p.n, agent)
	repeats := p.repeatMetrics(s.repeats, s.tasks, json.RawMessage(`{"name":"agent"}`), func(r repeatRows, c int) (repeatColumn, bool) {
		slot := s.repeat[r.key]
		return perRepeat[slot][c], present[slot][c]
	})
	acrossRepeats(repeats, agent)
	var perTask map[int64][]*Metrics
	if hooks.ComputeMetrics != nil {
		custom, err := hooks.ComputeMetrics(rowTasks(rows))
		if err != nil {
			return err
		}
		perTask = customMetrics(custom, agent)
	}
	agent.Set("num_repeats", int64(max(len(repeats), 1)))
	for _, r := range repeats {
		r.Delete("agent_ref")
	}
	key := MeanMetrics(agent)
	if hooks.KeyMetrics != nil {
		key = hooks.KeyMetrics(agent)
	}

	// The groups: the same columns, each task's rollouts read again.
	perf, err := s.perf.summary(p.n)
	if err != nil {
		return err
	}
	reply := &AggregateMetrics{AgentMetrics: agent, KeyMetrics: key, PerfSummary: perf, RepeatLevelMetrics: repeats}
	return writeAggregate(w, reply, func(emit func(*Metrics) error) error {
		g := &profiler{cols: p.cols, colIndex: p.colIndex, vals: p.vals}
		i := 0
		var task int64
		flush := func() error {
			if len(g.rows) == 0 {
				return nil
			}
			idx := make([]int, len(g.rows))
			for j := range idx {
				idx[j] = j
			}
			m, err := g.group(task, idx, ProfileOptions{})
			if err != nil {
				return err
			}
			mergeTaskMetrics(m, perTask[task])
			g.rows = g.rows[:0]
			return emit(m)
		}
		err := rows(func(raw []byte) error {
			top, t, rollout, err := g.parseVerifyResponse(i, raw)
			if err != nil {
				return err
			}
			if len(g.rows) > 0 && t != task {
				if err := flush(); err != nil {
					return err
				}
			}
			task = t
			row, ok := g.record(top, t, rollout, 0, nil, false, true)
			if !ok || i >= p.n {
				return errors.New("the rows changed between the two passes")
			}
			g.rows = append(g.rows, row)
			i++
			return nil
		})
		if err == nil {
			err = flush()
		}
		if err == nil && i != p.n {
			err = errors.New("the rows changed between the two passes")
		}
		return err
	})
}

// rowTasks is Tasks over rows in ascending task order: each reading reads
// the rows again and holds one task's.
func rowTasks(rows func(yield func(row []byte) error) error) Tasks {
	return func(yield func([]Rollout) error) error {
		p := &profiler{colIndex: map[string]int{}}
		var task []Rollout
		i := 0
		err := rows(func(raw []byte) error {
			top, t, r, err := p.parseVerifyResponse(i, raw)
			if err != nil {
				return err
			}
			p.top = top[:0] // the scratch list, for the next row
			i++
			if len(task) > 0 && t != task[0].TaskIndex {
				if err := yield(task); err != nil {
					return err
				}
				clear(task)
				task = task[:0]
			}
			task = append(task, Rollout{TaskIndex: t, RolloutIndex: r, Raw: bytes.Clone(raw)})
			return nil
		})
		if err == nil && len(task) > 0 {
			err = yield(task)
		}
		return err
	}
}

// parseVerifyResponse checks one /aggregate_metrics input as Aggregate
// does and returns its members and indices.
func (p *profiler) parseVerifyResponse(i int, raw []byte) (fields, int64, int64, error) {
	if !jsonl.Valid(raw) {
		return nil, 0, 0, fmt.Errorf("verify_responses[%d] is not valid JSON", i)
	}
	res := gjson.ParseBytes(raw)
	if !res.IsObject() {
		return nil, 0, 0, fmt.Errorf("verify_responses[%d] must be a JSON object, got %s", i, res.Type)
	}
	top := p.collect(res)
	task, err := indexField(top, TaskIndexKey, i)
	if err != nil {
		return nil, 0, 0, err
	}
	rollout, err := indexField(top, RolloutIndexKey, i)
	if err != nil {
		return nil, 0, 0, err
	}
	return top, task, rollout, nil
}

// valueSpill holds every value of every column, with its repeat, in row
// order: in blocks written to a temporary file as they fill, so that no
// more than a block per column is in memory.
type valueSpill struct {
	dir    string
	f      *os.File
	size   int64
	blocks [][]int64 // per column, where its full blocks are
	tail   [][]byte  // per column, the block being filled
}

// fewRepeats is how many repeats the statistics scan a column for, one
// repeat at a time.
const fewRepeats = 16

// valueRecord is a value and its repeat; spillBlock holds 1024 of them.
const (
	valueRecord = 8 + 4
	spillBlock  = 1024 * valueRecord
)

func (v *valueSpill) add(col, repeat int, x float64) error {
	for len(v.tail) <= col {
		v.tail = append(v.tail, nil)
		v.blocks = append(v.blocks, nil)
	}
	t := binary.LittleEndian.AppendUint64(v.tail[col], math.Float64bits(x))
	t = binary.LittleEndian.AppendUint32(t, uint32(repeat))
	v.tail[col] = t
	if len(t) < spillBlock {
		return nil
	}
	if v.f == nil {
		f, err := jsonl.SpillFile(v.dir, ".aggregate-values-*.bin")
		if err != nil {
			return err
		}
		v.f = f
	}
	if _, err := v.f.WriteAt(t, v.size); err != nil {
		return err
	}
	v.blocks[col] = append(v.blocks[col], v.size)
	v.size += int64(len(t))
	v.tail[col] = t[:0]
	return nil
}

// column passes a column's values, in row order, with their repeats.
func (v *valueSpill) column(col int, fn func(repeat int, x float64)) error {
	if col >= len(v.tail) {
		return nil
	}
	each := func(b []byte) {
		for ; len(b) >= valueRecord; b = b[valueRecord:] {
			fn(int(binary.LittleEndian.Uint32(b[8:])), math.Float64frombits(binary.LittleEndian.Uint64(b)))
		}
	}
	buf := make([]byte, spillBlock)
	for _, off := range v.blocks[col] {
		if _, err := v.f.ReadAt(buf, off); err != nil {
			return err
		}
		each(buf)
	}
	each(v.tail[col])
	return nil
}

func (v *valueSpill) close() {
	if v.f != nil {
		v.f.Close()
	}
}
