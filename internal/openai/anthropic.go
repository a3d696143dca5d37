package openai

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// anthropicOnlyFields are Messages request fields with no Responses
// equivalent that change what the model does; they are unrepresentable
// unless dropped. Other fields Responses lacks (metadata, thinking,
// service_tier, cache_control on blocks) only steer hosting, billing or a
// reasoning budget the backend decides for itself, and are ignored, as
// are fields this code does not know: NeMo Gym's converter is permissive
// there so that new Claude Code beta fields do not break the proxy.
var anthropicOnlyFields = map[string]bool{
	"stop_sequences": true, "top_k": true, "mcp_servers": true, "container": true, "context_management": true,
}

// MessagesToResponsesRequest converts an Anthropic Messages request to a
// Responses create request (the /v1/messages route), in the request's key
// order: model; system → instructions (text blocks joined with "\n");
// messages → input items (text and image blocks group into messages,
// tool_use → function_call, tool_result → function_call_output, thinking
// and redacted_thinking → reasoning with the signature as
// encrypted_content); max_tokens → max_output_tokens; temperature, top_p;
// custom tools → function tools (strict false: Anthropic does not enforce
// schemas, and Responses would otherwise try to); tool_choice, with
// disable_parallel_tool_use → parallel_tool_calls false. stream is left to
// the caller. Programmatic tool calling (a non-direct tool_use caller,
// allowed_callers, output_schema) is always rejected.
func MessagesToResponsesRequest(req []byte, opts ChatOptions) ([]byte, error) {
	root, err := parseObject(req, "request")
	if err != nil {
		return nil, err
	}
	if err := checkProgrammaticMessages(root); err != nil {
		return nil, err
	}
	a := anthropicRequest{opts: opts}
	tools, err := a.tools(root.Get("tools"))
	if err != nil {
		return nil, err
	}
	out := newObject(len(req) + 128)
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model", "temperature", "top_p":
			out.rawMember(k.Raw, v.Raw)
		case "max_tokens":
			out.member("max_output_tokens", v.Raw)
		case "system":
			var ins string
			if ins, err = systemText(v); err == nil && ins != "" {
				out.str("instructions", ins)
			}
		case "messages":
			var items string
			if items, err = a.items(v); err == nil {
				out.member("input", items)
			}
		case "tools":
			if tools != "" {
				out.member("tools", tools)
			}
		case "tool_choice":
			err = a.toolChoice(out, v, tools != "")
		default:
			if anthropicOnlyFields[k.Str] && present(v) {
				err = a.unrepresentable(k.Str, fmt.Sprintf("%s has no Responses equivalent", k.Str))
			}
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	return out.bytes(), nil
}

// checkProgrammaticMessages applies the programmatic tool calling rules to
// an Anthropic request: its tools' allowed_callers and output_schema, and
// the caller of every tool_use block.
func checkProgrammaticMessages(root gjson.Result) error {
	var err error
	elems(root.Get("tools"), func(i int, tool gjson.Result) bool {
		err = checkProgrammaticTool(tool, fmt.Sprintf("tools[%d]", i), anthropicAPI)
		return err == nil
	})
	if err != nil {
		return err
	}
	elems(root.Get("messages"), func(i int, msg gjson.Result) bool {
		elems(msg.Get("content"), func(j int, block gjson.Result) bool {
			if isString(block.Get("type"), "tool_use") {
				err = checkProgrammaticItem(block, fmt.Sprintf("messages[%d].content[%d]", i, j), anthropicAPI)
			}
			return err == nil
		})
		return err == nil
	})
	return err
}

type anthropicRequest struct{ opts ChatOptions }

func (a *anthropicRequest) unrepresentable(field, reason string) error {
	if a.opts.DropUnrepresentable {
		return nil
	}
	return &UnrepresentableError{Field: field, Reason: reason + " (set drop_unrepresentable_request_fields to drop it)"}
}

func systemText(v gjson.Result) (string, error) {
	switch {
	case !present(v):
		return "", nil
	case v.Type == gjson.String:
		return v.Str, nil
	case !v.IsArray():
		return "", &InvalidError{Field: "system", Reason: "must be a string or a list of text blocks"}
	}
	var texts []string
	var err error
	elems(v, func(i int, block gjson.Result) bool {
		if !isString(block.Get("type"), "text") || block.Get("text").Type != gjson.String {
			err = &UnrepresentableError{Field: fmt.Sprintf("system[%d]", i), Reason: "only text blocks convert to instructions"}
			return false
		}
		if t := block.Get("text").Str; t != "" {
			texts = append(texts, t)
		}
		return true
	})
	return strings.Join(texts, "\n"), err
}

func (a *anthropicRequest) tools(tools gjson.Result) (string, error) {
	if !present(tools) {
		return "", nil
	}
	if !tools.IsArray() {
		return "", &InvalidError{Field: "tools", Reason: "must be a list"}
	}
	out := newArray()
	var err error
	elems(tools, func(i int, tool gjson.Result) bool {
		where := fmt.Sprintf("tools[%d]", i)
		if t := tool.Get("type"); present(t) && !isString(t, "custom") {
			err = a.unrepresentable(where, fmt.Sprintf("server tool %s has no Responses equivalent", t.Raw))
			return err == nil
		}
		name := tool.Get("name")
		if name.Type != gjson.String {
			err = &InvalidError{Field: where + ".name", Reason: "a tool needs a string name"}
			return false
		}
		o := newObject(len(tool.Raw) + 64)
		o.str("type", "function")
		o.member("name", name.Raw)
		if d := tool.Get("description"); d.Type == gjson.String {
			o.member("description", d.Raw)
		}
		if s := tool.Get("input_schema"); present(s) {
			o.member("parameters", s.Raw)
		} else {
			o.member("parameters", `{"type":"object","properties":{}}`)
		}
		o.member("strict", "false")
		out.add(o.String())
		return true
	})
	if err != nil || out.empty() {
		return "", err
	}
	return out.String(), nil
}

func (a *anthropicRequest) toolChoice(out *object, v gjson.Result, haveTools bool) error {
	if !present(v) {
		return nil
	}
	var choice string
	switch t := v.Get("type"); {
	case isString(t, "auto"):
		choice = `"auto"`
	case isString(t, "none"):
		choice = `"none"`
	case isString(t, "any"):
		choice = `"required"`
	case isString(t, "tool") && v.Get("name").Type == gjson.String:
		choice = `{"type":"function","name":` + v.Get("name").Raw + `}`
	default:
		return &InvalidError{Field: "tool_choice", Reason: fmt.Sprintf("unknown tool_choice %s", v.Raw)}
	}
	if !haveTools && choice != `"auto"` && choice != `"none"` {
		return &InvalidError{Field: "tool_choice", Reason: fmt.Sprintf("%s needs at least one custom tool", v.Raw)}
	}
	if haveTools {
		out.member("tool_choice", choice)
		if v.Get("disable_parallel_tool_use").Type == gjson.True {
			out.member("parallel_tool_calls", "false")
		}
	}
	return nil
}

// items converts messages to Responses input items. One Anthropic message
// may hold text, tool calls, tool results and thinking; Responses keeps
// each call, result and reasoning as its own item, in order, and groups the
// text and images between them into a message.
func (a *anthropicRequest) items(messages gjson.Result) (string, error) {
	if !messages.IsArray() {
		return "", &InvalidError{Field: "messages", Reason: "must be a list"}
	}
	items := newArray()
	var err error
	elems(messages, func(i int, msg gjson.Result) bool {
		err = a.message(items, msg, fmt.Sprintf("messages[%d]", i))
		return err == nil
	})
	return items.String(), err
}

func (a *anthropicRequest) message(items *array, msg gjson.Result, where string) error {
	role := msg.Get("role")
	if !isString(role, "user") && !isString(role, "assistant") {
		return &InvalidError{Field: where + ".role", Reason: fmt.Sprintf("must be user or assistant, got %s", role.Raw)}
	}
	assistant := role.Str == "assistant"
	content := msg.Get("content")
	if content.Type == gjson.String {
		items.add(`{"type":"message","role":` + role.Raw + `,"content":` + content.Raw + `}`)
		return nil
	}
	if !content.IsArray() {
		return &InvalidError{Field: where + ".content", Reason: "must be a string or a list of blocks"}
	}
	var parts []string
	flush := func() {
		switch {
		case len(parts) == 0:
			return
		case len(parts) == 1 && (strings.HasPrefix(parts[0], `{"type":"input_text",`) || strings.HasPrefix(parts[0], `{"type":"output_text",`)):
			// A lone text block becomes plain string content, as NeMo Gym writes it.
			text := gjson.Get(parts[0], "text").Raw
			items.add(`{"type":"message","role":` + role.Raw + `,"content":` + text + `}`)
		default:
			items.add(`{"type":"message","role":` + role.Raw + `,"content":[` + strings.Join(parts, ",") + `]}`)
		}
		parts = nil
	}
	var err error
	elems(content, func(j int, block gjson.Result) bool {
		at := fmt.Sprintf("%s.content[%d]", where, j)
		switch t := block.Get("type"); {
		case isString(t, "text") && block.Get("text").Type == gjson.String:
			if assistant {
				parts = append(parts, `{"type":"output_text","text":`+block.Get("text").Raw+`,"annotations":[]}`)
			} else {
				parts = append(parts, `{"type":"input_text","text":`+block.Get("text").Raw+`}`)
			}
		case isString(t, "image") && !assistant:
			var p string
			if p, err = imagePart(block, at); err == nil {
				parts = append(parts, p)
			}
		case isString(t, "tool_use") && assistant:
			flush()
			err = toolUseItem(items, block, at)
		case isString(t, "tool_result") && !assistant:
			flush()
			err = toolResultItem(items, block, at)
		case isString(t, "thinking") && assistant:
			flush()
			o := newObject(len(block.Raw) + 96)
			o.str("type", "reasoning")
			o.str("id", newID("rs_"))
			o.member("summary", `[{"type":"summary_text","text":`+quote(block.Get("thinking").Str)+`}]`)
			if s := block.Get("signature"); s.Type == gjson.String && s.Str != "" {
				o.member("encrypted_content", s.Raw)
			}
			items.add(o.String())
		case isString(t, "redacted_thinking") && assistant:
			flush()
			o := newObject(len(block.Raw) + 96)
			o.str("type", "reasoning")
			o.str("id", newID("rs_"))
			o.member("summary", "[]")
			o.member("encrypted_content", quote(block.Get("data").Str))
			items.add(o.String())
		default:
			err = &UnrepresentableError{Field: at, Reason: fmt.Sprintf("%s block %s has no Responses equivalent", role.Str, t.Raw)}
		}
		return err == nil
	})
	flush()
	return err
}

func imagePart(block gjson.Result, where string) (string, error) {
	src := block.Get("source")
	var url string
	switch st := src.Get("type"); {
	case isString(st, "base64") && src.Get("media_type").Type == gjson.String && src.Get("data").Type == gjson.String:
		url = "data:" + src.Get("media_type").Str + ";base64," + src.Get("data").Str
	case isString(st, "url") && src.Get("url").Type == gjson.String:
		url = src.Get("url").Str
	default:
		return "", &UnrepresentableError{Field: where + ".source", Reason: fmt.Sprintf("image source %s has no Responses equivalent", st.Raw)}
	}
	return `{"type":"input_image","image_url":` + quote(url) + `,"detail":"auto"}`, nil
}

func toolUseItem(items *array, block gjson.Result, where string) error {
	id, name, input := block.Get("id"), block.Get("name"), block.Get("input")
	if id.Type != gjson.String || name.Type != gjson.String {
		return &InvalidError{Field: where, Reason: "a tool_use block needs a string id and name"}
	}
	args := "{}"
	if present(input) {
		args = input.Raw
	}
	// No item id: a Responses function_call id must start with "fc_", and
	// the Anthropic id lives on as call_id.
	o := newObject(len(args) + 96)
	o.str("type", "function_call")
	o.member("call_id", id.Raw)
	o.member("name", name.Raw)
	o.str("arguments", args)
	items.add(o.String())
	return nil
}

func toolResultItem(items *array, block gjson.Result, where string) error {
	id := block.Get("tool_use_id")
	if id.Type != gjson.String {
		return &InvalidError{Field: where + ".tool_use_id", Reason: "a tool_result block needs a string tool_use_id"}
	}
	content := block.Get("content")
	output := `""`
	switch {
	case content.Type == gjson.String:
		output = content.Raw
	case content.IsArray():
		var texts []string
		parts := newArray()
		onlyText := true
		var err error
		elems(content, func(j int, b gjson.Result) bool {
			at := fmt.Sprintf("%s.content[%d]", where, j)
			switch {
			case isString(b.Get("type"), "text") && b.Get("text").Type == gjson.String:
				texts = append(texts, b.Get("text").Str)
				parts.add(`{"type":"input_text","text":` + b.Get("text").Raw + `}`)
			case isString(b.Get("type"), "image"):
				var p string
				p, err = imagePart(b, at)
				parts.add(p)
				onlyText = false
			default:
				err = &UnrepresentableError{Field: at, Reason: fmt.Sprintf("tool_result block %s has no Responses equivalent", b.Get("type").Raw)}
			}
			return err == nil
		})
		if err != nil {
			return err
		}
		if onlyText {
			output = quote(strings.Join(texts, "\n")) // as NeMo Gym joins them
		} else {
			output = parts.String()
		}
	case present(content):
		return &InvalidError{Field: where + ".content", Reason: "must be a string or a list of blocks"}
	}
	o := newObject(len(output) + 64)
	o.str("type", "function_call_output")
	o.member("call_id", id.Raw)
	o.member("output", output)
	items.add(o.String())
	return nil
}

// ResponsesToMessagesResponse renders a Responses object as an Anthropic
// Messages response for model: output_text and refusal parts → text
// blocks, reasoning → thinking blocks (the encrypted_content as signature;
// encrypted reasoning without text → redacted_thinking), function_call →
// tool_use. stop_reason is max_tokens or refusal for an incomplete
// response, tool_use when a tool is called, else end_turn. Token data is
// left out, as NeMo Gym leaves it out. Programmatic tool calling output,
// custom tool calls and item types Anthropic has no block for are errors.
func ResponsesToMessagesResponse(resp []byte, model string) ([]byte, error) {
	root, err := parseObject(resp, "response")
	if err != nil {
		return nil, err
	}
	output := root.Get("output")
	if present(output) && !output.IsArray() {
		return nil, &InvalidError{Field: "output", Reason: "must be a list"}
	}
	if err := checkProgrammaticItems(output, "output", anthropicAPI); err != nil {
		return nil, err
	}
	blocks := newArray()
	toolUse := false
	elems(output, func(i int, item gjson.Result) bool {
		where := fmt.Sprintf("output[%d]", i)
		switch t := item.Get("type"); {
		case isString(t, "message"):
			err = messageBlocks(blocks, item, where)
		case isString(t, "reasoning"):
			thinkingBlocks(blocks, item)
		case isString(t, "function_call"):
			toolUse = true
			err = toolUseBlock(blocks, item, where)
		default:
			err = &UnrepresentableError{Field: where, Reason: fmt.Sprintf("output item type %s has no %s equivalent", t.Raw, anthropicAPI)}
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if model == "" {
		model = root.Get("model").Str
	}
	stop := "end_turn"
	switch reason := root.Get("incomplete_details.reason"); {
	case isString(reason, "max_output_tokens"):
		stop = "max_tokens"
	case isString(reason, "content_filter"):
		stop = "refusal"
	case toolUse:
		stop = "tool_use"
	}
	o := newObject(len(blocks.b) + 256)
	o.str("id", newID("msg_"))
	o.str("type", "message")
	o.str("role", "assistant")
	o.str("model", model)
	o.member("content", blocks.String())
	o.str("stop_reason", stop)
	o.member("stop_sequence", "null")
	o.member("usage", ParseResponsesUsage([]byte(root.Get("usage").Raw)).messagesJSON())
	return o.bytes(), nil
}

func messageBlocks(blocks *array, item gjson.Result, where string) error {
	content := item.Get("content")
	if content.Type == gjson.String {
		blocks.add(`{"type":"text","text":` + content.Raw + `}`)
		return nil
	}
	var err error
	elems(content, func(j int, part gjson.Result) bool {
		switch t := part.Get("type"); {
		case isString(t, "output_text") && part.Get("text").Type == gjson.String:
			blocks.add(`{"type":"text","text":` + part.Get("text").Raw + `}`)
		case isString(t, "refusal") && part.Get("refusal").Type == gjson.String:
			blocks.add(`{"type":"text","text":` + part.Get("refusal").Raw + `}`)
		default:
			err = &UnrepresentableError{Field: fmt.Sprintf("%s.content[%d]", where, j), Reason: fmt.Sprintf("content part %s has no %s equivalent", t.Raw, anthropicAPI)}
		}
		return err == nil
	})
	return err
}

func thinkingBlocks(blocks *array, item gjson.Result) {
	signature := item.Get("encrypted_content")
	sig := `""`
	if signature.Type == gjson.String {
		sig = signature.Raw
	}
	var texts []string
	for _, src := range [...]struct{ member, typ string }{{"summary", "summary_text"}, {"content", "reasoning_text"}} {
		elems(item.Get(src.member), func(_ int, p gjson.Result) bool {
			if isString(p.Get("type"), src.typ) && p.Get("text").Type == gjson.String {
				texts = append(texts, p.Get("text").Raw)
			}
			return true
		})
		if len(texts) > 0 {
			break
		}
	}
	for _, t := range texts {
		blocks.add(`{"type":"thinking","thinking":` + t + `,"signature":` + sig + `}`)
	}
	if len(texts) == 0 && signature.Type == gjson.String && signature.Str != "" {
		blocks.add(`{"type":"redacted_thinking","data":` + signature.Raw + `}`)
	}
}

func toolUseBlock(blocks *array, item gjson.Result, where string) error {
	callID, name, args := item.Get("call_id"), item.Get("name"), item.Get("arguments")
	if callID.Type != gjson.String || name.Type != gjson.String {
		return &InvalidError{Field: where, Reason: "a function_call needs a string call_id and name"}
	}
	input := "{}"
	if s := strings.TrimSpace(args.Str); s != "" {
		v := gjson.Parse(s)
		if !jsonl.ValidString(s) || !v.IsObject() {
			return &InvalidError{Field: where + ".arguments", Reason: "Anthropic tool_use input must be a JSON object"}
		}
		input = s
	}
	blocks.add(`{"type":"tool_use","id":` + callID.Raw + `,"name":` + name.Raw + `,"input":` + input + `}`)
	return nil
}

// SynthesizeMessagesSSE replays an Anthropic Messages response as the
// stream Anthropic sends: message_start (the message with empty content
// and no stop reason yet), then per block content_block_start (an empty
// block), its delta (text_delta, thinking_delta then signature_delta,
// input_json_delta) and content_block_stop, then message_delta with the
// stop reason and the usage, and message_stop. Blocks of other types start
// whole and stop.
func SynthesizeMessagesSSE(msg []byte) []byte {
	root, err := parseObject(msg, "message")
	if err != nil {
		return anthropicEvent(nil, "error", `{"type":"error","error":{"type":"api_error","message":`+quote("the model server produced an invalid message: "+err.Error())+`}}`)
	}
	start, _ := sjson.SetRaw(string(msg), "content", "[]") // msg is a valid object
	start, _ = sjson.SetRaw(start, "stop_reason", "null")
	start, _ = sjson.SetRaw(start, "stop_sequence", "null")
	b := anthropicEvent(nil, "message_start", `{"type":"message_start","message":`+start+`}`)
	elems(root.Get("content"), func(i int, block gjson.Result) bool {
		index := strconv.Itoa(i)
		startEv := func(shell string) {
			b = anthropicEvent(b, "content_block_start", `{"type":"content_block_start","index":`+index+`,"content_block":`+shell+`}`)
		}
		delta := func(d string) {
			b = anthropicEvent(b, "content_block_delta", `{"type":"content_block_delta","index":`+index+`,"delta":`+d+`}`)
		}
		switch t := block.Get("type"); {
		case isString(t, "text"):
			startEv(`{"type":"text","text":""}`)
			if text := block.Get("text"); text.Str != "" {
				delta(`{"type":"text_delta","text":` + text.Raw + `}`)
			}
		case isString(t, "thinking"):
			startEv(`{"type":"thinking","thinking":"","signature":""}`)
			if th := block.Get("thinking"); th.Str != "" {
				delta(`{"type":"thinking_delta","thinking":` + th.Raw + `}`)
			}
			if sig := block.Get("signature"); sig.Str != "" {
				delta(`{"type":"signature_delta","signature":` + sig.Raw + `}`)
			}
		case isString(t, "tool_use"):
			shell := newObject(128)
			shell.str("type", "tool_use")
			shell.member("id", block.Get("id").Raw)
			shell.member("name", block.Get("name").Raw)
			shell.member("input", "{}")
			startEv(shell.String())
			if in := block.Get("input"); present(in) {
				delta(`{"type":"input_json_delta","partial_json":` + quote(in.Raw) + `}`)
			}
		default:
			startEv(block.Raw)
		}
		b = anthropicEvent(b, "content_block_stop", `{"type":"content_block_stop","index":`+index+`}`)
		return true
	})
	md := newObject(256)
	md.str("type", "message_delta")
	d := newObject(64)
	d.member("stop_reason", rawOrNull(root.Get("stop_reason")))
	d.member("stop_sequence", rawOrNull(root.Get("stop_sequence")))
	md.member("delta", d.String())
	if u := root.Get("usage"); u.IsObject() {
		md.member("usage", u.Raw)
	} else {
		md.member("usage", `{"output_tokens":0}`)
	}
	b = anthropicEvent(b, "message_delta", md.String())
	return anthropicEvent(b, "message_stop", `{"type":"message_stop"}`)
}

func anthropicEvent(b []byte, typ, data string) []byte {
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: "...)
	b = appendOneLine(b, []byte(data))
	return append(b, "\n\n"...)
}

func rawOrNull(v gjson.Result) string {
	if v.Exists() {
		return v.Raw
	}
	return "null"
}
