package openaimodel

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func post(t *testing.T, url, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(data)
}

// What the upstream receives: the client's bytes with only model (always
// overwritten), extra_body (under the request) and, when configured,
// replayed reasoning items touched.
func TestRequestsUpstream(t *testing.T) {
	up := newFakeUpstream(t)
	plain := startGym(t, up.URL)
	extra := startGym(t, up.URL, `extra_body: {max_output_tokens: null, temperature: 0.25, metadata: {source: gym}}`)
	drop := startGym(t, up.URL, `drop_input_reasoning_items: "False"`, `extra_body: {}`)
	dropOn := startGym(t, up.URL, `drop_input_reasoning_items: true`)

	input := `[{"type":"message","role":"user","content":"hi"},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},` +
		`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}","caller":{"type":"program","program_id":"p1"}},{"type":"program","id":"p1","code":"f()"},{"type":"program_output","program_id":"p1","output":"1"}]`
	inputDropped := `[{"type":"message","role":"user","content":"hi"},` +
		`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}","caller":{"type":"program","program_id":"p1"}},{"type":"program","id":"p1","code":"f()"},{"type":"program_output","program_id":"p1","output":"1"}]`
	tests := []struct {
		name, gym, path, body, want string
	}{
		{"model overwritten in place, key order and unknown fields kept", plain, "/v1/responses",
			`{"zeta":1,"model":"gpt-4o","input":"hi","x_unknown":{"b":[1,2.50,"\u00e9"]}}`,
			`{"zeta":1,"model":"served-model","input":"hi","x_unknown":{"b":[1,2.50,"\u00e9"]}}`},
		{"model added when missing", plain, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}]}`,
			`{"messages":[{"role":"user","content":"hi"}],"model":"served-model"}`},
		{"extra_body under the request", extra, "/v1/responses",
			`{"model":"m","temperature":1,"input":"hi"}`,
			`{"max_output_tokens":null,"metadata":{"source":"gym"},"model":"served-model","temperature":1,"input":"hi"}`},
		{"extra_body on chat too", extra, "/v1/chat/completions",
			`{"messages":[],"metadata":{"mine":"yes"}}`,
			`{"max_output_tokens":null,"temperature":0.25,"messages":[],"metadata":{"mine":"yes"},"model":"served-model"}`},
		{"reasoning items kept by default; caller and program items untouched", drop, "/v1/responses",
			`{"model":"m","input":` + input + `}`,
			`{"model":"served-model","input":` + input + `}`},
		{"drop_input_reasoning_items", dropOn, "/v1/responses",
			`{"model":"m","input":` + input + `}`,
			`{"model":"served-model","input":` + inputDropped + `}`},
		{"drop_input_reasoning_items leaves chat alone", dropOn, "/v1/chat/completions",
			`{"model":"m","input":` + input + `}`,
			`{"model":"served-model","input":` + input + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := post(t, tt.gym+tt.path, tt.body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			got := up.last(t)
			if got.Path != tt.path {
				t.Errorf("upstream path %s, want %s", got.Path, tt.path)
			}
			if got.Body != tt.want {
				t.Errorf("upstream body\n got %s\nwant %s", got.Body, tt.want)
			}
		})
	}
}

func TestHeadersAndRolloutPrefix(t *testing.T) {
	up := newFakeUpstream(t)
	gym := startGym(t, up.URL,
		`openai_default_headers: {X-Team: rl, Authorization: "Bearer not-this"}`,
		`session_key_headers: [X-Session-Affinity, x-dynamo-session]`)
	tests := []struct {
		path    string
		session string // "" for none
	}{
		{"/ng-rollout/17-3-a1/v1/responses", "17-3-a1"},
		{"/ng-rollout/17-3/training-token-capture/v1/chat/completions", "17-3"},
		{"/v1/responses", ""},
		{"/v1/chat/completions", ""},
	}
	for _, tt := range tests {
		resp, _ := post(t, gym+tt.path, `{"input":"hi"}`, "Authorization", "Bearer client-key", "X-Client-Only", "1")
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s: %d", tt.path, resp.StatusCode)
		}
		if c := resp.Cookies(); len(c) != 1 || c[0].Name != "SimpleModelServer___policy_model" {
			t.Errorf("POST %s: cookies %v, want SimpleModelServer___policy_model", tt.path, c)
		}
		got := up.last(t)
		if !strings.HasPrefix(got.Path, "/v1/") || strings.Contains(got.Path, "ng-rollout") {
			t.Errorf("POST %s reached the upstream as %s; the prefix must not be forwarded", tt.path, got.Path)
		}
		h := got.Header
		if h.Get("Authorization") != "Bearer sk-test" || h.Get("X-Team") != "rl" || h.Get("X-Client-Only") != "" {
			t.Errorf("POST %s: upstream headers %v; want the configured key and defaults only", tt.path, h)
		}
		for _, name := range []string{"X-Session-Affinity", "X-Dynamo-Session"} {
			if v, ok := h[name]; tt.session == "" && ok || tt.session != "" && (len(v) != 1 || v[0] != tt.session) {
				t.Errorf("POST %s: %s = %q, want %q", tt.path, name, v, tt.session)
			}
		}
	}
}

func TestResponsesReasoningFix(t *testing.T) {
	up := newFakeUpstream(t)
	gym := startGym(t, up.URL)
	_, got := post(t, gym+"/v1/responses", `{"input":"hi"}`)
	if got != responsesAnswerFixed {
		t.Errorf("Responses answer\n got %s\nwant %s", got, responsesAnswerFixed)
	}

	// Shapes the fix must not touch, and items it must keep byte for byte.
	untouched := `{"id":"r","output":[` +
		`{"type":"reasoning","content":[{"type":"output_text","text":"t","logprobs":[]}]},` +
		`{"type":"reasoning","content":[{"type":"output_text","text":"t","annotations":[{"type":"x"}]}]},` +
		`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}","caller":{"type":"program","program_id":"p1"}},` +
		`{"type":"program","id":"p1","code":"f()","status":"completed"},` +
		`{"type":"program_output","program_id":"p1","output":[{"type":"output_text","text":"1"}]}` +
		`],"x_new_field":{"nested":true}}`
	up.setHandler(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, untouched) })
	if _, got := post(t, gym+"/v1/responses", `{"input":"hi"}`); got != untouched {
		t.Errorf("an answer with nothing to fix changed\n got %s\nwant %s", got, untouched)
	}
	// Chat Completions answers are never rewritten.
	up.setHandler(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, responsesAnswer) })
	if _, got := post(t, gym+"/v1/chat/completions", `{"messages":[]}`); got != responsesAnswer {
		t.Errorf("a chat answer was rewritten:\n%s", got)
	}
}

// Streams pass through event by event: each event reaches the client
// before the upstream sends the next, in order and byte for byte.
func TestStreamingPassThrough(t *testing.T) {
	up := newFakeUpstream(t)
	gym := startGym(t, up.URL)
	reasoningItem := `event: response.output_item.done` + "\n" + `data: {"type":"response.output_item.done","output_index":1,"item":{"type":"reasoning","content":[{"type":"output_text","text":"t"}]}}` + "\n\n"
	completed := responsesEvents[len(responsesEvents)-1]
	for _, tt := range []struct {
		path   string
		events []string
		want   []string
	}{
		{"/v1/responses", append(responsesEvents[:2:2], reasoningItem, completed), append(responsesEvents[:2:2], strings.Replace(reasoningItem, "output_text", "reasoning_text", 1), completed)},
		{"/v1/chat/completions", chatEvents, chatEvents},
	} {
		t.Run(tt.path, func(t *testing.T) {
			next := make(chan struct{})
			up.setHandler(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(200)
				w.(http.Flusher).Flush()
				for _, ev := range tt.events {
					select {
					case <-next:
					case <-time.After(5 * time.Second):
						return
					}
					io.WriteString(w, ev)
					w.(http.Flusher).Flush()
				}
			})
			resp, err := http.Post(gym+"/ng-rollout/1-0/"+strings.TrimPrefix(tt.path, "/"), "application/json", strings.NewReader(`{"model":"x","stream":true}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			br := bufio.NewReader(resp.Body)
			for i, want := range tt.want {
				next <- struct{}{}
				got := make(chan string, 1)
				go func() { got <- readEvent(br) }()
				select {
				case g := <-got:
					if g != want {
						t.Fatalf("event %d\n got %q\nwant %q", i, g, want)
					}
				case <-time.After(3 * time.Second):
					t.Fatalf("event %d did not arrive before the upstream sent the next one", i)
				}
			}
			if rest, err := io.ReadAll(br); err != nil || len(rest) > 0 {
				t.Errorf("after the last event: %q, %v", rest, err)
			}
			if body := up.last(t).Body; body != `{"model":"served-model","stream":true}` {
				t.Errorf("upstream body %s", body)
			}
		})
	}
}

// readEvent reads one SSE event: lines up to and including a blank one.
func readEvent(br *bufio.Reader) string {
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		b.WriteString(line)
		if err != nil || line == "\n" {
			return b.String()
		}
	}
}

func TestUpstreamErrorsReachTheCaller(t *testing.T) {
	up := newFakeUpstream(t)
	gym := startGym(t, up.URL, `max_retries: 3`, `retry_backoff_seconds: 0.001`, `retry_max_backoff_seconds: 0.01`, `request_timeout_seconds: 0.3`)
	var calls atomic.Int32
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		wantStatus int
		wantBody   string
		wantCalls  int32
	}{
		{"400 with its body", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"Invalid 'input': too long","type":"invalid_request_error","param":"input","code":null}}`)
		}, 400, `{"error":{"message":"Invalid 'input': too long","type":"invalid_request_error","param":"input","code":null}}`, 1},
		{"429 with Retry-After, then 200", func(w http.ResponseWriter, r *http.Request) {
			if calls.Load() == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(429)
				return
			}
			cannedAnswers(w, r)
		}, 200, responsesAnswerFixed, 2},
		{"503 until max_retries, then the upstream's answer", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(503)
			io.WriteString(w, `upstream overloaded`)
		}, 503, `upstream overloaded`, 4},
		{"timeout", func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, 504, `"type":"upstream_timeout"`, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls.Store(0)
			up.setHandler(func(w http.ResponseWriter, r *http.Request) { calls.Add(1); tt.handler(w, r) })
			resp, body := post(t, gym+"/v1/responses", `{"input":"hi"}`)
			if resp.StatusCode != tt.wantStatus || !strings.Contains(body, tt.wantBody) {
				t.Errorf("got %d %s, want %d %s", resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
			if got := calls.Load(); got != tt.wantCalls {
				t.Errorf("upstream saw %d calls, want %d", got, tt.wantCalls)
			}
		})
	}
}

func TestMaxConcurrentRequests(t *testing.T) {
	up := newFakeUpstream(t)
	var cur, peak atomic.Int32
	up.setHandler(func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(60 * time.Millisecond)
		cur.Add(-1)
		cannedAnswers(w, r)
	})
	gym := startGym(t, up.URL, `max_concurrent_requests: 2`)
	var wg sync.WaitGroup
	for i := range 10 {
		path := "/v1/responses"
		if i%2 == 1 {
			path = "/v1/chat/completions"
		}
		wg.Go(func() {
			if resp, body := post(t, gym+path, `{}`); resp.StatusCode != 200 {
				t.Errorf("%d %s", resp.StatusCode, body)
			}
		})
	}
	wg.Wait()
	if got := peak.Load(); got != 2 {
		t.Errorf("peak concurrent upstream calls %d, want 2", got)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		base  string
		extra []string
		want  string
	}{
		{"localhost:8000/v1", nil, "policy_model.openai_base_url: must be an http(s) URL"},
		{"http://x/v1", []string{"max_concurrent_requests: 0"}, "policy_model.max_concurrent_requests: an integer of at least 1"},
		{"http://x/v1", []string{"openai_default_headers: {X-N: 1}"}, "policy_model.openai_default_headers.X-N: a string is required"},
		{"http://x/v1", []string{"session_key_headers: X-Session"}, "policy_model.session_key_headers: a list of strings is required"},
		{"http://x/v1", []string{"request_timeout_seconds: -1"}, "policy_model.request_timeout_seconds: a number of seconds"},
		{"http://x/v1", []string{"drop_input_reasoning_items: maybe"}, "policy_model.drop_input_reasoning_items: a boolean is required"},
		{"http://x/v1", []string{"extra_body: [1]"}, "policy_model.extra_body: a map is required"},
		{"http://x/v1", []string{"extra_body: {temperature: .nan}"}, "extra_body.temperature is nan"},
		{"http://x/v1", []string{"session_key_headers: [Authorization]"}, "cannot include Authorization"},
	}
	for _, tt := range tests {
		_, _, err := buildGym(tt.base, tt.extra...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("config %s %v: error %v, want %q", tt.base, tt.extra, err, tt.want)
		}
	}
}

// /v1/messages goes upstream as a whole Responses call and comes back as an
// Anthropic message, or its event stream.
func TestAnthropicMessages(t *testing.T) {
	up := newFakeUpstream(t)
	gym := startGym(t, up.URL)
	req := `{"model":"claude-x","max_tokens":64,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`

	resp, body := post(t, gym+"/ng-rollout/3-1/v1/messages", req)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	for _, want := range []string{`"type":"message"`, `"model":"claude-x"`, `{"type":"text","text":"Hello from upstream"`, `"type":"thinking"`, `"stop_reason":"end_turn"`} {
		if !strings.Contains(body, want) {
			t.Errorf("message %s lacks %s", body, want)
		}
	}
	got := up.last(t)
	if got.Path != "/v1/responses" || !strings.Contains(got.Body, `"model":"served-model"`) || !strings.Contains(got.Body, `"max_output_tokens":64`) || strings.Contains(got.Body, `"stream"`) {
		t.Errorf("upstream got %s %s", got.Path, got.Body)
	}

	resp, body = post(t, gym+"/v1/messages", strings.Replace(req, `{"model"`, `{"stream":true,"model"`, 1))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if !strings.HasPrefix(body, "event: message_start\n") || !strings.Contains(body, `"text_delta"`) || !strings.Contains(body, "event: message_stop\n") {
		t.Errorf("stream:\n%s", body)
	}
	if strings.Contains(up.last(t).Body, `"stream"`) {
		t.Errorf("a Messages stream was requested upstream: %s", up.last(t).Body)
	}
}

// A client that leaves mid-stream cancels the upstream call with it, so an
// abandoned rollout does not keep generating.
func TestStreamClientGoneCancelsUpstream(t *testing.T) {
	up := newFakeUpstream(t)
	cancelled := make(chan struct{})
	up.setHandler(func(w http.ResponseWriter, r *http.Request) {
		writeEvents(w, chatEvents[:1])
		<-r.Context().Done()
		close(cancelled)
	})
	gym := startGym(t, up.URL)
	resp, err := http.Post(gym+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if ev := readEvent(bufio.NewReader(resp.Body)); ev != chatEvents[0] {
		t.Fatalf("first event %q", ev)
	}
	resp.Body.Close()
	select {
	case <-cancelled:
	case <-time.After(3 * time.Second):
		t.Fatal("the upstream call outlived the client")
	}
}
