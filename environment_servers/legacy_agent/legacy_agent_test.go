package legacyagent

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nemo-gym-go/gym/internal/server"
	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

// relayConfig is a config with the relay in front of an agent at agentAddr;
// extra lines go into the relay's section.
func relayConfig(agentAddr string, extra ...string) string {
	host, port, _ := net.SplitHostPort(agentAddr)
	return fmt.Sprintf(`relay:
  environment_servers:
    legacy_agent:
      host: 127.0.0.1
      port: 8000
      agent_server:
        type: responses_api_agents
        name: agent
%sagent:
  responses_api_agents:
    simple_agent:
      host: %s
      port: %s
`, indent(extra), host, port)
}

func indent(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("      " + l + "\n")
	}
	return b.String()
}

func runtimeFor(t *testing.T, configYAML string, logs io.Writer) *server.Runtime {
	t.Helper()
	rt, err := servertest.Runtime(configYAML, "relay")
	if err != nil {
		t.Fatal(err)
	}
	rt.Logger = slog.New(slog.NewTextHandler(logs, nil))
	rt.Client = server.NewClient(server.ClientOptions{Logger: rt.Logger})
	return rt
}

// startRelay serves the relay in front of agent behind gym's middleware.
func startRelay(t *testing.T, agent http.Handler) (relayURL string) {
	t.Helper()
	agentSrv := httptest.NewServer(agent)
	t.Cleanup(agentSrv.Close)
	rt := runtimeFor(t, relayConfig(agentSrv.Listener.Addr().String()), io.Discard)
	h, err := New(rt)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.Wrap(rt, h))
	t.Cleanup(srv.Close)
	return srv.URL
}

type seen struct {
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

func (s *seen) record(r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
	s.body = append(s.body, string(b))
}

func TestRunIsRelayedBothWays(t *testing.T) {
	var agent seen
	relayURL := startRelay(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agent.record(r)
		w.Header().Add("Set-Cookie", "SimpleAgent___agent=abc; Path=/")
		w.Header().Add("Set-Cookie", "other=1; Path=/")
		w.Header().Set("X-Agent", "yes")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"reward": 1.0}`)
	}))
	const body = `{"responses_create_params": {"input": "hi"},  "x": 1}`
	req, _ := http.NewRequest(http.MethodPost, relayURL+"/run", strings.NewReader(body))
	req.Header.Set("Cookie", "SimpleAgent___agent=abc")
	req.Header.Set("X-Trace", "t1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || string(got) != `{"reward": 1.0}` {
		t.Errorf("relay answered HTTP %d %q, want the agent's 201 {\"reward\": 1.0}", resp.StatusCode, got)
	}
	if resp.Header.Get("X-Agent") != "yes" || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("agent's headers not relayed: %v", resp.Header)
	}
	cookies := resp.Header.Values("Set-Cookie")
	for _, want := range []string{"SimpleAgent___agent=abc; Path=/", "other=1; Path=/"} {
		if !slices.Contains(cookies, want) {
			t.Errorf("Set-Cookie %q not relayed: %q", want, cookies)
		}
	}
	if !slices.ContainsFunc(cookies, func(c string) bool { return strings.HasPrefix(c, ClassName+"___relay=") }) {
		t.Errorf("the relay's own session cookie is missing: %q", cookies)
	}
	if len(agent.reqs) != 1 {
		t.Fatalf("agent got %d requests, want 1", len(agent.reqs))
	}
	in := agent.reqs[0]
	if in.URL.Path != "/run" || agent.body[0] != body {
		t.Errorf("agent got %s %q, want /run with the body unchanged", in.URL.Path, agent.body[0])
	}
	if in.Header.Get("Cookie") != "SimpleAgent___agent=abc" || in.Header.Get("X-Trace") != "t1" || in.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request headers not relayed: %v", in.Header)
	}
}

// A failed /run is the agent's answer to pass on, not a call to retry: the
// agent would run the rollout again.
func TestRunFailureIsRelayedOnce(t *testing.T) {
	var agent seen
	relayURL := startRelay(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agent.record(r)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `"Hit an exception in SimpleAgent___agent calling an inner server: boom"`)
	}))
	resp, err := http.Post(relayURL+"/run", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 500 || !strings.Contains(string(got), "boom") || len(agent.reqs) != 1 {
		t.Errorf("HTTP %d %q after %d agent requests, want the agent's 500 after one", resp.StatusCode, got, len(agent.reqs))
	}
}

// A compressed answer reaches the caller decoded, with no Content-Encoding
// left to claim otherwise.
func TestRunDecodesCompressedAnswers(t *testing.T) {
	const answer = `{"reward": 0.0, "pad": "` + "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" + `"}`
	relayURL := startRelay(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			io.WriteString(w, answer)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, answer)
		zw.Close()
	}))
	req, _ := http.NewRequest(http.MethodPost, relayURL+"/run", strings.NewReader(`{}`))
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if string(got) != answer || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("got %q with Content-Encoding %q, want the decoded answer and none", got, resp.Header.Get("Content-Encoding"))
	}
}

func TestAggregateMetricsIsTheAgents(t *testing.T) {
	var agent seen
	relayURL := startRelay(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agent.record(r)
		io.WriteString(w, `{"agent_metrics": {"mean/reward": 0.5}, "extra": 1, "key_metrics": {"mean/reward": 0.5}, "group_level_metrics": [{"mean/reward": 0.5}]}`)
	}))
	const body = `{"verify_responses":[{"reward":0.5}]}`
	resp, err := http.Post(relayURL+"/aggregate_metrics", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	want := `{"group_level_metrics":[{"mean/reward": 0.5}],"agent_metrics":{"mean/reward": 0.5},"key_metrics":{"mean/reward": 0.5},"perf_summary":null,"repeat_level_metrics":[]}`
	if resp.StatusCode != 200 || string(got) != want {
		t.Errorf("HTTP %d\n%s\nwant\n%s", resp.StatusCode, got, want)
	}
	if len(agent.reqs) != 1 || agent.reqs[0].URL.Path != "/aggregate_metrics" || agent.body[0] != body {
		t.Errorf("agent got %d requests (%v), want one /aggregate_metrics with the body unchanged", len(agent.reqs), agent.body)
	}
}

func TestShapeAggregateMetricsRefusesWhatTheModelRefuses(t *testing.T) {
	for _, answer := range []string{
		`[]`, `null`, `"x"`,
		`{"agent_metrics": []}`,
		`{"key_metrics": null}`,
		`{"group_level_metrics": {}}`,
		`{"group_level_metrics": [1]}`,
		`{"repeat_level_metrics": null}`,
		`{"perf_summary": 3}`,
	} {
		if out, err := ShapeAggregateMetrics([]byte(answer)); err == nil {
			t.Errorf("ShapeAggregateMetrics(%s) = %s, want an error", answer, out)
		}
	}
	out, err := ShapeAggregateMetrics([]byte(`{"perf_summary": {"n": 1}}`))
	if want := `{"group_level_metrics":[],"agent_metrics":{},"key_metrics":{},"perf_summary":{"n": 1},"repeat_level_metrics":[]}`; err != nil || string(out) != want {
		t.Errorf("got %s, %v; want %s", out, err, want)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		config  string
		wantErr string
	}{
		{"no agent_server", "relay:\n  environment_servers:\n    legacy_agent:\n      host: 127.0.0.1\n      port: 8000\n", "relay.agent_server: a server reference"},
		{"agent not in the config", strings.Replace(relayConfig("127.0.0.1:1"), "name: agent", "name: missing", 1), "relay.agent_server:"},
		{"cap without queue timeout", relayConfig("127.0.0.1:1", "max_concurrent_episodes: 4"), "relay.queue_timeout_seconds: required when max_concurrent_episodes is set"},
		{"null episode timeout", relayConfig("127.0.0.1:1", "default_episode_timeout_seconds: null"), "relay.default_episode_timeout_seconds: a number greater than 0 is required, got null"},
		{"zero cleanup timeout", relayConfig("127.0.0.1:1", "cleanup_timeout_seconds: 0"), "relay.cleanup_timeout_seconds: a number greater than 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(runtimeFor(t, tt.config, io.Discard))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestUnenforcedLimitsAreWarnedAbout(t *testing.T) {
	var logs bytes.Buffer
	_, err := New(runtimeFor(t, relayConfig("127.0.0.1:1", "max_concurrent_episodes: null", "cleanup_timeout_seconds: 180"), &logs))
	if err != nil {
		t.Fatal(err)
	}
	if want := "relay sets max_concurrent_episodes, cleanup_timeout_seconds, which a relay does not enforce"; !strings.Contains(logs.String(), want) {
		t.Errorf("log %q lacks %q", logs.String(), want)
	}
	logs.Reset()
	if _, err := New(runtimeFor(t, relayConfig("127.0.0.1:1"), &logs)); err != nil || logs.Len() != 0 {
		t.Errorf("a relay setting no limit: %v, logged %q; want no warning", err, logs.String())
	}
}
