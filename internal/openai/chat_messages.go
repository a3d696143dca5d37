package openai

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// trainingFields are the token fields NeMo Gym puts on the last output
// item of a turn for RL training, and replays on that turn's assistant
// message when return_token_id_information is on.
var trainingFields = [...]string{"prompt_token_ids", "generation_token_ids", "generation_log_probs", "routed_experts"}

// chatMessages builds the messages of a chat request. An assistant turn is
// several Responses items (reasoning, message, function calls) but one
// chat message, so its parts are gathered until a non-assistant item or
// the end closes the turn.
type chatMessages struct {
	opts ChatOptions
	out  *array

	text       strings.Builder
	reasoning  []string
	refusal    strings.Builder
	hasRefusal bool
	toolCalls  *array
	tokens     []kv
}

func (c *chatRequest) messages(top members) (string, error) {
	m := &chatMessages{opts: c.opts, out: newArray(), toolCalls: newArray()}
	if ins := top["instructions"]; present(ins) {
		if ins.Type != gjson.String {
			return "", &InvalidError{Field: "instructions", Reason: "must be a string"}
		}
		// A system message, not developer: Responses calls instructions a
		// system (or developer) message, and system is the role every chat
		// template and hosted chat API knows.
		if ins.Str != "" {
			m.out.add(`{"role":"system","content":` + ins.Raw + `}`)
		}
	}
	switch input := top["input"]; {
	case input.Type == gjson.String:
		// As NeMo Gym wraps it: one user message with one text part.
		m.out.add(`{"role":"user","content":[{"type":"text","text":` + input.Raw + `}]}`)
	case input.IsArray():
		var err error
		elems(input, func(i int, item gjson.Result) bool {
			err = m.item(item, fmt.Sprintf("input[%d]", i))
			return err == nil
		})
		if err != nil {
			return "", err
		}
	case present(input):
		return "", &InvalidError{Field: "input", Reason: "must be a string or a list of items"}
	}
	m.flush()
	if m.out.empty() {
		return "", &InvalidError{Field: "input", Reason: "a Chat Completions request needs at least one message, and neither input nor instructions gives one"}
	}
	return m.out.String(), nil
}

func (m *chatMessages) item(item gjson.Result, where string) error {
	if !item.IsObject() {
		return &InvalidError{Field: where, Reason: "must be an object"}
	}
	typ := item.Get("type")
	if !typ.Exists() && item.Get("role").Exists() {
		typ = gjson.Result{Type: gjson.String, Str: "message"} // EasyInputMessage may omit type
	}
	if typ.Type != gjson.String {
		return &InvalidError{Field: where + ".type", Reason: "missing item type"}
	}
	var err error
	switch typ.Str {
	case "message":
		err = m.message(item, where)
	case "reasoning":
		m.reasoningItem(item)
	case "function_call":
		err = m.functionCall(item, where)
	case "function_call_output":
		err = m.functionCallOutput(item, where)
	default:
		return &UnrepresentableError{Field: where, Reason: fmt.Sprintf("%q items have no %s equivalent", typ.Str, chatAPI)}
	}
	if err == nil && m.opts.ReturnTokenIDs && isNonEmptyArray(item.Get("prompt_token_ids")) {
		m.tokens = m.tokens[:0]
		for _, f := range trainingFields {
			if v := item.Get(f); present(v) {
				m.tokens = append(m.tokens, kv{f, v.Raw})
			}
		}
	}
	return err
}

func isNonEmptyArray(v gjson.Result) bool {
	return v.IsArray() && strings.TrimSpace(v.Raw[1:len(v.Raw)-1]) != ""
}

func (m *chatMessages) message(item gjson.Result, where string) error {
	role := item.Get("role")
	content := item.Get("content")
	if !content.Exists() {
		return &InvalidError{Field: where + ".content", Reason: "a message needs content"}
	}
	switch {
	case isString(role, "assistant"):
		return m.assistantContent(content, where+".content")
	case isString(role, "user"), isString(role, "system"), isString(role, "developer"):
	default:
		return &InvalidError{Field: where + ".role", Reason: fmt.Sprintf("unknown role %s", role.Raw)}
	}
	m.flush()
	name := role.Str
	if name == "developer" && m.opts.ReplaceDeveloperRoleWithSystem {
		name = "system"
	}
	converted, err := inputContent(content, where+".content")
	if err != nil {
		return err
	}
	o := newObject(len(converted) + 32)
	o.str("role", name)
	o.member("content", converted)
	m.out.add(o.String())
	return nil
}

// inputContent converts user, system and developer content.
func inputContent(content gjson.Result, where string) (string, error) {
	if content.Type == gjson.String {
		return content.Raw, nil
	}
	if !content.IsArray() {
		return "", &InvalidError{Field: where, Reason: "must be a string or a list of content parts"}
	}
	parts := newArray()
	var err error
	elems(content, func(i int, part gjson.Result) bool {
		var p string
		p, err = inputPart(part, fmt.Sprintf("%s[%d]", where, i))
		parts.add(p)
		return err == nil
	})
	return parts.String(), err
}

func inputPart(part gjson.Result, where string) (string, error) {
	t := part.Get("type")
	switch {
	case isString(t, "input_text"), isString(t, "output_text"), isString(t, "text"):
		text := part.Get("text")
		if text.Type != gjson.String {
			return "", &InvalidError{Field: where + ".text", Reason: "a text part needs a string text"}
		}
		return `{"type":"text","text":` + text.Raw + `}`, nil
	case isString(t, "input_image"):
		url := part.Get("image_url")
		if url.Type != gjson.String {
			return "", &UnrepresentableError{Field: where, Reason: fmt.Sprintf("an image without an image_url (a file_id) has no %s equivalent", chatAPI)}
		}
		img := newObject(len(url.Raw) + 32)
		img.member("url", url.Raw)
		if d := part.Get("detail"); present(d) {
			img.member("detail", d.Raw)
		} else {
			img.str("detail", "auto")
		}
		return `{"type":"image_url","image_url":` + img.String() + `}`, nil
	case isString(t, "input_file"):
		file := newObject(len(part.Raw))
		var err error
		part.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "type":
			case "file_data", "file_id", "filename":
				if present(v) {
					file.rawMember(k.Raw, v.Raw)
				}
			default:
				if present(v) {
					err = &UnrepresentableError{Field: where + "." + k.Str, Reason: fmt.Sprintf("file %s has no %s equivalent", k.Str, chatAPI)}
				}
			}
			return err == nil
		})
		return `{"type":"file","file":` + file.String() + `}`, err
	case isString(t, "input_audio"):
		return `{"type":"input_audio","input_audio":` + part.Get("input_audio").Raw + `}`, nil
	}
	return "", &UnrepresentableError{Field: where, Reason: fmt.Sprintf("content part type %s has no %s equivalent", t.Raw, chatAPI)}
}

// assistantContent adds an assistant message's text to the turn. Chat has
// one string of assistant content, so text parts are joined as NeMo Gym
// joins them, with nothing between.
func (m *chatMessages) assistantContent(content gjson.Result, where string) error {
	if content.Type == gjson.String {
		m.addText(content.Str)
		return nil
	}
	if !content.IsArray() {
		return &InvalidError{Field: where, Reason: "must be a string or a list of content parts"}
	}
	var err error
	elems(content, func(i int, part gjson.Result) bool {
		switch {
		case isString(part.Get("type"), "refusal") && part.Get("refusal").Type == gjson.String:
			m.refusal.WriteString(part.Get("refusal").Str)
			m.hasRefusal = true
		case part.Get("text").Type == gjson.String:
			m.addText(part.Get("text").Str)
		default:
			err = &UnrepresentableError{Field: fmt.Sprintf("%s[%d]", where, i), Reason: fmt.Sprintf("assistant content part %s has no %s equivalent", part.Get("type").Raw, chatAPI)}
		}
		return err == nil
	})
	return err
}

func (m *chatMessages) addText(s string) { m.text.WriteString(s) }

// reasoningItem adds a reasoning item's text to the turn: its reasoning_text
// content when it has any (the reasoning itself), else its summary (what
// NeMo Gym's own converter produces and replays). Encrypted reasoning is
// opaque to a chat backend and is not replayed.
func (m *chatMessages) reasoningItem(item gjson.Result) {
	var texts []string
	collect := func(parts gjson.Result, typ string) {
		elems(parts, func(_ int, p gjson.Result) bool {
			if isString(p.Get("type"), typ) && p.Get("text").Type == gjson.String && p.Get("text").Str != "" {
				texts = append(texts, p.Get("text").Str)
			}
			return true
		})
	}
	collect(item.Get("content"), "reasoning_text")
	if len(texts) == 0 {
		collect(item.Get("summary"), "summary_text")
	}
	if m.opts.ReasoningField {
		m.reasoning = append(m.reasoning, texts...)
		return
	}
	for _, t := range texts {
		m.addText("<think>" + t + "</think>")
	}
}

func (m *chatMessages) functionCall(item gjson.Result, where string) error {
	callID, name, args := item.Get("call_id"), item.Get("name"), item.Get("arguments")
	switch {
	case callID.Type != gjson.String:
		return &InvalidError{Field: where + ".call_id", Reason: "a function_call needs a string call_id"}
	case name.Type != gjson.String:
		return &InvalidError{Field: where + ".name", Reason: "a function_call needs a string name"}
	case args.Type != gjson.String:
		return &InvalidError{Field: where + ".arguments", Reason: "a function_call needs its arguments as a JSON string"}
	}
	if ns := item.Get("namespace"); present(ns) && ns.Str != "" {
		return &UnrepresentableError{Field: where + ".namespace", Reason: fmt.Sprintf("namespaced function calls have no %s equivalent", chatAPI)}
	}
	fn := newObject(len(args.Raw) + 32)
	fn.member("name", name.Raw)
	fn.member("arguments", args.Raw)
	call := newObject(len(args.Raw) + 64)
	call.member("id", callID.Raw)
	call.str("type", "function")
	call.member("function", fn.String())
	m.toolCalls.add(call.String())
	return nil
}

func (m *chatMessages) functionCallOutput(item gjson.Result, where string) error {
	callID, output := item.Get("call_id"), item.Get("output")
	if callID.Type != gjson.String {
		return &InvalidError{Field: where + ".call_id", Reason: "a function_call_output needs a string call_id"}
	}
	content := output.Raw
	switch {
	case output.Type == gjson.String:
	case output.IsArray():
		parts := newArray()
		var err error
		elems(output, func(i int, part gjson.Result) bool {
			text := part.Get("text")
			if !(isString(part.Get("type"), "input_text") || isString(part.Get("type"), "output_text")) || text.Type != gjson.String {
				err = &UnrepresentableError{Field: fmt.Sprintf("%s.output[%d]", where, i), Reason: fmt.Sprintf("a tool result part %s has no %s equivalent; tool messages carry text only", part.Get("type").Raw, chatAPI)}
				return false
			}
			parts.add(`{"type":"text","text":` + text.Raw + `}`)
			return true
		})
		if err != nil {
			return err
		}
		content = parts.String()
	default:
		return &InvalidError{Field: where + ".output", Reason: "must be a string or a list of content parts"}
	}
	m.flush()
	o := newObject(len(content) + 64)
	o.str("role", "tool")
	o.member("tool_call_id", callID.Raw)
	o.member("content", content)
	m.out.add(o.String())
	return nil
}

// flush closes the assistant turn gathered so far, if any.
func (m *chatMessages) flush() {
	hasReasoning := len(m.reasoning) > 0
	// As in NeMo Gym, an assistant turn with no text and no tool call (an
	// empty message) sends nothing.
	if m.text.Len() == 0 && !hasReasoning && !m.hasRefusal && m.toolCalls.empty() {
		return
	}
	o := newObject(m.text.Len() + 64)
	o.str("role", "assistant")
	switch {
	case m.text.Len() > 0, hasReasoning:
		o.str("content", m.text.String())
	default:
		o.member("content", "null")
	}
	if hasReasoning {
		r := strings.Join(m.reasoning, "")
		o.str("reasoning_content", r)
		o.str("reasoning", r)
	}
	if m.hasRefusal {
		o.str("refusal", m.refusal.String())
	}
	if !m.toolCalls.empty() {
		o.member("tool_calls", m.toolCalls.String())
	}
	for _, t := range m.tokens {
		o.member(t.key, t.raw)
	}
	m.out.add(o.String())
	m.text.Reset()
	m.reasoning = nil
	m.refusal.Reset()
	m.hasRefusal = false
	m.toolCalls = newArray()
	m.tokens = nil
}
