package resources

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/tidwall/gjson"
)

// RowAggregator is a handler that computes /aggregate_metrics in process
// from the rows themselves, without the request's JSON array: what
// `gym eval aggregate` uses, where a run's rows need not fit in memory.
type RowAggregator interface {
	AggregateRows(rows func(yield func(row []byte) error) error, w io.Writer) error
}

// handler is a resources server's routes, and its aggregation for callers
// in the same process.
type handler struct {
	http.Handler
	hooks MetricsHooks
}

func (h handler) AggregateRows(rows func(yield func(row []byte) error) error, w io.Writer) error {
	if err := AggregateRows(rows, h.hooks, w); err != nil {
		return fmt.Errorf("aggregate_metrics: %w", err)
	}
	return nil
}

// AggregateRows writes the /aggregate_metrics reply over the verify
// responses rows yields, the bytes Aggregate and MarshalJSON give for them.
// rows is called more than once and must yield the same rows each time; a
// row is only read during its yield.
//
// When the rows come in ascending task order and no ComputeMetrics hook
// needs them all, nothing of a rollout is held but the numbers of the
// statistics (the agent's and its repeats' medians need every value): a
// first pass finds the columns and the agent-level metrics, and a second
// writes each task's group as soon as its rollouts are read. Otherwise the
// rows are held and Aggregate runs.
func AggregateRows(rows func(yield func(row []byte) error) error, hooks MetricsHooks, w io.Writer) error {
	if hooks.ComputeMetrics == nil {
		s, err := profileRows(rows)
		if err != nil || s != nil {
			if err == nil {
				err = s.write(rows, hooks, w)
			}
			return err
		}
	}
	var held []json.RawMessage
	err := rows(func(row []byte) error {
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
	out, err := agg.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// rowStats is the first pass of AggregateRows: the columns, every value per
// column for the agent, and per rollout index for its repeats.
type rowStats struct {
	p       *profiler
	vals    [][]float64
	repeats []repeatRows
	repeat  map[int64]int // rollout index → repeats[i]
	last    []int64       // the last task each repeat had
	tasks   int
	perfs   []gjson.Result
}

// errUnordered stops the first pass at a task before the previous one.
var errUnordered = errors.New("the rows are not in task order")

// profileRows is the first pass; nil (and no error) when the rows are not
// in ascending task order, so that a task's group cannot be written as
// soon as it is read.
func profileRows(rows func(yield func(row []byte) error) error) (*rowStats, error) {
	s := &rowStats{p: &profiler{colIndex: map[string]int{}}, repeat: map[int64]int{}}
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
			s.perfs = append(s.perfs, gjson.Parse(string(perf.Raw)))
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
			for len(s.vals) <= c.col {
				s.vals = append(s.vals, nil)
			}
			for len(rep.vals) <= c.col {
				rep.vals = append(rep.vals, nil)
			}
			s.vals[c.col] = append(s.vals[c.col], c.value)
			rep.vals[c.col] = append(rep.vals[c.col], c.value)
		}
		prevTask = task
		i++
		return nil
	})
	if errors.Is(err, errUnordered) {
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
	agent := NewMetrics()
	for len(s.vals) < len(p.cols) {
		s.vals = append(s.vals, nil)
	}
	p.describeValues(s.vals, p.n, agent)
	repeats := p.repeatMetrics(s.repeats, s.tasks, json.RawMessage(`{"name":"agent"}`), func(r repeatRows) [][]float64 { return r.vals })
	acrossRepeats(repeats, agent)
	agent.Set("num_repeats", int64(max(len(repeats), 1)))
	for _, r := range repeats {
		r.Delete("agent_ref")
	}
	if repeats == nil {
		repeats = []*Metrics{}
	}
	key := MeanMetrics(agent)
	if hooks.KeyMetrics != nil {
		key = hooks.KeyMetrics(agent)
	}
	perf := PerfSummary(s.perfs, p.n)

	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(`{"group_level_metrics":[`)
	// The groups: the same columns, each task's rollouts read again.
	g := &profiler{cols: p.cols, colIndex: p.colIndex, vals: p.vals}
	var buf []byte
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
		if buf, err = m.appendJSON(buf[:0]); err != nil {
			return err
		}
		if i > len(g.rows) {
			bw.WriteByte(',')
		}
		bw.Write(buf)
		g.rows = g.rows[:0]
		return nil
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
	if err != nil {
		return err
	}
	tail := NewMetrics()
	tail.Set("agent_metrics", agent)
	tail.Set("key_metrics", key)
	if perf != nil {
		tail.Set("perf_summary", perf)
	}
	tail.Set("repeat_level_metrics", repeats)
	if buf, err = tail.appendJSON(buf[:0]); err != nil {
		return err
	}
	// The tail object's members continue the reply's: its "{" becomes the
	// group list's end.
	buf[0] = ','
	bw.WriteByte(']')
	bw.Write(buf)
	return bw.Flush()
}

// parseVerifyResponse checks one /aggregate_metrics input as Aggregate
// does and returns its members and indices.
func (p *profiler) parseVerifyResponse(i int, raw []byte) (fields, int64, int64, error) {
	if !gjson.ValidBytes(raw) {
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
