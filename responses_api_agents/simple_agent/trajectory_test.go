package simpleagent

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// With observability on, /run returns the episode's trajectory as NeMo
// Gym's simple_agent does: named for the row's task and the rollout, a
// turn per model call with its question, answer and reasoning in
// canonical form, each tool call timed with its status; the response the
// verifier scores does not carry it.
func TestTrajectory(t *testing.T) {
	calls := []string{fc("c1", "get_weather", `{"city":"A"}`), fc("c2", "missing", `{}`), fc("c3", "get_weather", `{"city": "B"`)}
	h := startHarness(t, options{global: "observability_enabled: true",
		script: turns(answer(reasoning("think"), calls[0], calls[1], calls[2]), answer(msg("done")))})
	resp, body := h.post(t, "/run", weatherRow)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	traj := gjson.Get(body, "ng_trajectory")
	if gjson.Get(body, "response._ng_trajectory").Exists() || !traj.IsObject() {
		t.Fatalf("the trajectory is in the response, or missing: %s", body)
	}
	for path, want := range map[string]string{
		"task_id": `"t-7"`, "rollout_id": `"0-0"`, "turns.#": "2", "turns.0.task_id": `"t-7"`, "turns.1.rollout_id": `"0-0"`,
		"turns.0.turn_no": "1", "turns.0.step_count": "3", "turns.1.step_count": "3", "turns.1.reasoning_content": "null",
		"turns.0.question.1":          `{"content":"what's it like in sf?","role":"user","type":"message","phase":null}`,
		"turns.0.reasoning_content.0": `{"id":"rs_1","summary":[{"text":"think","type":"summary_text"}],"type":"reasoning","encrypted_content":null,"content":null}`,
		"turns.0.answer.0":            `{"arguments":"{\"city\":\"A\"}","call_id":"c1","name":"get_weather","type":"function_call","id":"fc_c1","status":"completed","namespace":null}`,
		"turns.1.answer.0":            `{"id":"msg_1","content":[{"annotations":[],"text":"done","type":"output_text","logprobs":null}],"role":"assistant","status":"completed","type":"message","phase":null}`,
		"turns.1.model_calls.0":       `{"model_call_id":null,"model_ref":{"type":"responses_api_models","name":"model"},"response_id":"resp_2"}`,
		"invocations.0.status":        `"completed"`, "invocations.0.model_calls.#": "2", "invocations.0.conversation.#": "10",
		"tool_calls.#": "3", "tool_calls.0.status": `"completed"`, "tool_calls.0.error_type": "null", "tool_calls.0.timing_source": `"executor"`,
		"tool_calls.1.status": `"failed"`, "tool_calls.1.error_type": `"http_404"`, "tool_calls.2.error_type": `"JSONDecodeError"`,
		"model_calls": "[]", "gaps": `[{"code":"resolution_unavailable","invocation_id":"root","detail":null}]`,
	} {
		if got := traj.Get(path).Raw; got != want {
			t.Errorf("%s = %s; want %s", path, got, want)
		}
	}
	if s, c := traj.Get("tool_calls.0.started_at").Float(), traj.Get("tool_calls.0.completed_at").Float(); s <= 0 || c < s || traj.Get("turns.1.timestamp").Float() < c {
		t.Errorf("tool call times %v..%v, second turn at %v", s, c, traj.Get("turns.1.timestamp").Float())
	}

	// Asked directly, the episode's response carries it, not yet named.
	resp, body = h.post(t, "/ng-rollout/0-0/v1/responses", gjson.Get(weatherRow, "responses_create_params").Raw)
	if got := gjson.Get(body, "_ng_trajectory.task_id").Str; resp.StatusCode != 200 || got != "unscoped" || gjson.Get(body, "_ng_trajectory.turns.0.resolved").Raw != "null" {
		t.Errorf("status %d, _ng_trajectory.task_id %q: %.500s", resp.StatusCode, got, body)
	}

	// Without observability there is none.
	h = startHarness(t, options{script: weatherScript})
	if _, body := h.post(t, "/run", weatherRow); strings.Contains(body, "trajectory") {
		t.Errorf("a trajectory without observability: %s", body)
	}
}

// An item missing a field NeMo Gym's model requires still gives valid JSON
// (the field null): the row is kept.
func TestCanonicalItemWithMissingFields(t *testing.T) {
	for _, item := range []string{
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}`,
		`{"type":"message","content":"hi"}`,
		`{"type":"reasoning","id":"r","summary":[{"text":"t"}]}`,
		`{"type":"message","role":"assistant","id":"m","content":[{"type":"output_text"}]}`,
		`{"type":"function_call","call_id":"c"}`,
	} {
		if got := canonicalItem(item); !gjson.Valid(got) {
			t.Errorf("canonicalItem(%s) = %s, not JSON", item, got)
		}
	}
}
