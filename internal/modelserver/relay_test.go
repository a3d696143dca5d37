package modelserver

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// A Responses stream as OpenAI sends it, event by event.
var (
	respCreated   = "event: response.created\n" + `data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_up","object":"response","status":"in_progress","model":"m","output":[]}}` + "\n\n"
	respItemAdded = "event: response.output_item.added\n" + `data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","status":"in_progress","content":[]}}` + "\n\n"
	respDelta     = "event: response.output_text.delta\n" + `data: {"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel"}` + "\n\n"
	respCompleted = "event: response.completed\n" + `data: {"type":"response.completed","sequence_number":3,"response":{"id":"resp_up","object":"response","status":"completed","model":"m","output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hel","annotations":[]}]}]}}` + "\n\n"
	respError     = "event: error\n" + `data: {"type":"error","sequence_number":1,"code":"server_error","message":"boom","param":null}` + "\n\n"

	chatRole    = `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	chatContent = `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}` + "\n\n"
	chatFinish  = `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	chatDone    = "data: [DONE]\n\n"
	chatError   = `data: {"error":{"message":"engine died","type":"server_error"}}` + "\n\n"
)

// streamUpstream answers with an event stream: each chunk is written and
// flushed, then the answer ends cleanly ("eof") or its connection is cut
// ("drop"), leaving the chunked body unterminated.
func streamUpstream(contentType, end string, chunks ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		for _, c := range chunks {
			io.WriteString(w, c)
			w.(http.Flusher).Flush()
		}
		if end == "drop" {
			panic(http.ErrAbortHandler)
		}
	}
}

// sseEvents splits a stream into its events (each with its blank line).
func sseEvents(s string) []string {
	var out []string
	for s != "" {
		i := strings.Index(s, "\n\n")
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i+2])
		s = s[i+2:]
	}
	return out
}

func dataOf(event string) gjson.Result {
	for _, line := range strings.Split(event, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			return gjson.Parse(d)
		}
	}
	return gjson.Result{}
}

const truncatedMessage = "the upstream stream ended before its final event"

// A stream the upstream ends, or loses, before its terminal event ends
// downstream with the API's own failure event, after every event the
// upstream completed and none it did not; a complete stream passes
// through byte for byte. One log line says so, naming the redacted URL.
func TestRelayEndsTruncatedStreams(t *testing.T) {
	const sse = "text/event-stream"
	tests := []struct {
		name   string
		path   string
		up     http.HandlerFunc
		prefix string // what the client gets before any added event
		// check judges the added events; nil means none may be added.
		check func(t *testing.T, added []string)
	}{
		{"responses complete", "/v1/responses",
			streamUpstream(sse, "eof", respCreated, respItemAdded, respDelta, respCompleted), respCreated + respItemAdded + respDelta + respCompleted, nil},
		{"responses complete, CRLF, final [DONE] without a line end", "/v1/responses",
			streamUpstream(sse, "eof", strings.ReplaceAll(respCreated+respCompleted, "\n", "\r\n"), "data: [DONE]"),
			strings.ReplaceAll(respCreated+respCompleted, "\n", "\r\n") + "data: [DONE]", nil},
		{"responses upstream error event", "/v1/responses",
			streamUpstream(sse, "eof", respCreated, respError), respCreated + respError, nil},
		{"responses EOF before response.completed", "/v1/responses",
			streamUpstream(sse, "eof", respCreated, respItemAdded, respDelta), respCreated + respItemAdded + respDelta, checkResponseFailed("resp_up", 3)},
		{"responses connection dropped mid-event", "/v1/responses",
			streamUpstream(sse, "drop", respCreated, respItemAdded, "event: response.output_text.delta\n", `data: {"type":"response.output_te`),
			respCreated + respItemAdded, checkResponseFailed("resp_up", 2)},
		{"responses dropped between the lines of an event", "/v1/responses",
			streamUpstream(sse, "drop", respCreated, "event: response.output_text.delta\n"), respCreated, checkResponseFailed("resp_up", 1)},
		{"responses EOF before any event", "/v1/responses",
			streamUpstream(sse, "eof"), "", func(t *testing.T, added []string) {
				if len(added) != 2 || dataOf(added[0]).Get("type").Str != "response.created" {
					t.Fatalf("added %q, want response.created then response.failed", added)
				}
				checkResponseFailed(dataOf(added[0]).Get("response.id").Str, 1)(t, added[1:])
			}},
		{"chat complete", "/v1/chat/completions",
			streamUpstream(sse, "eof", chatRole, chatContent, chatFinish, chatDone), chatRole + chatContent + chatFinish + chatDone, nil},
		{"chat upstream error chunk", "/v1/chat/completions",
			streamUpstream(sse, "eof", chatRole, chatError), chatRole + chatError, nil},
		{"chat EOF before [DONE]", "/v1/chat/completions",
			streamUpstream(sse, "eof", chatRole, chatContent, chatFinish), chatRole + chatContent + chatFinish, checkChatError},
		{"chat connection dropped mid-chunk", "/v1/chat/completions",
			streamUpstream(sse, "drop", chatRole, `data: {"id":"c1","obj`), chatRole, checkChatError},
		{"not an event stream", "/v1/responses",
			streamUpstream("application/json", "eof", `{"id":"resp_up",`, `"status":"completed"}`), `{"id":"resp_up","status":"completed"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, base := startUpstream(t, tt.up)
			url, logs := serveThrough(t, testOptions(secretBase(hostOf(base))))
			resp, err := http.Post(url+tt.path, "application/json", strings.NewReader(`{"stream":true}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			data, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("the stream did not end cleanly: %v (got %q)", err, data)
			}
			got := string(data)
			rest, ok := strings.CutPrefix(got, tt.prefix)
			if !ok {
				t.Fatalf("got\n%q\nwant it to start with\n%q", got, tt.prefix)
			}
			lines := strings.Count(logs.String(), truncatedMessage)
			if tt.check == nil {
				if rest != "" || lines != 0 {
					t.Errorf("added %q and logged %d truncation lines to a complete stream", rest, lines)
				}
				return
			}
			tt.check(t, sseEvents(rest))
			if lines != 1 {
				t.Errorf("logged the truncation %d times, want once:\n%s", lines, logs)
			}
			if !strings.Contains(logs.String(), "gymuser:xxxxx@") || leaked(logs.String(), urlPassword, queryKey) != nil {
				t.Errorf("the truncation line does not name the redacted URL, or leaks a secret:\n%s", logs)
			}
		})
	}
}

// checkResponseFailed expects one response.failed event numbered seq for
// response id, saying why.
func checkResponseFailed(id string, seq int64) func(*testing.T, []string) {
	return func(t *testing.T, added []string) {
		t.Helper()
		if len(added) != 1 || !strings.HasPrefix(added[0], "event: response.failed\n") {
			t.Fatalf("added %q, want one response.failed event", added)
		}
		d := dataOf(added[0])
		if d.Get("type").Str != "response.failed" || d.Get("sequence_number").Int() != seq || d.Get("response.id").Str != id ||
			d.Get("response.status").Str != "failed" || d.Get("response.error.code").Str != "server_error" ||
			!strings.Contains(d.Get("response.error.message").Str, truncatedMessage) {
			t.Errorf("response.failed data %s, want sequence %d, response %s failed with a server_error saying %q", d.Raw, seq, id, truncatedMessage)
		}
	}
}

func checkChatError(t *testing.T, added []string) {
	t.Helper()
	if len(added) != 2 || added[1] != chatDone {
		t.Fatalf("added %q, want an error chunk, then [DONE]", added)
	}
	if e := dataOf(added[0]).Get("error"); e.Get("type").Str != "server_error" || !strings.Contains(e.Get("message").Str, truncatedMessage) {
		t.Errorf("error chunk %s, want a server_error saying %q", added[0], truncatedMessage)
	}
}

// The official client sees the failure: a response.failed event on the
// Responses stream, a stream error on Chat Completions.
func TestTruncatedStreamsReachOpenAIClients(t *testing.T) {
	sse := "text/event-stream"
	_, base := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/responses") {
			streamUpstream(sse, "drop", respCreated, respItemAdded, respDelta)(w, r)
		} else {
			streamUpstream(sse, "drop", chatRole, chatContent)(w, r)
		}
	})
	url, _ := serveThrough(t, testOptions(base))
	client := openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))

	stream := client.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	var last responses.ResponseStreamEventUnion
	for stream.Next() {
		last = stream.Current()
	}
	if err := stream.Err(); err != nil || last.Type != "response.failed" || !strings.Contains(last.Response.Error.Message, truncatedMessage) {
		t.Errorf("Responses stream ended with %q (%s), %v; want response.failed saying %q", last.Type, last.RawJSON(), err, truncatedMessage)
	}
	stream.Close()

	chat := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	for chat.Next() {
	}
	if err := chat.Err(); err == nil || !strings.Contains(err.Error(), truncatedMessage) {
		t.Errorf("Chat Completions stream error %v, want one saying %q", err, truncatedMessage)
	}
	chat.Close()
}

// /v1/messages never streams upstream: it converts a whole Responses
// answer. An upstream body cut short therefore fails before the first
// event, as an HTTP error in Anthropic's shape rather than a stream.
func TestMessagesWithTruncatedUpstreamBody(t *testing.T) {
	_, base := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, `{"id":"resp_up","object":"response","status":"comp`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	o := testOptions(secretBase(hostOf(base)))
	o.MaxRetries = 1
	url, logs := serveThrough(t, o)
	resp, body := post(t, url+"/v1/messages", `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	e := gjson.Parse(body)
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Content-Type") != "application/json" ||
		e.Get("type").Str != "error" || e.Get("error.type").Str != "api_error" || !strings.Contains(e.Get("error.message").Str, "gymuser:xxxxx@") {
		t.Errorf("got %d %s %s, want a 502 Anthropic api_error naming the redacted URL", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if s := leaked(body+logs.String(), urlPassword, queryKey); s != nil {
		t.Errorf("secrets %q leaked: %s\n%s", s, body, logs)
	}
}

// The framer hands on every byte, in events that end at their blank line
// whatever the line endings, however the reads split them.
func TestSSEFramer(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	tests := []struct {
		name, in string
		want     []string // name=data of the events that carry data
	}{
		{"LF", "event: a\ndata: 1\n\n: comment\n\ndata: 2\ndata: 3\n\n", []string{"a=1", "=2\n3"}},
		{"CRLF", "event: a\r\ndata: 1\r\n\r\ndata:2\r\n\r\n", []string{"a=1", "=2"}},
		{"CR", "event: a\rdata: 1\r\rdata: 2\r\r", []string{"a=1", "=2"}},
		{"mixed", "data: 1\r\n\ndata: 2\n\r\n", []string{"=1", "=2"}},
		{"an event larger than the buffer", "data: " + big + "\n\n", []string{"=" + big}},
		{"an unfinished event stays held", "data: 1\n\ndata: 2\n", []string{"=1"}},
	}
	for _, tt := range tests {
		for rname, wrap := range map[string]func(io.Reader) io.Reader{"whole": func(r io.Reader) io.Reader { return r }, "one byte": iotest.OneByteReader} {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				f := &sseFramer{buf: make([]byte, 0, 64)}
				r := wrap(strings.NewReader(tt.in))
				var handed strings.Builder
				var got []string
				for {
					err := f.read(r)
					for ev := f.next(); ev != nil; ev = f.next() {
						handed.Write(ev)
						if name, data := sseFields(ev); data != nil {
							got = append(got, string(name)+"="+string(data))
						}
					}
					if err != nil {
						break
					}
				}
				if held := string(f.buf[f.start:]); handed.String()+held != tt.in {
					t.Errorf("handed on %q and held %q, want all of %q", handed.String(), held, tt.in)
				}
				if strings.Join(got, "|") != strings.Join(tt.want, "|") {
					t.Errorf("events %q, want %q", got, tt.want)
				}
			})
		}
	}
}

// BenchmarkRelayEvents measures what following a stream costs per event on
// top of copying it: framing and reading each event's type.
func BenchmarkRelayEvents(b *testing.B) {
	for _, api := range []struct {
		name  string
		api   streamAPI
		event string
	}{{"responses", responsesAPI, respDelta}, {"chat", chatAPI, chatContent}} {
		stream := strings.Repeat(api.event, 1000)
		b.Run(api.name, func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			f := &sseFramer{buf: make([]byte, 0, 32<<10)}
			for b.Loop() {
				end := &streamEnd{api: api.api}
				r := strings.NewReader(stream)
				f.buf, f.start, f.pos = f.buf[:0], 0, 0
				for {
					err := f.read(r)
					for ev := f.next(); ev != nil; ev = f.next() {
						end.terminal(sseFields(ev))
					}
					if err != nil {
						break
					}
				}
			}
		})
	}
}
