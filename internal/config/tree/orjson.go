package tree

import (
	"fmt"
	"unicode/utf8"
)

// OrjsonWriter lays JSON out as orjson.dumps does: compact when Indent is
// "", OPT_INDENT_2 when it is two spaces (empty containers as [] and {}
// either way). Its users write the values; it writes the punctuation.
type OrjsonWriter struct {
	B      []byte
	Indent string
	depth  int
	first  []bool
}

// Open starts a container: '[' or '{'.
func (w *OrjsonWriter) Open(c byte) {
	w.B = append(w.B, c)
	w.depth++
	w.first = append(w.first, true)
}

// Close ends the container Open started: ']' or '}'.
func (w *OrjsonWriter) Close(c byte) {
	empty := w.first[len(w.first)-1]
	w.first = w.first[:len(w.first)-1]
	w.depth--
	if !empty {
		w.newline()
	}
	w.B = append(w.B, c)
}

func (w *OrjsonWriter) newline() {
	if w.Indent == "" {
		return
	}
	w.B = append(w.B, '\n')
	for range w.depth {
		w.B = append(w.B, w.Indent...)
	}
}

// Element starts a list element.
func (w *OrjsonWriter) Element() {
	if !w.first[len(w.first)-1] {
		w.B = append(w.B, ',')
	}
	w.first[len(w.first)-1] = false
	w.newline()
}

// Key starts an object member.
func (w *OrjsonWriter) Key(k string) {
	w.Element()
	w.B = AppendOrjsonString(w.B, k)
	w.B = append(w.B, ':')
	if w.Indent != "" {
		w.B = append(w.B, ' ')
	}
}

// AppendOrjsonString quotes s as orjson does: UTF-8 kept, only quotes,
// backslashes and control characters escaped. (Python's json.dumps
// escapes every non-ASCII character instead: pyjson.AppendString.)
func AppendOrjsonString(b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"':
			b = append(b, '\\', '"')
		case r == '\\':
			b = append(b, '\\', '\\')
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r == '\b':
			b = append(b, '\\', 'b')
		case r == '\f':
			b = append(b, '\\', 'f')
		case r < 0x20:
			b = fmt.Appendf(b, `\u%04x`, r)
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}
