package openai

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

func TestRoundTrip(t *testing.T) {
	for _, f := range fixtures(t, "roundtrip") {
		t.Run(f.name(), func(t *testing.T) {
			opts := f.opts(t)
			req := f.must(t, "request.json")
			chatReq, err := ResponsesToChatRequest(req, opts)
			if err != nil {
				t.Fatal(err)
			}
			f.check(t, "want_chat_request.json", chatReq, true)

			chat := f.must(t, "chat.json")
			resp, err := ChatToResponsesResponse(chat, req, opts)
			if err != nil {
				t.Fatal(err)
			}
			f.check(t, "want_response.json", normalizeIDs(resp), true)

			// The next turn: the same request with the model's output and
			// the tool results appended to its input.
			input := gjson.GetBytes(req, "input").Array()
			var items []string
			for _, it := range input {
				items = append(items, it.Raw)
			}
			for _, it := range gjson.GetBytes(resp, "output").Array() {
				items = append(items, it.Raw)
			}
			for _, it := range gjson.ParseBytes(f.must(t, "tool_outputs.json")).Array() {
				items = append(items, it.Raw)
			}
			next, err := sjson.SetRawBytes(req, "input", []byte("["+strings.Join(items, ",")+"]"))
			if err != nil {
				t.Fatal(err)
			}
			nextChat, err := ResponsesToChatRequest(next, opts)
			if err != nil {
				t.Fatal(err)
			}
			f.check(t, "want_next_chat_request.json", nextChat, true)

			// The assistant message sent back is what the model produced.
			msgs := gjson.GetBytes(nextChat, "messages").Array()
			sent := msgs[len(msgs)-1-len(gjson.ParseBytes(f.must(t, "tool_outputs.json")).Array())]
			produced := gjson.GetBytes(chat, "choices.0.message")
			if opts.ReasoningField {
				if sent.Get("reasoning_content").Str != produced.Get("reasoning_content").Str {
					t.Errorf("reasoning replayed as %q, produced %q", sent.Get("reasoning_content").Str, produced.Get("reasoning_content").Str)
				}
			} else if sent.Get("content").Str != produced.Get("content").Str {
				t.Errorf("assistant content replayed as %q, produced %q", sent.Get("content").Str, produced.Get("content").Str)
			}
			if a, b := sent.Get("tool_calls").Raw, produced.Get("tool_calls").Raw; a != b {
				t.Errorf("tool calls replayed as %s, produced %s", a, b)
			}
		})
	}
}
