// Package tree holds gym's configuration tree: ordered, case-preserving maps,
// lists and typed scalars, each node remembering where its value came from.
// Neither koanf nor viper can hold this shape (they lowercase keys or flatten
// on '.' and forget order), so gym owns it.
package tree

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Kind is the type of a node's value.
type Kind uint8

const (
	Null Kind = iota
	Bool
	Int
	Float
	String
	Map
	List
	// BigInt is an integer that int64 cannot hold, which Python (and so
	// PyYAML, OmegaConf and Hydra) reads as an ordinary int. It is a kind
	// of its own so that code reading Int for int64 values never sees a
	// wrong number: such code does not match it and refuses it instead.
	// Int and BigInt never overlap: NewBigInt gives Int whenever the value
	// fits.
	BigInt
)

func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "bool"
	case Int:
		return "int"
	case Float:
		return "float"
	case String:
		return "string"
	case Map:
		return "map"
	case List:
		return "list"
	case BigInt:
		return "big int"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// OriginKind says which layer a value came from.
type OriginKind uint8

const (
	// FromNowhere marks nodes built in code with no user-visible source.
	FromNowhere OriginKind = iota
	// FromFile is a config file or env.yaml.
	FromFile
	// FromCLI is an override token on the command line.
	FromCLI
	// FromDefault is a value the parser filled in.
	FromDefault
)

// Origin records where a value came from, for error messages and
// `gym env resolve --show-origin`.
type Origin struct {
	Kind   OriginKind
	File   string // FromFile: the file path as loaded
	Line   int    // FromFile: 1-based, 0 when unknown
	Column int    // FromFile: 1-based, 0 when unknown
	Token  string // FromCLI: the override token as typed
}

func (o Origin) String() string {
	switch o.Kind {
	case FromFile:
		if o.Line > 0 {
			return o.File + ":" + strconv.Itoa(o.Line)
		}
		return o.File
	case FromCLI:
		return "cli: " + o.Token
	case FromDefault:
		return "default"
	}
	return ""
}

// Entry is one key of a map. Key is the key's text; KeyKind is the scalar
// kind the key had in its source (YAML 1.1 reads `yes:` as a bool key), so
// output can write it back the way it came.
type Entry struct {
	Key     string
	KeyKind Kind
	Value   *Node
}

// Node is one value in the tree. Only the fields for its Kind are meaningful.
type Node struct {
	Kind Kind
	Bool bool
	// Int is the value of an Int node only; a BigInt node leaves it 0.
	// IntText, BigValue and IsInteger serve both kinds.
	Int int64
	// Big is the value of a BigInt node. Treat it as read-only, since nodes
	// may share it (Clone copies it): build a new node with NewBigInt.
	Big     *big.Int
	Float   float64
	Str     string
	Entries []Entry // Map, in insertion order
	Items   []*Node // List
	Origin  Origin

	index map[string]int // key → position in Entries, built for large maps
}

// indexThreshold is the map size above which lookups use a hash index; below
// it a linear scan is faster and allocates nothing.
const indexThreshold = 16

// NewNull returns a null node.
func NewNull() *Node { return &Node{Kind: Null} }

// NewBool returns a bool node.
func NewBool(b bool) *Node { return &Node{Kind: Bool, Bool: b} }

// NewInt returns an int node.
func NewInt(i int64) *Node { return &Node{Kind: Int, Int: i} }

// NewFloat returns a float node.
func NewFloat(f float64) *Node { return &Node{Kind: Float, Float: f} }

// NewString returns a string node.
func NewString(s string) *Node { return &Node{Kind: String, Str: s} }

// NewMap returns an empty map node.
func NewMap() *Node { return &Node{Kind: Map} }

// NewList returns a list node holding items.
func NewList(items ...*Node) *Node { return &Node{Kind: List, Items: items} }

// IsScalar reports whether n is neither a map nor a list.
func (n *Node) IsScalar() bool { return n.Kind != Map && n.Kind != List }

// Len is the number of entries of a map or items of a list.
func (n *Node) Len() int {
	switch n.Kind {
	case Map:
		return len(n.Entries)
	case List:
		return len(n.Items)
	}
	return 0
}

func (n *Node) find(key string) int {
	if n.index != nil {
		if i, ok := n.index[key]; ok {
			return i
		}
		return -1
	}
	for i := range n.Entries {
		if n.Entries[i].Key == key {
			return i
		}
	}
	return -1
}

func (n *Node) reindex() {
	if len(n.Entries) <= indexThreshold {
		n.index = nil
		return
	}
	n.index = make(map[string]int, len(n.Entries))
	for i, e := range n.Entries {
		n.index[e.Key] = i
	}
}

// Get returns the value at key of a map, or nil when n is not a map or has
// no such key.
func (n *Node) Get(key string) *Node {
	if n == nil || n.Kind != Map {
		return nil
	}
	if i := n.find(key); i >= 0 {
		return n.Entries[i].Value
	}
	return nil
}

// Has reports whether map n has key.
func (n *Node) Has(key string) bool {
	return n != nil && n.Kind == Map && n.find(key) >= 0
}

// Set stores v at key: an existing key keeps its position, a new key is
// appended. n must be a map.
func (n *Node) Set(key string, v *Node) {
	n.SetEntry(Entry{Key: key, KeyKind: String, Value: v})
}

// SetEntry is Set with an explicit key kind.
func (n *Node) SetEntry(e Entry) {
	if i := n.find(e.Key); i >= 0 {
		n.Entries[i].Value = e.Value
		return
	}
	n.Entries = append(n.Entries, e)
	if n.index != nil {
		n.index[e.Key] = len(n.Entries) - 1
	} else if len(n.Entries) > indexThreshold {
		n.reindex()
	}
}

// Delete removes key from map n and reports whether it was there.
func (n *Node) Delete(key string) bool {
	if n == nil || n.Kind != Map {
		return false
	}
	i := n.find(key)
	if i < 0 {
		return false
	}
	n.Entries = append(n.Entries[:i], n.Entries[i+1:]...)
	n.reindex()
	return true
}

// Keys returns the keys of map n in order.
func (n *Node) Keys() []string {
	keys := make([]string, len(n.Entries))
	for i, e := range n.Entries {
		keys[i] = e.Key
	}
	return keys
}

// Clone returns a deep copy of n.
func (n *Node) Clone() *Node {
	if n == nil {
		return nil
	}
	c := *n
	c.index = nil
	switch n.Kind {
	case BigInt:
		c.Big = new(big.Int).Set(n.Big)
	case Map:
		c.Entries = make([]Entry, len(n.Entries))
		for i, e := range n.Entries {
			c.Entries[i] = Entry{Key: e.Key, KeyKind: e.KeyKind, Value: e.Value.Clone()}
		}
		c.reindex()
	case List:
		c.Items = make([]*Node, len(n.Items))
		for i, it := range n.Items {
			c.Items[i] = it.Clone()
		}
	}
	return &c
}

// Equal reports whether a and b hold the same value (origins are ignored,
// map key order matters).
func Equal(a, b *Node) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case Null:
		return true
	case Bool:
		return a.Bool == b.Bool
	case Int:
		return a.Int == b.Int
	case BigInt:
		return a.Big.Cmp(b.Big) == 0
	case Float:
		return a.Float == b.Float
	case String:
		return a.Str == b.Str
	case Map:
		if len(a.Entries) != len(b.Entries) {
			return false
		}
		for i := range a.Entries {
			if a.Entries[i].Key != b.Entries[i].Key || !Equal(a.Entries[i].Value, b.Entries[i].Value) {
				return false
			}
		}
		return true
	case List:
		if len(a.Items) != len(b.Items) {
			return false
		}
		for i := range a.Items {
			if !Equal(a.Items[i], b.Items[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// SetOrigin stamps o on n and every node below it.
func (n *Node) SetOrigin(o Origin) {
	n.Origin = o
	for _, e := range n.Entries {
		e.Value.SetOrigin(o)
	}
	for _, it := range n.Items {
		it.SetOrigin(o)
	}
}

// GoString renders n compactly for test failure messages.
func (n *Node) GoString() string {
	var b strings.Builder
	n.writeGo(&b)
	return b.String()
}

func (n *Node) writeGo(b *strings.Builder) {
	if n == nil {
		b.WriteString("<nil>")
		return
	}
	switch n.Kind {
	case Null:
		b.WriteString("null")
	case Bool:
		b.WriteString(strconv.FormatBool(n.Bool))
	case Int, BigInt:
		b.WriteString(n.IntText())
	case Float:
		b.WriteString(strconv.FormatFloat(n.Float, 'g', -1, 64))
	case String:
		b.WriteString(strconv.Quote(n.Str))
	case Map:
		b.WriteByte('{')
		for i, e := range n.Entries {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(e.Key + ": ")
			e.Value.writeGo(b)
		}
		b.WriteByte('}')
	case List:
		b.WriteByte('[')
		for i, it := range n.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			it.writeGo(b)
		}
		b.WriteByte(']')
	default:
		fmt.Fprintf(b, "<kind %d>", n.Kind)
	}
}

// DeleteAll removes keys from map n in one pass, however many there are,
// and returns those it did not find, in order; a key listed twice is
// found only once.
func (n *Node) DeleteAll(keys []string) (missing []string) {
	gone := make(map[string]bool, len(keys))
	for _, k := range keys {
		if gone[k] || !n.Has(k) {
			missing = append(missing, k)
			continue
		}
		gone[k] = true
	}
	if len(gone) == 0 {
		return missing
	}
	kept := n.Entries[:0]
	for _, e := range n.Entries {
		if !gone[e.Key] {
			kept = append(kept, e)
		}
	}
	clear(n.Entries[len(kept):])
	n.Entries = kept
	n.reindex()
	return missing
}
