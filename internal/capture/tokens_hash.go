package capture

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"sort"

	"github.com/nemo-gym-go/gym/internal/pyjson"
	"github.com/nemo-gym-go/gym/internal/resources"
)

// fingerprintVersion is NeMo Gym's FINGERPRINT_VERSION: entries stamped
// by another version are never matched.
const fingerprintVersion = 2

// tokenDigest is NeMo Gym's compute_digest: sha256 over a domain and the
// ids as a length-prefixed list of big-endian uint64s (the domain alone
// for none).
func tokenDigest(ids []int64) (string, error) {
	h := sha256.New()
	h.Write([]byte("nemo-gym-tokens"))
	if len(ids) == 0 {
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	var b [9]byte
	b[0] = 1
	binary.BigEndian.PutUint64(b[1:], uint64(len(ids)))
	h.Write(b[:])
	for _, id := range ids {
		if id < 0 {
			return "", fmt.Errorf("token id %d is negative", id)
		}
		binary.BigEndian.PutUint64(b[:8], uint64(id))
		h.Write(b[:8])
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashField is one tagged, length-delimited UTF-8 field.
func hashField(h hash.Hash, tag byte, value string) {
	var n [9]byte
	n[0] = tag
	binary.BigEndian.PutUint64(n[1:], uint64(len(value)))
	h.Write(n[:])
	h.Write([]byte(value))
}

// assistantFingerprint is NeMo Gym's assistant_fingerprint: the
// model-authored turns of items, in order, "" when there are none.
func assistantFingerprint(items []*jvalue) (string, error) {
	h := sha256.New()
	h.Write([]byte("nemo-gym-lineage"))
	count := 0
	for _, m := range items {
		if !m.isObject() {
			return "", errors.New("request item is not an object")
		}
		if !(pyEquals(m.get("role"), "assistant") || pyEquals(m.get("type"), "function_call")) {
			continue
		}
		count++
		if err := hashTurn(h, 0, m); err != nil {
			return "", err
		}
	}
	if count == 0 {
		return "", nil
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashTurn hashes a turn's content parts and tool calls under the five
// field tags from first on.
func hashTurn(h hash.Hash, first byte, m *jvalue) error {
	parts, err := contentParts(m.get("content"))
	if err != nil {
		return err
	}
	for _, p := range parts {
		hashField(h, first, p[0])
		hashField(h, first+1, p[1])
	}
	for _, t := range toolCalls(m) {
		hashField(h, first+2, t[0])
		hashField(h, first+3, t[1])
		hashField(h, first+4, t[2])
	}
	return nil
}

// conversationDigest is NeMo Gym's conversation_digest: every turn,
// model-authored or not, with tool results.
func conversationDigest(items []*jvalue) (string, error) {
	h := sha256.New()
	h.Write([]byte("nemo-gym-lineage-context"))
	for _, m := range items {
		if !m.isObject() {
			return "", errors.New("request item is not an object")
		}
		role := m.get("role")
		if !role.truthy() {
			role = m.get("type")
		}
		hashField(h, 0, pyStrOr(role, ""))
		if err := hashTurn(h, 1, m); err != nil {
			return "", err
		}
		for _, r := range toolResults(m) {
			hashField(h, 6, r[0])
			hashField(h, 7, r[1])
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// contentParts are a turn's typed content parts (NeMo Gym's _content_of):
// text as text, tool blocks left to toolCalls and toolResults, any other
// block as its sorted JSON.
func contentParts(c *jvalue) ([][2]string, error) {
	switch {
	case c.isNull():
		return nil, nil
	case c.str != nil:
		if *c.str == "" {
			return nil, nil
		}
		return [][2]string{{"text", *c.str}}, nil
	case c.kind != 'a':
		return nil, errors.New("unsupported message content")
	}
	var parts [][2]string
	for _, b := range c.items {
		if b.str != nil {
			if *b.str != "" {
				parts = append(parts, [2]string{"text", *b.str})
			}
			continue
		}
		if !b.isObject() {
			return nil, errors.New("unsupported content block")
		}
		typ := pyStrOr(b.get("type"), "")
		if typ == "tool_use" || typ == "tool_result" {
			continue
		}
		if t := b.get("text"); t != nil && t.str != nil && (typ == "" || typ == "text" || typ == "input_text" || typ == "output_text") {
			if *t.str != "" {
				parts = append(parts, [2]string{"text", *t.str})
			}
			continue
		}
		if typ == "" {
			return nil, errors.New("content block has no supported type")
		}
		parts = append(parts, [2]string{typ, string(b.appendSorted(nil))})
	}
	return parts, nil
}

// toolCalls are a turn's tool calls as (id, name, canonical arguments),
// from a Responses function_call item, Anthropic tool_use blocks and Chat
// tool_calls alike.
func toolCalls(m *jvalue) [][3]string {
	var out [][3]string
	if pyEquals(m.get("type"), "function_call") {
		name := pyStrOr(m.get("name"), "")
		if ns := m.get("namespace"); ns.truthy() {
			name = pyStrV(ns) + "__" + name
		}
		out = append(out, [3]string{firstTruthy(m.get("call_id"), m.get("id")), name, toolArguments(m.get("arguments"))})
	}
	if c := m.get("content"); c != nil && c.kind == 'a' {
		for _, b := range c.items {
			if b.isObject() && pyEquals(b.get("type"), "tool_use") {
				out = append(out, [3]string{firstTruthy(b.get("id")), pyStrOr(b.get("name"), ""), toolArguments(b.get("input"))})
			}
		}
	}
	if calls := m.get("tool_calls"); calls.truthy() && calls.kind == 'a' {
		for _, call := range calls.items {
			fn := call.get("function")
			out = append(out, [3]string{firstTruthy(call.get("id")), pyStrOr(fn.get("name"), ""), toolArguments(fn.get("arguments"))})
		}
	}
	return out
}

// toolResults are a turn's tool results as (call id, output).
func toolResults(m *jvalue) [][2]string {
	var out [][2]string
	payload := func(v *jvalue) string {
		if v != nil && v.str != nil {
			return *v.str
		}
		return sortedJSON(v)
	}
	switch {
	case pyEquals(m.get("type"), "function_call_output"):
		out = append(out, [2]string{firstTruthy(m.get("call_id"), m.get("id")), payload(m.get("output"))})
	case pyEquals(m.get("role"), "tool"):
		out = append(out, [2]string{firstTruthy(m.get("tool_call_id")), payload(m.get("content"))})
	}
	if c := m.get("content"); c != nil && c.kind == 'a' {
		for _, b := range c.items {
			if b.isObject() && pyEquals(b.get("type"), "tool_result") {
				out = append(out, [2]string{firstTruthy(b.get("tool_use_id"), b.get("id")), payload(b.get("content"))})
			}
		}
	}
	return out
}

// toolArguments are arguments for comparison (canonicalize_tool_arguments):
// a JSON string parsed and written with sorted keys, any other string
// trimmed.
func toolArguments(v *jvalue) string {
	if v.isNull() {
		return ""
	}
	if v.str != nil {
		parsed, err := parse([]byte(*v.str))
		if err != nil {
			return resources.PyStrip(*v.str)
		}
		return sortedJSON(parsed)
	}
	return sortedJSON(v)
}

// sortedJSON is orjson.dumps(v, option=OPT_SORT_KEYS); null for a missing
// value, as Python's None.
func sortedJSON(v *jvalue) string {
	if v == nil {
		return "null"
	}
	return string(v.appendSorted(nil))
}

// appendPyDumps is Python's json.dumps(v, sort_keys=True): ", " and ": "
// between items, and every character outside ASCII escaped.
func (v *jvalue) appendPyDumps(dst []byte) []byte {
	switch {
	case v == nil:
		return append(dst, "null"...)
	case v.kind == 'o':
		keys := append([]string(nil), v.keys...)
		sort.Strings(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = pyjson.AppendString(dst, k)
			dst = append(dst, ": "...)
			dst = v.members[k].appendPyDumps(dst)
		}
		return append(dst, '}')
	case v.kind == 'a':
		dst = append(dst, '[')
		for i, it := range v.items {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = it.appendPyDumps(dst)
		}
		return append(dst, ']')
	case v.str != nil:
		return pyjson.AppendString(dst, *v.str)
	}
	return append(dst, v.text...)
}

// pyEquals is Python's v == s for a JSON value.
func pyEquals(v *jvalue, s string) bool { return v != nil && v.str != nil && *v.str == s }

// pyStrV is Python's str() of a JSON value.
func pyStrV(v *jvalue) string {
	switch {
	case v == nil:
		return "None"
	case v.str != nil:
		return *v.str
	case v.kind == 's':
		switch t := string(v.text); t {
		case "null":
			return "None"
		case "true":
			return "True"
		case "false":
			return "False"
		default:
			return t
		}
	}
	return sortedJSON(v)
}

// pyStrOr is str(d.get(key, def)): def only when the key is missing.
func pyStrOr(v *jvalue, def string) string {
	if v == nil {
		return def
	}
	return pyStrV(v)
}

// firstTruthy is str(a or b or ... or "").
func firstTruthy(vs ...*jvalue) string {
	for _, v := range vs {
		if v.truthy() {
			return pyStrV(v)
		}
	}
	return ""
}
