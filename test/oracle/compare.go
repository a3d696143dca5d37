// Package oracle compares gym's resolved configs with NeMo Gym's own.
//
// This file is the comparison: it reads two YAML documents (what
// `ng env resolve` and `gym env resolve` print) into ordered trees, types
// their scalars the way NeMo Gym would read them back (PyYAML's YAML 1.1
// resolver as OmegaConf configures it), and lists every difference with its
// dotted key path and both values. The oracle test (oracle_test.go) runs the
// two resolvers; nothing here knows how a config is resolved.
//
// Running the oracle (root privileges; it skips otherwise):
//
//	GYM_NEMO_GYM_ROOT=$(test/nemogym/root.sh) go test ./test/oracle/ -v -count=1
//
// GYM_ORACLE_GYM_BIN=FILE tests a prebuilt static gym instead of building
// ./cmd/gym; GYM_ORACLE_SWEEP=1 also resolves every config the nemo-gym
// wheel ships and prints the differences grouped (GYM_ORACLE_SWEEP_OUT=FILE
// writes each config's).
package oracle

import (
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Kind is the shape of a node.
type Kind int

const (
	ScalarNode Kind = iota
	MapNode
	ListNode
)

// Node is one value of a parsed document. Maps keep their key order.
type Node struct {
	Kind Kind
	// Tag and Value describe a scalar: Tag is one of str, int, float, bool
	// and null; Value is canonical for the tag (ints in decimal, floats as
	// Go's shortest 'g' form, bools as true/false, null as null).
	Tag, Value string
	Keys       []string
	Values     map[string]*Node
	Items      []*Node
}

// Get returns the value at key of a map, or nil.
func (n *Node) Get(key string) *Node {
	if n == nil || n.Kind != MapNode {
		return nil
	}
	return n.Values[key]
}

// Parse reads one YAML document (block or flow style, as PyYAML emits it).
// An empty document is an empty map, as OmegaConf loads it.
func Parse(text string) (*Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return &Node{Kind: MapNode, Values: map[string]*Node{}}, nil
	}
	return convert(doc.Content[0])
}

func convert(y *yaml.Node) (*Node, error) {
	for y.Kind == yaml.AliasNode {
		y = y.Alias
	}
	switch y.Kind {
	case yaml.MappingNode:
		n := &Node{Kind: MapNode, Values: map[string]*Node{}}
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if _, dup := n.Values[k.Value]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			c, err := convert(v)
			if err != nil {
				return nil, err
			}
			n.Keys = append(n.Keys, k.Value)
			n.Values[k.Value] = c
		}
		return n, nil
	case yaml.SequenceNode:
		n := &Node{Kind: ListNode, Items: []*Node{}}
		for _, it := range y.Content {
			c, err := convert(it)
			if err != nil {
				return nil, err
			}
			n.Items = append(n.Items, c)
		}
		return n, nil
	case yaml.ScalarNode:
		tag, value := typeScalar(y)
		return &Node{Kind: ScalarNode, Tag: tag, Value: value}, nil
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node kind %v", y.Line, y.Kind)
}

// The implicit resolvers of PyYAML's SafeLoader as OmegaConf's loader
// configures them (omegaconf/_utils.py get_yaml_loader): YAML 1.1 booleans,
// ints and nulls, OmegaConf's float pattern (which also accepts `1e3`), and
// no timestamps.
var (
	yamlBool  = regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`)
	yamlInt   = regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	yamlFloat = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	yamlNull  = regexp.MustCompile(`^(?:~|null|Null|NULL|)$`)
)

func typeScalar(y *yaml.Node) (tag, value string) {
	if y.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return "str", y.Value
	}
	if y.Style&yaml.TaggedStyle != 0 {
		switch y.Tag {
		case "!!str", "tag:yaml.org,2002:str":
			return "str", y.Value
		}
	}
	s := y.Value
	switch {
	case yamlNull.MatchString(s):
		return "null", "null"
	case yamlBool.MatchString(s):
		switch strings.ToLower(s) {
		case "yes", "true", "on":
			return "bool", "true"
		}
		return "bool", "false"
	case yamlInt.MatchString(s):
		return "int", canonicalInt(s)
	case yamlFloat.MatchString(s):
		return "float", canonicalFloat(s)
	}
	return "str", s
}

// canonicalInt renders a YAML 1.1 int in decimal.
func canonicalInt(s string) string {
	t := strings.ReplaceAll(s, "_", "")
	sign := ""
	if t[0] == '+' || t[0] == '-' {
		if t[0] == '-' {
			sign = "-"
		}
		t = t[1:]
	}
	if strings.Contains(t, ":") { // sexagesimal, 1:30 == 90
		v := new(big.Int)
		for _, part := range strings.Split(t, ":") {
			d, _ := new(big.Int).SetString(part, 10)
			v.Mul(v, big.NewInt(60)).Add(v, d)
		}
		return sign + v.String()
	}
	base := 10
	switch {
	case strings.HasPrefix(t, "0b"):
		base, t = 2, t[2:]
	case strings.HasPrefix(t, "0x"):
		base, t = 16, t[2:]
	case len(t) > 1 && t[0] == '0':
		base, t = 8, t[1:]
	}
	v, ok := new(big.Int).SetString(t, base)
	if !ok {
		return s
	}
	if sign == "-" {
		v.Neg(v)
	}
	return v.String()
}

// canonicalFloat renders a YAML float as Go's shortest representation.
func canonicalFloat(s string) string {
	t := strings.ReplaceAll(s, "_", "")
	l := strings.ToLower(t)
	switch {
	case strings.HasSuffix(l, ".inf"):
		if strings.HasPrefix(l, "-") {
			return "-inf"
		}
		return "inf"
	case strings.HasSuffix(l, ".nan"):
		return "nan"
	case strings.Contains(t, ":"):
		return s
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return s
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Path is a location in a tree: map keys, and list indices written "[i]".
type Path []string

func (p Path) key(k string) Path  { return append(p[:len(p):len(p)], k) }
func (p Path) index(i int) Path   { return append(p[:len(p):len(p)], fmt.Sprintf("[%d]", i)) }
func isIndex(segment string) bool { return strings.HasPrefix(segment, "[") }

// String joins the path with dots, indices attached: a.b[0].c. The root is
// "<root>".
func (p Path) String() string {
	if len(p) == 0 {
		return "<root>"
	}
	var b strings.Builder
	for i, s := range p {
		if i > 0 && !isIndex(s) {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// Pattern matches paths. It is written like a path; a segment `*` matches
// any one key or index, and a segment `**` any number of segments (none
// too). `disallowed_ports.**` matches disallowed_ports and every item.
type Pattern struct {
	text     string
	segments []string
}

// MustPattern parses a pattern; it panics on an empty segment.
func MustPattern(text string) Pattern {
	var segs []string
	for _, part := range strings.Split(strings.ReplaceAll(text, "[", ".["), ".") {
		switch {
		case part == "" && len(segs) == 0 && strings.HasPrefix(text, "["):
			continue // a pattern that starts with an index
		case part == "":
			panic("oracle: empty segment in pattern " + strconv.Quote(text))
		case part == "[*]":
			part = "*"
		case isIndex(part) && !strings.HasSuffix(part, "]"):
			panic("oracle: bad index in pattern " + strconv.Quote(text))
		}
		segs = append(segs, part)
	}
	return Pattern{text: text, segments: segs}
}

func (p Pattern) String() string { return p.text }

// Match reports whether path is matched.
func (p Pattern) Match(path Path) bool { return matchSegments(p.segments, path) }

func matchSegments(pat []string, path Path) bool {
	if len(pat) == 0 {
		return len(path) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(path); i++ {
			if matchSegments(pat[1:], path[i:]) {
				return true
			}
		}
		return false
	}
	if len(path) == 0 || (pat[0] != "*" && pat[0] != path[0]) {
		return false
	}
	return matchSegments(pat[1:], path[1:])
}

// Exclusion is a key that may legitimately differ between the two
// resolvers: it is left out of the comparison entirely (value, presence and
// position). Why says what makes it differ.
type Exclusion struct {
	Pattern Pattern
	Why     string
}

// DiffKind classifies a difference.
type DiffKind string

const (
	Changed     DiffKind = "changed"         // both have the key; values differ
	MissingOurs DiffKind = "missing in ours" // only NeMo Gym has the key
	ExtraOurs   DiffKind = "extra in ours"   // only gym has the key
	Order       DiffKind = "key order"       // both maps hold the same keys in a different order
	OursFails   DiffKind = "gym fails"       // gym rejected a config NeMo Gym resolved
	NeMoFails   DiffKind = "NeMo Gym fails"  // NeMo Gym rejected a config gym resolved
)

// Difference is one place where the trees disagree. NeMo and Ours render
// the two values ("" when that side has none); for OursFails and NeMoFails
// they hold the failing side's message.
type Difference struct {
	Path       Path
	Kind       DiffKind
	NeMo, Ours string
}

func (d Difference) String() string {
	switch d.Kind {
	case MissingOurs:
		return fmt.Sprintf("%s: missing in ours; NeMo Gym has %s", d.Path, d.NeMo)
	case ExtraOurs:
		return fmt.Sprintf("%s: extra in ours (%s); NeMo Gym has no such key", d.Path, d.Ours)
	case OursFails, NeMoFails:
		return fmt.Sprintf("%s: NeMo Gym: %s\n      gym: %s", d.Kind, d.NeMo, d.Ours)
	case Order:
		return fmt.Sprintf("%s: key order differs\n      NeMo Gym: %s\n      ours:     %s", d.Path, d.NeMo, d.Ours)
	}
	s := fmt.Sprintf("%s: NeMo Gym %s, ours %s", d.Path, d.NeMo, d.Ours)
	if (d.NeMo == maskedValue) != (d.Ours == maskedValue) {
		s += " (masked on one side only: the two sides mask different keys)"
	}
	return s
}

// maskedValue is how a masked secret ("****", as both resolvers print it)
// renders.
const maskedValue = `"****" (str)`

// Compare lists every difference between NeMo Gym's tree and ours, in
// document order (NeMo Gym's), leaving out what the exclusions match.
//
// Key order is compared too: OmegaConf keeps insertion order and so does
// gym's tree, and `gym env resolve` promises NeMo Gym's order. Per map, the
// keys both sides have (and no exclusion matches) must come in the same
// order; a key only one side has is reported on its own, not as an order
// difference.
func Compare(nemo, ours *Node, exclusions []Exclusion) []Difference {
	c := comparer{exclusions: exclusions}
	c.node(nil, nemo, ours)
	return c.diffs
}

type comparer struct {
	exclusions []Exclusion
	diffs      []Difference
}

func (c *comparer) excluded(p Path) bool {
	for _, e := range c.exclusions {
		if e.Pattern.Match(p) {
			return true
		}
	}
	return false
}

func (c *comparer) add(p Path, kind DiffKind, nemo, ours *Node) {
	d := Difference{Path: p, Kind: kind}
	if nemo != nil {
		d.NeMo = Render(nemo)
	}
	if ours != nil {
		d.Ours = Render(ours)
	}
	c.diffs = append(c.diffs, d)
}

func (c *comparer) node(p Path, a, b *Node) {
	if a.Kind != b.Kind {
		c.add(p, Changed, a, b)
		return
	}
	switch a.Kind {
	case ScalarNode:
		if a.Tag != b.Tag || a.Value != b.Value {
			c.add(p, Changed, a, b)
		}
	case ListNode:
		n := min(len(a.Items), len(b.Items))
		for i := 0; i < n; i++ {
			if q := p.index(i); !c.excluded(q) {
				c.node(q, a.Items[i], b.Items[i])
			}
		}
		for i := n; i < len(a.Items); i++ {
			if q := p.index(i); !c.excluded(q) {
				c.add(q, MissingOurs, a.Items[i], nil)
			}
		}
		for i := n; i < len(b.Items); i++ {
			if q := p.index(i); !c.excluded(q) {
				c.add(q, ExtraOurs, nil, b.Items[i])
			}
		}
	case MapNode:
		var commonA, commonB []string
		for _, k := range a.Keys {
			q := p.key(k)
			if c.excluded(q) {
				continue
			}
			bv, ok := b.Values[k]
			if !ok {
				c.add(q, MissingOurs, a.Values[k], nil)
				continue
			}
			commonA = append(commonA, k)
			c.node(q, a.Values[k], bv)
		}
		for _, k := range b.Keys {
			q := p.key(k)
			if c.excluded(q) {
				continue
			}
			if _, ok := a.Values[k]; !ok {
				c.add(q, ExtraOurs, nil, b.Values[k])
				continue
			}
			commonB = append(commonB, k)
		}
		if strings.Join(commonA, "\x00") != strings.Join(commonB, "\x00") {
			c.diffs = append(c.diffs, Difference{Path: p, Kind: Order,
				NeMo: strings.Join(commonA, ", "), Ours: strings.Join(commonB, ", ")})
		}
	}
}

// Render writes a value compactly for a report: a scalar with its type
// (`"False" (str)`, `600 (int)`), a container in flow style, cut at 300
// characters.
func Render(n *Node) string {
	var b strings.Builder
	render(&b, n, true)
	s := b.String()
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}

func render(b *strings.Builder, n *Node, typed bool) {
	switch n.Kind {
	case ScalarNode:
		if n.Tag == "str" {
			b.WriteString(strconv.Quote(n.Value))
		} else {
			b.WriteString(n.Value)
		}
		if typed {
			fmt.Fprintf(b, " (%s)", n.Tag)
		}
	case ListNode:
		b.WriteByte('[')
		for i, it := range n.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			render(b, it, false)
		}
		b.WriteByte(']')
	case MapNode:
		b.WriteByte('{')
		for i, k := range n.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k)
			b.WriteString(": ")
			render(b, n.Values[k], false)
		}
		b.WriteByte('}')
	}
}

// Walk calls fn for every map key of the tree, with its path.
func Walk(n *Node, fn func(p Path, key string)) { walk(nil, n, fn) }

func walk(p Path, n *Node, fn func(Path, string)) {
	switch n.Kind {
	case MapNode:
		for _, k := range n.Keys {
			q := p.key(k)
			fn(q, k)
			walk(q, n.Values[k], fn)
		}
	case ListNode:
		for i, it := range n.Items {
			walk(p.index(i), it, fn)
		}
	}
}
