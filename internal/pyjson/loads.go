package pyjson

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// SyntaxError is json.loads's JSONDecodeError: Python's message, and where.
type SyntaxError struct {
	Msg    string
	Line   int // 1-based
	Column int // 1-based, in characters
	Offset int // in characters, as Python's pos
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s: line %d column %d (char %d)", e.Msg, e.Line, e.Column, e.Offset)
}

// maxIntDigits is Python's default int_max_str_digits: json.loads refuses
// a longer integer literal.
const maxIntDigits = 4300

// Loads is json.loads(data) for UTF-8 data: the value Python builds, in the
// types Dumps takes. An object is an Object in first-seen key order, a
// repeated key keeping its first place and its last value (dict(pairs));
// an integer is an int64, or a *big.Int beyond it; any other number is a
// float64 (±Inf when out of range, as float() gives); NaN, Infinity and
// -Infinity are accepted as Python accepts them. A \u escape of a lone
// surrogate is kept as the surrogate, encoded as WTF-8, so Dumps writes it
// back as the same escape.
func Loads(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("not UTF-8 text")
	}
	if len(data) >= 3 && string(data[:3]) == "\ufeff" {
		return nil, &SyntaxError{Msg: "Unexpected UTF-8 BOM (decode using utf-8-sig)", Line: 1, Column: 1}
	}
	d := &decoder{data: data}
	d.skipSpace()
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return nil, d.errAt("Extra data", d.pos)
	}
	return v, nil
}

type decoder struct {
	data  []byte
	pos   int
	depth int
}

// maxDepth bounds nesting, as Python's recursion limit does (it raises
// RecursionError), so a hostile line cannot exhaust the stack.
const maxDepth = 10000

func (d *decoder) errAt(msg string, pos int) error {
	line, col, chars := 1, 1, 0
	for _, r := range string(d.data[:pos]) {
		chars++
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &SyntaxError{Msg: msg, Line: line, Column: col, Offset: chars}
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) hasPrefix(s string) bool {
	return len(d.data)-d.pos >= len(s) && string(d.data[d.pos:d.pos+len(s)]) == s
}

func (d *decoder) value() (any, error) {
	if d.pos >= len(d.data) {
		return nil, d.errAt("Expecting value", d.pos)
	}
	switch c := d.data[d.pos]; {
	case c == '"':
		return d.str()
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '-' || (c >= '0' && c <= '9'):
		if d.hasPrefix("-Infinity") {
			d.pos += len("-Infinity")
			return math.Inf(-1), nil
		}
		return d.number()
	}
	for _, lit := range []struct {
		s string
		v any
	}{{"null", nil}, {"true", true}, {"false", false}, {"NaN", math.NaN()}, {"Infinity", math.Inf(1)}} {
		if d.hasPrefix(lit.s) {
			d.pos += len(lit.s)
			return lit.v, nil
		}
	}
	return nil, d.errAt("Expecting value", d.pos)
}

func (d *decoder) enter() error {
	d.depth++
	if d.depth > maxDepth {
		return d.errAt(fmt.Sprintf("nested deeper than %d levels", maxDepth), d.pos)
	}
	return nil
}

func (d *decoder) object() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	d.pos++ // {
	obj := make(Object, 0, 8)
	// Most objects are small: a repeated key is found by a scan, and by a
	// map only past a few dozen keys.
	var index map[string]int
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return obj, nil
	}
	for {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.errAt("Expecting property name enclosed in double quotes", d.pos)
		}
		key, err := d.str()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.errAt("Expecting ':' delimiter", d.pos)
		}
		d.pos++
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		if i := findKey(obj, index, key); i >= 0 {
			obj[i].Value = v
		} else {
			if index == nil && len(obj) >= indexThreshold {
				index = make(map[string]int, 2*len(obj))
				for i, m := range obj {
					index[m.Key] = i
				}
			}
			if index != nil {
				index[key] = len(obj)
			}
			obj = append(obj, Member{Key: key, Value: v})
		}
		d.skipSpace()
		if d.pos < len(d.data) && d.data[d.pos] == '}' {
			d.pos++
			return obj, nil
		}
		if d.pos >= len(d.data) || d.data[d.pos] != ',' {
			return nil, d.errAt("Expecting ',' delimiter", d.pos)
		}
		d.pos++
		d.skipSpace()
	}
}

const indexThreshold = 32

func findKey(obj Object, index map[string]int, key string) int {
	if index != nil {
		if i, ok := index[key]; ok {
			return i
		}
		return -1
	}
	for i := range obj {
		if obj[i].Key == key {
			return i
		}
	}
	return -1
}

func (d *decoder) array() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer func() { d.depth-- }()
	d.pos++ // [
	arr := make([]any, 0, 4)
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return arr, nil
	}
	for {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		d.skipSpace()
		if d.pos < len(d.data) && d.data[d.pos] == ']' {
			d.pos++
			return arr, nil
		}
		if d.pos >= len(d.data) || d.data[d.pos] != ',' {
			return nil, d.errAt("Expecting ',' delimiter", d.pos)
		}
		d.pos++
		d.skipSpace()
	}
}

// number follows Python's NUMBER_RE: -?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?
// A literal that stops short of it (a "1." or "1e") ends at the integer
// part, leaving the rest to be reported as the next token's error.
func (d *decoder) number() (any, error) {
	start := d.pos
	i := d.pos
	digits := func(i int) int {
		for i < len(d.data) && d.data[i] >= '0' && d.data[i] <= '9' {
			i++
		}
		return i
	}
	if d.data[i] == '-' {
		i++
	}
	switch {
	case i < len(d.data) && d.data[i] == '0':
		i++
	case i < len(d.data) && d.data[i] >= '1' && d.data[i] <= '9':
		i = digits(i)
	default:
		return nil, d.errAt("Expecting value", start)
	}
	isFloat := false
	if i+1 < len(d.data) && d.data[i] == '.' && d.data[i+1] >= '0' && d.data[i+1] <= '9' {
		i = digits(i + 1)
		isFloat = true
	}
	if i < len(d.data) && (d.data[i] == 'e' || d.data[i] == 'E') {
		j := i + 1
		if j < len(d.data) && (d.data[j] == '+' || d.data[j] == '-') {
			j++
		}
		if j < len(d.data) && d.data[j] >= '0' && d.data[j] <= '9' {
			i = digits(j)
			isFloat = true
		}
	}
	d.pos = i
	lit := string(d.data[start:i])
	if isFloat {
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil && !math.IsInf(f, 0) {
			return nil, d.errAt("Invalid number", start)
		}
		return f, nil
	}
	if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return n, nil
	}
	if len(lit) > maxIntDigits+1 {
		return nil, d.errAt(fmt.Sprintf("Exceeds the limit (%d digits) for integer string conversion", maxIntDigits), start)
	}
	n, _ := new(big.Int).SetString(lit, 10)
	return n, nil
}

func (d *decoder) str() (string, error) {
	start := d.pos
	d.pos++ // "
	// Most strings have no escape: they are their bytes.
	for i := d.pos; i < len(d.data); i++ {
		c := d.data[i]
		if c == '"' {
			s := string(d.data[d.pos:i])
			d.pos = i + 1
			return s, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
	}
	var b []byte
	for {
		if d.pos >= len(d.data) {
			return "", d.errAt("Unterminated string starting at", start)
		}
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return string(b), nil
		case c < 0x20:
			return "", d.errAt("Invalid control character at", d.pos)
		case c != '\\':
			b = append(b, c)
			d.pos++
			continue
		}
		if d.pos+1 >= len(d.data) {
			return "", d.errAt("Unterminated string starting at", start)
		}
		esc := d.data[d.pos+1]
		if r, ok := simpleEscapes[esc]; ok {
			b = append(b, r)
			d.pos += 2
			continue
		}
		if esc != 'u' {
			return "", d.errAt("Invalid \\escape", d.pos)
		}
		r, ok := d.hex4(d.pos + 2)
		if !ok {
			return "", d.errAt("Invalid \\uXXXX escape", d.pos+1)
		}
		d.pos += 6
		if utf16.IsSurrogate(r) && r < 0xdc00 && d.hasPrefix(`\u`) {
			if lo, ok := d.hex4(d.pos + 2); ok && lo >= 0xdc00 && lo <= 0xdfff {
				d.pos += 6
				b = utf8.AppendRune(b, utf16.DecodeRune(r, lo))
				continue
			}
		}
		b = appendWTF8(b, r)
	}
}

var simpleEscapes = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

func (d *decoder) hex4(at int) (rune, bool) {
	if at+4 > len(d.data) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(d.data[at:at+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(n), true
}

// appendWTF8 encodes r, which may be a lone surrogate (that UTF-8 has no
// form for), in the three bytes WTF-8 gives it.
func appendWTF8(b []byte, r rune) []byte {
	if !utf16.IsSurrogate(r) {
		return utf8.AppendRune(b, r)
	}
	return append(b, 0xe0|byte(r>>12), 0x80|byte(r>>6)&0x3f, 0x80|byte(r)&0x3f)
}

// decodeSurrogate reports a WTF-8 lone surrogate at the start of s.
func decodeSurrogate(s string) (rune, bool) {
	if len(s) >= 3 && s[0] == 0xed && s[1] >= 0xa0 && s[1] <= 0xbf && s[2] >= 0x80 && s[2] <= 0xbf {
		return rune(s[0]&0x0f)<<12 | rune(s[1]&0x3f)<<6 | rune(s[2]&0x3f), true
	}
	return 0, false
}
