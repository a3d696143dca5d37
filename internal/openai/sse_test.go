package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

type sseEvent struct {
	name string
	data []byte
}

// parseSSE reads `event: <name>\ndata: <json>\n\n` blocks strictly: every
// block has exactly those two lines (or only a data line, for chat).
func parseSSE(t *testing.T, stream []byte) []sseEvent {
	t.Helper()
	if !bytes.HasSuffix(stream, []byte("\n\n")) {
		t.Fatalf("stream does not end with a blank line: %q", stream)
	}
	var events []sseEvent
	for _, block := range strings.Split(strings.TrimSuffix(string(stream), "\n\n"), "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: ") && ev.name == "" && ev.data == nil:
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && ev.data == nil:
				ev.data = []byte(strings.TrimPrefix(line, "data: "))
			default:
				t.Fatalf("unexpected line %q in block %q", line, block)
			}
		}
		if ev.data == nil {
			t.Fatalf("block without data: %q", block)
		}
		events = append(events, ev)
	}
	return events
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}

// accumulator rebuilds a response from stream events the way the SDK
// helpers do (openai npm's ResponseStream is the strictest): items and
// parts are appended at exactly the next index, deltas are routed by
// item_id and must find their part, done events replace.
type accumulator struct {
	t        *testing.T
	snapshot map[string]any
	deltas   map[string]string // text deltas per item_id/content_index
}

func (a *accumulator) output(ev map[string]any) map[string]any {
	a.t.Helper()
	out := a.snapshot["output"].([]any)
	i := int(num(ev["output_index"]))
	if i < 0 || i >= len(out) {
		a.t.Fatalf("%s: output_index %d out of range %d", ev["type"], i, len(out))
	}
	item := out[i].(map[string]any)
	if id, ok := ev["item_id"]; ok && item["id"] != id {
		a.t.Fatalf("%s: item_id %v but item at %d is %v", ev["type"], id, i, item["id"])
	}
	return item
}

func appendAt(t *testing.T, list any, index float64, v any) []any {
	t.Helper()
	l, _ := list.([]any)
	if int(index) != len(l) {
		t.Fatalf("append at %v but the list has %d elements", index, len(l))
	}
	return append(l, v)
}

func num(v any) float64 {
	f, _ := v.(json.Number).Float64()
	return f
}

func (a *accumulator) add(ev map[string]any) {
	t := a.t
	t.Helper()
	typ := ev["type"].(string)
	switch typ {
	case "response.created":
		a.snapshot = ev["response"].(map[string]any)
	case "response.output_item.added":
		a.snapshot["output"] = appendAt(t, a.snapshot["output"], num(ev["output_index"]), ev["item"])
	case "response.output_item.done":
		item := a.output(ev)
		done := ev["item"].(map[string]any)
		// Only the status may differ: added says in_progress.
		built := map[string]any{}
		for k, v := range item {
			built[k] = v
		}
		if s, ok := done["status"]; ok {
			built["status"] = s
		}
		if !reflect.DeepEqual(built, done) {
			t.Errorf("deltas built item %v, done says %v", mustJSON(item), mustJSON(done))
		}
		a.snapshot["output"].([]any)[int(num(ev["output_index"]))] = done
	case "response.content_part.added":
		item := a.output(ev)
		item["content"] = appendAt(t, item["content"], num(ev["content_index"]), ev["part"])
	case "response.content_part.done":
		item := a.output(ev)
		item["content"].([]any)[int(num(ev["content_index"]))] = ev["part"]
	case "response.output_text.delta", "response.refusal.delta", "response.reasoning_text.delta":
		item := a.output(ev)
		part := item["content"].([]any)[int(num(ev["content_index"]))].(map[string]any)
		field := "text"
		if typ == "response.refusal.delta" {
			field = "refusal"
		}
		part[field] = part[field].(string) + ev["delta"].(string)
		a.deltas[fmt.Sprintf("%v/%v", ev["item_id"], ev["content_index"])] += ev["delta"].(string)
	case "response.output_text.done", "response.reasoning_text.done":
		part := a.output(ev)["content"].([]any)[int(num(ev["content_index"]))].(map[string]any)
		if part["text"] != ev["text"] {
			t.Errorf("%s: text %q, deltas gave %q", typ, ev["text"], part["text"])
		}
	case "response.refusal.done":
		part := a.output(ev)["content"].([]any)[int(num(ev["content_index"]))].(map[string]any)
		if part["refusal"] != ev["refusal"] {
			t.Errorf("refusal %q, deltas gave %q", ev["refusal"], part["refusal"])
		}
	case "response.reasoning_summary_part.added":
		item := a.output(ev)
		item["summary"] = appendAt(t, item["summary"], num(ev["summary_index"]), ev["part"])
	case "response.reasoning_summary_text.delta":
		part := a.output(ev)["summary"].([]any)[int(num(ev["summary_index"]))].(map[string]any)
		part["text"] = part["text"].(string) + ev["delta"].(string)
	case "response.reasoning_summary_text.done", "response.reasoning_summary_part.done":
		a.output(ev)
	case "response.function_call_arguments.delta":
		item := a.output(ev)
		item["arguments"] = item["arguments"].(string) + ev["delta"].(string)
	case "response.function_call_arguments.done":
		if item := a.output(ev); item["arguments"] != ev["arguments"] {
			t.Errorf("arguments %q, deltas gave %q", ev["arguments"], item["arguments"])
		}
	case "response.custom_tool_call_input.delta":
		item := a.output(ev)
		item["input"] = item["input"].(string) + ev["delta"].(string)
	case "response.custom_tool_call_input.done":
		if item := a.output(ev); item["input"] != ev["input"] {
			t.Errorf("input %q, deltas gave %q", ev["input"], item["input"])
		}
	case "response.completed", "response.failed":
		final := ev["response"].(map[string]any)
		if !reflect.DeepEqual(a.snapshot["output"], final["output"]) {
			t.Errorf("events built output\n%s\nfinal response has\n%s", mustJSON(a.snapshot["output"]), mustJSON(final["output"]))
		}
	default:
		t.Fatalf("event type %q is not one the SDK helpers accept", typ)
	}
}

func oneLine(s string) string { return strings.NewReplacer("\n", "", "\r", "").Replace(s) }

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestSynthesizeResponsesSSE(t *testing.T) {
	for _, f := range fixtures(t, "sse") {
		t.Run(f.name(), func(t *testing.T) {
			resp := f.must(t, "response.json")
			final, ok := f.get("final.json")
			if !ok {
				final = resp
			}
			events := parseSSE(t, SynthesizeResponsesSSE(resp))
			acc := &accumulator{t: t, deltas: map[string]string{}}
			for i, ev := range events {
				data := gjson.ParseBytes(ev.data)
				if data.Get("type").Str != ev.name {
					t.Fatalf("event %d: name %q but data type %q", i, ev.name, data.Get("type").Str)
				}
				if data.Get("sequence_number").Int() != int64(i) || data.Get("sequence_number").Type != gjson.Number {
					t.Fatalf("event %d has sequence_number %s", i, data.Get("sequence_number").Raw)
				}
				if u := data.Get("response.usage"); u.IsObject() && strings.Contains(u.Raw, "null") {
					t.Errorf("event %d: usage carries a null: %s", i, u.Raw)
				}
				acc.add(decode(t, ev.data).(map[string]any))
			}

			first, last := gjson.ParseBytes(events[0].data), gjson.ParseBytes(events[len(events)-1].data)
			if events[0].name != "response.created" || first.Get("response.status").Str != "in_progress" || first.Get("response.output").Raw != "[]" {
				t.Errorf("first event: %s", events[0].data)
			}
			wantLast := "response.completed"
			if gjson.GetBytes(resp, "status").Str == "failed" {
				wantLast = "response.failed"
			}
			if events[len(events)-1].name != wantLast {
				t.Errorf("last event is %s, want %s", events[len(events)-1].name, wantLast)
			}
			// Line breaks cannot travel in an SSE data line; nothing else changes.
			final = []byte(oneLine(string(final)))
			if got := last.Get("response").Raw; got != string(final) {
				t.Errorf("final response differs\n got: %s\nwant: %s", got, final)
			}
			// The created event is the final response, in progress and empty.
			if u := first.Get("response.usage").Raw; u != gjson.Get(string(final), "usage").Raw {
				t.Errorf("created usage %s, want %s", u, gjson.Get(string(final), "usage").Raw)
			}

			// Each item's done event holds the item's exact bytes, and the
			// text deltas of each part add up to its text.
			var done []string
			for _, ev := range events {
				if ev.name == "response.output_item.done" {
					done = append(done, gjson.GetBytes(ev.data, "item").Raw)
				}
			}
			items := gjson.GetBytes(resp, "output").Array()
			if len(done) != len(items) {
				t.Fatalf("%d done events for %d items", len(done), len(items))
			}
			for i, it := range items {
				if done[i] != oneLine(it.Raw) {
					t.Errorf("item %d done as %s, want %s", i, done[i], it.Raw)
				}
				if !isString(it.Get("type"), "message") || it.Get("id").Str == "" {
					continue
				}
				for j, part := range it.Get("content").Array() {
					if part.Get("type").Str != "output_text" {
						continue
					}
					if got := acc.deltas[fmt.Sprintf("%s/%d", it.Get("id").Str, j)]; got != part.Get("text").Str {
						t.Errorf("item %d part %d: deltas add up to %q, text is %q", i, j, got, part.Get("text").Str)
					}
				}
			}
		})
	}
}

// openai-go, a real client, reads the synthesized stream: every event
// decodes, the deltas spell the text, and response.completed carries the
// response with an unknown cache-write count absent and a zero present.
func TestSynthesizeResponsesSSEWithOpenAIGo(t *testing.T) {
	for _, tc := range []struct {
		fixture         string
		cacheWriteValid bool
	}{
		{"full", false},
		{"cache_write_zero", true},
		{"cache_write_absent", false},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			var resp []byte
			for _, f := range fixtures(t, "sse") {
				if f.name() == tc.fixture {
					resp = f.must(t, "response.json")
				}
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Write(SynthesizeResponsesSSE(resp))
			}))
			defer srv.Close()
			client := oai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
			stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: "m"})
			var text strings.Builder
			var completed *responses.Response
			n := 0
			for stream.Next() {
				ev := stream.Current()
				n++
				switch ev.Type {
				case "response.output_text.delta":
					text.WriteString(ev.Delta)
				case "response.completed":
					r := ev.AsResponseCompleted().Response
					completed = &r
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if completed == nil {
				t.Fatalf("no response.completed among %d events", n)
			}
			// Deltas spell the text of every message with an id; OutputText
			// covers all messages.
			var streamed, all strings.Builder
			for _, it := range gjson.GetBytes(resp, "output").Array() {
				for _, p := range it.Get("content").Array() {
					if it.Get("type").Str == "message" && p.Get("type").Str == "output_text" {
						all.WriteString(p.Get("text").Str)
						if it.Get("id").Str != "" {
							streamed.WriteString(p.Get("text").Str)
						}
					}
				}
			}
			if text.String() != streamed.String() {
				t.Errorf("deltas = %q, want %q", text.String(), streamed.String())
			}
			if got := completed.OutputText(); got != all.String() {
				t.Errorf("OutputText() = %q, want %q", got, all.String())
			}
			if completed.ID != gjson.GetBytes(resp, "id").Str {
				t.Errorf("id %q", completed.ID)
			}
			if v := completed.Usage.InputTokensDetails.JSON.CacheWriteTokens.Valid(); v != tc.cacheWriteValid {
				t.Errorf("cache_write_tokens present = %v, want %v (raw usage %s)", v, tc.cacheWriteValid, completed.Usage.RawJSON())
			}
		})
	}
}

func TestFailedResponsesSSE(t *testing.T) {
	events := parseSSE(t, FailedResponsesSSE(`upstream said "no" <500>`))
	if len(events) != 2 || events[0].name != "response.created" || events[1].name != "response.failed" {
		t.Fatalf("events: %+v", events)
	}
	created, failed := gjson.ParseBytes(events[0].data), gjson.ParseBytes(events[1].data)
	if created.Get("response.id").Str != failed.Get("response.id").Str || !strings.HasPrefix(created.Get("response.id").Str, "resp_") {
		t.Errorf("ids: %s / %s", created.Get("response.id"), failed.Get("response.id"))
	}
	if created.Get("response.status").Str != "in_progress" || created.Get("sequence_number").Int() != 0 {
		t.Errorf("created: %s", events[0].data)
	}
	want := `{"id":` + failed.Get("response.id").Raw + `,"object":"response","status":"failed","output":[],"error":{"code":"server_error","message":"upstream said \"no\" <500>"}}`
	if got := failed.Get("response").Raw; got != want || failed.Get("sequence_number").Int() != 1 {
		t.Errorf("failed response %s, want %s", got, want)
	}
	// An invalid response to synthesize fails the same way instead of
	// sending garbage.
	bad := parseSSE(t, SynthesizeResponsesSSE([]byte(`{"output":`)))
	if len(bad) != 2 || bad[1].name != "response.failed" {
		t.Errorf("invalid input gave %+v", bad)
	}
}

// A stream cut short ends with response.failed on the response it had
// shown: the same object with status failed and the error, every other
// member kept, numbered after the last event the client saw.
func TestFailedResponseEvent(t *testing.T) {
	shown := `{"id":"resp_up","object":"response","status":"in_progress","model":"m","output":[],"metadata":{"k":"v"}}`
	events := parseSSE(t, FailedResponseEvent([]byte(shown), 7, "cut <short>"))
	if len(events) != 1 || events[0].name != "response.failed" {
		t.Fatalf("events: %+v", events)
	}
	failed := gjson.ParseBytes(events[0].data)
	want := `{"id":"resp_up","object":"response","status":"failed","model":"m","output":[],"metadata":{"k":"v"},"error":{"code":"server_error","message":"cut <short>"}}`
	if failed.Get("type").Str != "response.failed" || failed.Get("sequence_number").Int() != 7 || failed.Get("response").Raw != want {
		t.Errorf("got %s, want sequence 7 and response %s", events[0].data, want)
	}
	for _, none := range [][]byte{nil, []byte(`{"id":`), []byte(`[1]`)} {
		events := parseSSE(t, FailedResponseEvent(none, 0, "m"))
		r := gjson.ParseBytes(events[0].data).Get("response")
		if len(events) != 1 || !strings.HasPrefix(r.Get("id").Str, "resp_") || r.Get("status").Str != "failed" || r.Get("error.message").Str != "m" {
			t.Errorf("without a usable response (%q): %+v", none, events)
		}
	}
}

// A failed chat stream ends as OpenAI's SDKs expect an error: a data chunk
// whose error they raise, then [DONE].
func TestChatErrorSSE(t *testing.T) {
	events := parseSSE(t, ChatErrorSSE(`engine "died"`))
	if len(events) != 2 || string(events[1].data) != "[DONE]" {
		t.Fatalf("events: %+v", events)
	}
	if got, want := string(events[0].data), `{"error":{"message":"engine \"died\"","type":"server_error","param":null,"code":null}}`; got != want {
		t.Errorf("error chunk %s, want %s", got, want)
	}
}

const chatForSSE = `{"id":"chatcmpl-7","object":"chat.completion","created":1730000000,"model":"m","system_fingerprint":"fp","prompt_token_ids":[1,2],"choices":[{"index":0,"message":{"role":"assistant","content":"The answer <b>is</b> 4.","reasoning_content":"2+2","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"call_2","type":"function","function":{"name":"g","arguments":"{}"}}]},"logprobs":{"content":[{"token":"The","logprob":-0.1,"bytes":[84,104,101],"top_logprobs":[]}]},"token_ids":[9],"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":0}}}`

func TestSynthesizeChatSSE(t *testing.T) {
	for _, includeUsage := range []bool{true, false} {
		stream := SynthesizeChatSSE([]byte(chatForSSE), includeUsage)
		events := parseSSE(t, stream)
		if last := events[len(events)-1]; string(last.data) != "[DONE]" || last.name != "" {
			t.Fatalf("stream does not end with data: [DONE]: %q", last.data)
		}
		var reasoning strings.Builder
		for i, ev := range events[:len(events)-1] {
			c := gjson.ParseBytes(ev.data)
			if c.Get("object").Str != "chat.completion.chunk" || c.Get("id").Str != "chatcmpl-7" {
				t.Errorf("chunk %d: %s", i, ev.data)
			}
			if (i == 0) != c.Get("prompt_token_ids").Exists() {
				t.Errorf("chunk %d: prompt_token_ids only on the first chunk: %s", i, ev.data)
			}
			reasoning.WriteString(c.Get("choices.0.delta.reasoning_content").Str)
		}
		if reasoning.String() != "2+2" {
			t.Errorf("reasoning deltas %q", reasoning.String())
		}
		usageChunk := gjson.ParseBytes(events[len(events)-2].data)
		if hasUsage := usageChunk.Get("usage").Exists(); hasUsage != includeUsage || (hasUsage && usageChunk.Get("choices").Raw != "[]") {
			t.Errorf("includeUsage=%v, usage chunk %s", includeUsage, events[len(events)-2].data)
		}

		// openai-go's accumulator rebuilds the completion from the chunks.
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write(stream)
		}))
		client := oai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
		s := client.Chat.Completions.NewStreaming(context.Background(), oai.ChatCompletionNewParams{Model: "m"})
		var acc oai.ChatCompletionAccumulator
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		srv.Close()
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		msg := acc.Choices[0].Message
		if msg.Content != "The answer <b>is</b> 4." || acc.Choices[0].FinishReason != "tool_calls" {
			t.Errorf("accumulated %q, finish %q", msg.Content, acc.Choices[0].FinishReason)
		}
		if len(msg.ToolCalls) != 2 || msg.ToolCalls[1].Function.Name != "g" || msg.ToolCalls[0].Function.Arguments != `{"a":1}` || msg.ToolCalls[0].ID != "call_1" {
			t.Errorf("tool calls %+v", msg.ToolCalls)
		}
		if includeUsage && acc.Usage.TotalTokens != 17 {
			t.Errorf("usage %+v", acc.Usage)
		}
	}
}

func TestSynthesizeChatSSEInvalid(t *testing.T) {
	events := parseSSE(t, SynthesizeChatSSE([]byte(`{`), true))
	if len(events) != 2 || !gjson.GetBytes(events[0].data, "error.message").Exists() || string(events[1].data) != "[DONE]" {
		t.Errorf("invalid completion gave %+v", events)
	}
}

func TestSynthesizeMessagesSSE(t *testing.T) {
	msg := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"thinking","thinking":"Plan.","signature":"sig"},{"type":"text","text":"Hi <there>"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls -la","n":[1,2]}},{"type":"redacted_thinking","data":"opaque"}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":30,"cache_read_input_tokens":800,"output_tokens":50}}`)
	events := parseSSE(t, SynthesizeMessagesSSE(msg))
	var names []string
	blocks := map[int64]map[string]any{}
	partial := map[int64]string{}
	for _, ev := range events {
		names = append(names, ev.name)
		d := gjson.ParseBytes(ev.data)
		if d.Get("type").Str != ev.name {
			t.Errorf("event %s has data type %s", ev.name, d.Get("type").Str)
		}
		i := d.Get("index").Int()
		switch ev.name {
		case "message_start":
			if d.Get("message.content").Raw != "[]" || d.Get("message.stop_reason").Type != gjson.Null || d.Get("message.id").Str != "msg_1" {
				t.Errorf("message_start %s", ev.data)
			}
		case "content_block_start":
			blocks[i] = decode(t, []byte(d.Get("content_block").Raw)).(map[string]any)
		case "content_block_delta":
			b := blocks[i]
			switch dd := d.Get("delta"); dd.Get("type").Str {
			case "text_delta":
				b["text"] = b["text"].(string) + dd.Get("text").Str
			case "thinking_delta":
				b["thinking"] = b["thinking"].(string) + dd.Get("thinking").Str
			case "signature_delta":
				b["signature"] = dd.Get("signature").Str
			case "input_json_delta":
				partial[i] += dd.Get("partial_json").Str
			}
		case "content_block_stop":
			if p, ok := partial[i]; ok {
				blocks[i]["input"] = decode(t, []byte(p))
			}
		case "message_delta":
			if d.Get("delta.stop_reason").Str != "tool_use" || d.Get("usage.output_tokens").Int() != 50 || d.Get("usage.cache_read_input_tokens").Int() != 800 {
				t.Errorf("message_delta %s", ev.data)
			}
		}
	}
	want := "message_start content_block_start content_block_delta content_block_delta content_block_stop content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop content_block_start content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events:\n%s\nwant\n%s", got, want)
	}
	for i, b := range gjson.GetBytes(msg, "content").Array() {
		if !reflect.DeepEqual(blocks[int64(i)], decode(t, []byte(b.Raw))) {
			t.Errorf("block %d rebuilt as %s, want %s", i, mustJSON(blocks[int64(i)]), b.Raw)
		}
	}
}
