package chatbackend

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/modelserver"
	"github.com/nemo-gym-go/gym/internal/openai"
)

// upstream is a Chat Completions server that records what it was sent and
// answers each path with a fixed body.
type upstream struct {
	*httptest.Server
	mu       sync.Mutex
	requests map[string][]string // path → bodies, in order
	answers  map[string]string   // path → body answered
}

func newUpstream(t *testing.T, answers map[string]string) *upstream {
	t.Helper()
	u := &upstream{requests: map[string][]string{}, answers: answers}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.requests[r.URL.Path] = append(u.requests[r.URL.Path], string(body))
		u.mu.Unlock()
		answer, ok := u.answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) sent(path string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.requests[path]...)
}

const completion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m",
"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hello"}}],
"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`

const tokenCompletion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m",
"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"},
"token_ids":[7],"logprobs":{"content":[{"token":"token_id:7","logprob":-0.5,"top_logprobs":[]}]}}],
"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}`

func newBackend(t *testing.T, opts Options) *Backend {
	t.Helper()
	opts.Upstream.MaxRetries = 0
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNewNeedsAReplica(t *testing.T) {
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "no upstream base_url") {
		t.Fatalf("err = %v", err)
	}
	if _, err := New(Options{Replicas: []string{"ftp://x/v1"}}); err == nil || !strings.Contains(err.Error(), "not an http(s) URL") {
		t.Fatalf("err = %v", err)
	}
}

// The replica of a session is NeMo Gym's: int(sha256(id)[:8], 16) % n,
// values computed with Python.
func TestReplicaIsStickyAndNeMoGyms(t *testing.T) {
	b := newBackend(t, Options{Replicas: []string{"http://a/v1", "http://b/v1", "http://c/v1"}})
	for id, want := range map[string]int{"rollout-1": 2, "rollout-2": 2, "abc": 0, "s": 1, "": 0} {
		if got := b.replica(id); got != want {
			t.Errorf("replica(%q) = %d, want %d", id, got, want)
		}
	}
}

func TestResponsesTranslatesAndPreparesTheChatRequest(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		request  string
		stream   bool
		wantSent map[string]string // gjson path → raw value in the upstream request ("" = absent)
	}{
		{
			name:    "model set, stream off upstream, extra_body under the request",
			opts:    Options{Model: "served", ExtraBody: []byte(`{"temperature":0.1,"top_k":5}`)},
			request: `{"model":"asked","input":"hi","temperature":0.7,"stream":false}`,
			wantSent: map[string]string{
				"model": `"served"`, "temperature": "0.7", "top_k": "5", "stream": "",
				"messages.0.role": `"user"`, "messages.0.content.0.text": `"hi"`,
			},
		},
		{
			name:     "configured chat_template_kwargs where the request has none",
			opts:     Options{ChatTemplateKwargs: []byte(`{"enable_thinking":false}`)},
			request:  `{"input":"hi"}`,
			wantSent: map[string]string{"chat_template_kwargs.enable_thinking": "false"},
		},
		{
			name:     "a streaming client: the upstream call is not streamed",
			request:  `{"input":"hi","stream":true}`,
			stream:   true,
			wantSent: map[string]string{"stream": ""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, map[string]string{"/v1/chat/completions": completion})
			tc.opts.Replicas = []string{up.URL + "/v1"}
			b := newBackend(t, tc.opts)
			res, err := b.Responses(context.Background(), []byte(tc.request), modelserver.CallInfo{Stream: tc.stream})
			if err != nil {
				t.Fatal(err)
			}
			sent := up.sent("/v1/chat/completions")
			if len(sent) != 1 {
				t.Fatalf("upstream got %d requests", len(sent))
			}
			for path, want := range tc.wantSent {
				if got := gjson.Get(sent[0], path).Raw; got != want {
					t.Errorf("upstream %s = %s, want %s (request %s)", path, got, want, sent[0])
				}
			}
			if tc.stream {
				if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
					t.Errorf("Content-Type = %q", ct)
				}
				if !strings.Contains(string(res.Body), "event: response.completed") || !gjson.ValidBytes(res.Complete) {
					t.Errorf("stream body %s", res.Body)
				}
				return
			}
			if got := gjson.GetBytes(res.Body, "object").Str; got != "response" {
				t.Errorf("object = %q in %s", got, res.Body)
			}
			if got := gjson.GetBytes(res.Body, "output.0.content.0.text").Str; got != "hello" {
				t.Errorf("output text = %q in %s", got, res.Body)
			}
		})
	}
}

func TestResponsesKeepsTheRequestsOwnChatTemplateKwargs(t *testing.T) {
	up := newUpstream(t, map[string]string{"/v1/chat/completions": completion})
	b := newBackend(t, Options{Replicas: []string{up.URL + "/v1"}, ChatTemplateKwargs: []byte(`{"enable_thinking":false}`)})
	if _, err := b.ChatCompletions(context.Background(), []byte(`{"messages":[],"chat_template_kwargs":{"enable_thinking":true}}`), modelserver.CallInfo{}); err != nil {
		t.Fatal(err)
	}
	if got := gjson.Get(up.sent("/v1/chat/completions")[0], "chat_template_kwargs.enable_thinking").Raw; got != "true" {
		t.Errorf("enable_thinking = %s", got)
	}
}

func TestRequestsChatCannotCarryAre400s(t *testing.T) {
	up := newUpstream(t, map[string]string{"/v1/chat/completions": completion})
	b := newBackend(t, Options{Replicas: []string{up.URL + "/v1"}})
	for name, body := range map[string]string{
		"a program caller":            `{"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}","caller":{"type":"program","program_id":"p"}}]}`,
		"allowed_callers, even empty": `{"input":"hi","tools":[{"type":"function","name":"f","parameters":{},"allowed_callers":[]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := b.Responses(context.Background(), []byte(body), modelserver.CallInfo{})
			var se *modelserver.StatusError
			if !errors.As(err, &se) || se.Status != http.StatusBadRequest {
				t.Fatalf("err = %v, want a 400", err)
			}
			if code := gjson.GetBytes(se.Body, "error.code").Str; code != "unrepresentable_in_chat_completions" {
				t.Errorf("code = %q in %s", code, se.Body)
			}
		})
	}
	if n := len(up.sent("/v1/chat/completions")); n != 0 {
		t.Errorf("a rejected request reached the upstream %d times", n)
	}
}

func TestAnUnreadableCompletionIsA502(t *testing.T) {
	up := newUpstream(t, map[string]string{"/v1/chat/completions": `{"choices":"nope"}`})
	b := newBackend(t, Options{Replicas: []string{up.URL + "/v1"}})
	_, err := b.Responses(context.Background(), []byte(`{"input":"hi"}`), modelserver.CallInfo{})
	var se *modelserver.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusBadGateway || gjson.GetBytes(se.Body, "error.code").Str != "upstream_invalid_response" {
		t.Fatalf("err = %v", err)
	}
}

func TestTokenCapture(t *testing.T) {
	withPromptIDs := strings.Replace(tokenCompletion, `"object"`, `"prompt_token_ids":[1,2],"object"`, 1)
	tests := []struct {
		name         string
		opts         Options
		answer       string
		request      string
		wantTokenize bool
		wantErr      string
	}{
		{name: "vLLM's /tokenize fills missing prompt ids", opts: Options{Tokenize: true}, answer: tokenCompletion,
			request: `{"model":"x","messages":[{"role":"user","content":"hi"}],"top_logprobs":null}`, wantTokenize: true},
		{name: "prompt ids in the answer: no /tokenize", opts: Options{Tokenize: true}, answer: withPromptIDs,
			request: `{"messages":[{"role":"user","content":"hi"}]}`},
		{name: "n other than 1 is refused", opts: Options{Tokenize: true, Name: "policy"}, answer: tokenCompletion,
			request: `{"messages":[],"n":2}`, wantErr: "NeMo Gym server `policy` requires n=1 for token capture."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, map[string]string{"/v1/chat/completions": tc.answer, "/tokenize": `{"tokens":[1,2]}`})
			tc.opts.Replicas = []string{up.URL + "/v1"}
			tc.opts.Chat = openai.ChatOptions{ReturnTokenIDs: true}
			tc.opts.RequestTokenIDs = true
			b := newBackend(t, tc.opts)
			res, err := b.ChatCompletions(context.Background(), []byte(tc.request), modelserver.CallInfo{Stream: true})
			if tc.wantErr != "" {
				var se *modelserver.StatusError
				if !errors.As(err, &se) || se.Status != http.StatusBadRequest || gjson.GetBytes(se.Body, "error.message").Str != tc.wantErr {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sent := up.sent("/v1/chat/completions")[0]
			for path, want := range map[string]string{"logprobs": "true", "top_logprobs": "0", "return_tokens_as_token_ids": "true", "return_token_ids": "true", "stream": ""} {
				if got := gjson.Get(sent, path).Raw; got != want {
					t.Errorf("upstream %s = %s, want %s", path, got, want)
				}
			}
			tokenized := up.sent("/tokenize")
			if tc.wantTokenize != (len(tokenized) == 1) {
				t.Fatalf("/tokenize calls = %v", tokenized)
			}
			if tc.wantTokenize && gjson.Get(tokenized[0], "messages.0.content").Str != "hi" {
				t.Errorf("/tokenize got %s", tokenized[0])
			}
			if got := gjson.GetBytes(res.Complete, "choices.0.message.prompt_token_ids").Raw; got != "[1,2]" {
				t.Errorf("prompt_token_ids on the message = %s in %s", got, res.Complete)
			}
			if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type = %q", ct)
			}
		})
	}
}

func TestATokenizeFailureNamesTheReplicaWithoutItsSecrets(t *testing.T) {
	up := newUpstream(t, map[string]string{"/v1/chat/completions": tokenCompletion})
	base := strings.Replace(up.URL, "http://", "http://user:hunter2@", 1) + "/v1"
	b := newBackend(t, Options{Replicas: []string{base}, Tokenize: true, Chat: openai.ChatOptions{ReturnTokenIDs: true}})
	_, err := b.ChatCompletions(context.Background(), []byte(`{"messages":[]}`), modelserver.CallInfo{})
	if err == nil || !strings.Contains(err.Error(), "/tokenize") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v", err)
	}
}
