package modelserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/openai"
	"github.com/nemo-gym-go/gym/internal/server"
)

// stubBackend answers every call with fn and remembers what it was given.
type stubBackend struct {
	fn    func(body []byte, call CallInfo) (*Result, error)
	calls chan stubCall
}

type stubCall struct {
	route string
	body  string
	call  CallInfo
}

func (s *stubBackend) Responses(_ context.Context, body []byte, call CallInfo) (*Result, error) {
	s.calls <- stubCall{"responses", string(body), call}
	return s.fn(body, call)
}

func (s *stubBackend) ChatCompletions(_ context.Context, body []byte, call CallInfo) (*Result, error) {
	s.calls <- stubCall{"chat", string(body), call}
	return s.fn(body, call)
}

func serveStub(t *testing.T, fn func([]byte, CallInfo) (*Result, error)) (*stubBackend, string) {
	t.Helper()
	b := &stubBackend{fn: fn, calls: make(chan stubCall, 16)}
	rt := &server.Runtime{Instance: "policy_model", ServerType: "responses_api_models", Implementation: "stub", ClassName: "SimpleModelServer", Logger: slog.New(slog.DiscardHandler)}
	srv := httptest.NewServer(server.Wrap(rt, Handler(b, rt.Logger)))
	t.Cleanup(srv.Close)
	return b, srv.URL
}

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

var noModel = jsonl.Span{Start: -1, End: -1}

func TestHandlerCallInfo(t *testing.T) {
	b, url := serveStub(t, func(body []byte, _ CallInfo) (*Result, error) {
		return &Result{Header: http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"req_1"}, "Set-Cookie": {"upstream=1"}}, Body: body}, nil
	})
	tests := []struct {
		path, body string
		route      string
		want       CallInfo
	}{
		{"/v1/responses", `{"stream":false}`, "responses", CallInfo{Checked: true, Model: noModel}},
		{"/ng-rollout/17-3-a1/v1/responses", `{"stream":true, "model": "m"}`, "responses", CallInfo{RolloutID: "17-3-a1", Stream: true, Checked: true, Model: jsonl.Span{Start: 25, End: 28}}},
		{"/ng-rollout/0-0/training-token-capture/v1/chat/completions", `{}`, "chat", CallInfo{RolloutID: "0-0", TokenCapture: true, Checked: true, Model: noModel}},
	}
	for _, tt := range tests {
		resp, got := post(t, url+tt.path, tt.body)
		c := <-b.calls
		if resp.StatusCode != 200 || got != tt.body || c.route != tt.route || c.body != tt.body {
			t.Errorf("POST %s: %d %s via %s(%s)", tt.path, resp.StatusCode, got, c.route, c.body)
		}
		c.call.SessionID = ""
		if c.call != tt.want {
			t.Errorf("POST %s: backend got %+v, want %+v", tt.path, c.call, tt.want)
		}
		if resp.Header.Get("X-Request-Id") != "req_1" || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("POST %s: relayed headers %v", tt.path, resp.Header)
		}
		if cs := resp.Cookies(); len(cs) != 1 || cs[0].Name != "SimpleModelServer___policy_model" {
			t.Errorf("POST %s: cookies %v, want only the session cookie", tt.path, cs)
		}
	}
}

func TestHandlerErrors(t *testing.T) {
	var next error
	_, url := serveStub(t, func([]byte, CallInfo) (*Result, error) { return nil, next })
	tests := []struct {
		name       string
		path, body string
		err        error
		wantStatus int
		wantBody   string // a substring
	}{
		{"upstream 400 relayed as is", "/v1/responses", `{}`,
			&StatusError{Status: 400, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"error":{"message":"bad input"}}`), Tries: 1},
			400, `{"error":{"message":"bad input"}}`},
		{"upstream 429 after retries", "/v1/chat/completions", `{}`,
			&StatusError{Status: 429, Header: http.Header{"Retry-After": {"7"}}, Body: []byte(`rate limited`), Tries: 11},
			429, `rate limited`},
		{"timeout", "/v1/responses", `{}`, &TransportError{URL: "http://u/v1/responses", Tries: 2, Timeout: true, Err: context.DeadlineExceeded}, 504, `"type":"upstream_timeout"`},
		{"unreachable", "/v1/responses", `{}`, &TransportError{URL: "http://u/v1/responses", Tries: 11, Err: errors.New("connection refused")}, 502, `"type":"upstream_unreachable"`},
		{"a bug", "/v1/responses", `{}`, errors.New("something broke"), 500, `"something broke"`},
		{"invalid JSON", "/v1/responses", `{"a":`, nil, 422, `"type":"json_invalid"`},
		{"not an object", "/v1/chat/completions", `[1]`, nil, 422, `"type":"model_attributes_type"`},
		{"anthropic field with no Responses equivalent", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[],"stop_sequences":["x"]}`, nil, 400, `"type":"invalid_request_error"`},
		{"anthropic upstream error relayed", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
			&StatusError{Status: 401, Body: []byte(`{"error":{"message":"bad key"}}`), Tries: 1}, 401, `bad key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next = tt.err
			resp, body := post(t, url+tt.path, tt.body)
			if resp.StatusCode != tt.wantStatus || !strings.Contains(body, tt.wantBody) {
				t.Errorf("got %d %s, want %d with %s", resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
			if !json.Valid([]byte(body)) && tt.wantStatus != 429 {
				t.Errorf("body is not JSON: %s", body)
			}
			if se, ok := tt.err.(*StatusError); ok {
				for k, v := range se.Header {
					if resp.Header.Get(k) != v[0] {
						t.Errorf("header %s = %q, want the upstream's %q", k, resp.Header.Get(k), v[0])
					}
				}
			}
		})
	}
	resp, err := http.Get(url + "/v1/responses")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/responses = %d, want 405", resp.StatusCode)
	}
}

// A stream reaches the client event by event while the backend is still
// producing it. An event stream that breaks ends with the API's failure
// event (see TestRelayEndsTruncatedStreams); any other stream that breaks
// is cut off, not completed.
func TestHandlerRelaysStreams(t *testing.T) {
	for _, contentType := range []string{"text/event-stream", "application/x-ndjson"} {
		t.Run(contentType, func(t *testing.T) {
			events := make(chan string)
			broken := errors.New("upstream reset")
			_, url := serveStub(t, func([]byte, CallInfo) (*Result, error) {
				pr, pw := io.Pipe()
				go func() {
					for ev := range events {
						pw.Write([]byte(ev))
					}
					pw.CloseWithError(broken)
				}()
				return &Result{Header: http.Header{"Content-Type": {contentType}}, Stream: pr}, nil
			})
			resp, err := http.Post(url+"/v1/responses", "application/json", strings.NewReader(`{"stream":true}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.Header.Get("Content-Type") != contentType {
				t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
			}
			br := bufio.NewReader(resp.Body)
			for i := range 3 {
				ev := "data: {\"n\":" + string(rune('0'+i)) + "}\n\n"
				events <- ev
				got := make(chan string, 1)
				go func() {
					line, _ := br.ReadString('\n')
					blank, _ := br.ReadString('\n')
					got <- line + blank
				}()
				select {
				case g := <-got:
					if g != ev {
						t.Fatalf("event %d: got %q, want %q", i, g, ev)
					}
				case <-time.After(2 * time.Second):
					t.Fatalf("event %d did not arrive while the stream stays open", i)
				}
			}
			close(events)
			rest, err := io.ReadAll(br)
			if contentType != "text/event-stream" {
				if err == nil {
					t.Errorf("a broken stream ended cleanly (%q); the client must see it cut off", rest)
				}
				return
			}
			if err != nil || !strings.HasPrefix(string(rest), "event: response.failed\n") || !strings.Contains(string(rest), "upstream reset") {
				t.Errorf("a broken event stream ended with %q, %v; want a response.failed event saying why", rest, err)
			}
		})
	}
}

// A backend's own non-2xx answer to the Responses call behind /v1/messages
// is relayed, not converted as if it were a response.
func TestHandlerMessagesRelaysErrorAnswers(t *testing.T) {
	_, url := serveStub(t, func([]byte, CallInfo) (*Result, error) {
		return &Result{Status: 404, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"error":{"message":"no such recording"}}`)}, nil
	})
	resp, body := post(t, url+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 404 || body != `{"error":{"message":"no such recording"}}` {
		t.Errorf("got %d %s", resp.StatusCode, body)
	}
}

// A request that declares a large body allocates for what arrives, not for
// what it declared: a client that says 32 MiB and sends two bytes costs
// no 32 MiB.
func TestReadObjectAllocatesForWhatArrives(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(`{}`))
	r.ContentLength = 32 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	body, _, err := readObject(r)
	runtime.ReadMemStats(&after)
	if err != nil || string(body) != "{}" {
		t.Fatalf("readObject = %q, %v", body, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("reading a two-byte body allocated %d bytes", grew)
	}
}

// The check's one read accepts exactly the objects Valid accepts and finds what
// IsStreaming and SetModelChecked find by walking the body again: the same
// stream flag, and the same body with the configured model set.
func FuzzReadObjectFacts(f *testing.F) {
	for _, s := range []string{`{}`, `{"stream":true}`, `{"stream":"true","model":1}`, ` {"model" : "a", "model":"b", "stream" :true } `,
		`{"mod\u0065l":"x","str\u0065am":true}`, `{"a":{"model":"in"},"stream":false}`, `[1]`, `{"stream":true`, `{"model":null}` + "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		body := []byte(s)
		r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(s))
		got, facts, err := readObject(r)
		if accepted := err == nil; accepted != (jsonl.OpensObject(body) && jsonl.Valid(body)) {
			t.Fatalf("%q: accepted %v (%v)", s, accepted, err)
		}
		if err != nil {
			return
		}
		if facts.stream != openai.IsStreaming(body) {
			t.Fatalf("%q: stream %v, IsStreaming %v", s, facts.stream, openai.IsStreaming(body))
		}
		if want := openai.SetModelChecked(body, "served"); string(openai.SetModelAt(got, facts.model, "served")) != string(want) {
			t.Fatalf("%q: SetModelAt %s, SetModelChecked %s", s, openai.SetModelAt(got, facts.model, "served"), want)
		}
	})
}
