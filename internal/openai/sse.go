package openai

import (
	"bytes"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Upstream calls are buffered, so a client that asked for a stream gets the
// finished result replayed as the events a real stream would have sent.
// The events are the ones OpenAI's SDK stream helpers (openai-go, the openai
// npm package's ResponseStream, openai-python) need to rebuild the final
// response: those helpers start from response.created, append each item
// from response.output_item.added, append each part from
// response.content_part.added, add text deltas to that part, and take the
// final response from response.completed. So an added item is written
// empty (content [], arguments "") and the text arrives as one delta.

type sseWriter struct {
	b   []byte
	seq int64
}

// event writes `event: <type>` and a data line holding type, the given
// members, and sequence_number.
func (w *sseWriter) event(typ string, members ...kv) {
	o := newObject(256)
	o.str("type", typ)
	for _, m := range members {
		o.member(m.key, m.raw)
	}
	o.int("sequence_number", w.seq)
	w.seq++
	w.b = append(w.b, "event: "...)
	w.b = append(w.b, typ...)
	w.b = append(w.b, "\ndata: "...)
	w.b = appendOneLine(w.b, o.bytes())
	w.b = append(w.b, "\n\n"...)
}

// appendOneLine appends JSON with its line breaks removed, since a line
// break would end the SSE data line. In valid JSON a CR or LF byte can only
// be insignificant whitespace (inside strings they are escaped), and no
// token needs whitespace to separate it, so dropping them changes nothing
// else: spaces, key order and every value keep their bytes.
func appendOneLine(b, data []byte) []byte {
	for {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			return append(b, data...)
		}
		b = append(b, data[:i]...)
		data = data[i+1:]
	}
}

// SynthesizeResponsesSSE replays a finished Responses object as a stream:
// response.created (status in_progress, output []), then for each output
// item response.output_item.added, the events that fill it in (content
// parts with their text, refusal, reasoning summary and reasoning text
// deltas; function and custom tool call input deltas), and
// response.output_item.done with the item as it is; then
// response.completed with the whole response, or response.failed if its
// status is failed. An incomplete response also ends in response.completed,
// as in NeMo Gym: the Python SDK's helper takes the final response from
// that event only. Items without an id, or of a type or shape this does not
// know, get only their added and done events, both carrying the whole item.
//
// The usage in every event is written through Usage: a count that is null
// or not a number (in particular an unreported cache_write_tokens) is left
// out, and nothing else in the usage changes. The input is not modified.
func SynthesizeResponsesSSE(resp []byte) []byte {
	root, err := parseObject(resp, "response")
	if err != nil {
		return FailedResponsesSSE("the model server produced an invalid Responses object: " + err.Error())
	}
	full := string(resp)
	if u := root.Get("usage"); u.IsObject() {
		if n := normalizeUsage(u.Raw); n != u.Raw {
			if e, ok := replaceValue(u, n); ok {
				full = string(splice(resp, []edit{e}))
			}
		}
	}
	created, _ := sjson.SetRaw(full, "status", `"in_progress"`) // full is a valid object
	created, _ = sjson.SetRaw(created, "output", "[]")

	w := &sseWriter{b: make([]byte, 0, 2*len(full)+1024)}
	w.event("response.created", kv{"response", created})
	elems(root.Get("output"), func(i int, item gjson.Result) bool {
		streamItem(w, i, item)
		return true
	})
	if isString(root.Get("status"), "failed") {
		w.event("response.failed", kv{"response", full})
	} else {
		w.event("response.completed", kv{"response", full})
	}
	return w.b
}

func streamItem(w *sseWriter, index int, item gjson.Result) {
	out := kv{"output_index", strconv.Itoa(index)}
	id := item.Get("id")
	if id.Type != gjson.String || id.Str == "" {
		// The SDK helpers route every delta by item_id; without an id only
		// whole-item events are safe.
		w.event("response.output_item.added", out, kv{"item", item.Raw})
		w.event("response.output_item.done", out, kv{"item", item.Raw})
		return
	}
	itemID := kv{"item_id", id.Raw}
	switch typ := item.Get("type"); {
	case isString(typ, "message") && streamableMessage(item):
		w.event("response.output_item.added", out, kv{"item", emptied(item, "content", "[]")})
		elems(item.Get("content"), func(j int, part gjson.Result) bool {
			streamMessagePart(w, out, itemID, kv{"content_index", strconv.Itoa(j)}, part)
			return true
		})
	case isString(typ, "reasoning") && streamableReasoning(item):
		added := emptied(item, "summary", "[]")
		if item.Get("content").IsArray() {
			added, _ = sjson.SetRaw(added, "content", "[]")
		}
		w.event("response.output_item.added", out, kv{"item", added})
		elems(item.Get("summary"), func(j int, part gjson.Result) bool {
			si := kv{"summary_index", strconv.Itoa(j)}
			text := part.Get("text")
			w.event("response.reasoning_summary_part.added", itemID, out, si, kv{"part", `{"type":"summary_text","text":""}`})
			if text.Str != "" {
				w.event("response.reasoning_summary_text.delta", itemID, out, si, kv{"delta", text.Raw})
			}
			w.event("response.reasoning_summary_text.done", itemID, out, si, kv{"text", text.Raw})
			w.event("response.reasoning_summary_part.done", itemID, out, si, kv{"part", part.Raw})
			return true
		})
		elems(item.Get("content"), func(j int, part gjson.Result) bool {
			ci := kv{"content_index", strconv.Itoa(j)}
			text := part.Get("text")
			w.event("response.content_part.added", itemID, out, ci, kv{"part", `{"type":"reasoning_text","text":""}`})
			if text.Str != "" {
				w.event("response.reasoning_text.delta", itemID, out, ci, kv{"delta", text.Raw})
			}
			w.event("response.reasoning_text.done", itemID, out, ci, kv{"text", text.Raw})
			w.event("response.content_part.done", itemID, out, ci, kv{"part", part.Raw})
			return true
		})
	case isString(typ, "function_call") && item.Get("arguments").Type == gjson.String:
		args := item.Get("arguments")
		w.event("response.output_item.added", out, kv{"item", emptied(item, "arguments", `""`)})
		if args.Str != "" {
			w.event("response.function_call_arguments.delta", itemID, out, kv{"delta", args.Raw})
		}
		w.event("response.function_call_arguments.done", itemID, out, kv{"arguments", args.Raw})
	case isString(typ, "custom_tool_call") && item.Get("input").Type == gjson.String:
		input := item.Get("input")
		w.event("response.output_item.added", out, kv{"item", emptied(item, "input", `""`)})
		if input.Str != "" {
			w.event("response.custom_tool_call_input.delta", itemID, out, kv{"delta", input.Raw})
		}
		w.event("response.custom_tool_call_input.done", itemID, out, kv{"input", input.Raw})
	default:
		w.event("response.output_item.added", out, kv{"item", item.Raw})
	}
	w.event("response.output_item.done", out, kv{"item", item.Raw})
}

// emptied is the item as response.output_item.added shows it: the member
// that the following events fill in set to its empty value, and a status
// (if the item has one) in_progress.
func emptied(item gjson.Result, member, empty string) string {
	s, _ := sjson.SetRaw(item.Raw, member, empty) // item is a valid object
	if item.Get("status").Exists() {
		s, _ = sjson.SetRaw(s, "status", `"in_progress"`)
	}
	return s
}

func streamMessagePart(w *sseWriter, out, itemID, ci kv, part gjson.Result) {
	switch t := part.Get("type"); {
	case isString(t, "output_text") && part.Get("text").Type == gjson.String:
		text := part.Get("text")
		logprobs := kv{"logprobs", "[]"}
		if lp := part.Get("logprobs"); lp.IsArray() {
			logprobs.raw = lp.Raw
		}
		w.event("response.content_part.added", itemID, out, ci, kv{"part", `{"type":"output_text","text":"","annotations":[]}`})
		if text.Str != "" {
			w.event("response.output_text.delta", itemID, out, ci, kv{"delta", text.Raw}, logprobs)
		}
		w.event("response.output_text.done", itemID, out, ci, kv{"text", text.Raw}, logprobs)
	case isString(t, "refusal") && part.Get("refusal").Type == gjson.String:
		refusal := part.Get("refusal")
		w.event("response.content_part.added", itemID, out, ci, kv{"part", `{"type":"refusal","refusal":""}`})
		if refusal.Str != "" {
			w.event("response.refusal.delta", itemID, out, ci, kv{"delta", refusal.Raw})
		}
		w.event("response.refusal.done", itemID, out, ci, kv{"refusal", refusal.Raw})
	default:
		w.event("response.content_part.added", itemID, out, ci, kv{"part", part.Raw})
	}
	w.event("response.content_part.done", itemID, out, ci, kv{"part", part.Raw})
}

// streamableMessage: content parts are objects, and none is reasoning
// text, which the SDK helpers would route to a reasoning item.
func streamableMessage(item gjson.Result) bool {
	content := item.Get("content")
	if !content.IsArray() {
		return false
	}
	ok := true
	elems(content, func(_ int, p gjson.Result) bool {
		ok = p.IsObject() && !isString(p.Get("type"), "reasoning_text")
		return ok
	})
	return ok
}

// streamableReasoning: every summary part is summary_text and every content
// part reasoning_text, each with a string text.
func streamableReasoning(item gjson.Result) bool {
	summary, content := item.Get("summary"), item.Get("content")
	if !summary.IsArray() || (present(content) && !content.IsArray()) {
		return false
	}
	ok := true
	check := func(typ string) func(int, gjson.Result) bool {
		return func(_ int, p gjson.Result) bool {
			ok = isString(p.Get("type"), typ) && p.Get("text").Type == gjson.String
			return ok
		}
	}
	elems(summary, check("summary_text"))
	if ok {
		elems(content, check("reasoning_text"))
	}
	return ok
}

// FailedResponsesSSE is the stream for a call that failed before producing
// a response: response.created, then response.failed with a server_error
// carrying message. It is sent with HTTP 200, since the stream has started
// by the time a client reads the failure (NeMo Gym does the same).
func FailedResponsesSSE(message string) []byte {
	created := `{"id":` + quote(newID("resp_")) + `,"object":"response","status":"in_progress","output":[]}`
	w := &sseWriter{}
	w.event("response.created", kv{"response", created})
	return append(w.b, FailedResponseEvent([]byte(created), w.seq, message)...)
}

// FailedResponseEvent is the response.failed event that ends a stream cut
// short after the client has seen part of it: response is the Responses
// object as the stream last showed it (from response.created or
// response.in_progress), which gets status failed and a server_error
// carrying message, every other member (output included) left as it was,
// so the client's view of the response stays whole; seq is the event's
// sequence_number, the one after the last event sent. Without a valid
// response object a minimal one with a new id stands in.
func FailedResponseEvent(response []byte, seq int64, message string) []byte {
	errObj := `{"code":"server_error","message":` + quote(message) + `}`
	var failed string
	if _, err := parseObject(response, "response"); err == nil {
		failed, _ = sjson.SetRaw(string(response), "status", `"failed"`) // response is a valid object
		failed, _ = sjson.SetRaw(failed, "error", errObj)
	} else {
		failed = `{"id":` + quote(newID("resp_")) + `,"object":"response","status":"failed","output":[],"error":` + errObj + `}`
	}
	w := &sseWriter{seq: seq}
	w.event("response.failed", kv{"response", failed})
	return w.b
}

// SynthesizeChatSSE replays a finished chat completion as
// chat.completion.chunk lines: for each choice a role chunk, then
// reasoning (under the field names the message used: reasoning_content
// and/or reasoning), content (with the choice's logprobs and vLLM
// token_ids), refusal, one chunk per tool call, and a finish chunk; then,
// if includeUsage and the completion has usage, a usage chunk with no
// choices; then `data: [DONE]`. vLLM's top-level prompt_token_ids ride on
// the first chunk, as vLLM streams them.
func SynthesizeChatSSE(chat []byte, includeUsage bool) []byte {
	root, err := parseObject(chat, "chat completion")
	if err != nil {
		return ChatErrorSSE("the model server produced an invalid chat completion: " + err.Error())
	}
	base := newObject(256)
	if v := root.Get("id"); v.Exists() {
		base.member("id", v.Raw)
	}
	base.str("object", "chat.completion.chunk")
	for _, f := range [...]string{"created", "model", "system_fingerprint", "service_tier"} {
		if v := root.Get(f); v.Exists() {
			base.member(f, v.Raw)
		}
	}
	var b []byte
	first := true
	chunk := func(choice string) {
		o := &object{b: append([]byte(nil), base.b...)}
		if first {
			if p := root.Get("prompt_token_ids"); present(p) {
				o.member("prompt_token_ids", p.Raw)
			}
			first = false
		}
		o.member("choices", choice)
		b = append(b, "data: "...)
		b = appendOneLine(b, o.bytes())
		b = append(b, "\n\n"...)
	}
	elems(root.Get("choices"), func(i int, choice gjson.Result) bool {
		index := strconv.Itoa(i)
		if n, ok := integer(choice.Get("index")); ok {
			index = strconv.FormatInt(n, 10)
		}
		delta := func(d string, extra ...kv) {
			c := newObject(len(d) + 64)
			c.member("index", index)
			c.member("delta", d)
			for _, e := range extra {
				c.member(e.key, e.raw)
			}
			c.member("finish_reason", "null")
			chunk("[" + c.String() + "]")
		}
		msg := choice.Get("message")
		role := `"assistant"`
		if r := msg.Get("role"); r.Type == gjson.String {
			role = r.Raw
		}
		delta(`{"role":` + role + `,"content":""}`)
		for _, f := range [...]string{"reasoning_content", "reasoning"} {
			if r := msg.Get(f); r.Type == gjson.String && r.Str != "" {
				delta(`{` + quote(f) + `:` + r.Raw + `}`)
			}
		}
		if c := msg.Get("content"); c.Type == gjson.String && c.Str != "" {
			var extra []kv
			if lp := choice.Get("logprobs"); present(lp) {
				extra = append(extra, kv{"logprobs", lp.Raw})
			}
			if t := choice.Get("token_ids"); present(t) {
				extra = append(extra, kv{"token_ids", t.Raw})
			}
			delta(`{"content":`+c.Raw+`}`, extra...)
		}
		if r := msg.Get("refusal"); r.Type == gjson.String && r.Str != "" {
			delta(`{"refusal":` + r.Raw + `}`)
		}
		elems(msg.Get("tool_calls"), func(j int, tc gjson.Result) bool {
			call := newObject(len(tc.Raw) + 16)
			call.member("index", strconv.Itoa(j))
			tc.ForEach(func(k, v gjson.Result) bool {
				if k.Str != "index" {
					call.rawMember(k.Raw, v.Raw)
				}
				return true
			})
			delta(`{"tool_calls":[` + call.String() + `]}`)
			return true
		})
		finish := choice.Get("finish_reason")
		fr := finish.Raw
		if !present(finish) {
			fr = `"stop"`
		}
		c := newObject(64)
		c.member("index", index)
		c.member("delta", "{}")
		c.member("finish_reason", fr)
		chunk("[" + c.String() + "]")
		return true
	})
	if u := root.Get("usage"); includeUsage && u.IsObject() {
		o := &object{b: append([]byte(nil), base.b...)}
		o.member("choices", "[]")
		o.member("usage", u.Raw)
		b = append(b, "data: "...)
		b = appendOneLine(b, o.bytes())
		b = append(b, "\n\n"...)
	}
	return append(b, "data: [DONE]\n\n"...)
}

// ChatErrorSSE ends a Chat Completions stream that failed: a data chunk in
// OpenAI's error shape, which OpenAI's SDKs raise as the stream's error,
// then `data: [DONE]` for clients that only wait for it, as vLLM ends a
// stream that failed.
func ChatErrorSSE(message string) []byte {
	return []byte(`data: {"error":{"message":` + quote(message) + `,"type":"server_error","param":null,"code":null}}` + "\n\ndata: [DONE]\n\n")
}
