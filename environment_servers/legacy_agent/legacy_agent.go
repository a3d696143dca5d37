// Package legacyagent is NeMo Gym's legacy_agent environment server in Go:
// the compatibility server nemo-gym 0.7.0 puts in front of every agent that
// still owns its episode through /run. It translates nothing. POST /run is
// relayed to the agent and its answer, whatever its status, relayed back;
// POST /aggregate_metrics is forwarded to the agent and its answer read as
// NeMo Gym's AggregateMetrics.
package legacyagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/agent"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Kind and ClassName as NeMo Gym names them.
const (
	Kind      = "environment_servers/legacy_agent"
	ClassName = "LegacyAgentEnvironmentServer"
)

// limitKeys are the episode limits NeMo Gym's environment-server base
// declares. A relay enforces none of them (the agent keeps its own), so
// they are checked as NeMo Gym checks them and otherwise only warned about.
var limitKeys = []string{"max_concurrent_episodes", "queue_timeout_seconds", "default_episode_timeout_seconds", "cleanup_timeout_seconds"}

func init() {
	server.Register(Kind, ClassName, New, append([]string{"agent_server"}, limitKeys...)...)
}

// skippedHeaders describe a connection or a body, not the payload: each
// hop frames its own. Accept-Encoding is dropped on the way in so that the
// client here decodes what the agent compresses, as aiohttp does for NeMo
// Gym's relay, which then drops Content-Encoding on the way out.
var skippedHeaders = map[string]bool{
	"Connection": true, "Content-Encoding": true, "Content-Length": true, "Host": true,
	"Keep-Alive": true, "Transfer-Encoding": true, "Upgrade": true, "Accept-Encoding": true,
	"Te": true, "Trailer": true, "Proxy-Connection": true,
}

type relay struct {
	rt       *server.Runtime
	agentURL string
}

// New builds the server's handler.
func New(rt *server.Runtime) (http.Handler, error) {
	s := server.Section{Instance: rt.Instance, Node: rt.Config}
	agentName, err := s.ServerRef("agent_server", "responses_api_agents")
	if err != nil {
		return nil, err
	}
	if err := checkLimits(s); err != nil {
		return nil, err
	}
	var set []string
	for _, k := range limitKeys {
		if rt.Config.Get(k) != nil {
			set = append(set, k)
		}
	}
	if len(set) > 0 && rt.Logger != nil {
		rt.Logger.Warn(fmt.Sprintf("%s sets %s, which a relay does not enforce. This parameter has no effect.", rt.Instance, strings.Join(set, ", ")))
	}
	agentURL, err := server.ServerURL(rt.Global, agentName)
	if err != nil {
		return nil, fmt.Errorf("%s.agent_server: %w", rt.Instance, err)
	}
	r := &relay{rt: rt, agentURL: agentURL}
	mux := http.NewServeMux()
	mux.Handle("POST /run", server.Handle(r.run))
	mux.Handle("POST /aggregate_metrics", server.Handle(r.aggregateMetrics))
	return mux, nil
}

// checkLimits applies LegacyAgentEnvironmentServerConfig's types: the two
// optional limits may be null, the two timeouts (defaults 21600 s and
// 180 s) may not, and a concurrency cap needs a queue timeout.
func checkLimits(s server.Section) error {
	maxEpisodes, err := s.PositiveInt("max_concurrent_episodes", 0)
	if err != nil {
		return err
	}
	if _, err := s.PositiveFloat("queue_timeout_seconds", 1); err != nil {
		return err
	}
	for _, k := range []string{"default_episode_timeout_seconds", "cleanup_timeout_seconds"} {
		if n := s.Node.Get(k); n != nil && n.Kind == tree.Null {
			return fmt.Errorf("%s.%s: a number greater than 0 is required, got null", s.Instance, k)
		}
		if _, err := s.PositiveFloat(k, 1); err != nil {
			return err
		}
	}
	if q := s.Node.Get("queue_timeout_seconds"); maxEpisodes > 0 && (q == nil || q.Kind == tree.Null) {
		return fmt.Errorf("%s.queue_timeout_seconds: required when max_concurrent_episodes is set", s.Instance)
	}
	return nil
}

// run relays one rollout's /run to the agent: the body and headers as they
// came (cookies included), and the agent's status, headers (Set-Cookie
// repeated as it came) and body back.
func (r *relay) run(w http.ResponseWriter, req *http.Request) error {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return fmt.Errorf("reading the /run request: %w", err)
	}
	out, err := http.NewRequestWithContext(req.Context(), http.MethodPost, r.agentURL+"/run", bytes.NewReader(body))
	if err != nil {
		return err
	}
	for name, values := range req.Header {
		if !skippedHeaders[http.CanonicalHeaderKey(name)] {
			out.Header[name] = values
		}
	}
	resp, err := r.rt.Client.Forward(req.Context(), out)
	if err != nil {
		return fmt.Errorf("relaying /run to the agent at %s: %w", r.agentURL, err)
	}
	defer resp.Body.Close()
	h := w.Header()
	for name, values := range resp.Header {
		if !skippedHeaders[http.CanonicalHeaderKey(name)] {
			h[name] = append(h[name], values...)
		}
	}
	if resp.ContentLength >= 0 && !resp.Uncompressed {
		h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, resp.Body); err != nil {
		// The status is out: Handle can only cut the connection, which
		// tells the caller the answer is incomplete.
		return fmt.Errorf("relaying the agent's /run answer: %w", err)
	}
	return nil
}

// aggregateMetrics forwards the verify responses to the agent, which
// aggregates its own rollouts, and answers with its metrics in
// AggregateMetrics' shape: its five fields in order, defaults for the
// absent ones, anything else dropped.
func (r *relay) aggregateMetrics(w http.ResponseWriter, req *http.Request) error {
	var body json.RawMessage
	if err := server.DecodeJSON(req, &body); err != nil {
		return err
	}
	answer, _, err := r.rt.Client.PostJSON(req.Context(), r.agentURL+"/aggregate_metrics", body, nil)
	if err != nil {
		return fmt.Errorf("aggregate_metrics: %w", err)
	}
	shaped, err := ShapeAggregateMetrics(answer)
	if err != nil {
		return fmt.Errorf("aggregate_metrics: the agent at %s answered %w", r.agentURL, err)
	}
	return agent.WriteJSON(w, shaped)
}

type metricsField struct {
	name   string
	list   bool   // a list of objects, else an object
	null   bool   // null allowed
	absent string // what an absent field becomes
}

var metricsFields = []metricsField{
	{name: "group_level_metrics", list: true, absent: "[]"},
	{name: "agent_metrics", absent: "{}"},
	{name: "key_metrics", absent: "{}"},
	{name: "perf_summary", null: true, absent: "null"},
	{name: "repeat_level_metrics", list: true, absent: "[]"},
}

// ShapeAggregateMetrics reads an agent's /aggregate_metrics answer as NeMo
// Gym's AggregateMetrics model reads it and writes it back as FastAPI
// serializes that model. Values are kept byte for byte.
func ShapeAggregateMetrics(answer []byte) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(answer, &fields); err != nil || fields == nil {
		return nil, errors.New("something other than a JSON object")
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range metricsFields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + f.name + `":`)
		v, ok := fields[f.name]
		if !ok {
			b.WriteString(f.absent)
			continue
		}
		if err := checkMetricsField(f, v); err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func checkMetricsField(f metricsField, v json.RawMessage) error {
	if f.null && string(v) == "null" {
		return nil
	}
	if !f.list {
		if v[0] != '{' {
			return fmt.Errorf("%s = %.80s, which is not an object", f.name, v)
		}
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil || items == nil {
		return fmt.Errorf("%s = %.80s, which is not a list of objects", f.name, v)
	}
	for i, it := range items {
		if it[0] != '{' {
			return fmt.Errorf("%s[%d] = %.80s, which is not an object", f.name, i, it)
		}
	}
	return nil
}
