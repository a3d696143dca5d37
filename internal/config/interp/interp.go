// Package interp parses and evaluates OmegaConf 2.3 `${...}` interpolation
// strings the way NeMo Gym's configs use them.
//
// The grammar follows OmegaConf's ANTLR grammar (OmegaConfGrammarLexer.g4 and
// OmegaConfGrammarParser.g4) token for token: a mode-stacked lexer that picks
// the longest match like ANTLR does, and a recursive-descent parser over its
// tokens. Matching the lexer exactly matters because OmegaConf's escaping and
// typing rules fall out of its tokenisation (`\\${x}` versus `\${x}`, `1_000`
// versus `1_000_`, whitespace folded into `,` and `:` tokens).
//
// Looking values up and running resolvers is left to the caller through Env.
package interp

import (
	"fmt"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// HasInterpolation reports whether s must go through Parse. OmegaConf treats
// any string containing "${" as an interpolation, escaped or not, because
// only parsing can unescape it; every other string is used verbatim.
func HasInterpolation(s string) bool {
	return strings.Contains(s, "${")
}

// Template is a parsed config string value.
type Template struct {
	Source string
	// Parts alternates literal text and interpolations; adjacent text is
	// merged, so a whole-value interpolation is exactly one Part.
	Parts []Part
}

// Part is unescaped literal text, or an interpolation when Interp is set.
type Part struct {
	Text   string
	Interp *Interp
}

// Single returns the interpolation when the template is exactly one
// interpolation and nothing else (a whole value, which keeps its type), and
// nil otherwise.
func (t *Template) Single() *Interp {
	if len(t.Parts) == 1 {
		return t.Parts[0].Interp
	}
	return nil
}

// Interp is one `${...}`: a node reference (Ref set) or a resolver call
// (Call set).
type Interp struct {
	Text string // as written, from "${" to the closing "}"
	Pos  int    // byte offset of "${" in the parsed string
	Ref  *RefExpr
	Call *CallExpr
}

// RefExpr is a node reference: `${a.b}`, `${a[0]}`, `${..x}`, `${a.${k}}`.
type RefExpr struct {
	Dots int       // leading dots as written
	Keys []KeyPart // at least one
	// static is the Ref when no key needs evaluating, computed once at parse
	// time because most references are plain paths.
	static *Ref
}

// KeyPart is one key of a reference or one dotted component of a resolver
// name: literal text, or a nested interpolation that must give a string.
type KeyPart struct {
	Name    string
	Interp  *Interp
	Bracket bool // written as [key]
}

// CallExpr is a resolver call `${name:arg,...}`.
type CallExpr struct {
	Name []KeyPart // dotted components, e.g. "oc", "env"
	Args []*Element
	// static is the joined name when no component is an interpolation.
	static string
}

// StaticName returns the resolver's dotted name and true, or "" and false
// when part of the name comes from a nested interpolation.
func (c *CallExpr) StaticName() (string, bool) {
	return c.static, c.static != ""
}

// ElemKind says what an Element holds.
type ElemKind uint8

const (
	// ElemValue is a constant: a typed primitive (`1`, `true`, `null`,
	// `foo`) or a string without interpolations.
	ElemValue ElemKind = iota
	// ElemInterp is a lone interpolation, whose result keeps its type.
	ElemInterp
	// ElemString is text with interpolations rendered by str(): a quoted
	// string, or unquoted text such as `a_${x}`.
	ElemString
	ElemList
	ElemDict
)

// Element is a resolver argument, list item or dict value.
type Element struct {
	Kind   ElemKind
	Raw    string     // source text, as OmegaConf passes it in args_str
	Value  *tree.Node // ElemValue
	Interp *Interp    // ElemInterp
	Parts  []Part     // ElemString
	Items  []*Element // ElemList
	// Entries are the dict's pairs as written. Keys equal in Python (1,
	// 1.0 and true) make one key, the first written, holding the last value;
	// so do keys with the same text (1 and the string "1"), which a
	// tree.Node map cannot tell apart.
	Entries []DictEntry
	slots   []int // per entry, the index of its distinct key
}

// DictEntry is one `key: value` of a dict element. Keys are typed like
// primitives (`{1: a}` has an int key); Key is the key's canonical text:
// decimal for ints, Python float repr, "true"/"false", "null".
type DictEntry struct {
	Key     string
	KeyKind tree.Kind
	Value   *Element
}

// Ref is a node reference ready for lookup.
type Ref struct {
	// Key is the reference as OmegaConf builds it, nested interpolations
	// already substituted: "a.b", "..x", "a[0]".
	Key string
	// Dots is 0 for a path from the root, 1 for one from the node holding
	// the value being resolved, 2 for one from that node's parent, and so on.
	Dots int
	// Path holds the keys after the dots, split as OmegaConf's split_key
	// does (list indices stay text). Empty means the anchor node itself.
	Path []string
	// Text is the interpolation as written, "${a.${b}}".
	Text string
}

// Env resolves what a template refers to.
type Env interface {
	// Lookup returns the node at ref, with the node's own interpolations
	// already resolved.
	Lookup(ref Ref) (*tree.Node, error)
	// Call runs resolver name with evaluated args; raw holds each argument's
	// source text (oc.select and oc.decode need it).
	Call(name string, args []*tree.Node, raw []string) (*tree.Node, error)
}

// GrammarError is a string that is not valid interpolation syntax
// (OmegaConf's GrammarParseError).
type GrammarError struct {
	Input string
	Pos   int // byte offset in Input where parsing failed
	Msg   string
}

func (e *GrammarError) Error() string {
	return fmt.Sprintf("invalid interpolation syntax in %q at offset %d: %s", e.Input, e.Pos, e.Msg)
}

// EvalError is a failure while evaluating one interpolation. Errors from a
// nested interpolation are passed up unchanged, so the EvalError names the
// innermost part that failed.
type EvalError struct {
	Text     string // the failing interpolation as written
	Ref      *Ref   // set when a reference failed to look up
	Resolver string // set when a resolver call failed
	Err      error
}

func (e *EvalError) Error() string {
	return fmt.Sprintf("resolving %s: %v", e.Text, e.Err)
}

func (e *EvalError) Unwrap() error { return e.Err }
