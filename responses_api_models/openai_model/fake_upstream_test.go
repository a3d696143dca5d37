package openaimodel

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/nemo-gym-go/gym/internal/server"
	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

// Canned upstream answers, shaped as OpenAI sends them so that real
// clients parse them. The Responses answer carries reasoning the way some
// providers send it (output_text inside a reasoning item).
const (
	responsesAnswer = `{"id":"resp_1","object":"response","created_at":1700000000,"status":"completed","model":"served-model",` +
		`"output":[{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"output_text","text":"thinking"}]},` +
		`{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hello from upstream","annotations":[]}]}],` +
		`"parallel_tool_calls":true,"tool_choice":"auto","tools":[],` +
		`"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":8}}`
	responsesAnswerFixed = `{"id":"resp_1","object":"response","created_at":1700000000,"status":"completed","model":"served-model",` +
		`"output":[{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"thinking"}]},` +
		`{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hello from upstream","annotations":[]}]}],` +
		`"parallel_tool_calls":true,"tool_choice":"auto","tools":[],` +
		`"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":8}}`

	chatAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"served-model",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello from upstream","refusal":null},"logprobs":null,"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`
)

// responsesEvents and chatEvents are streams split into events, as the
// upstream sends them.
var (
	responsesEvents = []string{
		`event: response.created` + "\n" + `data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1700000000,"status":"in_progress","model":"served-model","output":[],"tools":[],"parallel_tool_calls":true,"tool_choice":"auto"}}` + "\n\n",
		`event: response.output_item.added` + "\n" + `data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","status":"in_progress","content":[]}}` + "\n\n",
		`event: response.content_part.added` + "\n" + `data: {"type":"response.content_part.added","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}` + "\n\n",
		`event: response.output_text.delta` + "\n" + `data: {"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello from ","logprobs":[]}` + "\n\n",
		`event: response.output_text.delta` + "\n" + `data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"upstream","logprobs":[]}` + "\n\n",
		`event: response.output_text.done` + "\n" + `data: {"type":"response.output_text.done","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Hello from upstream","logprobs":[]}` + "\n\n",
		`event: response.content_part.done` + "\n" + `data: {"type":"response.content_part.done","sequence_number":6,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"Hello from upstream","annotations":[]}}` + "\n\n",
		`event: response.output_item.done` + "\n" + `data: {"type":"response.output_item.done","sequence_number":7,"output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hello from upstream","annotations":[]}]}}` + "\n\n",
		`event: response.completed` + "\n" + `data: {"type":"response.completed","sequence_number":8,"response":` + strings.Replace(responsesAnswer, `{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"output_text","text":"thinking"}]},`, "", 1) + `}` + "\n\n",
	}
	chatEvents = []string{
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"served-model","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n",
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"served-model","choices":[{"index":0,"delta":{"content":"Hello from "},"finish_reason":null}]}` + "\n\n",
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"served-model","choices":[{"index":0,"delta":{"content":"upstream"},"finish_reason":null}]}` + "\n\n",
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"served-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n",
		"data: [DONE]\n\n",
	}
)

// fakeUpstream records every request and answers with handle, which by
// default plays the canned answers above: streamed when the body asks.
type fakeUpstream struct {
	URL    string // the base URL, with /v1
	mu     sync.Mutex
	reqs   []upstreamRequest
	handle http.HandlerFunc
}

type upstreamRequest struct {
	Path   string
	Header http.Header
	Body   string
}

func newFakeUpstream(t testing.TB) *fakeUpstream {
	t.Helper()
	f := &fakeUpstream{handle: cannedAnswers}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		f.mu.Lock()
		f.reqs = append(f.reqs, upstreamRequest{Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: string(body)})
		h := f.handle
		f.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL + "/v1"
	return f
}

func (f *fakeUpstream) setHandler(h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handle = h
}

func (f *fakeUpstream) requests() []upstreamRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]upstreamRequest(nil), f.reqs...)
}

func (f *fakeUpstream) last(t *testing.T) upstreamRequest {
	t.Helper()
	reqs := f.requests()
	if len(reqs) == 0 {
		t.Fatal("the upstream saw no request")
	}
	return reqs[len(reqs)-1]
}

func cannedAnswers(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	stream := strings.Contains(string(body), `"stream":true`)
	switch {
	case r.URL.Path == "/v1/responses" && stream:
		writeEvents(w, responsesEvents)
	case r.URL.Path == "/v1/responses":
		writeJSON(w, responsesAnswer)
	case r.URL.Path == "/v1/chat/completions" && stream:
		writeEvents(w, chatEvents)
	case r.URL.Path == "/v1/chat/completions":
		writeJSON(w, chatAnswer)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, body)
}

func writeEvents(w http.ResponseWriter, events []string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, ev := range events {
		io.WriteString(w, ev)
		w.(http.Flusher).Flush()
	}
}

// startGym runs the registered openai_model server, as `gym serve` would
// build it from NEMO_GYM_CONFIG_DICT, in front of upstreamURL. extra holds
// further config lines of the instance (YAML, one key per line).
func startGym(t testing.TB, upstreamURL string, extra ...string) string {
	t.Helper()
	h, rt, err := buildGym(upstreamURL, extra...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.Wrap(rt, h))
	t.Cleanup(srv.Close)
	return srv.URL
}

func buildGym(upstreamURL string, extra ...string) (http.Handler, *server.Runtime, error) {
	yaml := "policy_model:\n  responses_api_models:\n    openai_model:\n" +
		"      entrypoint: app.py\n      host: 127.0.0.1\n      port: 0\n" +
		"      openai_base_url: " + upstreamURL + "\n      openai_api_key: sk-test\n      openai_model: served-model\n"
	for _, line := range extra {
		yaml += "      " + line + "\n"
	}
	rt, err := servertest.Runtime(yaml, "policy_model")
	if err != nil {
		return nil, nil, err
	}
	rt.Logger = slog.New(slog.DiscardHandler)
	factory, ok := server.Lookup(Kind)
	if !ok {
		return nil, nil, fmt.Errorf("%s is not registered", Kind)
	}
	h, err := factory(rt)
	return h, rt, err
}
