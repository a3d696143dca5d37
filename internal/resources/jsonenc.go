package resources

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// appendJSON writes v as NeMo Gym's servers serialise the same value:
// floats in Python's repr (a reward of 1 reads 1.0), strings without HTML
// escaping (Starlette's JSONResponse), ordered objects in their order.
// Raw messages are trusted to be valid JSON: they come from parsed input.
func appendJSON(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case float64:
		return appendFloat(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case string:
		return appendString(b, x), nil
	case json.RawMessage:
		if x == nil {
			return append(b, "null"...), nil
		}
		return append(b, x...), nil
	case *Metrics:
		return x.appendJSON(b)
	case []string:
		return appendList(b, len(x), func(b []byte, i int) ([]byte, error) { return appendString(b, x[i]), nil })
	case []float64:
		return appendList(b, len(x), func(b []byte, i int) ([]byte, error) { return appendFloat(b, x[i]), nil })
	case []json.RawMessage:
		return appendList(b, len(x), func(b []byte, i int) ([]byte, error) { return appendJSON(b, x[i]) })
	case []*Metrics:
		return appendList(b, len(x), func(b []byte, i int) ([]byte, error) { return x[i].appendJSON(b) })
	case []any:
		return appendList(b, len(x), func(b []byte, i int) ([]byte, error) { return appendJSON(b, x[i]) })
	}
	// Anything else (a tool's reply struct, say) goes through encoding/json,
	// still without HTML escaping.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return b, fmt.Errorf("encoding a %T as JSON: %w", v, err)
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

func appendList(b []byte, n int, item func([]byte, int) ([]byte, error)) ([]byte, error) {
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = item(b, i); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// appendFloat writes f as Python's json module does. JSON has no NaN or
// infinity; NeMo Gym drops NaN statistics before they get here, so a
// non-finite value that still arrives is written as null rather than
// failing the whole reply.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return append(b, tree.PythonFloatRepr(f)...)
}

// appendString quotes s as JSON, leaving non-ASCII and HTML characters as
// they are (ensure_ascii=False, as Starlette writes responses). Invalid
// UTF-8 becomes U+FFFD, as encoding/json does.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
