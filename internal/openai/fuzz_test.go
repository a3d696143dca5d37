package openai

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	"github.com/tidwall/gjson"
)

// seedSections adds the named sections of every fixture under dirs.
func seedSections(f *testing.F, add func(data []byte), sections []string, dirs ...string) {
	for _, dir := range dirs {
		paths, _ := filepath.Glob(filepath.Join("testdata", dir, "*.txtar"))
		for _, p := range paths {
			ar, err := txtar.ParseFile(p)
			if err != nil {
				f.Fatal(err)
			}
			for _, file := range ar.Files {
				for _, s := range sections {
					if file.Name == s {
						add(file.Data)
					}
				}
			}
		}
	}
}

func optsFromBits(b uint8) ChatOptions {
	return ChatOptions{
		ReplaceDeveloperRoleWithSystem: b&1 != 0,
		ReasoningField:                 b&2 != 0,
		ParseThink:                     b&4 != 0,
		ReturnTokenIDs:                 b&8 != 0,
		DropUnrepresentable:            b&16 != 0,
	}
}

// Only the two typed errors come out, with a field or a reason.
func checkTypedError(t *testing.T, err error) {
	var u *UnrepresentableError
	var inv *InvalidError
	switch {
	case errors.As(err, &u):
		if u.Field == "" || u.Reason == "" {
			t.Fatalf("UnrepresentableError without field or reason: %#v", u)
		}
	case errors.As(err, &inv):
		if inv.Reason == "" {
			t.Fatalf("InvalidError without reason: %#v", inv)
		}
	default:
		t.Fatalf("untyped error %T: %v", err, err)
	}
}

func FuzzFixProviderReasoning(f *testing.F) {
	seedSections(f, func(b []byte) { f.Add(b) }, []string{"in.json"}, "reasoning")
	seedSections(f, func(b []byte) { f.Add(b) }, []string{"response.json"}, "sse", "anthropic_response")
	f.Fuzz(func(t *testing.T, data []byte) {
		out := FixProviderReasoning(data)
		if !gjson.ValidBytes(data) {
			if string(out) != string(data) {
				t.Fatalf("invalid JSON was changed: %q -> %q", data, out)
			}
			return
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("valid JSON became invalid: %q -> %q", data, out)
		}
		if again := FixProviderReasoning(out); string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q -> %q", data, out, again)
		}
		if gjson.GetBytes(out, "output.#").Int() != gjson.GetBytes(data, "output.#").Int() {
			t.Fatalf("item count changed: %q -> %q", data, out)
		}
	})
}

func FuzzResponsesToChatRequest(f *testing.F) {
	seedSections(f, func(b []byte) {
		for _, o := range []uint8{0, 2, 4 | 8, 1 | 16, 31} {
			f.Add(b, o)
		}
	}, []string{"request.json", "responses.json"}, "chat_request", "roundtrip", "programmatic")
	f.Fuzz(func(t *testing.T, req []byte, bits uint8) {
		out, err := ResponsesToChatRequest(req, optsFromBits(bits))
		if err != nil {
			checkTypedError(t, err)
			if !gjson.ValidBytes(req) {
				var inv *InvalidError
				if !errors.As(err, &inv) {
					t.Fatalf("invalid JSON gave %v", err)
				}
			}
			return
		}
		if !gjson.ValidBytes(req) {
			t.Fatalf("invalid JSON accepted: %q", req)
		}
		r := gjson.ParseBytes(out)
		if !gjson.ValidBytes(out) || !r.IsObject() {
			t.Fatalf("output is not a JSON object: %q -> %q", req, out)
		}
		if !r.Get("messages").IsArray() || r.Get("messages.#").Int() == 0 {
			t.Fatalf("no messages: %q -> %q", req, out)
		}
		if r.Get("stream").Exists() {
			t.Fatalf("stream forwarded: %q", out)
		}
	})
}

func FuzzChatToResponsesResponse(f *testing.F) {
	var reqs [][]byte
	seedSections(f, func(b []byte) { reqs = append(reqs, b) }, []string{"request.json"}, "chat_response", "roundtrip")
	i := 0
	seedSections(f, func(b []byte) {
		f.Add(b, reqs[i%len(reqs)], uint8(i))
		i++
	}, []string{"chat.json"}, "chat_response", "roundtrip")
	f.Fuzz(func(t *testing.T, chat, req []byte, bits uint8) {
		out, err := ChatToResponsesResponse(chat, req, optsFromBits(bits))
		if err != nil {
			checkTypedError(t, err)
			return
		}
		if !gjson.ValidBytes(chat) {
			t.Fatalf("invalid JSON accepted: %q", chat)
		}
		r := gjson.ParseBytes(out)
		if !gjson.ValidBytes(out) || !r.IsObject() {
			t.Fatalf("output is not a JSON object: %q -> %q", chat, out)
		}
		if r.Get("output.#").Int() == 0 {
			t.Fatalf("empty output: %q -> %q", chat, out)
		}
		// What comes out can be streamed and rendered for Anthropic clients.
		stream := SynthesizeResponsesSSE(out)
		if last := gjson.GetBytes(lastData(stream), "type").Str; last != "response.completed" {
			t.Fatalf("stream of %q ends with %q", out, last)
		}
	})
}

// FuzzMessagesConversions covers the Anthropic side: request conversion,
// response rendering and its stream.
func FuzzMessagesConversions(f *testing.F) {
	seedSections(f, func(b []byte) { f.Add(b, uint8(0)) }, []string{"request.json", "messages.json", "response.json", "output.json"}, "anthropic_request", "anthropic_response", "programmatic", "sse")
	f.Fuzz(func(t *testing.T, data []byte, bits uint8) {
		if out, err := MessagesToResponsesRequest(data, optsFromBits(bits)); err != nil {
			checkTypedError(t, err)
		} else if !gjson.ValidBytes(out) {
			t.Fatalf("request output is not JSON: %q -> %q", data, out)
		}
		msg, err := ResponsesToMessagesResponse(data, "m")
		if err != nil {
			checkTypedError(t, err)
			return
		}
		if !gjson.ValidBytes(msg) {
			t.Fatalf("message is not JSON: %q -> %q", data, msg)
		}
		if last := gjson.GetBytes(lastData(SynthesizeMessagesSSE(msg)), "type").Str; last != "message_stop" {
			t.Fatalf("stream of %q ends with %q", msg, last)
		}
	})
}

// lastData returns the data of a stream's last event.
func lastData(stream []byte) []byte {
	s := string(stream)
	i := len(s) - 2
	for i > 0 && s[i-1] != '\n' {
		i--
	}
	line := s[i : len(s)-2]
	const p = "data: "
	if len(line) >= len(p) && line[:len(p)] == p {
		return []byte(line[len(p):])
	}
	return nil
}
