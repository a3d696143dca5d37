package rollout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/nemo-gym-go/gym/internal/server"
)

// Aggregator computes one agent's aggregate metrics from its verify
// responses, writing the /aggregate_metrics reply ({group_level_metrics,
// agent_metrics, key_metrics}) to reply. Both are large for a large run
// (a rollout each, an entry per task), so both are streamed, never held:
// body gives a fresh copy of the request body each time it is called.
type Aggregator interface {
	AggregateMetrics(ctx context.Context, agent string, body func() io.ReadCloser, reply io.Writer) error
}

// AgentServers asks running agent servers, as NeMo Gym does.
type AgentServers struct {
	Client   *server.Client
	AgentURL func(ctx context.Context, agent string) (string, error)
}

func (a AgentServers) AggregateMetrics(ctx context.Context, agent string, body func() io.ReadCloser, reply io.Writer) error {
	base, err := a.AgentURL(ctx, agent)
	if err != nil {
		return err
	}
	rc := body()
	defer rc.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/aggregate_metrics", rc)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.GetBody = func() (io.ReadCloser, error) { return body(), nil }
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
// server's).
type InProcess struct {
	Handler func(agent string) (http.Handler, error)
}

func (p InProcess) AggregateMetrics(ctx context.Context, agent string, body func() io.ReadCloser, reply io.Writer) error {
	h, err := p.Handler(agent)
	if err != nil {
		return err
	}
	rc := body()
	defer rc.Close()
	req, err := server.InProcessRequest(ctx, http.MethodPost, "/aggregate_metrics", rc)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	w := &memoryResponse{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(w, req)
	if w.status/100 != 2 {
		return fmt.Errorf("status %d: %s", w.status, bytes.TrimSpace(w.body.Bytes()))
	}
	_, err = reply.Write(w.body.Bytes())
	return err
}

type memoryResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (m *memoryResponse) Header() http.Header         { return m.header }
func (m *memoryResponse) Write(b []byte) (int, error) { return m.body.Write(b) }
func (m *memoryResponse) WriteHeader(status int)      { m.status = status }

// MetricsRows are the successful rollouts of a run, per agent: where each
// is in its file, not the rollout itself, so a run of any size aggregates
// in little memory.
type MetricsRows struct {
	files  []string
	agents map[string][]rowRef
}

// rowRef locates one rollout: its key, and its line in files[file].
type rowRef struct {
	k    key
	file int
	off  int64
	size int
}

// Rows returns the number of rollouts found.
func (m *MetricsRows) Rows() int {
	n := 0
	for _, rows := range m.agents {
		n += len(rows)
	}
	return n
}

// heavyKeys are dropped before aggregation, as NeMo Gym drops them: the
// metrics read numbers, and these are most of a rollout's bytes.
var heavyKeys = []string{"response", ParamsKey, "ng_agent_observations", "ng_model_call_capture", "ng_trajectory"}

// ReadMetricsRows indexes rollouts files for aggregation.
func ReadMetricsRows(paths ...string) (*MetricsRows, error) {
	m := &MetricsRows{files: paths, agents: map[string][]rowRef{}}
	for i, p := range paths {
		err := eachRow(p, func(lr *lineReader, row gjson.Result) error {
			agent := row.Get(AgentRefKey + ".name")
			if agent.Type != gjson.String {
				return lr.errorf("the rollout has no %s.name, so its agent's metrics cannot be computed", AgentRefKey)
			}
			if r := row.Get("reward"); r.Exists() && r.Type != gjson.Number && r.Type != gjson.True && r.Type != gjson.False {
				return lr.errorf("reward is %s, not a number: the metrics would leave this rollout out", r.Raw)
			}
			k, _ := rowKey(row)
			m.agents[agent.Str] = append(m.agents[agent.Str], rowRef{k, i, lr.Start, lr.Size})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return m, nil
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
	buf = slices.Grow(buf[:0], r.size)[:r.size]
	if _, err := rr.files[r.file].ReadAt(buf, r.off); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf, "\r\n"), nil
}

func (rr *rowReader) Close() {
	for _, f := range rr.files {
		f.Close()
	}
}

func stripHeavy(row gjson.Result) ([]byte, error) {
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
		out, err = sjson.SetRawBytes(out, "response", append(append([]byte(`{"usage":`), usage.Raw...), '}'))
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
	for name, rs := range rows.agents {
		sort.SliceStable(rs, func(i, j int) bool { return less(rs[i].k, rs[j].k) })
		order = append(order, agentFirst{name, rs[0].k})
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
		reply, ranges, err := aggregateOne(ctx, agg, a.name, rr, rows.agents[a.name], filepath.Dir(path))
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

// aggregateOne streams one agent's reply into a temporary file and finds
// where its top-level values are.
func aggregateOne(ctx context.Context, agg Aggregator, agent string, rr *rowReader, rs []rowRef, dir string) (*os.File, *topLevel, error) {
	body := func() io.ReadCloser {
		pr, pw := io.Pipe()
		go func() {
			w := bufio.NewWriterSize(pw, 64<<10)
			w.WriteString(`{"verify_responses":[`)
			var buf []byte
			for i, r := range rs {
				line, err := rr.read(r, buf)
				if err != nil {
					pw.CloseWithError(err)
					return
				}
				buf = line
				stripped, err := stripHeavy(gjson.ParseBytes(line))
				if err != nil {
					pw.CloseWithError(err)
					return
				}
				if i > 0 {
					w.WriteByte(',')
				}
				if _, err := w.Write(stripped); err != nil {
					return
				}
			}
			w.WriteString("]}")
			pw.CloseWithError(w.Flush())
		}()
		return pr
	}
	reply, err := os.CreateTemp(dir, ".aggregate-*.json")
	if err != nil {
		return nil, nil, err
	}
	if err := agg.AggregateMetrics(ctx, agent, body, reply); err != nil {
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
// run. Only each rollout's position is held while sorting.
func MergeShards(paths []string, output string) (int, error) {
	var refs []rowRef
	for i, p := range paths {
		err := eachRow(p, func(lr *lineReader, row gjson.Result) error {
			k, ok := rowKey(row)
			if !ok {
				return lr.errorf("the rollout has no %s and %s to sort it by", TaskIndexKey, RolloutIndexKey)
			}
			refs = append(refs, rowRef{k, i, lr.Start, lr.Size})
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	sort.SliceStable(refs, func(i, j int) bool { return less(refs[i].k, refs[j].k) })
	rr, err := openRows(paths)
	if err != nil {
		return 0, err
	}
	defer rr.Close()
	var buf bytes.Buffer
	var line []byte
	return len(refs), jsonl.WriteFileAtomic(output, func(w *bufio.Writer) error {
		for _, r := range refs {
			line, err = rr.read(r, line)
			if err != nil {
				return err
			}
			buf.Reset()
			if err := json.Compact(&buf, line); err != nil {
				return err
			}
			buf.WriteByte('\n')
			if _, err := w.Write(buf.Bytes()); err != nil {
				return err
			}
		}
		return nil
	})
}
