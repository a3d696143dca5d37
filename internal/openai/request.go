package openai

import (
	"bytes"
	"strings"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/tidwall/gjson"
)

// IsStreaming reports whether a request asks for a stream. Only a literal
// true does: that is how both OpenAI APIs read `stream`, and NeMo Gym's
// chat route sends anything else to strict validation.
func IsStreaming(body []byte) bool {
	return gjson.GetBytes(body, "stream").Type == gjson.True
}

// SetModel overwrites the request's top-level `model` with model, in place,
// or adds it at the end when the request has none. The model server's
// configured model always wins over the client's.
func SetModel(body []byte, model string) ([]byte, error) {
	if !jsonl.Valid(body) {
		return nil, &InvalidError{Reason: "request body is not valid JSON"}
	}
	if !jsonl.OpensObject(body) {
		return nil, &InvalidError{Reason: "request body must be a JSON object"}
	}
	return SetModelChecked(body, model), nil
}

// SetModelChecked is SetModel for a body already known to be a valid JSON
// object (jsonl.Valid): it finds the model in place instead of validating
// the body again.
func SetModelChecked(body []byte, model string) []byte {
	at := jsonl.Span{Start: -1, End: -1}
	if m := jsonl.GetInPlace(body, "model"); m.Exists() && m.Index > 0 {
		at = jsonl.Span{Start: m.Index, End: m.Index + len(m.Raw)}
	}
	return SetModelAt(body, at, model)
}

// SetModelAt is SetModelChecked for a body whose top-level model value is
// known to be at (a Start below 0: the body has none), as the model
// servers find it while they check the body.
func SetModelAt(body []byte, at jsonl.Span, model string) []byte {
	q := quote(model)
	if at.Start > 0 {
		return splice(body, []edit{{start: at.Start, end: at.End, repl: q}})
	}
	// Whitespace may follow the object; the member goes inside its braces.
	open := jsonl.SkipSpace(body, 0)
	end := len(bytes.TrimRight(body, " \t\r\n")) - 1 // offset of '}'
	b := make([]byte, 0, len(body)+len(q)+len(`,"model":`))
	b = append(b, body[:end]...)
	if len(bytes.TrimLeft(body[open+1:end], " \t\r\n")) > 0 {
		b = append(b, ',')
	}
	b = append(b, `"model":`...)
	b = append(b, q...)
	return append(b, body[end:]...)
}

// MergeUnder merges extra (a server's extra_body) under the request: a
// top-level key the request has keeps the request's value, and extra's
// other keys are added. Like NeMo Gym's `extra_body | body`, the union is
// shallow: a nested object the request sets replaces extra's whole object,
// it is not merged key by key. The added keys go first, where Python's dict
// union puts them; the request's own members keep their bytes and order.
// An empty or null extra leaves body as it is.
func MergeUnder(body, extra []byte) ([]byte, error) {
	root, err := parseObject(body, "request body")
	if err != nil {
		return nil, err
	}
	if t := strings.TrimSpace(string(extra)); t == "" || t == "null" {
		return body, nil
	}
	under, err := parseObject(extra, "extra_body")
	if err != nil {
		return nil, err
	}
	have := make(map[string]struct{}, 16)
	root.ForEach(func(k, _ gjson.Result) bool {
		have[k.Str] = struct{}{}
		return true
	})
	var add []string
	under.ForEach(func(k, v gjson.Result) bool {
		if _, ok := have[k.Str]; !ok {
			add = append(add, k.Raw+":"+v.Raw)
			have[k.Str] = struct{}{} // a key repeated in extra is added once
		}
		return true
	})
	if len(add) == 0 {
		return body, nil
	}
	members := strings.Join(add, ",")
	open := root.Index // offset of '{'
	rest := body[open+1:]
	var b []byte
	b = append(b, body[:open+1]...)
	b = append(b, members...)
	if hasMembers(root) {
		b = append(b, ',')
	}
	return append(b, rest...), nil
}

// DropInputReasoning removes the `type: "reasoning"` items from a Responses
// request's `input` list (drop_input_reasoning_items), for upstreams that
// reject replayed reasoning. Any other input, and a body with no reasoning
// item, comes back unchanged.
func DropInputReasoning(body []byte) ([]byte, error) {
	root, err := parseObject(body, "request body")
	if err != nil {
		return nil, err
	}
	input := root.Get("input")
	if !input.IsArray() {
		return body, nil
	}
	kept := newArray()
	dropped := false
	elems(input, func(_ int, item gjson.Result) bool {
		if item.IsObject() && isString(item.Get("type"), "reasoning") {
			dropped = true
		} else {
			kept.add(item.Raw)
		}
		return true
	})
	if !dropped {
		return body, nil
	}
	e, ok := replaceValue(input, kept.String())
	if !ok {
		return nil, &InvalidError{Field: "input", Reason: "cannot locate the input list in the body"}
	}
	return splice(body, []edit{e}), nil
}

func hasMembers(obj gjson.Result) bool {
	found := false
	obj.ForEach(func(_, _ gjson.Result) bool {
		found = true
		return false
	})
	return found
}
