package openai

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// echoedRequestFields are the request parameters a Responses object repeats,
// in the order written. NeMo Gym's chat backends echo the same ones.
var echoedRequestFields = [...]string{
	"background", "instructions", "max_output_tokens", "max_tool_calls", "metadata",
	"previous_response_id", "prompt", "prompt_cache_key", "reasoning", "safety_identifier",
	"service_tier", "temperature", "text", "top_logprobs", "top_p", "truncation", "user",
}

// ChatToResponsesResponse builds the Responses object for a chat completion
// returned to a request made with ResponsesToChatRequest from req (the
// Responses request, with the server's model already set). Only the first
// choice is used, as NeMo Gym does.
//
// Output items, in order: a reasoning item (summary_text parts, as NeMo Gym
// writes them) from the message's reasoning_content or reasoning field and,
// with opts.ParseThink, from `<think>…</think>` blocks leading the content;
// an assistant message with the remaining content as output_text (written
// also when nothing else is, so the output is never empty); one
// function_call per tool call, with id and call_id both the call's id.
//
// finish_reason "length" and "content_filter" make the response
// incomplete. Usage goes through Usage, so an unreported count stays
// absent. Token data (vLLM) lands on the last output item under NeMo Gym's
// training names; see tokenFields.
func ChatToResponsesResponse(chatResp []byte, req []byte, opts ChatOptions) ([]byte, error) {
	chat, err := parseObject(chatResp, "chat completion")
	if err != nil {
		return nil, err
	}
	request := members{}
	if len(bytes.TrimSpace(req)) > 0 {
		r, err := parseObject(req, "request")
		if err != nil {
			return nil, err
		}
		request = index(r)
	}
	top := index(chat)
	var choice gjson.Result
	elems(top["choices"], func(_ int, c gjson.Result) bool {
		choice = c
		return false
	})
	if !choice.IsObject() {
		return nil, &InvalidError{Field: "choices", Reason: "a chat completion needs at least one choice object"}
	}
	msg := choice.Get("message")
	if present(msg) && !msg.IsObject() {
		return nil, &InvalidError{Field: "choices[0].message", Reason: "must be an object"}
	}

	items, err := outputItems(top["prompt_token_ids"], choice, msg, opts)
	if err != nil {
		return nil, err
	}

	o := newObject(len(chatResp) + 512)
	o.str("id", newID("resp_"))
	o.str("object", "response")
	if n, ok := integer(top["created"]); ok {
		o.int("created_at", n) // when the backend generated it
	} else {
		o.int("created_at", time.Now().Unix())
	}
	status, incomplete := "completed", "null"
	switch fr := choice.Get("finish_reason"); {
	case isString(fr, "length"):
		status, incomplete = "incomplete", `{"reason":"max_output_tokens"}`
	case isString(fr, "content_filter"):
		status, incomplete = "incomplete", `{"reason":"content_filter"}`
	}
	o.str("status", status)
	o.member("error", "null")
	o.member("incomplete_details", incomplete)
	if m := request["model"]; m.Type == gjson.String {
		o.member("model", m.Raw)
	} else if m := top["model"]; m.Type == gjson.String {
		o.member("model", m.Raw)
	}
	o.member("output", "["+strings.Join(items, ",")+"]")
	// NeMo Gym's request defaults, which its Responses objects always carry.
	echo(o, request, "parallel_tool_calls", "true")
	echo(o, request, "tool_choice", `"auto"`)
	echo(o, request, "tools", "[]")
	for _, f := range echoedRequestFields {
		if v, ok := request[f]; ok {
			o.member(f, v.Raw)
		}
	}
	if u := ParseChatUsage([]byte(top["usage"].Raw)); u.Reported() {
		o.member("usage", string(u.ResponsesJSON()))
	}
	return o.bytes(), nil
}

func echo(o *object, request members, field, dflt string) {
	if v := request[field]; present(v) {
		o.member(field, v.Raw)
	} else {
		o.member(field, dflt)
	}
}

// outputItems builds the output items; prompt is the completion's top-level
// prompt_token_ids (vLLM).
func outputItems(prompt, choice, msg gjson.Result, opts ChatOptions) ([]string, error) {
	content, err := messageText(msg.Get("content"))
	if err != nil {
		return nil, err
	}
	var reasoning []string
	for _, f := range [...]string{"reasoning_content", "reasoning"} {
		if v := msg.Get(f); v.Type == gjson.String && v.Str != "" {
			reasoning = append(reasoning, v.Str)
			break // vLLM sends both names with the same text
		}
	}
	if opts.ParseThink {
		var blocks []string
		blocks, content = leadingThink(content)
		reasoning = append(reasoning, blocks...)
	}

	var items []string
	if len(reasoning) > 0 {
		summary := newArray()
		for _, t := range reasoning {
			summary.add(`{"type":"summary_text","text":` + quote(t) + `}`)
		}
		// No status: NeMo Gym's reasoning items carry none, because OpenAI
		// rejects a replayed reasoning item that has one.
		items = append(items, `{"id":"`+newID("rs_")+`","type":"reasoning","summary":`+summary.String()+`}`)
	}

	toolCalls := msg.Get("tool_calls")
	calls := 0
	elems(toolCalls, func(_ int, _ gjson.Result) bool { calls++; return true })
	refusal := msg.Get("refusal")
	hasRefusal := refusal.Type == gjson.String && refusal.Str != ""
	if content != "" || hasRefusal || (len(items) == 0 && calls == 0) {
		parts := newArray()
		if content != "" || !hasRefusal {
			text := newObject(len(content) + 64)
			text.str("type", "output_text")
			text.str("text", content)
			text.member("annotations", "[]")
			if lp := choice.Get("logprobs.content"); lp.IsArray() && !opts.ReturnTokenIDs {
				text.member("logprobs", lp.Raw) // the chat and Responses entries have the same shape
			}
			parts.add(text.String())
		}
		if hasRefusal {
			parts.add(`{"type":"refusal","refusal":` + refusal.Raw + `}`)
		}
		m := newObject(len(content) + 128)
		m.str("id", newID("msg_"))
		m.str("type", "message")
		m.str("role", "assistant")
		m.str("status", "completed")
		m.member("content", parts.String())
		items = append(items, m.String())
	}

	var callErr error
	elems(toolCalls, func(i int, tc gjson.Result) bool {
		var item string
		item, callErr = toolCallItem(tc, fmt.Sprintf("choices[0].message.tool_calls[%d]", i))
		items = append(items, item)
		return callErr == nil
	})
	if callErr != nil {
		return nil, callErr
	}

	fields, err := tokenFields(prompt, choice, msg, opts.ReturnTokenIDs)
	if err != nil {
		return nil, err
	}
	if len(fields) > 0 {
		last := items[len(items)-1]
		o := &object{b: []byte(last[:len(last)-1])}
		for _, f := range fields {
			o.member(f.key, f.raw)
		}
		items[len(items)-1] = o.String()
	}
	return items, nil
}

// messageText reads chat message content: a string, null, or (from some
// providers) a list of text parts.
func messageText(content gjson.Result) (string, error) {
	switch {
	case content.Type == gjson.String:
		return content.Str, nil
	case !present(content):
		return "", nil
	case content.IsArray():
		var b strings.Builder
		elems(content, func(_ int, p gjson.Result) bool {
			if t := p.Get("text"); t.Type == gjson.String {
				b.WriteString(t.Str)
			}
			return true
		})
		return b.String(), nil
	}
	return "", &InvalidError{Field: "choices[0].message.content", Reason: "must be a string, null or a list of parts"}
}

// leadingThink splits the `<think>…</think>` blocks that open s off it, the
// rest kept byte for byte, so that `<think>r</think>` + rest rebuilds the
// model's text exactly. Only blocks at the very start count: a think tag
// further in is content (a model quoting markup), and an unclosed one
// (generation cut by max_tokens) stays content, as in NeMo Gym. Empty
// blocks are dropped, as NeMo Gym drops empty reasoning when it replays.
func leadingThink(s string) (blocks []string, rest string) {
	const openTag, closeTag = "<think>", "</think>"
	for strings.HasPrefix(s, openTag) {
		end := strings.Index(s, closeTag)
		if end < 0 {
			break
		}
		if b := s[len(openTag):end]; b != "" {
			blocks = append(blocks, b)
		}
		s = s[end+len(closeTag):]
	}
	return blocks, s
}

func toolCallItem(tc gjson.Result, where string) (string, error) {
	id := tc.Get("id")
	idRaw := id.Raw
	if id.Type != gjson.String || id.Str == "" {
		idRaw = quote(newID("call_"))
	}
	if isString(tc.Get("type"), "custom") {
		c := tc.Get("custom")
		if c.Get("name").Type != gjson.String || c.Get("input").Type != gjson.String {
			return "", &InvalidError{Field: where + ".custom", Reason: "a custom tool call needs a string name and input"}
		}
		o := newObject(len(tc.Raw) + 96)
		o.member("id", idRaw)
		o.str("type", "custom_tool_call")
		o.str("status", "completed")
		o.member("call_id", idRaw)
		o.member("name", c.Get("name").Raw)
		o.member("input", c.Get("input").Raw)
		return o.String(), nil
	}
	fn := tc.Get("function")
	name, args := fn.Get("name"), fn.Get("arguments")
	if name.Type != gjson.String {
		return "", &InvalidError{Field: where + ".function.name", Reason: "a tool call needs a string function name"}
	}
	argsRaw := args.Raw
	switch {
	case args.Type == gjson.String:
	case !present(args):
		argsRaw = `""`
	default: // some providers send the arguments as an object
		argsRaw = quote(args.Raw)
	}
	o := newObject(len(tc.Raw) + 96)
	o.member("id", idRaw)
	o.str("type", "function_call")
	o.str("status", "completed")
	o.member("call_id", idRaw)
	o.member("name", name.Raw)
	o.member("arguments", argsRaw)
	return o.String(), nil
}

// tokenFields gathers vLLM's token data for the last output item, where
// NeMo Gym's vllm_model puts it: prompt_token_ids, generation_token_ids,
// generation_log_probs and routed_experts.
//
// With strict (return_token_id_information) all three lists are required,
// from the first source that has them, as vllm_model reads them:
//  1. the assistant message's own bundle;
//  2. top-level prompt_token_ids with the choice's token_ids, log
//     probabilities from choice.logprobs;
//  3. ids and log probabilities from choice.logprobs entries of the form
//     "token_id:<n>" (vLLM's return_tokens_as_token_ids), with top-level
//     prompt_token_ids. vllm_model fetches those from /tokenize when vLLM
//     did not return them; that is the server's I/O, so the caller sets
//     them on the chat response before converting.
//
// Without strict, whatever token fields the backend returned are passed on
// under the same names, and nothing is required.
func tokenFields(prompt, choice, msg gjson.Result, strict bool) ([]kv, error) {
	experts := msg.Get("routed_experts")
	withExperts := func(f []kv) []kv {
		if present(experts) {
			f = append(f, kv{"routed_experts", experts.Raw})
		}
		return f
	}
	mp, mg, ml := msg.Get("prompt_token_ids"), msg.Get("generation_token_ids"), msg.Get("generation_log_probs")
	if !strict {
		var f []kv
		add := func(key string, vs ...gjson.Result) {
			for _, v := range vs {
				if present(v) {
					f = append(f, kv{key, v.Raw})
					return
				}
			}
		}
		add("prompt_token_ids", mp, prompt)
		add("generation_token_ids", mg, choice.Get("token_ids"))
		add("generation_log_probs", ml)
		return withExperts(f), nil
	}

	const where = "choices[0].message"
	if present(mp) || present(mg) || present(ml) {
		for _, f := range []struct {
			name string
			v    gjson.Result
		}{{"prompt_token_ids", mp}, {"generation_token_ids", mg}, {"generation_log_probs", ml}} {
			if !f.v.IsArray() {
				return nil, &InvalidError{Field: where + "." + f.name, Reason: "partial token metadata: this list is missing or not a list"}
			}
		}
		if n, m := arrayLen(mg), arrayLen(ml); n != m {
			return nil, &InvalidError{Field: where, Reason: fmt.Sprintf("%d generation token ids but %d log probabilities", n, m)}
		}
		return withExperts([]kv{{"prompt_token_ids", mp.Raw}, {"generation_token_ids", mg.Raw}, {"generation_log_probs", ml.Raw}}), nil
	}

	gen := choice.Get("token_ids")
	if present(gen) && !prompt.IsArray() {
		return nil, &InvalidError{Field: "prompt_token_ids", Reason: "partial token metadata: choices[0].token_ids came without prompt_token_ids"}
	}
	if !prompt.IsArray() {
		return nil, &InvalidError{Field: "prompt_token_ids", Reason: "return_token_id_information needs the prompt token ids; have vLLM return them (return_token_ids) or set them from /tokenize before converting"}
	}
	ids, logps, err := logprobTokens(choice.Get("logprobs"))
	if err != nil {
		return nil, err
	}
	genRaw := ids
	if present(gen) {
		if !gen.IsArray() || !sameInts(gen, ids) {
			return nil, &InvalidError{Field: "choices[0].token_ids", Reason: "the generation token ids disagree with the ids in choices[0].logprobs"}
		}
		genRaw = gen.Raw
	}
	return withExperts([]kv{{"prompt_token_ids", prompt.Raw}, {"generation_token_ids", genRaw}, {"generation_log_probs", logps}}), nil
}

// logprobTokens reads generation token ids and log probabilities from
// chat logprobs whose tokens are "token_id:<n>".
func logprobTokens(lp gjson.Result) (ids, logps string, err error) {
	content := lp.Get("content")
	if !content.IsArray() {
		return "", "", &InvalidError{Field: "choices[0].logprobs.content", Reason: "return_token_id_information needs per-token log probabilities (logprobs=true, top_logprobs=0), and the response has none"}
	}
	idArr, lpArr := newArray(), newArray()
	elems(content, func(i int, e gjson.Result) bool {
		where := fmt.Sprintf("choices[0].logprobs.content[%d]", i)
		tok := e.Get("token")
		n, ok := strings.CutPrefix(tok.Str, "token_id:")
		if tok.Type != gjson.String || !ok {
			err = &InvalidError{Field: where + ".token", Reason: `must be "token_id:<n>" (return_tokens_as_token_ids)`}
			return false
		}
		if _, perr := strconv.ParseInt(n, 10, 64); perr != nil {
			err = &InvalidError{Field: where + ".token", Reason: fmt.Sprintf("%q is not a token id", tok.Str)}
			return false
		}
		if e.Get("logprob").Type != gjson.Number {
			err = &InvalidError{Field: where + ".logprob", Reason: "must be a number"}
			return false
		}
		idArr.add(n)
		lpArr.add(e.Get("logprob").Raw)
		return true
	})
	return idArr.String(), lpArr.String(), err
}

func arrayLen(a gjson.Result) int {
	n := 0
	elems(a, func(_ int, _ gjson.Result) bool { n++; return true })
	return n
}

// sameInts compares a JSON list of ids with the ids list built from logprobs.
func sameInts(a gjson.Result, idsRaw string) bool {
	b := gjson.Parse(idsRaw)
	if arrayLen(a) != arrayLen(b) {
		return false
	}
	bs := b.Array()
	same := true
	elems(a, func(i int, v gjson.Result) bool {
		x, ok1 := integer(v)
		y, ok2 := integer(bs[i])
		same = ok1 && ok2 && x == y
		return same
	})
	return same
}

// MoveChatTokenFields is what NeMo Gym's vllm_model does to a chat
// completion when token ids were asked for: the first choice's message
// carries prompt_token_ids, generation_token_ids and generation_log_probs
// (from the message itself, or from vLLM's top-level prompt_token_ids,
// choices[0].token_ids and choices[0].logprobs), and the fields they came
// from are removed (the logprobs only when they were the source).
func MoveChatTokenFields(chatResp []byte) ([]byte, error) {
	chat, err := parseObject(chatResp, "chat completion")
	if err != nil {
		return nil, err
	}
	choice := chat.Get("choices.0")
	if !choice.IsObject() {
		return nil, &InvalidError{Field: "choices", Reason: "a chat completion needs at least one choice object"}
	}
	msg := choice.Get("message")
	if !msg.IsObject() {
		return nil, &InvalidError{Field: "choices[0].message", Reason: "must be an object"}
	}
	fields, err := tokenFields(chat.Get("prompt_token_ids"), choice, msg, true)
	if err != nil {
		return nil, err
	}
	bundled := present(msg.Get("prompt_token_ids")) || present(msg.Get("generation_token_ids")) || present(msg.Get("generation_log_probs"))
	out := chatResp
	for _, f := range fields {
		if out, err = sjson.SetRawBytes(out, "choices.0.message."+f.key, []byte(f.raw)); err != nil {
			return nil, err
		}
	}
	consumed := []string{"choices.0.token_ids", "prompt_token_ids"}
	if !bundled {
		consumed = append(consumed, "choices.0.logprobs")
	}
	for _, path := range consumed {
		if out, err = sjson.DeleteBytes(out, path); err != nil {
			return nil, err
		}
	}
	return out, nil
}
