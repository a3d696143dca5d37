package replaymodel

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/tidwall/gjson"
)

// An item's identity is a hash of the fields that say what was said or
// done: type, role, the text of content and reasoning summaries, call_id,
// name, arguments, a custom tool call's input, and output. Everything else
// (ids, status, annotations, logprobs, encrypted reasoning) is left out,
// because a live agent is free to change it: simple_agent drops a
// reasoning item's status when it replays it, a tool's reply carries no id,
// and a recording made through Python holds nulls a Go agent never sends.
//
// Values that differ only in spelling hash alike:
//   - a message without a type is a message (NeMo Gym's easy input message);
//   - content given as a string equals one text part with that text, and a
//     part is its text (its type, input_text or output_text, and its
//     annotations are left out);
//   - arguments and outputs that parse as JSON are compared as canonical
//     JSON: whitespace, string escapes, number spelling (1.0 and 1) and
//     object key order do not matter. A Python tool's `{"city": "SF"}` and a
//     Go tool's `{"city":"SF"}` are the same output.
//
// Every value is written with a tag ahead of it and is either
// length-prefixed or self-delimiting, so no two different field sequences
// write the same bytes.

// hasher hashes items with one seed; keys from different hashers differ.
type hasher struct{ seed maphash.Seed }

func newHasher() hasher { return hasher{seed: maphash.MakeSeed()} }

// item is the identity of one input or output item.
func (hs hasher) item(item gjson.Result) uint64 {
	var h maphash.Hash
	h.SetSeed(hs.seed)
	writeItem(&h, item)
	return h.Sum64()
}

// instructions is the identity of a request's instructions, the first
// element of every sequence: the same input under other instructions is
// another prompt. Absent, null and "" are all "no instructions".
func (hs hasher) instructions(v gjson.Result) uint64 {
	var h maphash.Hash
	h.SetSeed(hs.seed)
	h.WriteByte('I')
	switch {
	case !v.Exists() || v.Type == gjson.Null || (v.Type == gjson.String && v.Str == ""):
	case v.Type == gjson.String:
		writeText(&h, 's', v.Str)
	default:
		writeCanonical(&h, v)
	}
	return h.Sum64()
}

// sequence hashes a run of item identities; the hash of the first n
// elements is its Sum64 after n adds.
type sequence struct{ h maphash.Hash }

func (hs hasher) newSequence() sequence {
	var s sequence
	s.h.SetSeed(hs.seed)
	return s
}

func (s *sequence) add(id uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], id)
	s.h.Write(b[:])
}

func (s *sequence) sum() uint64 { return s.h.Sum64() }

// itemFields are the members of an item that its identity reads.
type itemFields struct {
	typ, role, callID, name, arguments, input, output, content, summary gjson.Result
}

func writeItem(h *maphash.Hash, item gjson.Result) {
	if !item.IsObject() {
		// Not an item the Responses API knows; compare it whole.
		h.WriteByte('?')
		writeCanonical(h, item)
		return
	}
	var f itemFields
	item.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			f.typ = v
		case "role":
			f.role = v
		case "call_id":
			f.callID = v
		case "name":
			f.name = v
		case "arguments":
			f.arguments = v
		case "input":
			f.input = v
		case "output":
			f.output = v
		case "content":
			f.content = v
		case "summary":
			f.summary = v
		}
		return true
	})
	typ := f.typ.Str
	if f.typ.Type != gjson.String && f.role.Exists() {
		typ = "message"
	}
	writeText(h, 'T', typ)
	for _, m := range [...]struct {
		tag byte
		v   gjson.Result
	}{{'R', f.role}, {'C', f.callID}, {'N', f.name}} {
		if m.v.Exists() && m.v.Type != gjson.Null {
			h.WriteByte(m.tag)
			writeValue(h, m.v)
		}
	}
	for _, m := range [...]struct {
		tag byte
		v   gjson.Result
	}{{'A', f.arguments}, {'P', f.input}, {'O', f.output}} {
		if m.v.Exists() && m.v.Type != gjson.Null {
			h.WriteByte(m.tag)
			writePayload(h, m.v)
		}
	}
	if f.content.Exists() && f.content.Type != gjson.Null {
		h.WriteByte('X')
		writeParts(h, f.content)
	}
	if f.summary.Exists() && f.summary.Type != gjson.Null {
		h.WriteByte('S')
		writeParts(h, f.summary)
	}
}

// writePayload writes arguments, a custom tool's input or a tool's output:
// a string that holds JSON as canonical JSON, other strings as text, a list
// of content parts (a tool's rich output) as parts.
func writePayload(h *maphash.Hash, v gjson.Result) {
	switch {
	case v.Type == gjson.String && jsonl.ValidString(v.Str):
		h.WriteByte('j')
		writeCanonical(h, gjson.Parse(v.Str))
	case v.Type == gjson.String:
		writeText(h, 't', v.Str)
	case v.IsArray():
		writeParts(h, v)
	default:
		writeCanonical(h, v)
	}
}

// writeParts writes content: a string is one text part; a part with a
// string text (or refusal) is that text; any other part (an image, a file)
// is compared whole. The parts end with a marker rather than being
// bracketed, so that a string and a list of its one part hash alike.
func writeParts(h *maphash.Hash, v gjson.Result) {
	switch {
	case v.Type == gjson.String:
		writeText(h, 'p', v.Str)
	case v.IsArray():
		v.ForEach(func(_, part gjson.Result) bool {
			if t := part.Get("text"); t.Type == gjson.String {
				writeText(h, 'p', t.Str)
			} else if r := part.Get("refusal"); r.Type == gjson.String {
				writeText(h, 'r', r.Str)
			} else {
				writeCanonical(h, part)
			}
			return true
		})
	default:
		writeCanonical(h, v)
	}
	h.WriteByte('E')
}

// writeValue writes a scalar field (role, call_id, name): a string as its
// text, anything else in canonical form.
func writeValue(h *maphash.Hash, v gjson.Result) {
	if v.Type == gjson.String {
		writeText(h, 's', v.Str)
		return
	}
	writeCanonical(h, v)
}

// writeCanonical writes JSON as canonical tokens: strings by their decoded
// text, numbers by their float64 value, objects with their members sorted
// by key.
func writeCanonical(h *maphash.Hash, v gjson.Result) {
	switch v.Type {
	case gjson.Null:
		h.WriteByte('n')
	case gjson.False:
		h.WriteByte('f')
	case gjson.True:
		h.WriteByte('y')
	case gjson.Number:
		var b [40]byte
		h.WriteByte('d')
		h.Write(strconv.AppendFloat(b[:0], v.Num, 'g', -1, 64))
		h.WriteByte(';')
	case gjson.String:
		writeText(h, 's', v.Str)
	case gjson.JSON:
		if v.IsArray() {
			h.WriteByte('[')
			v.ForEach(func(_, e gjson.Result) bool {
				writeCanonical(h, e)
				return true
			})
			h.WriteByte(']')
			return
		}
		type member struct {
			key string
			val gjson.Result
		}
		var members []member
		v.ForEach(func(k, val gjson.Result) bool {
			members = append(members, member{k.Str, val})
			return true
		})
		slices.SortStableFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
		h.WriteByte('{')
		for _, m := range members {
			writeText(h, 'k', m.key)
			writeCanonical(h, m.val)
		}
		h.WriteByte('}')
	}
}

func writeText(h *maphash.Hash, tag byte, s string) {
	var b [binary.MaxVarintLen64 + 1]byte
	b[0] = tag
	n := binary.PutUvarint(b[1:], uint64(len(s)))
	h.Write(b[:1+n])
	h.WriteString(s)
}
