package capture

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// blockSep is how NeMo Gym splits a stream into events.
var blockSep = regexp.MustCompile(`\r?\n\r?\n`)

// terminals are the lines that end a stream, by dialect, normalized to
// "field: value".
var terminals = map[string]map[string]string{
	"responses": {"event: response.completed": "complete", "event: response.incomplete": "incomplete", "event: response.failed": "error", "event: error": "error"},
	"chat":      {"data: [DONE]": "complete", "event: error": "error"},
	"messages":  {"event: message_stop": "complete", "event: error": "error"},
}

// findTerminal looks for the terminal event among the complete events of
// buf after from, and returns it with where the next search starts.
func findTerminal(buf []byte, from int, dialect string) (string, int) {
	rest := buf[from:]
	seps := blockSep.FindAllIndex(rest, -1)
	start := 0
	for _, sep := range seps {
		if t := terminalOf(rest[start:sep[0]], dialect); t != "" {
			return t, from + sep[1]
		}
		start = sep[1]
	}
	return "", from + start
}

func terminalOf(block []byte, dialect string) string {
	lines := bytesSplitlines(block)
	for _, l := range lines {
		field, value, found := bytes.Cut(l, []byte(":"))
		norm := string(l)
		if found {
			norm = string(field) + ": " + string(bytes.TrimLeft(value, " \t\n\r\x0b\x0c"))
		}
		if t, ok := terminals[dialect][norm]; ok {
			return t
		}
	}
	if dialect == "chat" {
		for _, l := range lines {
			data, ok := bytes.CutPrefix(l, []byte("data:"))
			if !ok {
				continue
			}
			v, err := parse(bytes.TrimLeft(data, " \t\n\r\x0b\x0c"))
			if err == nil && v.isObject() && v.get("error") != nil && !v.get("error").isNull() {
				return "error"
			}
		}
	}
	return ""
}

// bytesSplitlines is Python's bytes.splitlines: \n, \r and \r\n.
func bytesSplitlines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			out = append(out, b)
			break
		}
		out = append(out, b[:i])
		if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
			i++
		}
		b = b[i+1:]
	}
	return out
}

// strSplitlines is Python's str.splitlines, which also breaks at \v, \f,
// \x1c-\x1e, \x85, U+2028 and U+2029.
func strSplitlines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\v', '\f', '\x1c', '\x1d', '\x1e', '\u0085', '\u2028', '\u2029':
			out = append(out, s[start:i])
			i += size
			start = i
		case '\r':
			out = append(out, s[start:i])
			i += size
			if i < len(s) && s[i] == '\n' {
				i++
			}
			start = i
		default:
			i += size
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// pyLstrip is Python's str.lstrip(): Unicode white space.
func pyLstrip(s string) string {
	return strings.TrimLeftFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || r == '\x1c' || r == '\x1d' || r == '\x1e' || r == '\x1f'
	})
}

// events are a stream's JSON data payloads that are objects.
func events(body []byte) []*jvalue {
	var out []*jvalue
	for _, block := range blockSep.Split(decodeReplace(body), -1) {
		var data []string
		for _, l := range strSplitlines(block) {
			if d, ok := strings.CutPrefix(l, "data:"); ok {
				data = append(data, pyLstrip(d))
			}
		}
		if len(data) == 0 {
			continue
		}
		payload := strings.Join(data, "\n")
		if payload == "[DONE]" {
			continue
		}
		if v, err := parse([]byte(payload)); err == nil && v.isObject() {
			out = append(out, v)
		}
	}
	return out
}

// reconstruct is the answer a stream adds up to, as NeMo Gym rebuilds it,
// or nil. Where NeMo Gym's rebuild fails on an unexpected shape, so does
// this one.
func reconstruct(body []byte, dialect string) []byte {
	evs := events(body)
	if len(evs) == 0 {
		return nil
	}
	var v *jvalue
	var ok bool
	switch dialect {
	case "messages":
		v, ok = rebuildMessages(evs)
	case "responses":
		v, ok = rebuildResponses(evs), true
	default:
		v, ok = rebuildChat(evs)
	}
	if !ok || v == nil {
		return nil
	}
	return v.appendTo(nil)
}

func rebuildResponses(evs []*jvalue) *jvalue {
	for i := len(evs) - 1; i >= 0; i-- {
		if t := evs[i].get("type"); t != nil && t.str != nil {
			switch *t.str {
			case "response.completed", "response.incomplete", "response.failed":
				if r := evs[i].get("response"); r.isObject() {
					return r
				}
			}
		}
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if r := evs[i].get("response"); r.isObject() {
			return r
		}
	}
	return nil
}

// or is Python's `a or b`.
func or(a, b *jvalue) *jvalue {
	if a.truthy() {
		return a
	}
	return b
}

// concat is Python's `a + b` on strings; false where Python would raise.
func concat(parts []*jvalue) (string, bool) {
	var b strings.Builder
	for _, p := range parts {
		if p.str == nil {
			return "", false
		}
		b.WriteString(*p.str)
	}
	return b.String(), true
}

// iterable is what `for x in v or []` walks: a list's items; a string or
// object yields no dicts; anything else raises.
func iterable(v *jvalue) ([]*jvalue, bool) {
	switch {
	case !v.truthy():
		return nil, true
	case v.kind == 'a':
		return v.items, true
	case v.kind == 'o' || v.str != nil:
		return nil, true
	}
	return nil, false
}

// intKey is an int dict key as Python orders them.
func intKey(v *jvalue, def int) (int, bool) {
	if v == nil {
		return def, true
	}
	if v.kind != 's' || v.str != nil {
		return 0, false
	}
	switch string(v.text) {
	case "true":
		return 1, true
	case "false":
		return 0, true
	}
	n, err := strconv.Atoi(string(v.text))
	return n, err == nil
}

func rebuildChat(evs []*jvalue) (*jvalue, bool) {
	var content, reasoning, refusal []*jvalue
	type slot struct {
		id        *jvalue
		name      *jvalue
		arguments []*jvalue
	}
	tools := map[int]*slot{}
	var usage, model, id *jvalue
	role := strValue("assistant")
	var finish *jvalue
	sawChoice := false
	for _, chunk := range evs {
		model = or(chunk.get("model"), model)
		if v := chunk.get("id"); v != nil && v.str != nil {
			id = v
		}
		if v := chunk.get("usage"); v.truthy() {
			usage = v
		}
		choices, ok := iterable(chunk.get("choices"))
		if !ok {
			return nil, false
		}
		for _, choice := range choices {
			if !choice.isObject() {
				continue
			}
			sawChoice = true
			delta := or(choice.get("delta"), newObject())
			if !delta.isObject() {
				return nil, false
			}
			role = or(delta.get("role"), role)
			if v := delta.get("content"); v.truthy() {
				content = append(content, v)
			}
			if v := delta.get("refusal"); v.truthy() {
				refusal = append(refusal, v)
			}
			if v := or(delta.get("reasoning_content"), delta.get("reasoning")); v.truthy() {
				reasoning = append(reasoning, v)
			}
			calls, ok := iterable(delta.get("tool_calls"))
			if !ok {
				return nil, false
			}
			for _, tc := range calls {
				if !tc.isObject() {
					return nil, false
				}
				idx, ok := intKey(tc.get("index"), 0)
				if !ok {
					return nil, false
				}
				s := tools[idx]
				if s == nil {
					s = &slot{}
					tools[idx] = s
				}
				if v := tc.get("id"); v.truthy() {
					s.id = v
				}
				fn := or(tc.get("function"), newObject())
				if !fn.isObject() {
					return nil, false
				}
				if v := fn.get("name"); v.truthy() {
					s.name = v
				}
				if v := fn.get("arguments"); v.truthy() {
					s.arguments = append(s.arguments, v)
				}
			}
			if v := choice.get("finish_reason"); v.truthy() {
				finish = v
			}
		}
	}
	if !sawChoice {
		return nil, true
	}
	message := newObject()
	message.set("role", role)
	text, ok := concat(content)
	if !ok {
		return nil, false
	}
	if text == "" {
		message.set("content", rawValue("null"))
	} else {
		message.set("content", strValue(text))
	}
	if len(reasoning) > 0 {
		r, ok := concat(reasoning)
		if !ok {
			return nil, false
		}
		message.set("reasoning_content", strValue(r))
	}
	if len(refusal) > 0 {
		r, ok := concat(refusal)
		if !ok {
			return nil, false
		}
		message.set("refusal", strValue(r))
	}
	if len(tools) > 0 {
		list := &jvalue{kind: 'a'}
		idxs := make([]int, 0, len(tools))
		for i := range tools {
			idxs = append(idxs, i)
		}
		slices.Sort(idxs)
		for _, i := range idxs {
			s := tools[i]
			tc := newObject()
			tc.set("id", or(s.id, rawValue("null")))
			tc.set("type", strValue("function"))
			fn := newObject()
			fn.set("name", or(s.name, strValue("")))
			args, ok := concat(s.arguments)
			if !ok {
				return nil, false
			}
			fn.set("arguments", strValue(args))
			tc.set("function", fn)
			list.items = append(list.items, tc)
		}
		message.set("tool_calls", list)
	}
	result := newObject()
	result.set("object", strValue("chat.completion"))
	result.set("model", or(model, rawValue("null")))
	choice := newObject()
	choice.set("index", rawValue("0"))
	choice.set("message", message)
	choice.set("finish_reason", or(finish, rawValue("null")))
	result.set("choices", &jvalue{kind: 'a', items: []*jvalue{choice}})
	if id != nil {
		result.set("id", id)
	}
	if usage != nil {
		result.set("usage", usage)
	}
	return result, true
}

func rebuildMessages(evs []*jvalue) (*jvalue, bool) {
	var message *jvalue
	blocks := map[int]*jvalue{}
	usage := newObject()
	toolJSON := map[int]string{}
	merge := func(dst, src *jvalue) bool {
		src = or(src, newObject())
		if !src.isObject() {
			return false
		}
		for _, k := range src.keys {
			dst.set(k, src.members[k])
		}
		return true
	}
	for _, ev := range evs {
		t := ev.get("type")
		etype := ""
		if t != nil && t.str != nil {
			etype = *t.str
		}
		switch etype {
		case "message_start":
			msg := or(ev.get("message"), newObject())
			if !msg.isObject() {
				return nil, false
			}
			message = newObject()
			for _, k := range []string{"id", "type", "role", "model", "stop_reason"} {
				if v := msg.get(k); v != nil && !v.isNull() {
					message.set(k, v)
				}
			}
			if !merge(usage, msg.get("usage")) {
				return nil, false
			}
		case "content_block_start":
			idx, ok := intKey(ev.get("index"), len(blocks))
			if !ok {
				return nil, false
			}
			cb := or(ev.get("content_block"), newObject())
			if !cb.isObject() {
				return nil, false
			}
			blocks[idx] = cb.copyObject()
		case "content_block_delta":
			idx, ok := intKey(ev.get("index"), 0)
			if !ok {
				return nil, false
			}
			block := blocks[idx]
			if block == nil {
				block = newObject()
				blocks[idx] = block
			}
			delta := or(ev.get("delta"), newObject())
			if !delta.isObject() {
				return nil, false
			}
			dtype := ""
			if v := delta.get("type"); v != nil && v.str != nil {
				dtype = *v.str
			}
			appendText := func(field, kind string) bool {
				block.set("type", or(block.get("type"), strValue(kind)))
				joined, ok := concat([]*jvalue{or(block.get(field), strValue("")), or(delta.get(field), strValue(""))})
				if !ok {
					return false
				}
				block.set(field, strValue(joined))
				return true
			}
			switch dtype {
			case "text_delta":
				if !appendText("text", "text") {
					return nil, false
				}
			case "thinking_delta":
				if !appendText("thinking", "thinking") {
					return nil, false
				}
			case "input_json_delta":
				part, ok := concat([]*jvalue{or(delta.get("partial_json"), strValue(""))})
				if !ok {
					return nil, false
				}
				toolJSON[idx] += part
			}
		case "message_delta":
			if !merge(usage, ev.get("usage")) {
				return nil, false
			}
			d := or(ev.get("delta"), newObject())
			if !d.isObject() {
				return nil, false
			}
			if stop := d.get("stop_reason"); message != nil && stop.truthy() {
				message.set("stop_reason", stop)
			}
		}
	}
	if message == nil && len(blocks) == 0 {
		return nil, true
	}
	idxs := make([]int, 0, len(blocks))
	for i := range blocks {
		idxs = append(idxs, i)
	}
	slices.Sort(idxs)
	content := &jvalue{kind: 'a'}
	for _, i := range idxs {
		block := blocks[i]
		if t := block.get("type"); t != nil && t.str != nil && *t.str == "tool_use" && !block.get("input").truthy() {
			if js, ok := toolJSON[i]; ok {
				switch v, err := parse([]byte(js)); {
				case js == "":
					block.set("input", newObject())
				case err == nil:
					block.set("input", v)
				default:
					raw := newObject()
					raw.set("_raw", strValue(js))
					block.set("input", raw)
				}
			}
		}
		content.items = append(content.items, block)
	}
	result := newObject()
	if message != nil {
		for _, k := range message.keys {
			result.set(k, message.members[k])
		}
	}
	result.set("type", strValue("message"))
	result.set("content", content)
	if len(usage.keys) > 0 {
		result.set("usage", usage)
	}
	return result, true
}

// decodeReplace is Python's bytes.decode("utf-8", errors="replace"): each
// maximal invalid subpart becomes one U+FFFD.
func decodeReplace(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var out strings.Builder
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			out.WriteRune(r)
			i += size
			continue
		}
		out.WriteRune(utf8.RuneError)
		i += invalidPrefix(b[i:])
	}
	return out.String()
}

// invalidPrefix is the length of the maximal subpart of an ill-formed
// sequence at the start of b: a lead byte and the continuation bytes that
// could still have followed it.
func invalidPrefix(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC || c == 0xEE || c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}
