package vllmmodel

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/server"
	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

// A vLLM answer with reasoning split out by its reasoning parser, a tool
// call, and the token data return_token_id_information asks for.
const chatToolCall = `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"served",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning_content":"need the weather",` +
	`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"SF\"}"}}]},"finish_reason":"tool_calls"}],` +
	`"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`

type fakeVLLM struct {
	mu       sync.Mutex
	bodies   []string
	paths    []string
	hits     map[string]int // replica name → requests
	name     string
	answer   string
	tokenize string
	// answerFor, when set, answers a chat request by its body.
	answerFor func(body string) string
}

func newFakeVLLM(t *testing.T, name string, hits map[string]int) (*fakeVLLM, string) {
	f := &fakeVLLM{name: name, hits: hits, answer: chatToolCall, tokenize: `{"tokens":[1,2,3],"count":3}`}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, string(body))
		f.paths = append(f.paths, r.URL.Path)
		f.hits[f.name]++
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/tokenize" {
			io.WriteString(w, f.tokenize)
			return
		}
		if f.answerFor != nil {
			io.WriteString(w, f.answerFor(string(body)))
			return
		}
		io.WriteString(w, f.answer)
	}))
	t.Cleanup(srv.Close)
	return f, srv.URL + "/v1"
}

func startGym(t *testing.T, config string) string {
	t.Helper()
	return startGymGlobal(t, config, "")
}

// startGymGlobal is startGym with global keys of the run's config.
func startGymGlobal(t *testing.T, config, global string) string {
	t.Helper()
	yaml := global + "policy_model:\n  responses_api_models:\n    vllm_model:\n      entrypoint: app.py\n      host: 127.0.0.1\n      port: 0\n" +
		"      api_key: k\n      model: served\n" + config
	rt, err := servertest.Runtime(yaml, "policy_model")
	if err != nil {
		t.Fatal(err)
	}
	rt.Logger = slog.New(slog.DiscardHandler)
	h, err := New(rt)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.Wrap(rt, h))
	t.Cleanup(srv.Close)
	return srv.URL
}

func post(t *testing.T, url, body string, cookie string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, string(out)
}

const toolRequest = `{"model":"ignored","input":[{"role":"user","content":"weather in SF?"}],` +
	`"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true}],"temperature":0.5}`

func TestResponsesThroughChatCompletions(t *testing.T) {
	hits := map[string]int{}
	up, base := newFakeVLLM(t, "a", hits)
	gym := startGym(t, "      base_url: "+base+"\n      uses_reasoning_parser: true\n      return_token_id_information: false\n")
	resp, body := post(t, gym+"/v1/responses", toolRequest, "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	sent := up.bodies[0]
	if up.paths[0] != "/v1/chat/completions" || gjson.Get(sent, "model").String() != "served" ||
		gjson.Get(sent, "messages.0.role").String() != "user" || gjson.Get(sent, "tools.0.function.name").String() != "get_weather" ||
		gjson.Get(sent, "temperature").Float() != 0.5 {
		t.Errorf("upstream got %s %s", up.paths[0], sent)
	}
	if gjson.Get(body, "object").String() != "response" || gjson.Get(body, "output.#(type==\"reasoning\")").Exists() == false ||
		gjson.Get(body, `output.#(type=="function_call").name`).String() != "get_weather" ||
		gjson.Get(body, `output.#(type=="function_call").call_id`).String() != "call_1" ||
		gjson.Get(body, "usage.input_tokens").Int() != 11 {
		t.Errorf("response: %s", body)
	}
}

func TestStreamingResponsesAreSynthesized(t *testing.T) {
	hits := map[string]int{}
	up, base := newFakeVLLM(t, "a", hits)
	up.answer = `{"id":"c","object":"chat.completion","created":1,"model":"served","choices":[{"index":0,"message":{"role":"assistant","content":"hi there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`
	gym := startGym(t, "      base_url: "+base+"\n")
	resp, body := post(t, gym+"/v1/responses", `{"input":"hi","stream":true}`, "")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if gjson.Get(up.bodies[0], "stream").Exists() {
		t.Errorf("the upstream call streamed: %s", up.bodies[0])
	}
	for _, want := range []string{"event: response.created", "event: response.output_text.delta", "event: response.completed"} {
		if !strings.Contains(body, want) {
			t.Errorf("stream lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "cache_write_tokens") {
		t.Errorf("an unknown cache_write_tokens was invented:\n%s", body)
	}
}

func TestUnrepresentableRequestsAre400(t *testing.T) {
	hits := map[string]int{}
	_, base := newFakeVLLM(t, "a", hits)
	for _, drop := range []string{"false", "true"} {
		gym := startGym(t, "      base_url: "+base+"\n      drop_unrepresentable_request_fields: "+drop+"\n")
		for name, req := range map[string]string{
			"program item":    `{"input":[{"type":"program","id":"p1","code":"x"}]}`,
			"allowed_callers": `{"input":"hi","tools":[{"type":"function","name":"f","parameters":{},"allowed_callers":[]}]}`,
			"output_schema":   `{"input":"hi","tools":[{"type":"function","name":"f","parameters":{},"output_schema":{"type":"object"}}]}`,
			"program caller":  `{"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}","caller":{"type":"program","program_id":"p1"}}]}`,
		} {
			resp, body := post(t, gym+"/v1/responses", req, "")
			if resp.StatusCode != 400 || !strings.Contains(body, "unrepresentable") {
				t.Errorf("drop=%s %s: %d %s", drop, name, resp.StatusCode, body)
			}
		}
	}
	if hits["a"] != 0 {
		t.Errorf("a rejected request reached the upstream %d times", hits["a"])
	}
}

func TestSessionsStickToOneReplica(t *testing.T) {
	hits := map[string]int{}
	_, a := newFakeVLLM(t, "a", hits)
	_, b := newFakeVLLM(t, "b", hits)
	gym := startGym(t, "      base_url: ["+a+", "+b+"]\n")
	for i := range 8 {
		resp, body := post(t, gym+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, "")
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		cookie := resp.Header.Get("Set-Cookie")
		cookie = cookie[:strings.Index(cookie, ";")]
		before := map[string]int{"a": hits["a"], "b": hits["b"]}
		for range 3 {
			post(t, gym+"/v1/chat/completions", `{"messages":[{"role":"user","content":"again"}]}`, cookie)
		}
		moved := 0
		for _, r := range []string{"a", "b"} {
			if hits[r] != before[r] {
				moved++
			}
		}
		if moved != 1 {
			t.Errorf("session %d spread over replicas: %v → %v", i, before, hits)
		}
	}
	if hits["a"] == 0 || hits["b"] == 0 {
		t.Errorf("8 sessions all went to one replica: %v", hits)
	}
}

func TestTokenIDsFromTokenize(t *testing.T) {
	hits := map[string]int{}
	up, base := newFakeVLLM(t, "a", hits)
	up.answer = `{"id":"c","object":"chat.completion","created":1,"model":"served","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"ok"},"finish_reason":"stop",` +
		`"logprobs":{"content":[{"token":"token_id:7","logprob":-0.5,"bytes":null,"top_logprobs":[]}]},"token_ids":[7]}],` +
		`"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
	gym := startGym(t, "      base_url: "+base+"\n      return_token_id_information: true\n")
	resp, body := post(t, gym+"/v1/responses", `{"input":"hi"}`, "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if len(up.paths) != 2 || up.paths[1] != "/tokenize" || !gjson.Get(up.bodies[1], "messages").IsArray() {
		t.Fatalf("upstream calls %v %v", up.paths, up.bodies)
	}
	if gjson.Get(body, "output.@reverse.0.prompt_token_ids").Raw != "[1,2,3]" || gjson.Get(body, "output.@reverse.0.generation_token_ids").Raw != "[7]" {
		t.Errorf("token data not on the last output item: %s", body)
	}
}

const tokenAnswer = `{"id":"c","object":"chat.completion","created":1,"model":"served","choices":[{"index":0,` +
	`"message":{"role":"assistant","content":"ok"},"finish_reason":"stop",` +
	`"logprobs":{"content":[{"token":"token_id:7","logprob":-0.5,"bytes":null,"top_logprobs":[]}]},"token_ids":[7]}],` +
	`"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`

// With return_token_id_information the upstream is asked for the chosen
// tokens' ids and log probabilities over whatever the request said, as
// NeMo Gym's vllm_model asks, and /tokenize gets the tools too.
func TestTokenIDsAreAskedFor(t *testing.T) {
	tests := []struct {
		name, config, request string
		want                  map[string]string
	}{
		{"over the request", "", `{"input":"hi","top_logprobs":5,"logprobs":false}`,
			map[string]string{"logprobs": "true", "top_logprobs": "0", "return_tokens_as_token_ids": "true", "return_token_ids": ""}},
		{"with vLLM's own ids", "      request_prompt_and_generation_token_ids: true\n", `{"input":"hi"}`,
			map[string]string{"logprobs": "true", "top_logprobs": "0", "return_tokens_as_token_ids": "true", "return_token_ids": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up, base := newFakeVLLM(t, "a", map[string]int{})
			up.answer = tokenAnswer
			gym := startGym(t, "      base_url: "+base+"\n      return_token_id_information: true\n"+tt.config)
			if resp, body := post(t, gym+"/v1/responses", tt.request, ""); resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			for k, v := range tt.want {
				if got := gjson.Get(up.bodies[0], k).Raw; got != v {
					t.Errorf("upstream %s = %q; want %q (body %s)", k, got, v, up.bodies[0])
				}
			}
		})
	}

	up, base := newFakeVLLM(t, "a", map[string]int{})
	up.answer = tokenAnswer
	gym := startGym(t, "      base_url: "+base+"\n      return_token_id_information: true\n      chat_template_kwargs: {enable_thinking: false}\n")
	if resp, body := post(t, gym+"/v1/responses", toolRequest, ""); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	tok := gjson.Parse(up.bodies[1])
	if up.paths[1] != "/tokenize" || !tok.Get("tools").IsArray() || tok.Get("chat_template_kwargs.enable_thinking").Raw != "false" ||
		tok.Get("model").Str != "served" || tok.Get("add_generation_prompt").Exists() {
		t.Errorf("/tokenize got %s; want the model, messages, tools and chat_template_kwargs of the generation request", up.bodies[1])
	}
}

// The chat route with token ids is NeMo Gym's: no upstream stream, the
// ids on the message, the transport fields gone; a stream is synthesized
// from the answer, without them, as NeMo Gym's chat stream is.
func TestChatCompletionsCarryTokenIDsOnTheMessage(t *testing.T) {
	up, base := newFakeVLLM(t, "a", map[string]int{})
	up.answer = tokenAnswer
	gym := startGym(t, "      base_url: "+base+"\n      return_token_id_information: true\n")
	resp, body := post(t, gym+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	msg := gjson.Get(body, "choices.0.message")
	if msg.Get("prompt_token_ids").Raw != "[1,2,3]" || msg.Get("generation_token_ids").Raw != "[7]" || msg.Get("generation_log_probs").Raw != "[-0.5]" {
		t.Errorf("message %s; want the token ids and log probabilities on it", msg.Raw)
	}
	for _, gone := range []string{"choices.0.logprobs", "choices.0.token_ids", "prompt_token_ids"} {
		if gjson.Get(body, gone).Exists() {
			t.Errorf("%s is still in %s", gone, body)
		}
	}

	resp, body = post(t, gym+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`, "")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || !strings.Contains(body, `"delta":{"content":"ok"}`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("stream: status %d, %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if last := up.bodies[len(up.bodies)-2]; gjson.Get(last, "stream").Exists() {
		t.Errorf("the upstream was asked to stream: %s", last)
	}

	resp, body = post(t, gym+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"n":2}`, "")
	if resp.StatusCode != 400 || !strings.Contains(body, "NeMo Gym server `policy_model` requires n=1 for token capture.") {
		t.Errorf("n=2: status %d: %s", resp.StatusCode, body)
	}
}
