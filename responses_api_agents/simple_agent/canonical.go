package simpleagent

import (
	"strings"

	"github.com/tidwall/gjson"
)

// canonicalItem is a conversation item as NeMo Gym's simple_agent puts it
// in its trajectory: the pydantic model NeMo Gym reads it as (its
// NeMoGymResponseInputItem union) dumped back, every declared field in
// declared order with its default, unknown keys dropped; a training
// variant (all three token fields) with the token fields first. Items of
// the types gym's agent does not model are kept as they came.
func canonicalItem(raw string) string {
	parsed := gjson.Parse(raw)
	if !parsed.IsObject() {
		return raw
	}
	v := readFields(parsed)
	var tag string
	switch typ := v.Get("type"); {
	case typ.Type == gjson.String && typ.Str == "message":
		tag = messageTag(v)
	case typ.Type == gjson.String:
		tag = typ.Str
	case !typ.Exists() || typ.Type == gjson.Null:
		tag = untypedTag(v)
	default:
		return raw
	}
	var o obj
	training := false
	switch tag {
	case "easy_message", "input_message", "output_message", "function_call", "reasoning":
		training = v.Get("prompt_token_ids").Exists() && v.Get("generation_token_ids").Exists() && v.Get("generation_log_probs").Exists()
	}
	if training {
		o.set("prompt_token_ids", orNull(v.Get("prompt_token_ids")))
		o.set("generation_token_ids", orNull(v.Get("generation_token_ids")))
		var lps []string
		v.Get("generation_log_probs").ForEach(func(_, lp gjson.Result) bool {
			lps = append(lps, pyFloat(lp))
			return true
		})
		o.set("generation_log_probs", "["+strings.Join(lps, ",")+"]")
		o.set("routed_experts", orNull(v.Get("routed_experts")))
	}
	switch tag {
	case "easy_message":
		content := v.Get("content")
		if content.IsArray() {
			o.set("content", inputParts(content))
		} else {
			o.set("content", orNull(content))
		}
		o.set("role", orNull(v.Get("role")))
		o.set("type", `"message"`)
		o.set("phase", orNull(v.Get("phase")))
	case "input_message":
		o.set("content", inputParts(v.Get("content")))
		o.set("role", orNull(v.Get("role")))
		o.set("status", orNull(v.Get("status")))
		o.set("type", `"message"`)
	case "output_message":
		o.set("id", orNull(v.Get("id")))
		var parts []string
		v.Get("content").ForEach(func(_, p gjson.Result) bool {
			parts = append(parts, outputPart(p))
			return true
		})
		o.set("content", "["+strings.Join(parts, ",")+"]")
		o.set("role", `"assistant"`)
		o.set("status", orDefault(v.Get("status"), `"completed"`))
		o.set("type", `"message"`)
		o.set("phase", orNull(v.Get("phase")))
	case "function_call":
		for _, k := range []string{"arguments", "call_id", "name"} {
			o.set(k, orNull(v.Get(k)))
		}
		o.set("type", `"function_call"`)
		for _, k := range []string{"id", "status", "namespace"} {
			o.set(k, orNull(v.Get(k)))
		}
	case "function_call_output":
		o.set("call_id", orNull(v.Get("call_id")))
		o.set("output", orNull(v.Get("output")))
		o.set("type", `"function_call_output"`)
		o.set("id", orNull(v.Get("id")))
		o.set("status", orNull(v.Get("status")))
	case "reasoning":
		o.set("id", orNull(v.Get("id")))
		var parts []string
		v.Get("summary").ForEach(func(_, p gjson.Result) bool {
			parts = append(parts, textPart(p))
			return true
		})
		o.set("summary", "["+strings.Join(parts, ",")+"]")
		o.set("type", `"reasoning"`)
		o.set("encrypted_content", orNull(v.Get("encrypted_content")))
		if c := v.Get("content"); c.IsArray() {
			var cs []string
			c.ForEach(func(_, p gjson.Result) bool {
				cs = append(cs, textPart(p))
				return true
			})
			o.set("content", "["+strings.Join(cs, ",")+"]")
		} else {
			o.set("content", "null")
		}
	default:
		return raw
	}
	return o.String()
}

// messageTag is _discriminate_message_item: which message model an item
// of type message is read as.
func messageTag(v fields) string {
	content := v.Get("content")
	switch v.Get("role").Str {
	case "user", "system", "developer":
		if content.IsArray() && itemStatus(v.Get("status")) {
			return "input_message"
		}
		return "easy_message"
	}
	if content.IsArray() {
		if parts := content.Array(); len(parts) > 0 {
			if outputPartType(parts[0]) {
				return "output_message"
			}
		} else if v.Get("id").Type == gjson.String {
			return "output_message"
		}
	}
	return "easy_message"
}

// untypedTag is _discriminate_untyped_input_item, for the shapes gym's
// agent models; anything else is kept as it came.
func untypedTag(v fields) string {
	role, content := v.Get("role"), v.Get("content")
	if r := role.Str; role.Type == gjson.String && (r == "user" || r == "system" || r == "developer" || r == "assistant") && (content.Type == gjson.String || content.IsArray()) {
		tag := messageTag(v)
		if tag == "output_message" && v.Get("id").Type == gjson.String {
			return tag
		}
		if tag != "output_message" {
			if parts := content.Array(); !content.IsArray() || len(parts) == 0 || !outputPartType(parts[0]) {
				return tag
			}
		}
		return ""
	}
	if !role.Exists() && v.Get("id").Type == gjson.String && content.IsArray() {
		if parts := content.Array(); len(parts) == 0 || outputPartType(parts[0]) {
			return "output_message"
		}
	}
	if v.Get("arguments").Exists() && v.Get("name").Exists() && v.Get("call_id").Exists() {
		return "function_call"
	}
	if v.Get("call_id").Type == gjson.String && v.Get("output").Exists() {
		return "function_call_output"
	}
	if v.Get("id").Type == gjson.String && v.Get("summary").IsArray() {
		return "reasoning"
	}
	return ""
}

func itemStatus(s gjson.Result) bool {
	return s.Type == gjson.String && (s.Str == "in_progress" || s.Str == "completed" || s.Str == "incomplete")
}

func outputPartType(p gjson.Result) bool {
	t := p.Get("type")
	if t.Type == gjson.String && t.Str != "" {
		return t.Str == "output_text" || t.Str == "refusal"
	}
	return p.Get("refusal").Exists()
}

// outputPart is an output_text or refusal part.
func outputPart(p gjson.Result) string {
	var o obj
	if p.Get("type").Str == "refusal" || (!p.Get("type").Exists() && p.Get("refusal").Exists()) {
		o.set("refusal", orNull(p.Get("refusal")))
		o.set("type", `"refusal"`)
		return o.String()
	}
	o.set("annotations", orDefault(p.Get("annotations"), "[]"))
	o.set("text", orNull(p.Get("text")))
	o.set("type", `"output_text"`)
	o.set("logprobs", orNull(p.Get("logprobs")))
	return o.String()
}

// textPart is a reasoning summary or content part: text and type, then
// the keys pydantic keeps beyond them.
func textPart(p gjson.Result) string {
	var o obj
	o.set("text", orNull(p.Get("text")))
	o.set("type", orNull(p.Get("type")))
	p.ForEach(func(k, val gjson.Result) bool {
		if k.Str != "text" && k.Str != "type" {
			o.setAny(k.Str, val.Raw)
		}
		return true
	})
	return o.String()
}

// inputFields are the OpenAI SDK's input part TypedDicts, their keys in
// declared order: a part keeps those it has.
var inputFields = map[string][]string{
	"input_text":  {"text", "type"},
	"input_image": {"detail", "type", "file_id", "image_url"},
	"input_file":  {"type", "detail", "file_data", "file_id", "file_url", "filename"},
	"input_audio": {"input_audio", "type"},
	"input_video": {"type", "video_url", "video"},
}

func inputParts(content gjson.Result) string {
	var parts []string
	content.ForEach(func(_, p gjson.Result) bool {
		fields, ok := inputFields[p.Get("type").Str]
		if !ok {
			parts = append(parts, p.Raw)
			return true
		}
		var o obj
		for _, k := range fields {
			if f := p.Get(k); f.Exists() {
				o.set(k, f.Raw)
			}
		}
		parts = append(parts, o.String())
		return true
	})
	return "[" + strings.Join(parts, ",") + "]"
}

func orNull(v gjson.Result) string { return orDefault(v, "null") }

func orDefault(v gjson.Result, def string) string {
	if !v.Exists() {
		return def
	}
	return v.Raw
}

// obj writes a JSON object in the order its members are set.
type obj struct{ b strings.Builder }

// set adds a member whose key needs no escaping (gym's own names).
func (o *obj) set(k, raw string) {
	if o.b.Len() == 0 {
		o.b.WriteByte('{')
	} else {
		o.b.WriteByte(',')
	}
	o.b.WriteByte('"')
	o.b.WriteString(k)
	o.b.WriteString(`":`)
	o.b.WriteString(raw)
}

// setAny adds a member whose key came from elsewhere.
func (o *obj) setAny(k, raw string) {
	if o.b.Len() == 0 {
		o.b.WriteByte('{')
	} else {
		o.b.WriteByte(',')
	}
	o.b.WriteString(jsonString(k))
	o.b.WriteByte(':')
	o.b.WriteString(raw)
}

func (o *obj) String() string {
	if o.b.Len() == 0 {
		return "{}"
	}
	return o.b.String() + "}"
}

// fields are an object's members, read in one pass; a repeated key keeps
// its last value, as Python's json.loads keeps it.
type fields []struct {
	key string
	val gjson.Result
}

func readFields(v gjson.Result) fields {
	var f fields
	v.ForEach(func(k, val gjson.Result) bool {
		for i := range f {
			if f[i].key == k.Str {
				f[i].val = val
				return true
			}
		}
		f = append(f, struct {
			key string
			val gjson.Result
		}{k.Str, val})
		return true
	})
	return f
}

// Get is the member key, a zero Result when there is none.
func (f fields) Get(key string) gjson.Result {
	for _, m := range f {
		if m.key == key {
			return m.val
		}
	}
	return gjson.Result{}
}
