package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/resources"
	"github.com/nemo-gym-go/gym/internal/server"
	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

// runtimeFor builds the runtime `gym serve` would give the instance
// `agent` of the config made of global (top-level lines) and section (the
// agent's own keys).
func runtimeFor(t *testing.T, global, section string) *server.Runtime {
	t.Helper()
	rt, err := tryRuntime(global, section)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func tryRuntime(global, section string) (*server.Runtime, error) {
	yaml := global + `
policy_model:
  responses_api_models:
    openai_model:
      host: 127.0.0.1
      port: 9000
agent:
  responses_api_agents:
    test_agent:
      host: 127.0.0.1
      port: 9001
`
	for _, line := range strings.Split(strings.TrimSpace(section), "\n") {
		if line != "" {
			yaml += "      " + line + "\n"
		}
	}
	rt, err := servertest.Runtime(yaml, "agent")
	if err != nil {
		return nil, err
	}
	rt.ClassName = "TestAgent"
	rt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	rt.Client = server.NewClient(server.ClientOptions{Logger: rt.Logger})
	return rt, nil
}

func TestNewCorrelation(t *testing.T) {
	tests := []struct {
		name    string
		global  string
		section string
		env     map[string]string
		want    Correlation
		wantErr string
	}{
		{name: "nothing set", want: off},
		{name: "observability", global: "observability_enabled: true", want: observed},
		{name: "rollout_correlation", global: "rollout_correlation: true", want: on},
		{name: "both off", global: "observability_enabled: false\nrollout_correlation: false", want: off},
		{name: "null switch", global: "rollout_correlation: null", want: off},
		{name: "token capture without opt-in", global: "token_id_capture: {enabled: true}", want: off},
		{name: "token capture, agent opted in", global: "token_id_capture: {enabled: true}", section: "token_id_capture: true", want: capture},
		{name: "token capture for all agents", global: "token_id_capture: {enabled: true, all_agents: true}", want: capture},
		{name: "token capture disabled run-wide", global: "token_id_capture: {enabled: false, all_agents: true}", section: "token_id_capture: true", want: off},
		{name: "token capture and observability", global: "observability_enabled: true\ntoken_id_capture: {enabled: true, all_agents: true}", want: Correlation{On: true, TokenCapture: true, Observability: true}},
		{name: "interpolated switch", global: "flag: true\nrollout_correlation: ${flag}", want: on},
		{name: "interpolated env switch, unset", global: "observability_enabled: ${oc.env:GYM_AGENT_TEST_OBS,false}", want: off},
		{name: "interpolated env switch, set", global: "observability_enabled: ${oc.env:GYM_AGENT_TEST_OBS,false}", env: map[string]string{"GYM_AGENT_TEST_OBS": "true"}, want: observed},
		{name: "interpolated capture switch", global: "on_: yes\ntoken_id_capture: {enabled: '${on_}', all_agents: true}", want: capture},
		{name: "string switch", global: "rollout_correlation: 'on'", want: on},
		{name: "not a boolean", global: "rollout_correlation: maybe", wantErr: "rollout_correlation: a boolean is required"},
		{name: "unresolvable", global: "rollout_correlation: ${nowhere}", wantErr: "rollout_correlation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			rt := runtimeFor(t, tt.global, tt.section)
			b, err := New(rt)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Correlation != tt.want {
				t.Errorf("Correlation = %+v, want %+v", b.Correlation, tt.want)
			}
		})
	}
}

func TestNewConfig(t *testing.T) {
	tests := []struct {
		section string
		want    Config
		wantErr string
	}{
		{section: "", want: Config{}},
		{section: "skip_verification: true\nskip_verification_reward: 0.5\ntoken_id_capture: false", want: Config{SkipVerification: true, SkipVerificationReward: 0.5}},
		{section: "skip_verification: null\nskip_verification_reward: -1", want: Config{SkipVerificationReward: -1}},
		{section: "skip_verification_reward: '2'", want: Config{SkipVerificationReward: 2}},
		{section: "skip_verification: sometimes", wantErr: "agent.skip_verification: a boolean is required, got string"},
		{section: "skip_verification_reward: .nan", wantErr: "agent.skip_verification_reward: a finite number is required"},
		{section: "token_id_capture: [1]", wantErr: "agent.token_id_capture: a boolean is required"},
	}
	for _, tt := range tests {
		t.Run(tt.section, func(t *testing.T) {
			b, err := New(runtimeFor(t, "", tt.section))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || b.Config != tt.want {
				t.Fatalf("Config = %+v, %v; want %+v", b.Config, err, tt.want)
			}
		})
	}
}

func TestSection(t *testing.T) {
	rt := runtimeFor(t, "", `
steps: 3
steps_str: '4'
steps_float: 5.0
steps_frac: 5.5
negative: -1
empty: null
res: {type: resources_servers, name: weather}
res_missing_name: {type: resources_servers, name: '???'}
res_wrong_type: {type: responses_api_models, name: weather}
res_scalar: weather
`)
	b, err := New(rt)
	if err != nil {
		t.Fatal(err)
	}
	s := b.Section()
	ints := []struct {
		key     string
		want    int
		wantErr string
	}{
		{"steps", 3, ""}, {"steps_str", 4, ""}, {"steps_float", 5, ""}, {"absent", 7, ""}, {"empty", 7, ""},
		{"steps_frac", 0, "agent.steps_frac: an integer of at least 0 is required, got float"},
		{"negative", 0, "agent.negative: an integer of at least 0"},
		{"res", 0, "agent.res: an integer"},
	}
	for _, tt := range ints {
		got, err := s.Int(tt.key, 7, 0)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Int(%s): error %v, want %q", tt.key, err, tt.wantErr)
			}
		} else if err != nil || got != tt.want {
			t.Errorf("Int(%s) = %d, %v; want %d", tt.key, got, err, tt.want)
		}
	}
	refs := []struct{ key, want, wantErr string }{
		{"res", "weather", ""},
		{"res_missing_name", "", "agent.res_missing_name.name: the name of a resources_servers instance is required"},
		{"res_wrong_type", "", "agent.res_wrong_type.type: must be resources_servers"},
		{"res_scalar", "", "agent.res_scalar: a server reference {type: resources_servers, name: <instance>} is required, got string"},
		{"absent", "", "got nothing"},
	}
	for _, tt := range refs {
		got, err := s.ServerRef(tt.key, "resources_servers")
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ServerRef(%s): error %v, want %q", tt.key, err, tt.wantErr)
			}
		} else if err != nil || got != tt.want {
			t.Errorf("ServerRef(%s) = %q, %v; want %q", tt.key, got, err, tt.want)
		}
	}
}

func TestResolveModelBaseURL(t *testing.T) {
	plain, err := New(runtimeFor(t, "rollout_correlation: true", ""))
	if err != nil {
		t.Fatal(err)
	}
	capturing, err := New(runtimeFor(t, "token_id_capture: {enabled: true}", "token_id_capture: true"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		b       *Base
		model   string
		id      string
		want    string
		wantErr string
	}{
		{"no rollout", plain, "policy_model", "", "http://127.0.0.1:9000/v1", ""},
		{"rollout", plain, "policy_model", "0-0", "http://127.0.0.1:9000/ng-rollout/0-0/v1", ""},
		{"token capture", capturing, "policy_model", "17-3-a1", "http://127.0.0.1:9000/ng-rollout/17-3-a1/training-token-capture/v1", ""},
		{"token capture, no rollout", capturing, "policy_model", "", "http://127.0.0.1:9000/v1", ""},
		{"invalid id", plain, "policy_model", "a/b", "", "cannot name a request path"},
		{"unknown server", plain, "nowhere", "0-0", "", "nowhere"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.b.ResolveModelBaseURL(tt.model, tt.id)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("= %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestRelayCookies(t *testing.T) {
	current := []*http.Cookie{{Name: "res", Value: "c1"}}
	set := server.SetCookies{
		"res=c1b; Path=/; Max-Age=1209600; HttpOnly; SameSite=lax",
		`quoted="a b"; Domain=example.com`,
	}
	got := RelayCookies(current, set)
	want := []*http.Cookie{{Name: "res", Value: "c1b"}, {Name: "quoted", Value: "a b", Quoted: true}}
	if len(got) != len(want) {
		t.Fatalf("got %d cookies, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("cookie %d = %+v, want %+v (name=value only)", i, *got[i], *want[i])
		}
	}
	// Nothing set: the set sent so far stays.
	if kept := RelayCookies(current, nil); len(kept) != 1 || kept[0].Value != "c1" {
		t.Errorf("no Set-Cookie: %v, want the current set", kept)
	}
	if kept := RelayCookies(current, server.SetCookies{"no equals sign"}); len(kept) != 1 || kept[0].Value != "c1" {
		t.Errorf("no readable Set-Cookie: %v, want the current set", kept)
	}
	// The response replaces the set; cookies it did not name are dropped.
	if repl := RelayCookies([]*http.Cookie{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}}, server.SetCookies{"b=3"}); len(repl) != 1 || repl[0].Name != "b" || repl[0].Value != "3" {
		t.Errorf("replace: %v", repl)
	}

	h := http.Header{}
	SetCookies(h, got)
	lines := h.Values("Set-Cookie")
	if len(lines) != 2 || lines[0] != "res=c1b; Path=/; SameSite=lax" || lines[1] != `quoted="a b"; Path=/; SameSite=lax` {
		t.Errorf("Set-Cookie = %q", lines)
	}
	// A client reads back exactly what was relayed.
	resp := http.Response{Header: h}
	for i, c := range resp.Cookies() {
		if c.Name != want[i].Name || c.Value != want[i].Value {
			t.Errorf("read back %s=%s, want %s=%s", c.Name, c.Value, want[i].Name, want[i].Value)
		}
	}
}

var verifyRows = `{"verify_responses":[
 {"_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"response":{"usage":{"input_tokens":10}}},
 {"_ng_task_index":0,"_ng_rollout_index":1,"reward":0.0,"response":{"usage":{"input_tokens":20}}}]}`

const emptyMetrics = `{"group_level_metrics":[],"agent_metrics":{},"key_metrics":{},"repeat_level_metrics":[]}`

func TestAggregateMetrics(t *testing.T) {
	var proxied atomic.Int32
	res := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/aggregate_metrics" || !json.Valid(body) || len(r.Cookies()) != 0 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		io.WriteString(w, `{"group_level_metrics":[],"agent_metrics":{"pass@1":0.5},"key_metrics":{"pass@1":0.5}}`)
	}))
	defer res.Close()

	build := func(section string) *Base {
		b, err := New(runtimeFor(t, "", section))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	local, skipped := build(""), build("skip_verification: true")
	tests := []struct {
		name       string
		h          server.HandlerFunc
		body       string
		wantStatus int
		check      func(t *testing.T, body string)
		wantProxy  int32
	}{
		{"local", local.AggregateMetrics(resources.MetricsHooks{}), verifyRows, 200, func(t *testing.T, body string) {
			if gjson.Get(body, `agent_metrics.mean/reward`).Num != 0.5 || gjson.Get(body, `agent_metrics.mean/input_tokens`).Num != 15 ||
				gjson.Get(body, `key_metrics.mean/reward`).Num != 0.5 || gjson.Get(body, "group_level_metrics.#").Int() != 1 {
				t.Errorf("metrics %s", body)
			}
		}, 0},
		{"local, empty", local.AggregateMetrics(resources.MetricsHooks{}), `{"verify_responses":[]}`, 200, exactly(emptyMetrics), 0},
		{"local, skip_verification", skipped.AggregateMetrics(resources.MetricsHooks{}), verifyRows, 200, exactly(emptyMetrics), 0},
		{"local, invalid body", local.AggregateMetrics(resources.MetricsHooks{}), `{"rows":[]}`, 422, nil, 0},
		{"proxy", local.ProxyAggregateMetrics(res.URL), verifyRows, 200, exactly(`{"group_level_metrics":[],"agent_metrics":{"pass@1":0.5},"key_metrics":{"pass@1":0.5}}`), 1},
		{"proxy, skip_verification", skipped.ProxyAggregateMetrics(res.URL), verifyRows, 200, exactly(emptyMetrics), 0},
		{"proxy, upstream refusal keeps its 4xx", local.ProxyAggregateMetrics(res.URL + "/broken"), verifyRows, 400, func(t *testing.T, body string) {
			if !strings.Contains(body, "Hit an exception in TestAgent___agent calling an inner server") {
				t.Errorf("body %s", body)
			}
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxied.Store(0)
			h := server.Wrap(local.Runtime, server.Handle(tt.h))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/aggregate_metrics", strings.NewReader(tt.body)))
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.check != nil {
				tt.check(t, rec.Body.String())
			}
			if n := proxied.Load(); n != tt.wantProxy {
				t.Errorf("resources server called %d times, want %d", n, tt.wantProxy)
			}
		})
	}
}

func exactly(want string) func(t *testing.T, body string) {
	return func(t *testing.T, body string) {
		t.Helper()
		if body != want {
			t.Errorf("body %s, want %s", body, want)
		}
	}
}

// A reply goes with its length, as uvicorn sends it, not chunked.
func TestWriteJSONIsSized(t *testing.T) {
	body := []byte(`{"text":"` + strings.Repeat("x", 5000) + `"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { WriteJSON(w, body) }))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(got, body) || resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) > 0 {
		t.Errorf("Content-Length %d, Transfer-Encoding %v, body %d bytes", resp.ContentLength, resp.TransferEncoding, len(got))
	}
}
