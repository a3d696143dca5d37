package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/openai"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Aggregator computes one agent's aggregate metrics from its verify
// responses: the /aggregate_metrics reply, {group_level_metrics,
// agent_metrics, key_metrics}.
type Aggregator interface {
	AggregateMetrics(ctx context.Context, agent string, body []byte) (json.RawMessage, error)
}

// AgentServers asks running agent servers, as NeMo Gym does.
type AgentServers struct {
	Client   *server.Client
	AgentURL func(ctx context.Context, agent string) (string, error)
}

func (a AgentServers) AggregateMetrics(ctx context.Context, agent string, body []byte) (json.RawMessage, error) {
	base, err := a.AgentURL(ctx, agent)
	if err != nil {
		return nil, err
	}
	reply, _, err := a.Client.PostJSON(ctx, base+"/aggregate_metrics", body, nil)
	return reply, err
}

// InProcess computes metrics with server handlers built in this process,
// so `gym eval aggregate` needs no running servers: Handler gives the
// handler that answers /aggregate_metrics for an agent (its resources
// server's).
type InProcess struct {
	Handler func(agent string) (http.Handler, error)
}

func (p InProcess) AggregateMetrics(ctx context.Context, agent string, body []byte) (json.RawMessage, error) {
	h, err := p.Handler(agent)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/aggregate_metrics", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	w := &memoryResponse{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(w, req)
	if w.status/100 != 2 {
		return nil, fmt.Errorf("computing the metrics of agent %s: status %d: %s", agent, w.status, bytes.TrimSpace(w.body.Bytes()))
	}
	return w.body.Bytes(), nil
}

type memoryResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (m *memoryResponse) Header() http.Header         { return m.header }
func (m *memoryResponse) Write(b []byte) (int, error) { return m.body.Write(b) }
func (m *memoryResponse) WriteHeader(status int)      { m.status = status }

// MetricsRows are the successful rollouts of a run, per agent, reduced to
// what aggregation reads.
type MetricsRows struct {
	agents map[string][]keyedRow
}

type keyedRow struct {
	k   key
	raw []byte
}

// Rows returns the number of rollouts held.
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

// ReadMetricsRows reads rollouts files for aggregation, keeping each row
// without its heavy fields (response.usage stays), so a run of any size
// aggregates in little memory.
func ReadMetricsRows(paths ...string) (*MetricsRows, error) {
	m := &MetricsRows{agents: map[string][]keyedRow{}}
	for _, p := range paths {
		err := eachRow(p, func(lr *lineReader, row gjson.Result) error {
			return m.add(lr, row)
		})
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *MetricsRows) add(lr *lineReader, row gjson.Result) error {
	agent := row.Get(AgentRefKey + ".name")
	if agent.Type != gjson.String {
		return lr.errorf("the rollout has no %s.name, so its agent's metrics cannot be computed", AgentRefKey)
	}
	k, _ := rowKey(row)
	raw, err := stripHeavy(row)
	if err != nil {
		return err
	}
	m.agents[agent.Str] = append(m.agents[agent.Str], keyedRow{k, raw})
	return nil
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
	return bytes.Clone(out), err
}

// AgentMetrics is one agent's entry in <stem>_aggregate_metrics.json.
type AgentMetrics struct {
	Agent string
	Reply json.RawMessage
}

// Aggregate asks agg for each agent's metrics over its rollouts, sorted by
// (task, rollout), agents in the order of their first rollout.
func Aggregate(ctx context.Context, rows *MetricsRows, agg Aggregator) ([]AgentMetrics, error) {
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
	var out []AgentMetrics
	for _, a := range order {
		body := []byte(`{"verify_responses":[`)
		for i, r := range rows.agents[a.name] {
			if i > 0 {
				body = append(body, ',')
			}
			body = append(body, r.raw...)
		}
		body = append(body, "]}"...)
		reply, err := agg.AggregateMetrics(ctx, a.name, body)
		if err != nil {
			return nil, fmt.Errorf("aggregate metrics of agent %s: %w", a.name, err)
		}
		if !gjson.ValidBytes(reply) || !gjson.ParseBytes(reply).IsObject() {
			return nil, fmt.Errorf("aggregate metrics of agent %s: the answer is not a JSON object: %s", a.name, excerpt(reply))
		}
		out = append(out, AgentMetrics{Agent: a.name, Reply: reply})
	}
	return out, nil
}

func less(a, b key) bool {
	if a.task != b.task {
		return a.task < b.task
	}
	return a.rollout < b.rollout
}

// WriteMetrics writes <stem>_aggregate_metrics.json (a JSON array, one
// entry per agent, indented by 2 as NeMo Gym writes it) and prints each
// agent's key metrics.
func WriteMetrics(path string, metrics []AgentMetrics, out io.Writer) error {
	doc := []byte{'['}
	for i, m := range metrics {
		if i > 0 {
			doc = append(doc, ',')
		}
		reply := gjson.ParseBytes(m.Reply)
		doc = append(doc, `{"agent_ref":{"name":`...)
		doc = openai.AppendJSONString(doc, m.Agent)
		doc = append(doc, "}"...)
		for _, k := range []string{"agent_metrics", "key_metrics", "group_level_metrics"} {
			if v := reply.Get(k); v.Exists() {
				doc = append(append(openai.AppendJSONString(append(doc, ','), k), ':'), v.Raw...)
			}
		}
		reply.ForEach(func(k, v gjson.Result) bool {
			if !slices.Contains([]string{"agent_metrics", "key_metrics", "group_level_metrics"}, k.Str) {
				doc = append(append(openai.AppendJSONString(append(doc, ','), k.Str), ':'), v.Raw...)
			}
			return true
		})
		doc = append(doc, '}')
	}
	doc = append(doc, ']')
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, doc, "", "  "); err != nil {
		return err
	}
	if err := writeFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(pretty.Bytes())
		return err
	}); err != nil {
		return err
	}
	for _, m := range metrics {
		fmt.Fprintf(out, "Key metrics for %s:\n", m.Agent)
		key := gjson.GetBytes(m.Reply, "key_metrics")
		var b bytes.Buffer
		if !key.Exists() || json.Indent(&b, []byte(key.Raw), "", "    ") != nil {
			b.Reset()
			b.WriteString("{}")
		}
		fmt.Fprintln(out, b.String())
	}
	return nil
}

// MergeShards writes the rollouts of every file into one, sorted by (task,
// rollout), compact, as `gym eval aggregate` merges the shards of a split
// run. It holds the rollouts in memory to sort them.
func MergeShards(paths []string, output string) (int, error) {
	var rows []keyedRow
	for _, p := range paths {
		err := eachRow(p, func(lr *lineReader, row gjson.Result) error {
			k, ok := rowKey(row)
			if !ok {
				return lr.errorf("the rollout has no %s and %s to sort it by", TaskIndexKey, RolloutIndexKey)
			}
			var buf bytes.Buffer
			if err := json.Compact(&buf, []byte(row.Raw)); err != nil {
				return err
			}
			rows = append(rows, keyedRow{k, buf.Bytes()})
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return less(rows[i].k, rows[j].k) })
	return len(rows), writeFileAtomic(output, func(w io.Writer) error {
		for _, r := range rows {
			if _, err := w.Write(append(r.raw, '\n')); err != nil {
				return err
			}
		}
		return nil
	})
}
