package rollout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/openai"
	"github.com/nemo-gym-go/gym/internal/resources"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Aggregator computes one agent's aggregate metrics from its verify
// responses, writing the /aggregate_metrics reply ({group_level_metrics,
// agent_metrics, key_metrics}) to reply. Both are large for a large run
// (a rollout each, an entry per task), so both are streamed, never held:
// the rollouts are read again from disk each time they are asked for.
type Aggregator interface {
	AggregateMetrics(ctx context.Context, agent string, in AggregateInput, reply io.Writer) error
}

// AggregateInput is one agent's verify responses, in (task, rollout)
// order, stripped of what the metrics do not read.
type AggregateInput struct {
	// each reads through a cache, read reads the rollouts' files and the
	// stripped rows kept (and is safe for concurrent use, as an HTTP
	// client retrying a request needs).
	each, read func(yield func(row []byte) error) error
	// dir is where an aggregator may spill to temporary files: beside the
	// metrics file.
	dir string
}

// Each yields the rollouts one at a time; a row is only valid during its
// yield. Each is not safe for concurrent use.
func (in AggregateInput) Each(yield func(row []byte) error) error { return in.each(yield) }

// Body is the /aggregate_metrics request body, {"verify_responses": [...]},
// written as it is read.
func (in AggregateInput) Body() io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		w := bufio.NewWriterSize(pw, 64<<10)
		w.WriteString(`{"verify_responses":[`)
		first := true
		err := in.read(func(row []byte) error {
			if !first {
				w.WriteByte(',')
			}
			first = false
			_, err := w.Write(row)
			return err
		})
		if err == nil {
			w.WriteString("]}")
			err = w.Flush()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// AgentServers asks running agent servers, as NeMo Gym does.
type AgentServers struct {
	Client   *server.Client
	AgentURL func(ctx context.Context, agent string) (string, error)
}

func (a AgentServers) AggregateMetrics(ctx context.Context, agent string, in AggregateInput, reply io.Writer) error {
	base, err := a.AgentURL(ctx, agent)
	if err != nil {
		return err
	}
	rc := in.Body()
	defer rc.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/aggregate_metrics", rc)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.GetBody = func() (io.ReadCloser, error) { return in.Body(), nil }
	resp, err := a.Client.Do(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(reply, resp.Body)
	return err
}

// InProcess computes metrics with server handlers built in this process,
// so `gym eval aggregate` needs no running servers: Handler gives the
// handler that answers /aggregate_metrics for an agent (its resources
// server's). A handler that aggregates rows itself (a Go resources
// server's) is given the rollouts one at a time; any other gets the
// request, and its reply is held.
type InProcess struct {
	Handler func(agent string) (http.Handler, error)
}

func (p InProcess) AggregateMetrics(ctx context.Context, agent string, in AggregateInput, reply io.Writer) error {
	h, err := p.Handler(agent)
	if err != nil {
		return err
	}
	if ra, ok := h.(resources.RowAggregator); ok {
		err := ra.AggregateRows(in.Each, in.dir, reply)
		var a *answered
		if err == nil || errors.As(err, &a) {
			return err
		}
		// The error as a resources server's route answers it.
		return serve(ctx, server.Handle(func(http.ResponseWriter, *http.Request) error { return err }), nil, io.Discard)
	}
	rc := in.Body()
	defer rc.Close()
	return serve(ctx, h, rc, reply)
}

// serve posts body to h's /aggregate_metrics and copies a successful reply
// to reply; any other is an *answered.
func serve(ctx context.Context, h http.Handler, body io.Reader, reply io.Writer) error {
	req, err := server.InProcessRequest(ctx, http.MethodPost, "/aggregate_metrics", body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	w := &memoryResponse{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(w, req)
	if w.status/100 != 2 {
		return &answered{w.status, string(bytes.TrimSpace(w.body.Bytes()))}
	}
	_, err = reply.Write(w.body.Bytes())
	return err
}

// answered is an in-process handler's error answer.
type answered struct {
	status int
	body   string
}

func (a *answered) Error() string { return fmt.Sprintf("status %d: %s", a.status, a.body) }

type memoryResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (m *memoryResponse) Header() http.Header         { return m.header }
func (m *memoryResponse) Write(b []byte) (int, error) { return m.body.Write(b) }
func (m *memoryResponse) WriteHeader(status int)      { m.status = status }

// MetricsRows are the successful rollouts of a run, per agent: where each
// is in its files, not the rollout itself, so a run of any size aggregates
// in little memory. An agent whose rollouts are already in (task, rollout)
// order in the files (a merged file's are) is read back in one pass over
// them and nothing per rollout is held; any other's are located one by one
// to be sorted.
type MetricsRows struct {
	files    []string
	agents   map[string]*agentRows
	stripped *strippedRows
}

// agentRows are one agent's rollouts: how many, the first key in order,
// and, when they are out of order, where each is.
type agentRows struct {
	n      int
	first  key
	sorted bool
	refs   *refSorter
	// located says refs holds where every rollout read so far is. The
	// first pass locates each agent's rollouts while it may need them: an
	// agent still in order after locateAhead rollouts stops (in-order
	// files are read back without them), and is located in a second pass
	// only if it then turns out of order.
	located bool
}

// locateAhead is how many rollouts of an agent still in order the first
// pass locates: collected rollouts come out of order within their first
// few, and an in-order file (a merged one) costs no more than this per
// agent, held in memory, never spilled (under sortChunk).
const locateAhead = 4096

// rowRef locates one rollout: its key, and its line in files[file], or,
// with file strippedFile, its stripped row among MetricsRows' stripped.
type rowRef struct {
	k    key
	file int
	off  int64
	size int
}

const strippedFile = -1

// Rows returns the number of rollouts found.
func (m *MetricsRows) Rows() int {
	n := 0
	for _, a := range m.agents {
		n += a.n
	}
	return n
}

// heavyKeys are dropped before aggregation, as NeMo Gym drops them: the
// metrics read numbers, and these are most of a rollout's bytes.
var heavyKeys = [...]string{"response", ParamsKey, "ng_agent_observations", "ng_model_call_capture", "ng_trajectory"}

// ReadMetricsRows indexes rollouts files for aggregation: a pass that
// checks every rollout, finds each agent's order and locates its
// rollouts, and, for an agent found out of order only late in a long
// file, a second that locates them. A rollout located once its agent is
// out of order is stripped as it is read and kept so in a temporary file
// in dir (beside the metrics), which the aggregation reads instead of the
// line: collected rollouts, out of order from the first few, are read in
// full and checked once, and what is read back one by one is a few
// hundred bytes each.
func ReadMetricsRows(dir string, paths ...string) (*MetricsRows, error) {
	m := &MetricsRows{files: paths, agents: map[string]*agentRows{}, stripped: &strippedRows{dir: dir}}
	last := map[string]key{}
	err := m.each(func(file int, lr *lineReader, agent string, row *record) error {
		if agent == "" {
			if a := row.nested(AgentRefKey, "name"); a.Type != gjson.String {
				return lr.errorf("the rollout has no %s.name, so its agent's metrics cannot be computed", AgentRefKey)
			}
		}
		if r := row.peek("reward"); r.Exists() && r.Type != gjson.Number && r.Type != gjson.True && r.Type != gjson.False {
			return lr.errorf("reward is %s, not a number: the metrics would leave this rollout out", r.Raw)
		}
		k, _ := row.key()
		a := m.agents[agent]
		if a == nil {
			a = &agentRows{first: k, sorted: true, refs: newRefSorter(""), located: true}
			m.agents[agent] = a
		} else if less(k, last[agent]) {
			a.sorted = false
		}
		if less(k, a.first) {
			a.first = k
		}
		a.n++
		last[agent] = k
		if a.located && a.sorted && a.n >= min(locateAhead, sortChunk) {
			a.refs.Close()
			a.refs, a.located = nil, false
		}
		if a.located {
			return m.locate(a, k, file, lr, row)
		}
		return nil
	})
	relocate := false
	for _, a := range m.agents {
		if !a.sorted && !a.located {
			a.refs, relocate = newRefSorter(""), true
		}
	}
	if err == nil && relocate {
		err = m.each(func(file int, lr *lineReader, agent string, row *record) error {
			if a := m.agents[agent]; !a.sorted && !a.located {
				k, _ := row.key()
				return m.locate(a, k, file, lr, row)
			}
			return nil
		})
	}
	if err == nil {
		err = m.stripped.flush()
	}
	for _, a := range m.agents {
		switch {
		case a.sorted && a.refs != nil:
			a.refs.Close()
			a.refs = nil
		case err == nil && a.refs != nil:
			err = a.refs.Finish()
		}
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// locate adds where row is to a's locations: its line, while a is in
// order (it may stay so, and be read back from the files), else the row
// stripped, kept for the aggregation to read instead of the line.
func (m *MetricsRows) locate(a *agentRows, k key, file int, lr *lineReader, row *record) error {
	if a.sorted {
		return a.refs.Add(rowRef{k, file, lr.Start, lr.Size})
	}
	stripped, err := stripHeavy(row)
	if err != nil {
		return lr.errorf("cannot strip the rollout for its metrics: %v", err)
	}
	off, err := m.stripped.add(stripped)
	if err != nil {
		return err
	}
	return a.refs.Add(rowRef{k: k, file: strippedFile, off: off, size: len(stripped)})
}

// Close removes what sorting and stripping the rollouts spilled to disk.
func (m *MetricsRows) Close() {
	for _, a := range m.agents {
		if a.refs != nil {
			a.refs.Close()
		}
	}
	m.stripped.close()
}

// strippedRows are located rollouts, stripped, one after another in a
// temporary file made when the first comes.
type strippedRows struct {
	dir  string
	f    *os.File
	w    *bufio.Writer
	size int64
}

// add appends a stripped row and returns where it starts.
func (s *strippedRows) add(row []byte) (int64, error) {
	if s.f == nil {
		f, err := jsonl.SpillFile(s.dir, ".aggregate-stripped-*.jsonl")
		if err != nil {
			return 0, fmt.Errorf("keeping the rollouts stripped for their metrics: %w", err)
		}
		s.f, s.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	off := s.size
	if _, err := s.w.Write(row); err != nil {
		return 0, err
	}
	s.size += int64(len(row))
	return off, nil
}

// flush writes out what add buffered; the rows are read back from then on.
func (s *strippedRows) flush() error {
	if s.w == nil {
		return nil
	}
	err := s.w.Flush()
	s.w = nil
	return err
}

// read returns the row r locates, in buf's storage; safe for concurrent
// use once flushed.
func (s *strippedRows) read(r rowRef, buf []byte) ([]byte, error) { return readAt(s.f, r, buf) }

func (s *strippedRows) close() {
	if s.f != nil {
		s.f.Close()
	}
}

// each reads every rollout of the files in order, with its agent's name
// ("" when it has none).
func (m *MetricsRows) each(fn func(file int, lr *lineReader, agent string, row *record) error) error {
	for i, p := range m.files {
		err := eachRecord(p, func(lr *lineReader, row *record) error {
			return fn(i, lr, row.agent(), row)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// rowReader reads indexed rollouts back from their files; safe for
// concurrent use.
type rowReader struct {
	files []*os.File
}

func openRows(paths []string) (*rowReader, error) {
	rr := &rowReader{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			rr.Close()
			return nil, err
		}
		rr.files = append(rr.files, f)
	}
	return rr, nil
}

// read returns a rollout's line, without its newline, in buf's storage.
func (rr *rowReader) read(r rowRef, buf []byte) ([]byte, error) {
	line, err := readAt(rr.files[r.file], r, buf)
	return bytes.TrimRight(line, "\r\n"), err
}

// readAt reads the r.size bytes at r.off of f into buf's storage.
func readAt(f *os.File, r rowRef, buf []byte) ([]byte, error) {
	buf = slices.Grow(buf[:0], r.size)[:r.size]
	if _, err := f.ReadAt(buf, r.off); err != nil {
		return nil, err
	}
	return buf, nil
}

func (rr *rowReader) Close() {
	for _, f := range rr.files {
		f.Close()
	}
}

// stripHeavy is the row without what the metrics do not read, as NeMo Gym
// strips it: the first member of each heavy key goes, with its comma, and
// the response's usage comes back as "response": {"usage": ...}. A row
// written compact (as gym writes rollouts) is built from its members in
// one copy; any other is rewritten key by key (stripByRewriting), whose
// bytes the one copy matches.
func stripHeavy(row *record) ([]byte, error) {
	raw, members := row.raw, row.members
	if !compactObject(raw, members) {
		return stripByRewriting(row.result())
	}
	usage := row.nested("response", "usage")
	var dropped [len(heavyKeys)]bool
	out := make([]byte, 0, len(raw))
	out = append(out, '{')
	replaced, kept := false, 0
	for _, m := range members {
		name := m.Name(raw)
		drop := false
		for i, k := range heavyKeys {
			if !dropped[i] && string(name) == k {
				dropped[i], drop = true, true
				break
			}
		}
		if drop {
			continue
		}
		if kept++; kept > 1 {
			out = append(out, ',')
		}
		if usage.Exists() && !replaced && string(name) == "response" {
			// A second response member: the usage replaces its value.
			out = appendUsage(append(out, raw[m.KeyStart:m.ValueStart]...), usage)
			replaced = true
			continue
		}
		out = append(out, raw[m.KeyStart:m.ValueEnd]...)
	}
	if usage.Exists() && !replaced {
		if kept > 0 {
			out = append(out, ',')
		}
		out = appendUsage(append(out, `"response":`...), usage)
	}
	return append(out, '}'), nil
}

func appendUsage(out []byte, usage gjson.Result) []byte {
	return append(append(append(out, `{"usage":`...), usage.Raw...), '}')
}

// compactObject is whether raw is an object with nothing between its
// braces and members but their commas.
func compactObject(raw []byte, members []jsonl.Member) bool {
	if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return false
	}
	if len(members) == 0 {
		return len(raw) == 2
	}
	// Each member starts just past the brace or the comma.
	for i, m := range members {
		if i == 0 && m.KeyStart != 1 || i > 0 && m.KeyStart != members[i-1].ValueEnd+1 {
			return false
		}
	}
	return members[len(members)-1].ValueEnd == len(raw)-1
}

// stripByRewriting is stripHeavy of any row: each heavy key deleted in
// turn, the usage set last.
func stripByRewriting(row gjson.Result) ([]byte, error) {
	out := []byte(row.Raw)
	usage := row.Get("response.usage")
	var err error
	for _, k := range heavyKeys {
		if row.Get(k).Exists() {
			if out, err = sjson.DeleteBytes(out, k); err != nil {
				return nil, err
			}
		}
	}
	if usage.Exists() {
		out, err = sjson.SetRawBytes(out, "response", appendUsage(nil, usage))
	}
	return out, err
}

// AgentMetrics is one agent's aggregation: its name and key metrics.
type AgentMetrics struct {
	Agent      string
	KeyMetrics json.RawMessage
}

// metricsOrder is where NeMo Gym's file puts the reply's parts, after
// agent_ref; any other part follows them.
var metricsOrder = []string{"agent_metrics", "key_metrics", "group_level_metrics", "repeat_level_metrics"}

// WriteAggregateMetrics asks agg for each agent's metrics over its
// rollouts, sorted by (task, rollout), agents in the order of their first
// rollout; writes path (a JSON array of one entry per agent, indented by 2
// as NeMo Gym writes it) and prints each agent's key metrics. Each reply
// goes through a temporary file beside path, so memory does not grow with
// the number of tasks.
func WriteAggregateMetrics(ctx context.Context, rows *MetricsRows, agg Aggregator, path string, out io.Writer) ([]AgentMetrics, error) {
	type agentFirst struct {
		name  string
		first key
	}
	var order []agentFirst
	for name, a := range rows.agents {
		order = append(order, agentFirst{name, a.first})
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].first != order[j].first {
			return less(order[i].first, order[j].first)
		}
		return order[i].name < order[j].name
	})
	rr, err := openRows(rows.files)
	if err != nil {
		return nil, err
	}
	defer rr.Close()
	var parts []io.Reader
	var metrics []AgentMetrics
	for i, a := range order {
		in, cache := rows.input(a.name, rr, filepath.Dir(path))
		reply, ranges, err := aggregateOne(ctx, agg, a.name, in, in.dir)
		cache.close()
		if reply != nil {
			defer os.Remove(reply.Name())
			defer reply.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("aggregate metrics of agent %s: %w", a.name, err)
		}
		head := `,{"agent_ref":{"name":`
		if i == 0 {
			head = head[1:]
		}
		parts = append(parts, strings.NewReader(head+string(openai.AppendJSONString(nil, a.name))+"}"))
		var keys []string
		for _, k := range metricsOrder {
			if _, ok := ranges.at[k]; ok {
				keys = append(keys, k)
			}
		}
		for _, k := range ranges.order {
			if !slices.Contains(metricsOrder, k) && k != "perf_summary" {
				keys = append(keys, k)
			}
		}
		// NeMo Gym writes the rollouts' perf_summary last, and only when
		// there is one.
		if r, ok := ranges.at["perf_summary"]; ok {
			head := make([]byte, min(4, r[1]-r[0]))
			if _, err := reply.ReadAt(head, r[0]); err != nil {
				return nil, err
			}
			if string(head) != "null" {
				keys = append(keys, "perf_summary")
			}
		}
		for _, k := range keys {
			r := ranges.at[k]
			parts = append(parts, strings.NewReader(","+string(openai.AppendJSONString(nil, k))+":"), io.NewSectionReader(reply, r[0], r[1]-r[0]))
		}
		parts = append(parts, strings.NewReader("}"))
		am := AgentMetrics{Agent: a.name, KeyMetrics: json.RawMessage("{}")}
		if r, ok := ranges.at["key_metrics"]; ok {
			am.KeyMetrics = make([]byte, r[1]-r[0])
			if _, err := reply.ReadAt(am.KeyMetrics, r[0]); err != nil {
				return nil, err
			}
		}
		metrics = append(metrics, am)
	}
	doc := io.MultiReader(append(append([]io.Reader{strings.NewReader("[")}, parts...), strings.NewReader("]"))...)
	if err := jsonl.WriteFileAtomic(path, func(w *bufio.Writer) error { return indentStream(w, doc, "  ") }); err != nil {
		return nil, err
	}
	for _, m := range metrics {
		fmt.Fprintf(out, "Key metrics for %s:\n", m.Agent)
		var b bytes.Buffer
		if json.Indent(&b, m.KeyMetrics, "", "    ") != nil {
			b.Reset()
			b.WriteString("{}")
		}
		fmt.Fprintln(out, b.String())
	}
	return metrics, nil
}

// input is an agent's rollouts, stripped, in (task, rollout) order: read
// in one pass over the files when they are in order there, else one by one
// where they are (kept stripped, or their lines). The first reading keeps
// the rows in order in a temporary file in dir, which later readings (an
// aggregator may read the rollouts more than once) read instead.
func (m *MetricsRows) input(agent string, rr *rowReader, dir string) (AggregateInput, *rowCache) {
	a := m.agents[agent]
	src := func(yield func([]byte) error) error {
		var buf []byte
		return a.refs.Each(func(r rowRef) error {
			if r.file == strippedFile {
				row, err := m.stripped.read(r, buf)
				if err != nil {
					return err
				}
				buf = row
				return yield(row)
			}
			line, err := rr.read(r, buf)
			if err != nil {
				return err
			}
			buf = line
			var row record
			row.parse(line)
			stripped, err := stripHeavy(&row)
			if err != nil {
				return err
			}
			return yield(stripped)
		})
	}
	if a.sorted {
		src = func(yield func([]byte) error) error {
			return m.each(func(_ int, _ *lineReader, name string, row *record) error {
				if name != agent {
					return nil
				}
				stripped, err := stripHeavy(row)
				if err != nil {
					return err
				}
				return yield(stripped)
			})
		}
	}
	c := &rowCache{dir: dir, src: src}
	return AggregateInput{each: c.each, read: src, dir: dir}, c
}

// rowCache is a reading of rows kept in a temporary file once it has been
// read to its end.
type rowCache struct {
	dir  string
	src  func(yield func([]byte) error) error
	f    *os.File
	size int64
	done bool
}

func (c *rowCache) each(yield func([]byte) error) error {
	if c.done {
		lr := newLineReader(io.NewSectionReader(c.f, 0, c.size), c.f.Name())
		return lr.each(func(line []byte) error { return yield(line[:len(line)-1]) })
	}
	if c.f == nil {
		f, err := jsonl.SpillFile(c.dir, ".aggregate-rows-*.jsonl")
		if err != nil {
			return err
		}
		c.f = f
	}
	// A reading cut short leaves an incomplete copy: the next starts over.
	if _, err := c.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	w := bufio.NewWriterSize(c.f, 64<<10)
	var size int64
	err := c.src(func(row []byte) error {
		w.Write(row)
		if err := w.WriteByte('\n'); err != nil {
			return err
		}
		size += int64(len(row)) + 1
		return yield(row)
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return err
	}
	c.size, c.done = size, true
	return nil
}

func (c *rowCache) close() {
	if c.f != nil {
		c.f.Close()
	}
}

// aggregateOne streams one agent's reply into a temporary file and finds
// where its top-level values are.
func aggregateOne(ctx context.Context, agg Aggregator, agent string, in AggregateInput, dir string) (*os.File, *topLevel, error) {
	reply, err := os.CreateTemp(dir, ".aggregate-*.json")
	if err != nil {
		return nil, nil, err
	}
	if err := agg.AggregateMetrics(ctx, agent, in, reply); err != nil {
		return reply, nil, err
	}
	if _, err := reply.Seek(0, io.SeekStart); err != nil {
		return reply, nil, err
	}
	ranges, err := scanTopLevel(bufio.NewReader(reply))
	if err != nil {
		return reply, nil, fmt.Errorf("the answer is not a JSON object: %w", err)
	}
	return reply, ranges, nil
}

func less(a, b key) bool {
	if a.task != b.task {
		return a.task < b.task
	}
	return a.rollout < b.rollout
}

// MergeShards writes the rollouts of every file into one, sorted by (task,
// rollout), compact, as `gym eval aggregate` merges the shards of a split
// run. Only rollouts' positions are held while sorting, and no more of
// them than a refSorter holds.
func MergeShards(paths []string, output string) (int, error) {
	refs := newRefSorter(filepath.Dir(output))
	defer refs.Close()
	for i, p := range paths {
		err := eachRecord(p, func(lr *lineReader, row *record) error {
			k, ok := row.key()
			if !ok {
				return lr.errorf("the rollout has no %s and %s to sort it by", TaskIndexKey, RolloutIndexKey)
			}
			return refs.Add(rowRef{k, i, lr.Start, lr.Size})
		})
		if err != nil {
			return 0, err
		}
	}
	if err := refs.Finish(); err != nil {
		return 0, err
	}
	rr, err := openRows(paths)
	if err != nil {
		return 0, err
	}
	defer rr.Close()
	var line, compacted []byte
	var row record
	return refs.Len(), jsonl.WriteFileAtomic(output, func(w *bufio.Writer) error {
		return refs.Each(func(r rowRef) error {
			line, err = rr.read(r, line)
			if err != nil {
				return err
			}
			// Read again as the first pass read it, in case the file
			// changed since: jsonl's walk runs some six times as fast as
			// json.Compact, and says whether there is anything to compact.
			if !row.parse(line) {
				return fmt.Errorf("%s: the line at byte %d is no longer valid JSON: the file changed during the merge", paths[r.file], r.off)
			}
			compacted = append(row.appendCompact(compacted[:0]), '\n')
			_, err := w.Write(compacted)
			return err
		})
	})
}
