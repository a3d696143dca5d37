package pyyaml

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Options tunes Dump. The zero value gives PyYAML's exact text.
type Options struct {
	// LeafComment, when set, is asked about every scalar and empty-collection
	// value; non-empty text is appended to the value's last line as
	// `  # text`. It powers `gym env resolve --show-origin`.
	LeafComment func(*tree.Node) string
}

// Dump renders n as OmegaConf.to_yaml does: yaml.dump with OmegaConf's
// dumper, default_flow_style=False, allow_unicode=True, sort_keys=False,
// PyYAML's default indent of 2 and width of 80. A nil n dumps as null.
func Dump(n *tree.Node, opts Options) []byte {
	if n == nil {
		n = tree.NewNull()
	}
	e := &emitter{opts: opts, indent: noIndent, whitespace: true, indention: true}
	e.value(n, context{root: true})
	// Document end, then stream end: a plain scalar at the root leaves the
	// document open-ended, which PyYAML closes with an explicit "...".
	e.writeIndent()
	if e.openEnded {
		e.writeIndicator("...", true, false, false)
		e.writeIndent()
	}
	return e.out.Bytes()
}

// scalar is a ScalarEvent as OmegaConf's representer and PyYAML's
// serializer would build it for one tree value or key.
type scalar struct {
	text []rune
	// forceSingle is OmegaConf's str representer asking for single quotes
	// because Python would read the text as a bool, int or float.
	forceSingle bool
	// plainOK is the serializer's implicit[0]: the resolver reads the plain
	// text back as the same type.
	plainOK bool
	// tagText is the tag in its written short form ("!!str").
	tagText string
	analysis
}

func newScalar(text, tag string, forceSingle bool) scalar {
	// Python strings cannot hold invalid UTF-8; such bytes become U+FFFD
	// so the output stays well-formed.
	r := []rune(text)
	return scalar{
		text:        r,
		forceSingle: forceSingle,
		plainOK:     resolveDump(text) == tag,
		tagText:     "!!" + strings.TrimPrefix(tag, tagPrefix),
		analysis:    analyze(r),
	}
}

func stringScalar(s string) scalar { return newScalar(s, tagStr, needsQuotes(s)) }

// valueScalar represents a scalar tree value as SafeRepresenter does.
func valueScalar(n *tree.Node) scalar {
	switch n.Kind {
	case tree.Null:
		return newScalar("null", tagNull, false)
	case tree.Bool:
		return newScalar(strconv.FormatBool(n.Bool), tagBool, false)
	case tree.Int, tree.BigInt:
		return newScalar(n.IntText(), tagInt, false)
	case tree.Float:
		return newScalar(representFloat(n.Float), tagFloat, false)
	}
	return stringScalar(n.Str)
}

// keyScalar represents a map key in its source type, so `yes:` and `1:`
// come back unquoted. A key whose text does not parse as its KeyKind, or
// whose KeyKind is Null (the zero value, and never a valid OmegaConf key),
// is written as a string.
func keyScalar(e tree.Entry) scalar {
	switch e.KeyKind {
	case tree.Bool:
		switch e.Key {
		case "true", "false":
			return newScalar(e.Key, tagBool, false)
		}
	case tree.Int, tree.BigInt:
		if i, err := strconv.ParseInt(e.Key, 10, 64); err == nil {
			return newScalar(strconv.FormatInt(i, 10), tagInt, false)
		}
		if i, ok := new(big.Int).SetString(e.Key, 10); ok {
			return newScalar(i.String(), tagInt, false)
		}
	case tree.Float:
		if f, err := strconv.ParseFloat(e.Key, 64); err == nil {
			return newScalar(representFloat(f), tagFloat, false)
		}
	}
	return stringScalar(e.Key)
}

// representFloat is SafeRepresenter.represent_float: repr(f).lower(), with
// ".0" added before the exponent when repr has no point, because YAML 1.1's
// float pattern requires one.
func representFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return ".nan"
	case math.IsInf(f, 1):
		return ".inf"
	case math.IsInf(f, -1):
		return "-.inf"
	}
	s := strings.ToLower(tree.PythonFloatRepr(f))
	if !strings.Contains(s, ".") && strings.Contains(s, "e") {
		s = strings.Replace(s, "e", ".0e", 1)
	}
	return s
}
