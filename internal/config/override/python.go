package override

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Hydra builds its messages with Python's str() and repr(); these
// reproduce them for the values an override can hold.

// pyQuote is Python's repr() of a str.
func pyQuote(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x` + hex(uint64(s[i]), 2))
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x` + hex(uint64(r), 2))
		case r < 0x80 || unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			b.WriteString(`\x` + hex(uint64(r), 2))
		case r < 0x10000:
			b.WriteString(`\u` + hex(uint64(r), 4))
		default:
			b.WriteString(`\U` + hex(uint64(r), 8))
		}
		i += n
	}
	b.WriteByte(q)
	return b.String()
}

func hex(v uint64, width int) string {
	h := strconv.FormatUint(v, 16)
	return strings.Repeat("0", width-len(h)) + h
}

// pyStr is Python's str() of the value an override holds or finds.
// PythonStr is Python's str() of a config value: a string as itself,
// anything else as its repr().
func PythonStr(n *tree.Node) string {
	if n.Kind == tree.String {
		return n.Str
	}
	return pyRepr(n)
}

// pyRepr is Python's repr(), which containers use for their elements.
func pyRepr(n *tree.Node) string {
	switch n.Kind {
	case tree.Null:
		return "None"
	case tree.Bool:
		if n.Bool {
			return "True"
		}
		return "False"
	case tree.Int, tree.BigInt:
		return n.IntText()
	case tree.Float:
		return tree.PythonFloatRepr(n.Float)
	case tree.String:
		return pyQuote(n.Str)
	case tree.List:
		parts := make([]string, len(n.Items))
		for i, it := range n.Items {
			parts[i] = pyRepr(it)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	parts := make([]string, len(n.Entries))
	for i, e := range n.Entries {
		k := pyQuote(e.Key)
		if e.KeyKind != tree.String {
			k = pyRepr(keyNode(e))
		}
		parts[i] = k + ": " + pyRepr(e.Value)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// keyNode turns the canonical text of a key that is not a string back
// into its value.
func keyNode(e tree.Entry) *tree.Node {
	switch e.KeyKind {
	case tree.Int, tree.BigInt:
		if n, err := tree.ParseDecimal(e.Key); err == nil {
			return n
		}
		return tree.NewString(e.Key)
	case tree.Float:
		return tree.NewFloat(parseFloatToken(e.Key))
	case tree.Bool:
		return tree.NewBool(e.Key == "true")
	}
	return tree.NewNull()
}

// pyEqual is Python's == between an override value and a config value:
// numbers (bools included) compare by value, maps ignore key order.
func pyEqual(a, b *tree.Node) bool {
	if eq, numeric := tree.NumbersEqual(a, b); numeric {
		return eq
	}
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case tree.String:
		return a.Str == b.Str
	case tree.List:
		if len(a.Items) != len(b.Items) {
			return false
		}
		for i := range a.Items {
			if !pyEqual(a.Items[i], b.Items[i]) {
				return false
			}
		}
		return true
	case tree.Map:
		if len(a.Entries) != len(b.Entries) {
			return false
		}
		for _, e := range a.Entries {
			v := b.Get(e.Key)
			if v == nil || !pyEqual(e.Value, v) {
				return false
			}
		}
		return true
	}
	return true // both null
}
