package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"math/big"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// errDuplicateKey sends transcode's caller to the tree, which keeps a
// repeated key's first place and last value.
var errDuplicateKey = errors.New("duplicate key")

// transcode appends raw, rewritten as canonical does, to dst in one pass
// with no tree: a model server captures every call, and most bodies need
// only their numbers and escapes looked at.
func transcode(dst, raw []byte) ([]byte, error) {
	if !utf8.Valid(raw) {
		return dst, &SyntaxError{"not UTF-8"}
	}
	t := &transcoder{s: raw, out: dst}
	t.space()
	if err := t.value(0); err != nil {
		return dst, err
	}
	t.space()
	if t.i != len(t.s) {
		return dst, t.fail("extra data")
	}
	return t.out, nil
}

type transcoder struct {
	s    []byte
	i    int
	out  []byte
	keys []int // start and end in out of each key of the objects open
}

func (t *transcoder) fail(what string) error {
	return &SyntaxError{what + " at byte " + strconv.Itoa(t.i)}
}

func (t *transcoder) space() {
	for t.i < len(t.s) {
		switch t.s[t.i] {
		case ' ', '\t', '\n', '\r':
			t.i++
		default:
			return
		}
	}
}

func (t *transcoder) value(depth int) error {
	if depth > maxDepth {
		return t.fail("nesting too deep")
	}
	if t.i >= len(t.s) {
		return t.fail("unexpected end")
	}
	switch c := t.s[t.i]; {
	case c == '{':
		return t.object(depth)
	case c == '[':
		return t.array(depth)
	case c == '"':
		return t.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return t.number()
	}
	for _, lit := range [...]struct{ word, text string }{
		{"true", "true"}, {"false", "false"}, {"null", "null"},
		{"NaN", "null"}, {"Infinity", "null"},
	} {
		if bytes.HasPrefix(t.s[t.i:], []byte(lit.word)) {
			t.i += len(lit.word)
			t.out = append(t.out, lit.text...)
			return nil
		}
	}
	return t.fail("unexpected character")
}

func (t *transcoder) object(depth int) error {
	t.i++
	t.out = append(t.out, '{')
	base := len(t.keys)
	defer func() { t.keys = t.keys[:base] }()
	t.space()
	if t.i < len(t.s) && t.s[t.i] == '}' {
		t.i++
		t.out = append(t.out, '}')
		return nil
	}
	for first := true; ; first = false {
		t.space()
		if t.i >= len(t.s) || t.s[t.i] != '"' {
			return t.fail("expected a key")
		}
		if !first {
			t.out = append(t.out, ',')
		}
		start := len(t.out)
		if err := t.str(); err != nil {
			return err
		}
		end := len(t.out)
		for k := base; k < len(t.keys); k += 2 {
			if bytes.Equal(t.out[t.keys[k]:t.keys[k+1]], t.out[start:end]) {
				return errDuplicateKey
			}
		}
		t.keys = append(t.keys, start, end)
		t.space()
		if t.i >= len(t.s) || t.s[t.i] != ':' {
			return t.fail("expected ':'")
		}
		t.i++
		t.out = append(t.out, ':')
		t.space()
		if err := t.value(depth + 1); err != nil {
			return err
		}
		t.space()
		if t.i >= len(t.s) {
			return t.fail("unexpected end")
		}
		switch t.s[t.i] {
		case ',':
			t.i++
		case '}':
			t.i++
			t.out = append(t.out, '}')
			return nil
		default:
			return t.fail("expected ',' or '}'")
		}
	}
}

func (t *transcoder) array(depth int) error {
	t.i++
	t.out = append(t.out, '[')
	t.space()
	if t.i < len(t.s) && t.s[t.i] == ']' {
		t.i++
		t.out = append(t.out, ']')
		return nil
	}
	for first := true; ; first = false {
		t.space()
		if !first {
			t.out = append(t.out, ',')
		}
		if err := t.value(depth + 1); err != nil {
			return err
		}
		t.space()
		if t.i >= len(t.s) {
			return t.fail("unexpected end")
		}
		switch t.s[t.i] {
		case ',':
			t.i++
		case ']':
			t.i++
			t.out = append(t.out, ']')
			return nil
		default:
			return t.fail("expected ',' or ']'")
		}
	}
}

func (t *transcoder) number() error {
	start := t.i
	if t.s[t.i] == '-' {
		t.i++
		if bytes.HasPrefix(t.s[t.i:], []byte("Infinity")) {
			t.i += 8
			t.out = append(t.out, "null"...)
			return nil
		}
	}
	digits := func() int {
		n := 0
		for t.i < len(t.s) && t.s[t.i] >= '0' && t.s[t.i] <= '9' {
			t.i++
			n++
		}
		return n
	}
	intStart := t.i
	n := digits()
	if n == 0 {
		return t.fail("expected a digit")
	}
	if t.s[intStart] == '0' && n > 1 {
		return t.fail("leading zero")
	}
	isFloat := false
	if t.i < len(t.s) && t.s[t.i] == '.' {
		save := t.i
		t.i++
		if digits() == 0 {
			t.i = save
		} else {
			isFloat = true
		}
	}
	if t.i < len(t.s) && (t.s[t.i] == 'e' || t.s[t.i] == 'E') {
		save := t.i
		t.i++
		if t.i < len(t.s) && (t.s[t.i] == '+' || t.s[t.i] == '-') {
			t.i++
		}
		if digits() == 0 {
			t.i = save
		} else {
			isFloat = true
		}
	}
	lit := t.s[start:t.i]
	if isFloat {
		f, err := strconv.ParseFloat(string(lit), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return t.fail("bad number")
		}
		t.out = tree.AppendOrjsonFloat(t.out, f)
		return nil
	}
	if n <= 18 {
		if string(lit) == "-0" {
			lit = lit[1:]
		}
		t.out = append(t.out, lit...)
		return nil
	}
	// Without leading zeros, more than 20 digits is beyond 64 bits.
	if n > 20 {
		return &UnwritableError{"Integer exceeds 64-bit range"}
	}
	v, _ := new(big.Int).SetString(string(lit), 10)
	if v.Cmp(minInt64) < 0 || v.Cmp(maxUint64) > 0 {
		return &UnwritableError{"Integer exceeds 64-bit range"}
	}
	t.out = append(t.out, v.String()...)
	return nil
}

// str copies a string, rewriting its escapes as orjson writes them.
func (t *transcoder) str() error {
	t.i++
	t.out = append(t.out, '"')
	for {
		run := t.i
		t.i = plainRun(t.s, t.i)
		t.out = append(t.out, t.s[run:t.i]...)
		if t.i >= len(t.s) {
			return t.fail("unterminated string")
		}
		switch c := t.s[t.i]; {
		case c == '"':
			t.i++
			t.out = append(t.out, '"')
			return nil
		case c < 0x20:
			return t.fail("control character in a string")
		}
		t.i++
		if t.i >= len(t.s) {
			return t.fail("unterminated string")
		}
		esc := t.s[t.i]
		t.i++
		switch esc {
		case '"', '\\':
			t.out = append(t.out, '\\', esc)
		case '/':
			t.out = append(t.out, '/')
		case 'b', 'f', 'n', 'r', 't':
			t.out = append(t.out, '\\', esc)
		case 'u':
			r, err := t.hex4()
			if err != nil {
				return err
			}
			if utf16.IsSurrogate(r) {
				if r >= 0xDC00 || !bytes.HasPrefix(t.s[t.i:], []byte(`\u`)) {
					return &UnwritableError{"str is not valid UTF-8: surrogates not allowed"}
				}
				t.i += 2
				r2, err := t.hex4()
				if err != nil {
					return err
				}
				if r2 < 0xDC00 || r2 > 0xDFFF {
					return &UnwritableError{"str is not valid UTF-8: surrogates not allowed"}
				}
				r = utf16.DecodeRune(r, r2)
			}
			if r < 0x20 || r == '"' || r == '\\' {
				t.out = appendStringByte(t.out, byte(r))
				continue
			}
			t.out = utf8.AppendRune(t.out, r)
		default:
			return t.fail("invalid escape")
		}
	}
}

// plainRun is the end of the bytes from i on that a string copies as they
// are (none is '"', '\\' or a control character), eight at a time while it
// can: strings are most of what a model call carries.
func plainRun(s []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		w := binary.LittleEndian.Uint64(s[i:])
		quote, backslash := w^(ones*'"'), w^(ones*'\\')
		// Each term has a byte's high bit set where some byte is below
		// 0x20, or is zero after the xor (is '"' or '\\').
		if ((w-ones*0x20)&^w|(quote-ones)&^quote|(backslash-ones)&^backslash)&highs != 0 {
			break
		}
	}
	for i < len(s) && s[i] != '"' && s[i] != '\\' && s[i] >= 0x20 {
		i++
	}
	return i
}

func (t *transcoder) hex4() (rune, error) {
	if t.i+4 > len(t.s) {
		return 0, t.fail("short \\u escape")
	}
	var r rune
	for _, c := range t.s[t.i : t.i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, t.fail("invalid \\u escape")
		}
	}
	t.i += 4
	return r, nil
}
