package openai

import (
	"fmt"

	"github.com/tidwall/gjson"
)

// ChatOptions are the settings of a chat-only backend (vllm_model,
// inference_provider) that change how Responses payloads are converted.
type ChatOptions struct {
	// ReplaceDeveloperRoleWithSystem (replace_developer_role_with_system)
	// sends developer messages as system messages, for chat templates that
	// know no developer role.
	ReplaceDeveloperRoleWithSystem bool
	// ReasoningField replays reasoning items as the assistant message's
	// `reasoning_content` and `reasoning` fields (vLLM reads the first before
	// 0.16, the second since) instead of a `<think>…</think>` prefix of its
	// content. This is vllm_model with uses_reasoning_parser and interleaved
	// reasoning; without it the think-tag form reaches the chat template as
	// the model wrote it.
	ReasoningField bool
	// ParseThink (uses_reasoning_parser) splits leading `<think>…</think>`
	// blocks off the returned content into a reasoning item.
	ParseThink bool
	// ReturnTokenIDs (return_token_id_information) requires token ids and
	// log probabilities on every converted response, and replays them on
	// the assistant messages of the next request. When vLLM returned no
	// prompt token ids, the caller fetches them (/tokenize) and sets them as
	// the completion's top-level prompt_token_ids before converting.
	ReturnTokenIDs bool
	// DropUnrepresentable (drop_unrepresentable_request_fields) drops
	// request fields the target API has no equivalent for instead of
	// rejecting them. For Chat Completions those are: store true,
	// previous_response_id, conversation, prompt, max_tool_calls,
	// context_management, truncation "auto", background true, include
	// entries other than message.output_text.logprobs, reasoning members
	// other than effort (summary, generate_summary), text members other than
	// format and verbosity, a text.format other than text, json_object and
	// json_schema, tools other than function tools, a function tool's
	// defer_loading or async, and a tool_choice other than auto, none,
	// required or a function. For Anthropic Messages: stop_sequences, top_k,
	// mcp_servers, container, context_management and server tools.
	//
	// It never drops programmatic tool calling constructs (a program caller,
	// program and program_output items, a non-null allowed_callers, a
	// function output_schema), and never drops conversation content (items,
	// content parts and blocks without an equivalent).
	DropUnrepresentable bool
}

// responsesOnlyFields are Responses request fields with no Chat Completions
// equivalent. Each maps to a test for the value that asks for nothing
// beyond what chat does anyway (store:false, truncation:"disabled", null);
// such a value is dropped silently, any other is unrepresentable.
var responsesOnlyFields = map[string]func(gjson.Result) bool{
	"background":           falseOrNull,
	"store":                falseOrNull,
	"truncation":           func(v gjson.Result) bool { return !present(v) || isString(v, "disabled") },
	"previous_response_id": nullOnly,
	"conversation":         nullOnly,
	"prompt":               nullOnly,
	"max_tool_calls":       nullOnly,
	"context_management":   nullOnly,
}

func falseOrNull(v gjson.Result) bool { return v.Type == gjson.False || v.Type == gjson.Null }
func nullOnly(v gjson.Result) bool    { return v.Type == gjson.Null }

// kv is one generated member of a converted payload.
type kv struct{ key, raw string }

// ResponsesToChatRequest converts a Responses create request to a Chat
// Completions request, as NeMo Gym's chat-only backends do:
//
//   - instructions become a leading system message; input (a string, or
//     items) becomes messages, written where input was;
//   - consecutive reasoning, assistant message and function_call items form
//     one assistant message (reasoning as a <think> prefix of its content or,
//     with ReasoningField, as reasoning_content), function_call_output items
//     become tool messages;
//   - function tools, tool_choice and parallel_tool_calls (the last two
//     only when tools remain), max_output_tokens → max_tokens,
//     text.format → response_format, text.verbosity → verbosity,
//     reasoning.effort → reasoning_effort, include
//     message.output_text.logprobs → logprobs:true;
//   - stream and stream_options are never forwarded (upstream calls are
//     buffered; a stream is synthesized from the result);
//   - every other member, known to both APIs (model, temperature, top_p,
//     metadata, user, top_logprobs, prompt_cache_key, service_tier …) or
//     unknown (a backend's sampling extras: top_k, min_p, seed, stop,
//     chat_template_kwargs …), is passed through with its bytes.
//
// Programmatic tool calling constructs are always an UnrepresentableError;
// other Responses-only fields are one unless opts.DropUnrepresentable.
func ResponsesToChatRequest(req []byte, opts ChatOptions) ([]byte, error) {
	root, err := parseObject(req, "request")
	if err != nil {
		return nil, err
	}
	top := index(root)
	if err := checkProgrammaticRequest(top, chatAPI); err != nil {
		return nil, err
	}
	c := chatRequest{opts: opts}

	// Members the conversion writes, by the request member they come from;
	// a passed-through member of the same name gives way to them.
	gen := map[string][]kv{}
	written := map[string]bool{}
	addGen := func(from string, members ...kv) {
		gen[from] = append(gen[from], members...)
		for _, m := range members {
			written[m.key] = true
		}
	}

	messages, err := c.messages(top)
	if err != nil {
		return nil, err
	}
	msgFrom := "input"
	if _, ok := top["input"]; !ok {
		msgFrom = "instructions"
	}
	addGen(msgFrom, kv{"messages", messages})

	tools, err := c.tools(top["tools"])
	if err != nil {
		return nil, err
	}
	var convErr error
	root.ForEach(func(k, v gjson.Result) bool {
		var members []kv
		switch k.Str {
		case "input", "instructions", "stream", "stream_options":
			return true
		case "tools":
			if tools != "" {
				members = []kv{{"tools", tools}}
			}
		case "parallel_tool_calls":
			if tools != "" {
				members = []kv{{"parallel_tool_calls", v.Raw}}
			}
		case "tool_choice":
			members, convErr = c.toolChoice(v, tools != "")
		case "max_output_tokens":
			if present(v) {
				members = []kv{{"max_tokens", v.Raw}}
			}
		case "text":
			members, convErr = c.text(v)
		case "reasoning":
			members, convErr = c.reasoning(v)
		case "include":
			members, convErr = c.include(v)
		default:
			inert, ok := responsesOnlyFields[k.Str]
			if !ok {
				return true // passed through below
			}
			if !inert(v) {
				convErr = c.unrepresentable(k.Str, fmt.Sprintf("%s has no %s equivalent", k.Str, chatAPI))
			}
			return convErr == nil
		}
		if convErr == nil && len(members) > 0 {
			addGen(k.Str, members...)
		}
		return convErr == nil
	})
	if convErr != nil {
		return nil, convErr
	}

	out := newObject(len(req) + 64)
	emitted := map[string]bool{}
	emit := func(from string) {
		if emitted[from] {
			return
		}
		emitted[from] = true
		for _, m := range gen[from] {
			out.member(m.key, m.raw)
		}
	}
	root.ForEach(func(k, v gjson.Result) bool {
		switch {
		case gen[k.Str] != nil:
			emit(k.Str)
		case k.Str == "input" || k.Str == "instructions" || k.Str == "stream" || k.Str == "stream_options":
		case isConverted(k.Str) || written[k.Str]:
		default:
			out.rawMember(k.Raw, v.Raw)
		}
		return true
	})
	emit(msgFrom) // neither input nor instructions: messages go last
	return out.bytes(), nil
}

// isConverted reports whether a request member is consumed by a conversion
// rule (and so never passed through as is).
func isConverted(name string) bool {
	switch name {
	case "tools", "parallel_tool_calls", "tool_choice", "max_output_tokens", "text", "reasoning", "include":
		return true
	}
	_, ok := responsesOnlyFields[name]
	return ok
}

type chatRequest struct{ opts ChatOptions }

func (c *chatRequest) unrepresentable(field, reason string) error {
	if c.opts.DropUnrepresentable {
		return nil
	}
	return &UnrepresentableError{Field: field, Reason: reason + " (set drop_unrepresentable_request_fields to drop it)"}
}

// tools converts function tools; any other tool type is unrepresentable.
// It returns "" when no tool remains, and the caller then drops tool_choice
// and parallel_tool_calls, which OpenAI's chat API rejects without tools.
func (c *chatRequest) tools(tools gjson.Result) (string, error) {
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
		var fn string
		fn, err = c.functionTool(tool, where)
		if err == nil && fn != "" {
			out.add(fn)
		}
		return err == nil
	})
	if err != nil || out.empty() {
		return "", err
	}
	return out.String(), nil
}

func (c *chatRequest) functionTool(tool gjson.Result, where string) (string, error) {
	if !tool.IsObject() {
		return "", &InvalidError{Field: where, Reason: "must be an object"}
	}
	if t := tool.Get("type"); !isString(t, "function") {
		return "", c.unrepresentable(where, fmt.Sprintf("tool type %s has no %s equivalent; only function tools convert", t.Raw, chatAPI))
	}
	if tool.Get("name").Type != gjson.String {
		return "", &InvalidError{Field: where + ".name", Reason: "a function tool needs a string name"}
	}
	fn := newObject(len(tool.Raw))
	var err error
	tool.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type", "allowed_callers", "output_schema": // the last two are null here
		case "strict":
			// NeMo Gym strips it: vLLM does not enforce it, and chat templates
			// that render unknown function keys would put it in the prompt.
		case "description", "parameters":
			if present(v) {
				fn.rawMember(k.Raw, v.Raw)
			}
		case "defer_loading", "async":
			if !falseOrNull(v) {
				err = c.unrepresentable(where+"."+k.Str, fmt.Sprintf("%s has no %s equivalent", k.Str, chatAPI))
			}
		default:
			fn.rawMember(k.Raw, v.Raw)
		}
		return err == nil
	})
	if err != nil {
		return "", err
	}
	o := newObject(len(tool.Raw) + 32)
	o.str("type", "function")
	o.member("function", fn.String())
	return o.String(), nil
}

func (c *chatRequest) toolChoice(v gjson.Result, haveTools bool) ([]kv, error) {
	if !present(v) {
		return nil, nil
	}
	if !haveTools {
		if isString(v, "auto") || isString(v, "none") {
			return nil, nil
		}
		return nil, &InvalidError{Field: "tool_choice", Reason: fmt.Sprintf("%s needs at least one function tool", v.Raw)}
	}
	switch {
	case isString(v, "auto"), isString(v, "none"), isString(v, "required"):
		return []kv{{"tool_choice", v.Raw}}, nil
	case v.IsObject() && isString(v.Get("type"), "function") && v.Get("name").Type == gjson.String:
		fn := newObject(32)
		fn.member("name", v.Get("name").Raw)
		o := newObject(64)
		o.str("type", "function")
		o.member("function", fn.String())
		return []kv{{"tool_choice", o.String()}}, nil
	}
	return nil, c.unrepresentable("tool_choice", fmt.Sprintf("tool_choice %s has no %s equivalent", v.Raw, chatAPI))
}

func (c *chatRequest) text(v gjson.Result) ([]kv, error) {
	if !present(v) {
		return nil, nil
	}
	if !v.IsObject() {
		return nil, &InvalidError{Field: "text", Reason: "must be an object"}
	}
	var out []kv
	var err error
	v.ForEach(func(k, val gjson.Result) bool {
		switch k.Str {
		case "format":
			var rf string
			rf, err = c.responseFormat(val)
			if rf != "" {
				out = append(out, kv{"response_format", rf})
			}
		case "verbosity":
			if present(val) {
				out = append(out, kv{"verbosity", val.Raw})
			}
		default:
			if present(val) {
				err = c.unrepresentable("text."+k.Str, fmt.Sprintf("text.%s has no %s equivalent", k.Str, chatAPI))
			}
		}
		return err == nil
	})
	return out, err
}

// responseFormat maps text.format. Plain text is chat's default, so it
// needs no response_format.
func (c *chatRequest) responseFormat(f gjson.Result) (string, error) {
	if !present(f) {
		return "", nil
	}
	switch t := f.Get("type"); {
	case isString(t, "text"):
		return "", nil
	case isString(t, "json_object"):
		return `{"type":"json_object"}`, nil
	case isString(t, "json_schema"):
		schema := newObject(len(f.Raw))
		f.ForEach(func(k, v gjson.Result) bool {
			if k.Str != "type" {
				schema.rawMember(k.Raw, v.Raw)
			}
			return true
		})
		o := newObject(len(f.Raw) + 48)
		o.str("type", "json_schema")
		o.member("json_schema", schema.String())
		return o.String(), nil
	default:
		return "", c.unrepresentable("text.format", fmt.Sprintf("format type %s has no %s equivalent", t.Raw, chatAPI))
	}
}

func (c *chatRequest) reasoning(v gjson.Result) ([]kv, error) {
	if !present(v) {
		return nil, nil
	}
	if !v.IsObject() {
		return nil, &InvalidError{Field: "reasoning", Reason: "must be an object"}
	}
	var out []kv
	var err error
	v.ForEach(func(k, val gjson.Result) bool {
		switch {
		case !present(val):
		case k.Str == "effort":
			out = append(out, kv{"reasoning_effort", val.Raw})
		default: // summary, generate_summary: chat returns no reasoning summary
			err = c.unrepresentable("reasoning."+k.Str, fmt.Sprintf("reasoning.%s has no %s equivalent", k.Str, chatAPI))
		}
		return err == nil
	})
	return out, err
}

// include maps message.output_text.logprobs to chat's logprobs:true; the
// other includable data (encrypted reasoning, tool results, …) does not
// exist in chat.
func (c *chatRequest) include(v gjson.Result) ([]kv, error) {
	if !present(v) {
		return nil, nil
	}
	if !v.IsArray() {
		return nil, &InvalidError{Field: "include", Reason: "must be a list"}
	}
	var out []kv
	var err error
	elems(v, func(i int, entry gjson.Result) bool {
		if isString(entry, "message.output_text.logprobs") {
			if out == nil {
				out = []kv{{"logprobs", "true"}}
			}
			return true
		}
		err = c.unrepresentable(fmt.Sprintf("include[%d]", i), fmt.Sprintf("include %s has no %s equivalent", entry.Raw, chatAPI))
		return err == nil
	})
	return out, err
}
