package simpleagent

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

const weatherRow = `{"responses_create_params":{"input":[{"role":"developer","content":"You are a helpful assistant."},{"role":"user","content":"what's it like in sf?"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}]},"agent_ref":{"name":"agent"},"_ng_task_index":0,"_ng_rollout_index":0,"task_id":"t-7"}`

// weatherScript calls get_weather once, then answers.
var weatherScript = turns(
	answer(fc("call_1", "get_weather", `{"city":"San Francisco"}`)),
	answer(msg("It's cold in SF.")),
)

func TestRunEndToEnd(t *testing.T) {
	h := startHarness(t, options{script: weatherScript})
	resp, body := h.post(t, "/run", weatherRow)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	result := gjson.Parse(body)

	// The result is the verifier's reply: the whole row (extras kept),
	// the episode's response and the reward.
	if !json.Valid([]byte(body)) || result.Get("reward").Num != 1 {
		t.Fatalf("result %s", body)
	}
	for _, key := range []string{"agent_ref", "_ng_task_index", "_ng_rollout_index", "task_id"} {
		if got, want := result.Get(key).Raw, gjson.Get(weatherRow, key).Raw; got != want {
			t.Errorf("result %s = %s, want %s", key, got, want)
		}
	}
	if got, want := result.Get("responses_create_params").Raw, gjson.Get(weatherRow, "responses_create_params").Raw; got != want {
		t.Errorf("responses_create_params changed:\n got %s\nwant %s", got, want)
	}

	// The response is the last model response with every new item and
	// the summed usage.
	r := result.Get("response")
	if r.Get("id").Str != "resp_2" || r.Get("created_at").Raw != "2.0" || r.Get("model").Str != "policy" {
		t.Errorf("response does not come from the last turn: %s", r.Raw)
	}
	wantTypes := []string{"function_call", "function_call_output", "message"}
	if got := types(r.Get("output")); !slices.Equal(got, wantTypes) {
		t.Fatalf("output types %v, want %v", got, wantTypes)
	}
	if got := r.Get("output.0").Raw; got != fc("call_1", "get_weather", `{"city":"San Francisco"}`) {
		t.Errorf("function call not kept byte for byte: %s", got)
	}
	out := r.Get("output.1")
	if out.Get("call_id").Str != "call_1" || out.Get("output").Str != `{"city":"San Francisco","weather_description":"The weather in San Francisco is cold."}` {
		t.Errorf("tool output item %s", out.Raw)
	}
	if got, want := r.Get("usage").Raw, `{"input_tokens":20,"input_tokens_details":{"cached_tokens":4},"output_tokens":10,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":30}`; got != want {
		t.Errorf("usage %s, want %s", got, want)
	}

	// The calls, in order, with no rollout prefix (correlation is off).
	if got, want := h.res.paths(), []string{"/seed_session", "/get_weather", "/verify"}; !slices.Equal(got, want) {
		t.Errorf("resources paths %v, want %v", got, want)
	}
	if got, want := h.model.paths(), []string{"/v1/responses", "/v1/responses"}; !slices.Equal(got, want) {
		t.Errorf("model paths %v, want %v", got, want)
	}
	seed := h.res.named("/seed_session")[0]
	if seed.Body != weatherRow || seed.Cookie != "" {
		t.Errorf("seed_session got %s with cookies %q, want the whole row and none", seed.Body, seed.Cookie)
	}
	verify := gjson.Parse(h.res.named("/verify")[0].Body)
	if verify.Get("response").Raw != r.Raw || verify.Get("task_id").Str != "t-7" {
		t.Errorf("verify got %s", verify.Raw)
	}

	// The model's first request is the input as given; the second adds the
	// call and its output.
	m := h.model.all()
	if got, want := gjson.Get(m[0].Body, "input").Raw, gjson.Get(weatherRow, "responses_create_params.input").Raw; got != want {
		t.Errorf("first model input %s, want %s", got, want)
	}
	if got := types(gjson.Get(m[1].Body, "input")); !slices.Equal(got, []string{"", "", "function_call", "function_call_output"}) {
		t.Errorf("second model input types %v", got)
	}
	if gjson.Get(m[1].Body, "tools").Raw != gjson.Get(weatherRow, "responses_create_params.tools").Raw {
		t.Errorf("params other than input changed: %s", m[1].Body)
	}
}

// Cookies: the resources session from /seed_session reaches every tool
// call and /verify; the model's session reaches the next model call; the
// episode's response sets both.
func TestRunRelaysCookies(t *testing.T) {
	h := startHarness(t, options{script: turns(
		answer(fc("c1", "get_weather", `{"city":"A"}`)),
		answer(fc("c2", "get_weather", `{"city":"B"}`), fc("c3", "missing", `{}`)),
		answer(msg("done")),
	)})
	resp, body := h.post(t, "/run", weatherRow)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	for _, r := range h.res.named("/get_weather") {
		if r.Cookie != "res_session=seeded" {
			t.Errorf("tool call got cookies %q, want the seeded session", r.Cookie)
		}
	}
	// The unknown tool's 404 carried no cookie; the session survives it.
	if got := h.res.named("/missing"); len(got) != 1 || got[0].Cookie != "res_session=seeded" {
		t.Errorf("404 tool call: %+v", got)
	}
	model := h.model.all()
	wantModel := []string{"", "model_session=m1", "model_session=m2"}
	for i, r := range model {
		if r.Cookie != wantModel[i] {
			t.Errorf("model call %d got cookies %q, want %q", i+1, r.Cookie, wantModel[i])
		}
	}
	verify := h.res.named("/verify")[0].Cookie
	for _, want := range []string{"res_session=seeded", "model_session=m3", "SimpleAgent___agent="} {
		if !strings.Contains(verify, want) {
			t.Errorf("/verify got cookies %q, want %s among them", verify, want)
		}
	}
	// /run itself answers with the agent's own session cookie only.
	if cs := resp.Cookies(); len(cs) != 1 || cs[0].Name != "SimpleAgent___agent" {
		t.Errorf("/run set %v", cs)
	}
}

// The episode's own response sets the relayed cookies, latest values.
func TestResponsesSetsCookies(t *testing.T) {
	h := startHarness(t, options{script: turns(
		answer(fc("c1", "rotate", `{}`)),
		answer(fc("c2", "quiet", `{}`), fc("c3", "get_weather", `{"city":"X"}`)),
		answer(msg("done")),
	)})
	req, _ := http.NewRequest(http.MethodPost, h.agentURL+"/v1/responses", strings.NewReader(`{"input":"hi"}`))
	req.Header.Set("Cookie", "res_session=seeded")
	resp, err := noJar.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got := map[string]string{}
	for _, c := range resp.Cookies() {
		got[c.Name] = c.Value
	}
	if got["res_session"] != "seeded-rotated" || got["model_session"] != "m3" || got["SimpleAgent___agent"] == "" {
		t.Errorf("response cookies %v", got)
	}
	// After the rotation every call carries the new session, including
	// the one after a tool that did not re-send it.
	calls := h.res.all()
	wantCookies := []string{"res_session=seeded", "res_session=seeded-rotated", "res_session=seeded-rotated"}
	for i, r := range calls {
		if r.Cookie != wantCookies[i] {
			t.Errorf("tool call %d (%s) got %q, want %q", i+1, r.Path, r.Cookie, wantCookies[i])
		}
	}
}

// Rollout correlation (spec §5.6): with it on and indices in the row,
// model calls and /seed_session and /verify carry /ng-rollout/<id>; tool
// calls do not. Token capture adds its segment to model calls only.
func TestRunRolloutCorrelation(t *testing.T) {
	tests := []struct {
		name       string
		global     string
		section    string
		row        string
		wantModel  string
		wantPrefix string // on /seed_session and /verify
	}{
		{"off", "", "", weatherRow, "/v1/responses", ""},
		{"rollout_correlation", "rollout_correlation: true", "", weatherRow, "/ng-rollout/0-0/v1/responses", "/ng-rollout/0-0"},
		{"observability", "observability_enabled: true", "", weatherRow, "/ng-rollout/0-0/v1/responses", "/ng-rollout/0-0"},
		{"on, no indices", "rollout_correlation: true", "", `{"responses_create_params":{"input":"hi"}}`, "/v1/responses", ""},
		{"attempt", "rollout_correlation: true", "", strings.Replace(weatherRow, `"task_id"`, `"_ng_attempt_index":2,"task_id"`, 1), "/ng-rollout/0-0-a2/v1/responses", "/ng-rollout/0-0-a2"},
		{"explicit id", "rollout_correlation: true", "", strings.Replace(weatherRow, `"task_id"`, `"_ng_rollout_id":"run.7","task_id"`, 1), "/ng-rollout/run.7/v1/responses", "/ng-rollout/run.7"},
		{"token capture", "token_id_capture: {enabled: true}", "token_id_capture: true", weatherRow, "/ng-rollout/0-0/training-token-capture/v1/responses", "/ng-rollout/0-0"},
		{"token capture, agent not opted in", "token_id_capture: {enabled: true}", "", weatherRow, "/v1/responses", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHarness(t, options{global: tt.global, section: tt.section, script: weatherScript})
			resp, body := h.post(t, "/run", tt.row)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			for _, p := range h.model.paths() {
				if p != tt.wantModel {
					t.Errorf("model path %s, want %s", p, tt.wantModel)
				}
			}
			want := []string{tt.wantPrefix + "/seed_session", "/get_weather", tt.wantPrefix + "/verify"}
			if got := h.res.paths(); !slices.Equal(got, want) {
				t.Errorf("resources paths %v, want %v", got, want)
			}
		})
	}
}

// Errata L2: a malformed _ng_rollout_id fails the rollout only when
// correlation is on.
func TestRunInvalidRolloutID(t *testing.T) {
	row := strings.Replace(weatherRow, `"task_id"`, `"_ng_rollout_id":"../etc","task_id"`, 1)
	on := startHarness(t, options{global: "rollout_correlation: true", script: weatherScript})
	resp, body := on.post(t, "/run", row)
	if resp.StatusCode != 500 || !strings.Contains(body, "_ng_rollout_id must be a string") {
		t.Errorf("correlation on: %d %s", resp.StatusCode, body)
	}
	if n := len(on.res.all()) + len(on.model.all()); n != 0 {
		t.Errorf("%d calls made for a rejected row", n)
	}
	off := startHarness(t, options{script: weatherScript})
	if resp, body := off.post(t, "/run", row); resp.StatusCode != 200 {
		t.Errorf("correlation off: %d %s", resp.StatusCode, body)
	}
}

func TestRunSkipVerification(t *testing.T) {
	for _, tt := range []struct{ section, wantReward string }{
		{"skip_verification: true", "0.0"},
		{"skip_verification: true\nskip_verification_reward: 0.5", "0.5"},
		{"skip_verification: true\nskip_verification_reward: 1", "1.0"},
	} {
		h := startHarness(t, options{section: tt.section, script: weatherScript})
		resp, body := h.post(t, "/run", weatherRow)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		if got := h.res.paths(); !slices.Equal(got, []string{"/seed_session", "/get_weather"}) {
			t.Errorf("resources paths %v: /verify must not be called", got)
		}
		// The row as given, then the response, reward and the marker.
		wantPrefix := strings.TrimSuffix(weatherRow, "}") + `,"response":`
		if !strings.HasPrefix(body, wantPrefix) || !strings.HasSuffix(body, `,"reward":`+tt.wantReward+`,"verification_skipped":true}`) {
			t.Errorf("result %s", body)
		}
		if types(gjson.Get(body, "response.output"))[2] != "message" {
			t.Errorf("response %s", gjson.Get(body, "response").Raw)
		}
	}
}

func TestRunFailures(t *testing.T) {
	tests := []struct {
		name       string
		row        string
		script     script
		wantStatus int
		wantBody   string
	}{
		{"not an object", `[1]`, weatherScript, 422, `"model_attributes_type"`},
		{"no responses_create_params", `{"input":"hi"}`, weatherScript, 422, `{"detail":[{"type":"missing","loc":["body","responses_create_params"],"msg":"Field required"`},
		{"params without input", `{"responses_create_params":{"model":"x"}}`, weatherScript, 422, `"loc":["body","responses_create_params","input"]`},
		{"streaming params", `{"responses_create_params":{"input":"hi","stream":true}}`, weatherScript, 422, `"loc":["body","responses_create_params","stream"]`},
		{"not JSON", `{"responses_create_params":`, weatherScript, 422, `"json_invalid"`},
		{"model answers nothing", weatherRow, func(int, gjson.Result) string { return "" }, 500, `invalid response from the model server (not JSON)`},
		// The failure cascades as in NeMo Gym: the episode's 500 wraps the
		// model's body, and /run's wraps the episode's.
		// A refusal keeps its status class hop by hop, so no caller retries it.
		{"model HTTP error", weatherRow, func(int, gjson.Result) string { return httpError(401, `{"error":{"message":"bad key"}}`) }, 401,
			`"Hit an exception in SimpleAgent___agent calling an inner server: \"Hit an exception in SimpleAgent___agent calling an inner server: {\\\"error\\\"`},
		{"model answers garbage", weatherRow, func(int, gjson.Result) string { return `{"output":"nope"}` }, 500, `invalid response from the model server (output is not a list)`},
		{"seed_session fails", strings.Replace(weatherRow, `"task_id"`, `"_test_seed":"fail","task_id"`, 1), weatherScript, 400, `calling an inner server: {\"detail\":\"cannot seed\"}`},
		{"verify reply without reward", strings.Replace(weatherRow, `"task_id"`, `"_test_verify":"no_reward","task_id"`, 1), weatherScript, 500, `/verify reply has no numeric reward`},
		{"verify reply without response", strings.Replace(weatherRow, `"task_id"`, `"_test_verify":"no_response","task_id"`, 1), weatherScript, 500, `/verify reply has no response object`},
		{"verify reply not an object", strings.Replace(weatherRow, `"task_id"`, `"_test_verify":"not_object","task_id"`, 1), weatherScript, 500, `/verify reply is not a JSON object: [1]`},
		{"function call without a name", weatherRow, func(n int, _ gjson.Result) string {
			return response(n, `{"type":"function_call","call_id":"c","arguments":"{}"}`)
		}, 500, `output[0] is a function_call without a string name`},
		{"item without a type", weatherRow, func(n int, _ gjson.Result) string { return response(n, msg("x"), `{"role":"assistant"}`) }, 500, `output[1] has no type`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHarness(t, options{script: tt.script})
			resp, body := h.post(t, "/run", tt.row)
			if resp.StatusCode != tt.wantStatus || !strings.Contains(body, tt.wantBody) {
				t.Errorf("%d %s, want %d with %s", resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
		})
	}
}

// A failed episode is not run again: the self-call is made once, whatever
// its status, while the model call itself gets the client's retries.
func TestRunFailedEpisodeRunsOnce(t *testing.T) {
	h := startHarness(t, options{script: turns(
		answer(fc("c1", "get_weather", `{"city":"A"}`)),
		func(int) string { return httpError(500, `"upstream down"`) },
	)})
	resp, body := h.post(t, "/run", weatherRow)
	if resp.StatusCode != 500 || !strings.Contains(body, "upstream down") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if got := h.res.paths(); !slices.Equal(got, []string{"/seed_session", "/get_weather"}) {
		t.Errorf("resources paths %v: the episode ran more than once", got)
	}
	if n := len(h.model.all()); n != 4 {
		t.Errorf("%d model calls, want 1 + 3 tries of the failing one", n)
	}
}

// A tool that cannot be reached at all fails the episode: there is no
// answer to feed back.
func TestToolUnreachable(t *testing.T) {
	var h *harness
	h = startHarness(t, options{script: turns(
		func(n int) string {
			h.resSrv.Close()
			return response(n, fc("c1", "get_weather", `{"city":"X"}`))
		},
		answer(msg("done")),
	)})
	req, _ := http.NewRequest(http.MethodPost, h.agentURL+"/v1/responses", strings.NewReader(`{"input":"hi"}`))
	resp, err := noJar.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || !strings.Contains(string(body), `calling tool \"get_weather\"`) {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}

func TestAggregateMetricsRoute(t *testing.T) {
	rows := `{"verify_responses":[{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0}]}`
	h := startHarness(t, options{script: weatherScript})
	resp, body := h.post(t, "/aggregate_metrics", rows)
	if resp.StatusCode != 200 || body != `{"group_level_metrics":[],"agent_metrics":{"mean/reward":1.0},"key_metrics":{"mean/reward":1.0}}` {
		t.Errorf("proxy: %d %s", resp.StatusCode, body)
	}
	if got := h.res.all(); len(got) != 1 || got[0].Body != rows {
		t.Errorf("resources got %+v", got)
	}
	skip := startHarness(t, options{section: "skip_verification: true", script: weatherScript})
	resp, body = skip.post(t, "/aggregate_metrics", rows)
	if resp.StatusCode != 200 || body != `{"group_level_metrics":[],"agent_metrics":{},"key_metrics":{},"repeat_level_metrics":[]}` || len(skip.res.all()) != 0 {
		t.Errorf("skip_verification: %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(skip.logs.String(), "skip_verification is set") {
		t.Errorf("no warning logged: %s", skip.logs.String())
	}
}

func TestConfigErrors(t *testing.T) {
	base := func(agentLines string) string {
		return `res:
  resources_servers:
    fake: {host: 127.0.0.1, port: 1}
model:
  responses_api_models:
    fake: {host: 127.0.0.1, port: 2}
agent:
  responses_api_agents:
    simple_agent:
      host: 127.0.0.1
      port: 3
` + agentLines
	}
	refs := "      resources_server: {type: resources_servers, name: res}\n      model_server: {type: responses_api_models, name: model}\n"
	tests := []struct{ name, yaml, want string }{
		{"no resources_server", base("      model_server: {type: responses_api_models, name: model}\n"), "agent.resources_server: a server reference"},
		{"missing model name", base("      resources_server: {type: resources_servers, name: res}\n      model_server: {type: responses_api_models, name: '???'}\n"), "agent.model_server.name"},
		{"unknown model instance", base("      resources_server: {type: resources_servers, name: res}\n      model_server: {type: responses_api_models, name: nowhere}\n"), "agent.model_server: "},
		{"negative max_steps", base(refs + "      max_steps: -1\n"), "agent.max_steps: an integer of at least 0"},
		{"bad skip_verification", base(refs + "      skip_verification: perhaps\n"), "agent.skip_verification"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := build(tt.yaml, &syncBuffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, _, err := build(base(refs+"      max_steps: null\n      datasets: []\n"), &syncBuffer{}); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

// types lists the type of each item of a JSON array ("" for none).
func types(items gjson.Result) []string {
	var out []string
	for _, it := range items.Array() {
		out = append(out, it.Get("type").Str)
	}
	return out
}

// The shipped config is a template: it loads, names NeMo Gym's keys, and
// the agent refuses to start until resources_server.name is filled in.
func TestShippedConfig(t *testing.T) {
	n, err := config.LoadFile("configs/simple_agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	section := n.Get("simple_agent").Get("responses_api_agents").Get("simple_agent")
	if section == nil || section.Get("entrypoint").Str != "app.py" || section.Get("model_server").Get("name").Str != "policy_model" ||
		section.Get("resources_server").Get("type").Str != "resources_servers" || section.Get("max_steps").Kind != tree.Null {
		t.Fatalf("unexpected shape: %#v", n)
	}
	yaml := `res:
  resources_servers:
    fake: {host: 127.0.0.1, port: 1}
policy_model:
  responses_api_models:
    fake: {host: 127.0.0.1, port: 2}
agent:
  responses_api_agents:
    simple_agent:
      host: 127.0.0.1
      port: 3
      resources_server: {type: resources_servers, name: '???'}
      model_server: {type: responses_api_models, name: policy_model}
`
	if _, _, err := build(yaml, &syncBuffer{}); err == nil || !strings.Contains(err.Error(), "agent.resources_server.name: the name of a resources_servers instance is required") {
		t.Errorf("unfilled template: %v", err)
	}
}
