// Package pyjson writes JSON exactly as Python's json.dumps does with its
// defaults (ensure_ascii, ", " and ": " separators, float repr), so files
// gym writes in place of a Python script's are byte-identical to them.
package pyjson

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Object is a Python dict: its members in insertion order.
type Object []Member

// Member is one key of an Object.
type Member struct {
	Key   string
	Value any
}

// Dumps is json.dumps(v), or json.dumps(v, sort_keys=True) when sortKeys.
// v is built of nil, bool, string, Go integers, float32/float64, []any,
// []string, Object and map[string]any (a map has no order, so it needs
// sortKeys).
func Dumps(v any, sortKeys bool) ([]byte, error) {
	return appendValue(nil, v, sortKeys)
}

// AppendDumps appends json.dumps(v) to dst, as Dumps makes it.
func AppendDumps(dst []byte, v any, sortKeys bool) ([]byte, error) {
	return appendValue(dst, v, sortKeys)
}

func appendValue(dst []byte, v any, sortKeys bool) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if v {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		return AppendString(dst, v), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(dst, v, 10), nil
	case *big.Int:
		return v.Append(dst, 10), nil
	case float32:
		return appendJSONFloat(dst, float64(v)), nil
	case float64:
		return appendJSONFloat(dst, v), nil
	case []string:
		dst = append(dst, '[')
		for i, s := range v {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = AppendString(dst, s)
		}
		return append(dst, ']'), nil
	case []any:
		dst = append(dst, '[')
		for i, it := range v {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			var err error
			if dst, err = appendValue(dst, it, sortKeys); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case Object:
		members := v
		if sortKeys {
			members = append(Object(nil), v...)
			sort.SliceStable(members, func(i, j int) bool { return members[i].Key < members[j].Key })
		}
		return appendMembers(dst, members, sortKeys)
	case map[string]any:
		if !sortKeys {
			return nil, fmt.Errorf("pyjson: a Go map has no key order; dump it with sort_keys")
		}
		members := make(Object, 0, len(v))
		for k, it := range v {
			members = append(members, Member{k, it})
		}
		sort.Slice(members, func(i, j int) bool { return members[i].Key < members[j].Key })
		return appendMembers(dst, members, sortKeys)
	}
	return nil, fmt.Errorf("pyjson: cannot dump a %T", v)
}

func appendMembers(dst []byte, members Object, sortKeys bool) ([]byte, error) {
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = AppendString(dst, m.Key)
		dst = append(dst, ": "...)
		var err error
		if dst, err = appendValue(dst, m.Value, sortKeys); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// AppendString quotes s as json.dumps does with ensure_ascii: every
// character outside printable ASCII is a \u escape (a surrogate pair above
// U+FFFF). A lone surrogate in WTF-8 (as Loads keeps one) is its own
// escape. Other bytes that are not UTF-8 are written as U+FFFD, as the
// UTF-8 decoding that made a Python str from them would have.
func AppendString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	u := func(dst []byte, r rune) []byte {
		return append(dst, '\\', 'u', hexDigits[r>>12&15], hexDigits[r>>8&15], hexDigits[r>>4&15], hexDigits[r&15])
	}
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		// Printable ASCII other than a quote or backslash is copied as is,
		// a run at a time.
		j := i
		for j < len(s) && s[j] >= 0x20 && s[j] < 0x7f && s[j] != '"' && s[j] != '\\' {
			j++
		}
		if j > i {
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if sr, ok := decodeSurrogate(s[i:]); ok {
			r, size = sr, 3
		}
		i += size
		switch {
		case r == '"':
			dst = append(dst, '\\', '"')
		case r == '\\':
			dst = append(dst, '\\', '\\')
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r == '\t':
			dst = append(dst, '\\', 't')
		case r == '\b':
			dst = append(dst, '\\', 'b')
		case r == '\f':
			dst = append(dst, '\\', 'f')
		case r < 0x20 || (r >= 0x7f && r < 0x10000):
			dst = u(dst, r)
		case r >= 0x10000:
			hi, lo := utf16.EncodeRune(r)
			dst = u(u(dst, hi), lo)
		default:
			dst = append(dst, byte(r))
		}
	}
	return append(dst, '"')
}

// appendJSONFloat is json.dumps of a float: repr, with NaN and the
// infinities spelled as Python's encoder spells them.
func appendJSONFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	return AppendFloatRepr(dst, f)
}

// AppendFloatRepr is Python's repr(f) (and str(f)): the shortest digits
// that round-trip, in positional notation when the decimal exponent is
// from -4 to 15 (with ".0" when integral), else as d.ddde±XX.
func AppendFloatRepr(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "nan"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	// 'e' with -1 precision gives the shortest round-trip digits.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	decpt := x + 1 // the value is 0.<digits> × 10^decpt
	if neg {
		dst = append(dst, '-')
	}
	if decpt <= -4 || decpt > 16 {
		dst = append(dst, digits[0])
		if len(digits) > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if x < 0 {
			dst = append(dst, '-')
			x = -x
		} else {
			dst = append(dst, '+')
		}
		if x < 10 {
			dst = append(dst, '0')
		}
		return strconv.AppendInt(dst, int64(x), 10)
	}
	switch {
	case decpt <= 0:
		dst = append(dst, "0."...)
		dst = append(dst, strings.Repeat("0", -decpt)...)
		dst = append(dst, digits...)
	case decpt >= len(digits):
		dst = append(dst, digits...)
		dst = append(dst, strings.Repeat("0", decpt-len(digits))...)
		dst = append(dst, ".0"...)
	default:
		dst = append(dst, digits[:decpt]...)
		dst = append(dst, '.')
		dst = append(dst, digits[decpt:]...)
	}
	return dst
}

// Get is o.get(key).
func (o Object) Get(key string) (any, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// Set is o[key] = v: a key o has keeps its place, a new one goes last.
func (o Object) Set(key string, v any) Object {
	for i := range o {
		if o[i].Key == key {
			o[i].Value = v
			return o
		}
	}
	return append(o, Member{Key: key, Value: v})
}

// Pop is o.pop(key, None): o without key, and the value it had.
func (o Object) Pop(key string) (Object, any) {
	for i := range o {
		if o[i].Key == key {
			v := o[i].Value
			return append(o[:i:i], o[i+1:]...), v
		}
	}
	return o, nil
}
