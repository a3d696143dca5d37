package interp

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// PythonStr renders n as Python's str() renders the value OmegaConf holds:
// strings as they are, True/False, None, ints, floats as repr(float), and
// lists and maps as their repr ([1, 'a', True], {'v': 7}). String
// interpolation and oc.env defaults both go through it.
func PythonStr(n *tree.Node) string {
	if n != nil && n.Kind == tree.String {
		return n.Str
	}
	return PythonRepr(n)
}

// PythonRepr renders n as Python's repr(): like PythonStr, but strings are
// quoted and escaped.
func PythonRepr(n *tree.Node) string {
	var b strings.Builder
	writeRepr(&b, n)
	return b.String()
}

func writeRepr(b *strings.Builder, n *tree.Node) {
	if n == nil {
		b.WriteString("None")
		return
	}
	switch n.Kind {
	case tree.Null:
		b.WriteString("None")
	case tree.Bool:
		b.WriteString(pyBool(n.Bool))
	case tree.Int, tree.BigInt:
		b.WriteString(n.IntText())
	case tree.Float:
		b.WriteString(tree.PythonFloatRepr(n.Float))
	case tree.String:
		writeStrRepr(b, n.Str)
	case tree.List:
		b.WriteByte('[')
		for i, it := range n.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, it)
		}
		b.WriteByte(']')
	case tree.Map:
		b.WriteByte('{')
		for i, e := range n.Entries {
			if i > 0 {
				b.WriteString(", ")
			}
			writeKeyRepr(b, e)
			b.WriteString(": ")
			writeRepr(b, e.Value)
		}
		b.WriteByte('}')
	default:
		fmt.Fprintf(b, "<%s>", n.Kind)
	}
}

func pyBool(v bool) string {
	if v {
		return "True"
	}
	return "False"
}

// writeKeyRepr renders a map key by the kind it had in its source: numbers
// bare, booleans and null as Python's, anything else as a quoted string.
func writeKeyRepr(b *strings.Builder, e tree.Entry) {
	switch e.KeyKind {
	case tree.Null:
		b.WriteString("None")
	case tree.Bool:
		// YAML 1.1 spells true as yes/on too.
		switch strings.ToLower(e.Key) {
		case "true", "yes", "on":
			b.WriteString("True")
		default:
			b.WriteString("False")
		}
	case tree.Int, tree.BigInt, tree.Float:
		b.WriteString(e.Key)
	default:
		writeStrRepr(b, e.Key)
	}
}

// PythonStrRepr is Python's repr() of the str s.
func PythonStrRepr(s string) string {
	var b strings.Builder
	writeStrRepr(&b, s)
	return b.String()
}

// writeStrRepr quotes s as Python's repr(str) does: single quotes unless s
// holds a single quote and no double quote, backslash escapes for the
// quote, backslash and \t \n \r, and \xhh, \uhhhh or \Uhhhhhhhh for other
// characters Python does not print (Go's unicode.IsPrint draws the same
// line). Bytes that are not UTF-8 cannot occur in a Python str and are
// shown as \xhh.
func writeStrRepr(b *strings.Builder, s string) {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	b.WriteByte(q)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			fmt.Fprintf(b, `\U%08x`, r)
		}
		i += size
	}
	b.WriteByte(q)
}
