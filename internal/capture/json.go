package capture

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf16"
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

// canonical parses raw as json.loads does and writes it as orjson does:
// in one pass, or through the tree when a key repeats.
func canonical(raw []byte) ([]byte, error) {
	out, err := transcode(make([]byte, 0, len(raw)), raw)
	if !errors.Is(err, errDuplicateKey) {
		return out, err
	}
	v, err := parse(raw)
	if err != nil {
		return nil, err
	}
	return v.appendTo(nil), nil
}

// parse reads raw as json.loads does.
func parse(raw []byte) (*jvalue, error) {
	if !utf8.Valid(raw) {
		return nil, &SyntaxError{"not UTF-8"}
	}
	p := &parser{s: raw}
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

func (v *jvalue) appendTo(dst []byte) []byte {
	switch v.kind {
	case 'o':
		dst = append(dst, '{')
		for i, k := range v.keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			dst = v.members[k].appendTo(dst)
		}
		return append(dst, '}')
	case 'a':
		dst = append(dst, '[')
		for i, it := range v.items {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = it.appendTo(dst)
		}
		return append(dst, ']')
	}
	return append(dst, v.text...)
}

type parser struct {
	s []byte
	i int
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) fail(what string) error {
	return &SyntaxError{fmt.Sprintf("%s at byte %d", what, p.i)}
}

func (p *parser) value(depth int) (*jvalue, error) {
	if depth > maxDepth {
		return nil, p.fail("nesting too deep")
	}
	if p.i >= len(p.s) {
		return nil, p.fail("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return strValue(s), nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	for _, lit := range []struct{ word, text string }{
		{"true", "true"}, {"false", "false"}, {"null", "null"},
		{"NaN", "null"}, {"Infinity", "null"}, {"-Infinity", "null"},
	} {
		if strings.HasPrefix(string(p.s[p.i:min(len(p.s), p.i+len(lit.word))]), lit.word) {
			p.i += len(lit.word)
			return &jvalue{kind: 's', text: []byte(lit.text)}, nil
		}
	}
	return nil, p.fail("unexpected character")
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
		k, err := p.str()
		if err != nil {
			return nil, err
		}
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

func (p *parser) number() (*jvalue, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
		// Python reads -Infinity here too.
		if strings.HasPrefix(string(p.s[p.i:min(len(p.s), p.i+8)]), "Infinity") {
			p.i += 8
			return &jvalue{kind: 's', text: []byte("null")}, nil
		}
	}
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	intStart := p.i
	if digits() == 0 {
		return nil, p.fail("expected a digit")
	}
	if p.s[intStart] == '0' && p.i-intStart > 1 {
		// json.loads stops after the 0 and then finds extra data.
		return nil, p.fail("leading zero")
	}
	isFloat := false
	if p.i < len(p.s) && p.s[p.i] == '.' {
		save := p.i
		p.i++
		if digits() == 0 {
			p.i = save // "1." is 1 followed by extra data
		} else {
			isFloat = true
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		save := p.i
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			p.i = save
		} else {
			isFloat = true
		}
	}
	lit := string(p.s[start:p.i])
	if !isFloat {
		// Without leading zeros, more than 20 digits is beyond 64 bits.
		if p.i-intStart > 20 {
			return nil, &UnwritableError{"Integer exceeds 64-bit range"}
		}
		n, ok := new(big.Int).SetString(lit, 10)
		if !ok {
			return nil, p.fail("bad integer")
		}
		if n.Cmp(minInt64) < 0 || n.Cmp(maxUint64) > 0 {
			return nil, &UnwritableError{"Integer exceeds 64-bit range"}
		}
		return &jvalue{kind: 's', text: []byte(n.String())}, nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, p.fail("bad number")
	}
	return &jvalue{kind: 's', text: AppendFloat(nil, f)}, nil
}

// str reads a JSON string as Python does: a lone surrogate escape is read
// (and orjson then refuses to write it).
func (p *parser) str() (string, error) {
	p.i++
	var b strings.Builder
	for {
		if p.i >= len(p.s) {
			return "", p.fail("unterminated string")
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), nil
		case c < 0x20:
			return "", p.fail("control character in a string")
		case c != '\\':
			b.WriteByte(c)
			p.i++
			continue
		}
		p.i++
		if p.i >= len(p.s) {
			return "", p.fail("unterminated string")
		}
		esc := p.s[p.i]
		p.i++
		switch esc {
		case '"', '\\', '/':
			b.WriteByte(esc)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, err := p.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(r) {
				if r >= 0xDC00 || !strings.HasPrefix(string(p.s[p.i:min(len(p.s), p.i+2)]), `\u`) {
					return "", &UnwritableError{"str is not valid UTF-8: surrogates not allowed"}
				}
				save := p.i
				p.i += 2
				r2, err := p.hex4()
				if err != nil {
					return "", err
				}
				if r2 < 0xDC00 || r2 > 0xDFFF {
					p.i = save
					return "", &UnwritableError{"str is not valid UTF-8: surrogates not allowed"}
				}
				r = utf16.DecodeRune(r, r2)
			}
			b.WriteRune(r)
		default:
			return "", p.fail("invalid escape")
		}
	}
}

func (p *parser) hex4() (rune, error) {
	if p.i+4 > len(p.s) {
		return 0, p.fail("short \\u escape")
	}
	n, err := strconv.ParseUint(string(p.s[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, p.fail("invalid \\u escape")
	}
	p.i += 4
	return rune(n), nil
}

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

// AppendFloat writes f as orjson does: the shortest digits that read back
// as f, in fixed notation (with .0 when integral) for a decimal exponent
// from -5 to 15, else as d.ddde±x; NaN and infinities as null.
func AppendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	if exp >= -5 && exp < 16 {
		fixed := strconv.FormatFloat(f, 'f', -1, 64)
		dst = append(dst, fixed...)
		if !strings.ContainsAny(fixed, ".") {
			dst = append(dst, '.', '0')
		}
		return dst
	}
	dst = append(dst, mant...)
	dst = append(dst, 'e')
	if exp >= 0 {
		dst = append(dst, '+')
	}
	return strconv.AppendInt(dst, int64(exp), 10)
}

// round2 is Python's round(x, 2): the decimal nearest the exact binary
// value, ties to even.
func round2(x float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 2, 64), 64)
	return r
}
