package vllmmodel

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// twoTurnVLLM is a vLLM that calls a tool and then answers, with its
// own prompt and generation token ids (return_token_ids).
func twoTurnVLLM(t *testing.T) string {
	up, base := newFakeVLLM(t, "a", map[string]int{})
	up.answerFor = func(body string) string {
		if len(gjson.Get(body, "messages").Array()) == 1 {
			return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"served","prompt_token_ids":[11,12],"choices":[{"index":0,"token_ids":[13,14],` +
				`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"SF\"}"}}]},"finish_reason":"tool_calls",` +
				`"logprobs":{"content":[{"token":"token_id:13","logprob":-0.1},{"token":"token_id:14","logprob":-0.2}]}}],"usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4}}`
		}
		return `{"id":"chatcmpl-2","object":"chat.completion","created":1,"model":"served","prompt_token_ids":[11,12,13,14,21],"choices":[{"index":0,"token_ids":[22],` +
			`"message":{"role":"assistant","content":"sunny"},"finish_reason":"stop","logprobs":{"content":[{"token":"token_id:22","logprob":0}]}}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`
	}
	return base
}

// tokenEntries are the rollout's entries in the token store.
func tokenEntries(t *testing.T, dir, key string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, key+".tokens.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("entry %s: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// A tool-calling rollout under training-token capture leaves one entry
// per call, the second continuing the first, as NeMo Gym's model server
// writes them; the answers the agent gets are unchanged.
func TestTrainingTokenCapture(t *testing.T) {
	dir := t.TempDir()
	base := twoTurnVLLM(t)
	gym := startGymGlobal(t, "      base_url: "+base+"\n      return_token_id_information: true\n",
		"token_id_capture:\n  enabled: true\n  dir: "+dir+"\n")
	route := gym + "/ng-rollout/0-0/training-token-capture/v1/responses"
	first := `{"input":[{"role":"user","content":"weather in SF?"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`
	resp, body := post(t, route, first, "")
	if resp.StatusCode != 200 {
		t.Fatalf("first call: %d %s", resp.StatusCode, body)
	}
	input := gjson.Get(first, "input").Array()
	items := []string{input[0].Raw}
	for _, it := range gjson.Get(body, "output").Array() {
		items = append(items, it.Raw)
	}
	items = append(items, `{"type":"function_call_output","call_id":"call_1","output":"{\"weather\":\"sunny\"}"}`)
	second := `{"input":[` + strings.Join(items, ",") + `],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}],"stream":true}`
	resp, body = post(t, route, second, "")
	if resp.StatusCode != 200 || !strings.Contains(body, "response.completed") {
		t.Fatalf("second call: %d %s", resp.StatusCode, body)
	}

	entries := tokenEntries(t, dir, "0-0")
	if len(entries) != 2 {
		t.Fatalf("%d entries; want 2", len(entries))
	}
	root, child := entries[0], entries[1]
	if root["parent_resolution"] != "root" || root["parent_call_id"] != nil || child["parent_resolution"] != "resolved" || child["parent_call_id"] != root["model_call_id"] {
		t.Errorf("lineage: root %v/%v, child %v/%v; want the second call resolved to the first", root["parent_resolution"], root["parent_call_id"], child["parent_resolution"], child["parent_call_id"])
	}
	for _, tt := range []struct {
		e                  map[string]any
		prompt, gen, logps string
	}{{root, "[11,12]", "[13,14]", "[-0.1,-0.2]"}, {child, "[11,12,13,14,21]", "[22]", "[0]"}} {
		raw, _ := json.Marshal(tt.e)
		for k, want := range map[string]string{"prompt_token_ids": tt.prompt, "generation_token_ids": tt.gen, "generation_log_probs": tt.logps} {
			if got := gjson.GetBytes(raw, k).Raw; got != want {
				t.Errorf("%s = %s; want %s", k, got, want)
			}
		}
		if strings.Contains(gjson.GetBytes(raw, "output_items").Raw, "token_ids") {
			t.Errorf("output_items keep token fields: %s", raw)
		}
	}
	line, _ := os.ReadFile(filepath.Join(dir, "0-0.tokens.jsonl"))
	if !strings.Contains(string(line), `"generation_log_probs":[0.0]`) || !strings.HasPrefix(string(line), `{"continuation_context_digest":`) {
		t.Errorf("entries are not written as NeMo Gym writes them (sorted keys, floats as Python's): %s", line)
	}
	intents, _ := os.ReadFile(filepath.Join(dir, "0-0.tokens.intents"))
	if got := strings.Fields(string(intents)); len(got) != 2 || got[0] != root["model_call_id"] || got[1] != child["model_call_id"] {
		t.Errorf("intents %q; want both calls", intents)
	}
	if _, err := os.Stat(filepath.Join(dir, "0-0.tokens.incomplete")); err == nil {
		t.Error("a complete capture is marked incomplete")
	}
}

// Without token ids from the backend the call still answers, and the
// rollout's token capture is marked incomplete, as NeMo Gym marks it.
func TestTrainingTokenCaptureWithoutTokenIDs(t *testing.T) {
	dir := t.TempDir()
	_, base := newFakeVLLM(t, "a", map[string]int{})
	gym := startGymGlobal(t, "      base_url: "+base+"\n", "token_id_capture:\n  enabled: true\n  dir: "+dir+"\n")
	if resp, body := post(t, gym+"/ng-rollout/1-0/training-token-capture/v1/responses", toolRequest, ""); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	marked, err := os.ReadFile(filepath.Join(dir, "1-0.tokens.incomplete"))
	if err != nil || len(strings.TrimSpace(string(marked))) != 32 {
		t.Errorf("incomplete marker %q, %v; want the call's id", marked, err)
	}
	if state, _ := os.ReadFile(filepath.Join(dir, "1-0.tokens.state.json")); !strings.Contains(string(state), `"incomplete":true`) {
		t.Errorf("state %s; want incomplete", state)
	}
	if _, err := os.Stat(filepath.Join(dir, "1-0.tokens.jsonl")); err == nil {
		t.Error("an entry was written without token ids")
	}
}
