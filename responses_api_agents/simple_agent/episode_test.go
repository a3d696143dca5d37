package simpleagent

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// episodeOf runs weatherRow through /run and returns the episode's
// response.
func episodeOf(t *testing.T, h *harness) gjson.Result {
	t.Helper()
	resp, body := h.post(t, "/run", weatherRow)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	return gjson.Get(body, "response")
}

// Several calls in one turn run one after another, in order, and every
// answer reaches the model as text: error statuses and arguments that are
// not JSON included.
func TestToolCallsInOrderWithErrorsFedBack(t *testing.T) {
	calls := []string{
		fc("c1", "get_weather", `{"city":"A"}`),
		fc("c2", "missing", `{}`),
		fc("c3", "strict", `{}`),
		fc("c4", "boom", `{}`),
		fc("c5", "get_weather", `{"city": "B"`),
		fc("c6", "get_weather", `{"city":"C"}`),
	}
	h := startHarness(t, options{script: turns(answer(calls...), answer(msg("done")))})
	r := episodeOf(t, h)

	// The failing tool is called once: its error is an answer.
	wantPaths := []string{"/seed_session", "/get_weather", "/missing", "/strict", "/boom", "/get_weather", "/verify"}
	if got := h.res.paths(); !slices.Equal(got, wantPaths) {
		t.Errorf("resources paths %v, want %v", got, wantPaths)
	}
	if got := h.res.named("/get_weather"); got[0].Body != `{"city":"A"}` || got[1].Body != `{"city":"C"}` {
		t.Errorf("tool bodies %q, %q", got[0].Body, got[1].Body)
	}
	wantOutputs := []struct{ callID, output string }{
		{"c1", `{"city":"A","weather_description":"The weather in A is cold."}`},
		{"c2", `{"detail":"Not Found"}`},
		{"c3", `{"detail":[{"type":"missing","loc":["body","city"],"msg":"Field required","input":{}}]}`},
		{"c4", `"ValueError('boom')"`},
		{"c5", `{"error": "Invalid tool call arguments: unexpected end of JSON input"}`},
		{"c6", `{"city":"C","weather_description":"The weather in C is cold."}`},
	}
	out := r.Get("output").Array()
	if len(out) != 13 {
		t.Fatalf("%d output items, want 6 calls, 6 outputs and a message: %s", len(out), r.Get("output").Raw)
	}
	for i, w := range wantOutputs {
		if out[i].Raw != calls[i] {
			t.Errorf("output[%d] = %s, want the call %s", i, out[i].Raw, calls[i])
		}
		o := out[6+i]
		if o.Get("type").Str != "function_call_output" || o.Get("call_id").Str != w.callID || o.Get("output").Str != w.output {
			t.Errorf("output[%d] = %s, want %s's output %s", 6+i, o.Raw, w.callID, w.output)
		}
	}
	// The model saw the same items, after the input.
	second := gjson.Get(h.model.all()[1].Body, "input").Array()
	if len(second) != 2+12 {
		t.Fatalf("second model request input: %d items, want 14", len(second))
	}
	for i := range 12 {
		if second[2+i].Raw != out[i].Raw {
			t.Errorf("second model request input[%d] = %s, want %s", 2+i, second[2+i].Raw, out[i].Raw)
		}
	}
}

func TestMaxSteps(t *testing.T) {
	always := turns(func(n int) string { return response(n, fc("c"+string(rune('0'+n)), "get_weather", `{"city":"X"}`)) })
	tests := []struct {
		name       string
		section    string
		script     script
		wantModel  int
		wantOutput []string
	}{
		{"stops after the last turn's tools", "max_steps: 2", always, 2,
			[]string{"function_call", "function_call_output", "function_call", "function_call_output"}},
		{"one step", "max_steps: 1", always, 1, []string{"function_call", "function_call_output"}},
		{"an answer before the limit", "max_steps: 5", weatherScript, 2, []string{"function_call", "function_call_output", "message"}},
		{"0 is unlimited", "max_steps: 0", turns(
			answer(fc("a", "get_weather", `{"city":"X"}`)), answer(fc("b", "get_weather", `{"city":"X"}`)),
			answer(fc("c", "get_weather", `{"city":"X"}`)), answer(msg("done"))), 4,
			[]string{"function_call", "function_call_output", "function_call", "function_call_output", "function_call", "function_call_output", "message"}},
		{"null is unlimited", "max_steps: null", weatherScript, 2, []string{"function_call", "function_call_output", "message"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHarness(t, options{section: tt.section, script: tt.script})
			r := episodeOf(t, h)
			if n := len(h.model.all()); n != tt.wantModel {
				t.Errorf("%d model calls, want %d", n, tt.wantModel)
			}
			if got := types(r.Get("output")); !slices.Equal(got, tt.wantOutput) {
				t.Errorf("output %v, want %v", got, tt.wantOutput)
			}
		})
	}
}

// As NeMo Gym 0.7.0's, a turn with neither a tool call nor an assistant
// message ends the episode: its response is incomplete and says why.
func TestEmptyTurnEndsTheEpisode(t *testing.T) {
	tests := []struct {
		name       string
		section    string
		script     script
		wantModel  int
		wantOutput []string
		wantReason string // "" when the episode ended normally
	}{
		{"reasoning only", "", turns(answer(reasoning("hmm"))), 1, []string{"reasoning"}, "incomplete_reasoning"},
		{"empty output", "", turns(answer()), 1, nil, "empty_output"},
		{"a user-role message is no answer", "", turns(answer(`{"type":"message","role":"user","content":"?"}`)), 1, []string{"message"}, "incomplete_reasoning"},
		{"a tool call, then reasoning only", "", turns(answer(fc("c", "get_weather", `{"city":"X"}`)), answer(reasoning("1"))), 2,
			[]string{"function_call", "function_call_output", "reasoning"}, "incomplete_reasoning"},
		{"reasoning and an answer", "", turns(answer(reasoning("ok"), msg("done"))), 1, []string{"reasoning", "message"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHarness(t, options{section: tt.section, script: tt.script})
			r := episodeOf(t, h)
			if n := len(h.model.all()); n != tt.wantModel {
				t.Errorf("%d model calls, want %d", n, tt.wantModel)
			}
			if got := types(r.Get("output")); !slices.Equal(got, tt.wantOutput) {
				t.Errorf("output %v, want %v", got, tt.wantOutput)
			}
			reason := r.Get("metadata.ng_termination_reason").Str
			if reason != tt.wantReason || (tt.wantReason != "") != (r.Get("status").Str == "incomplete") {
				t.Errorf("status %s, ng_termination_reason %q; want %q", r.Get("status").Str, reason, tt.wantReason)
			}
			if tt.wantReason != "" && r.Get("metadata.ng_termination_message").Str != emptyTurnMessage {
				t.Errorf("ng_termination_message %q", r.Get("metadata.ng_termination_message").Str)
			}
		})
	}
}

func TestIncompleteStops(t *testing.T) {
	incomplete := func(n int) string {
		return strings.Replace(response(n, fc("c1", "get_weather", `{"city":"X"}`)), `"status":"completed","output"`,
			`"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output"`, 1)
	}
	h := startHarness(t, options{script: turns(incomplete)})
	r := episodeOf(t, h)
	if got := types(r.Get("output")); !slices.Equal(got, []string{"function_call"}) || r.Get("status").Str != "incomplete" {
		t.Errorf("output %v, status %s", got, r.Get("status").Str)
	}
	if got := h.res.paths(); !slices.Equal(got, []string{"/seed_session", "/verify"}) {
		t.Errorf("resources paths %v: no tool runs after an incomplete turn", got)
	}

	// A null incomplete_details is no reason to stop.
	notIncomplete := func(n int) string {
		return strings.Replace(response(n, fc("c1", "get_weather", `{"city":"X"}`)), `"output"`, `"incomplete_details":null,"output"`, 1)
	}
	h = startHarness(t, options{script: turns(notIncomplete, answer(msg("done")))})
	episodeOf(t, h)
	if n := len(h.model.all()); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
}

// Usage is summed over the turns; a count one turn did not report makes
// the detail unknown (absent), never zero.
func TestUsageSum(t *testing.T) {
	call := fc("c", "get_weather", `{"city":"X"}`)
	tests := []struct {
		name   string
		usages []string
		want   string
	}{
		{"all reported", []string{defaultUsage, defaultUsage},
			`{"input_tokens":20,"input_tokens_details":{"cached_tokens":4},"output_tokens":10,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":30}`},
		{"details missing in one turn", []string{defaultUsage, `{"input_tokens":7,"output_tokens":3,"total_tokens":10}`},
			`{"input_tokens":17,"input_tokens_details":{},"output_tokens":8,"output_tokens_details":{},"total_tokens":25}`},
		{"null detail in the first turn", []string{`{"input_tokens":1,"input_tokens_details":{"cached_tokens":null},"output_tokens":1,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":2}`, defaultUsage},
			`{"input_tokens":11,"input_tokens_details":{},"output_tokens":6,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":17}`},
		{"explicit zeros and cache writes", []string{
			`{"input_tokens":5,"input_tokens_details":{"cached_tokens":0,"cache_write_tokens":3},"output_tokens":1,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":6}`,
			`{"input_tokens":5,"input_tokens_details":{"cached_tokens":0,"cache_write_tokens":0},"output_tokens":1,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":6}`},
			`{"input_tokens":10,"input_tokens_details":{"cached_tokens":0,"cache_write_tokens":3},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":12}`},
		{"a turn without usage adds nothing", []string{"null", defaultUsage}, defaultUsage},
		{"a turn that leaves usage out adds nothing", []string{defaultUsage, ""}, defaultUsage},
		{"no usage at all", []string{"", "null"}, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHarness(t, options{script: turns(
				func(n int) string { return responseWith(n, tt.usages[0], call) },
				func(n int) string { return responseWith(n, tt.usages[1], msg("done")) },
			)})
			if got := episodeOf(t, h).Get("usage").Raw; got != tt.want {
				t.Errorf("usage %s, want %s", got, tt.want)
			}
		})
	}
}

// Replayed reasoning items lose their status, as NeMo Gym's reasoning item
// type has none; everything else is replayed byte for byte.
func TestReasoningReplayDropsStatus(t *testing.T) {
	withStatus := `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"xyz","status":"completed"}`
	call := fc("c1", "get_weather", `{"city":"X"}`)
	h := startHarness(t, options{script: turns(answer(withStatus, call), answer(msg("done")))})
	r := episodeOf(t, h)
	want := `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"xyz"}`
	if got := r.Get("output.0").Raw; got != want {
		t.Errorf("output reasoning %s, want %s", got, want)
	}
	replay := gjson.Get(h.model.all()[1].Body, "input").Array()
	if replay[2].Raw != want || replay[3].Raw != call {
		t.Errorf("replayed %s, %s", replay[2].Raw, replay[3].Raw)
	}
}

// /v1/responses called directly: a string input is one user message, the
// other params go to the model as sent, and an inbound rollout prefix is
// carried to the model whatever this agent's own correlation setting.
func TestResponsesDirect(t *testing.T) {
	h := startHarness(t, options{script: turns(answer(msg("hi there")))})
	post := func(path, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, h.agentURL+path, strings.NewReader(body))
		req.Header.Set("Cookie", "res_session=seeded")
		resp, err := noJar.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	status, body := post("/v1/responses", `{"model":"client","input":"hello","temperature":0.5,"extra_field":{"kept":true}}`)
	if status != 200 || gjson.Get(body, "output.0.type").Str != "message" {
		t.Fatalf("%d %s", status, body)
	}
	if got, want := h.model.all()[0].Body, `{"model":"client","input":[{"role":"user","content":"hello"}],"temperature":0.5,"extra_field":{"kept":true}}`; got != want {
		t.Errorf("model request %s, want %s", got, want)
	}
	for _, path := range []string{"/ng-rollout/5-1/v1/responses", "/ng-rollout/5-1/training-token-capture/v1/responses"} {
		if status, body := post(path, `{"input":[]}`); status != 200 {
			t.Fatalf("%s: %d %s", path, status, body)
		}
	}
	if got, want := h.model.paths(), []string{"/v1/responses", "/ng-rollout/5-1/v1/responses", "/ng-rollout/5-1/training-token-capture/v1/responses"}; !slices.Equal(got, want) {
		t.Errorf("model paths %v, want %v", got, want)
	}

	for _, tt := range []struct{ body, want string }{
		{`{"input":"x","stream":true}`, `"loc":["body","stream"]`},
		{`{"model":"m"}`, `"type":"missing","loc":["body","input"]`},
		{`{"input":5}`, `"loc":["body","input"]`},
		{`"just a string"`, `"model_attributes_type"`},
	} {
		if status, body := post("/v1/responses", tt.body); status != 422 || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %s, want 422 with %s", tt.body, status, body, tt.want)
		}
	}
}
