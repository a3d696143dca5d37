package capture

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"unicode/utf8"
)

// NeMo Gym reads a call's JSON with Python's json.loads and writes it back
// with orjson. canonical reproduces that round trip on raw bytes, so that
// a capture file gym writes, and every value the join copies out of one,
// is byte for byte the file NeMo Gym writes for the same call:
//   - compact, keys in wire order; a repeated key keeps its first place
//     and its last value;
//   - strings with only ", \, and control characters escaped (lowercase
//     \u00xx), everything else raw UTF-8;
//   - integer literals as written (-0 as 0), float literals in orjson's
//     form (100.0, 0.00001, 1e-6, 1e+16); NaN, Infinity and overflowing
//     floats as null.
//
// Input json.loads refuses (invalid UTF-8, bad syntax) is a *SyntaxError:
// the caller keeps the raw text instead. Input orjson cannot write (an
// integer beyond 64 bits, a lone surrogate) is an *UnwritableError: NeMo
// Gym loses that record and marks the capture incomplete.

// SyntaxError is JSON that Python's json.loads does not read.
type SyntaxError struct{ Msg string }

func (e *SyntaxError) Error() string { return "invalid JSON: " + e.Msg }

// UnwritableError is JSON that Python reads but orjson cannot write.
type UnwritableError struct{ Msg string }

func (e *UnwritableError) Error() string { return e.Msg }

// maxDepth is about where Python's json.loads runs out of recursion.
const maxDepth = 990

// appendCanonical parses raw as json.loads does and appends it to dst as
// orjson writes it: in one pass, or through the tree when a key repeats. On
// error dst comes back as it was.
func appendCanonical(dst, raw []byte) ([]byte, error) {
	out, err := transcode(dst, raw)
	if !errors.Is(err, errDuplicateKey) {
		if err != nil {
			return dst, err
		}
		return out, nil
	}
	v, err := parse(raw)
	if err != nil {
		return dst, err
	}
	return v.appendTo(dst), nil
}

// appendObject appends raw's canonical form when raw is a JSON object;
// ok is false, and dst as it was, when it is not, err when Python reads
// it but orjson cannot write it.
func appendObject(dst, raw []byte) (out []byte, ok bool, err error) {
	out, err = appendCanonical(dst, raw)
	if err != nil {
		var uw *UnwritableError
		if errors.As(err, &uw) {
			return dst, false, err
		}
		return dst, false, nil
	}
	if out[len(dst)] != '{' {
		return dst, false, nil
	}
	return out, true, nil
}

// parse reads raw as json.loads does.
func parse(raw []byte) (*jvalue, error) {
	if !utf8.Valid(raw) {
		return nil, &SyntaxError{"not UTF-8"}
	}
	p := &parser{transcoder{s: raw}}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, &SyntaxError{fmt.Sprintf("extra data at byte %d", p.i)}
	}
	return v, nil
}

func strValue(s string) *jvalue { return &jvalue{kind: 's', text: appendString(nil, s), str: &s} }

func rawValue(text string) *jvalue { return &jvalue{kind: 's', text: []byte(text)} }

func newObject() *jvalue { return &jvalue{kind: 'o', members: map[string]*jvalue{}} }

// get is a member of an object, nil for anything else or a missing key.
func (v *jvalue) get(k string) *jvalue {
	if v == nil || v.kind != 'o' {
		return nil
	}
	return v.members[k]
}

// set puts a member, at the end when it is new, as a Python dict does.
func (v *jvalue) set(k string, m *jvalue) {
	if _, ok := v.members[k]; !ok {
		v.keys = append(v.keys, k)
	}
	v.members[k] = m
}

func (v *jvalue) isObject() bool { return v != nil && v.kind == 'o' }

func (v *jvalue) isNull() bool { return v == nil || (v.kind == 's' && string(v.text) == "null") }

// truthy is Python's truth of the value (nil is a missing key: None).
func (v *jvalue) truthy() bool {
	switch {
	case v == nil:
		return false
	case v.kind == 'o':
		return len(v.keys) > 0
	case v.kind == 'a':
		return len(v.items) > 0
	case v.str != nil:
		return *v.str != ""
	}
	switch string(v.text) {
	case "null", "false", "0", "0.0", "-0.0":
		return false
	}
	return true
}

// copyObject is a shallow copy of an object, as Python's dict(o).
func (v *jvalue) copyObject() *jvalue {
	c := newObject()
	if v.isObject() {
		for _, k := range v.keys {
			c.set(k, v.members[k])
		}
	}
	return c
}

// jvalue is a parsed JSON value, kept as the text orjson writes for it.
type jvalue struct {
	kind    byte // 'o' object, 'a' array, 's' scalar: text is already canonical
	text    []byte
	str     *string // a string's value
	keys    []string
	members map[string]*jvalue
	items   []*jvalue
}

func (v *jvalue) appendTo(dst []byte) []byte { return v.appendJSON(dst, false) }

// appendSorted is appendTo with every object's keys sorted, as orjson's
// OPT_SORT_KEYS writes them.
func (v *jvalue) appendSorted(dst []byte) []byte { return v.appendJSON(dst, true) }

func (v *jvalue) appendJSON(dst []byte, sorted bool) []byte {
	switch v.kind {
	case 'o':
		keys := v.keys
		if sorted {
			keys = append([]string(nil), keys...)
			sort.Strings(keys)
		}
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			dst = v.members[k].appendJSON(dst, sorted)
		}
		return append(dst, '}')
	case 'a':
		dst = append(dst, '[')
		for i, it := range v.items {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = it.appendJSON(dst, sorted)
		}
		return append(dst, ']')
	}
	return append(dst, v.text...)
}

// parser builds the tree json.loads builds; its scalars are read, and
// written as orjson writes them, by the transcoder it wraps.
type parser struct{ transcoder }

func (p *parser) value(depth int) (*jvalue, error) {
	if depth > maxDepth {
		return nil, p.fail("nesting too deep")
	}
	if p.i < len(p.s) {
		switch p.s[p.i] {
		case '{':
			return p.object(depth)
		case '[':
			return p.array(depth)
		}
	}
	return p.scalar(depth)
}

// scalar reads a string, number or literal: its canonical text, and a
// string's value.
func (p *parser) scalar(depth int) (*jvalue, error) {
	start := len(p.out)
	if err := p.transcoder.value(depth); err != nil {
		return nil, err
	}
	v := &jvalue{kind: 's', text: bytes.Clone(p.out[start:])}
	p.out = p.out[:start]
	if v.text[0] == '"' {
		// The canonical text has only escapes Go's own quoting reads.
		str, err := strconv.Unquote(string(v.text))
		if err != nil {
			return nil, p.fail("unreadable string")
		}
		v.str = &str
	}
	return v, nil
}

func (p *parser) object(depth int) (*jvalue, error) {
	p.i++
	v := &jvalue{kind: 'o', members: map[string]*jvalue{}}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return v, nil
	}
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, p.fail("expected a key")
		}
		key, err := p.scalar(depth)
		if err != nil {
			return nil, err
		}
		k := *key.str
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.fail("expected ':'")
		}
		p.i++
		p.space()
		m, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if _, dup := v.members[k]; !dup {
			v.keys = append(v.keys, k)
		}
		v.members[k] = m
		p.space()
		if p.i >= len(p.s) {
			return nil, p.fail("unexpected end")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return v, nil
		default:
			return nil, p.fail("expected ',' or '}'")
		}
	}
}

func (p *parser) array(depth int) (*jvalue, error) {
	p.i++
	v := &jvalue{kind: 'a'}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return v, nil
	}
	for {
		p.space()
		it, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v.items = append(v.items, it)
		p.space()
		if p.i >= len(p.s) {
			return nil, p.fail("unexpected end")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return v, nil
		default:
			return nil, p.fail("expected ',' or ']'")
		}
	}
}

var (
	minInt64  = big.NewInt(math.MinInt64)
	maxUint64 = new(big.Int).SetUint64(math.MaxUint64)
)

// appendString writes s as orjson does.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x20 && c != '"' && c != '\\' {
			dst = append(dst, c)
		} else {
			dst = appendStringByte(dst, c)
		}
	}
	return append(dst, '"')
}

// appendStringByte writes a byte orjson escapes inside a string: '"',
// '\\' and the control characters.
func appendStringByte(dst []byte, c byte) []byte {
	const hex = "0123456789abcdef"
	switch c {
	case '"':
		return append(dst, '\\', '"')
	case '\\':
		return append(dst, '\\', '\\')
	case '\b':
		return append(dst, '\\', 'b')
	case '\t':
		return append(dst, '\\', 't')
	case '\n':
		return append(dst, '\\', 'n')
	case '\f':
		return append(dst, '\\', 'f')
	case '\r':
		return append(dst, '\\', 'r')
	}
	return append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
}

// pyRound is Python's round(x, places): the decimal nearest the exact
// binary value, ties to even.
func pyRound(x float64, places int) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', places, 64), 64)
	return r
}
