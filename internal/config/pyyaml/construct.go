package pyyaml

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Aliases and merge keys let a small document describe an exponentially
// large one. PyYAML shares objects and stays small, but gym's tree (like
// OmegaConf's copy) does not, so expansion is capped: it may add at most
// aliasExpansion nodes to those the document holds. That is far more than
// configs share this way, and keeps what every later stage copies and
// walks within a small multiple of the text.
const aliasExpansion = 50_000

// maxFlattenDepth stands in for Python's default recursion limit.
const maxFlattenDepth = 1000

// builder is PyYAML's SafeConstructor with OmegaConf's duplicate-key check,
// producing gym tree nodes.
//
// Errors come in two kinds. What PyYAML itself rejects fails at once. What
// PyYAML accepts but OmegaConf or gym's tree cannot hold (a self-containing
// node, a timestamp, a null key) is only an error if it reaches the
// result: a later duplicate of a non-string key or a merge override can
// still discard it. Such values become placeholders, checked by
// checkDeferred once the document is built. Integers have no size limit,
// as in Python, except that a decimal one may have at most
// tree.MaxIntDigits digits, which Python's int() refuses at once.
type builder struct {
	file         string
	budget       int // nodes and merged pairs still allowed
	nanKey       int // NaN keys never compare equal, so each gets its own identity
	deferred     []error
	flattenDepth int
}

func (b *builder) errAt(p *pnode, format string, args ...any) error {
	return &SyntaxError{File: b.file, Line: p.line, Column: p.col, Problem: fmt.Sprintf(format, args...)}
}

// placeholderToken marks a placeholder's origin, whose Line indexes
// b.deferred. Loaded nodes all come from a file, so no real node has it,
// and unlike a pointer it survives Clone, which aliases use.
const placeholderToken = "pyyaml: deferred error"

// deferErr returns a placeholder standing for a value that is an error only
// if it survives.
func (b *builder) deferErr(p *pnode, format string, args ...any) *tree.Node {
	b.deferred = append(b.deferred, b.errAt(p, format, args...))
	n := tree.NewNull()
	n.Origin = tree.Origin{Kind: tree.FromNowhere, Token: placeholderToken, Line: len(b.deferred) - 1}
	return n
}

func isPlaceholder(n *tree.Node) bool {
	return n.Origin.Kind == tree.FromNowhere && n.Origin.Token == placeholderToken
}

// checkDeferred returns the error of the first placeholder left in n.
func (b *builder) checkDeferred(n *tree.Node) error {
	if len(b.deferred) == 0 {
		return nil
	}
	if isPlaceholder(n) {
		return b.deferred[n.Origin.Line]
	}
	for _, e := range n.Entries {
		if err := b.checkDeferred(e.Value); err != nil {
			return err
		}
	}
	for _, it := range n.Items {
		if err := b.checkDeferred(it); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) spend(p *pnode, n int) error {
	b.budget -= n
	if b.budget < 0 {
		return b.errAt(p, "document is too large once aliases and merge keys are expanded")
	}
	return nil
}

// construct is construct_object. Like PyYAML it builds each node once; a
// node met again (through an alias, or a merge that copied its parent's
// pairs) gets a copy of that first result.
func (b *builder) construct(p *pnode) (*tree.Node, error) {
	if p.built != nil {
		if err := b.spend(p, p.builtSize); err != nil {
			return nil, err
		}
		return p.built.Clone(), nil
	}
	if p.busy {
		return b.deferErr(p, "found recursive alias '%s': a node may not contain itself", p.anchor), nil
	}
	p.busy = true
	defer func() { p.busy = false }()
	before := b.budget
	if err := b.spend(p, 1); err != nil {
		return nil, err
	}
	n, err := b.constructByTag(p)
	if err != nil {
		return nil, err
	}
	if !isPlaceholder(n) {
		n.Origin = tree.Origin{Kind: tree.FromFile, File: b.file, Line: p.line, Column: p.col}
	}
	p.built, p.builtSize = n, before-b.budget
	return n, nil
}

func (b *builder) constructByTag(p *pnode) (*tree.Node, error) {
	want := scalarNode
	switch p.tag {
	case tagMap:
		want = mappingNode
	case tagSeq:
		want = sequenceNode
	case tagNull, tagBool, tagInt, tagFloat, tagStr:
	case tagPrefix + "binary", tagTimestamp, tagPrefix + "set", tagPrefix + "omap", tagPrefix + "pairs":
		return b.deferErr(p, "values tagged '%s' are not supported by OmegaConf", p.tag), nil
	default:
		return nil, b.errAt(p, "could not determine a constructor for the tag '%s'", p.tag)
	}
	if p.kind != want {
		return nil, b.errAt(p, "expected a %s node, but found %s", want, p.kind)
	}
	switch p.tag {
	case tagMap:
		return b.constructMap(p)
	case tagSeq:
		items := make([]*tree.Node, len(p.items))
		for i, it := range p.items {
			n, err := b.construct(it)
			if err != nil {
				return nil, err
			}
			items[i] = n
		}
		return tree.NewList(items...), nil
	case tagNull:
		return tree.NewNull(), nil
	case tagBool:
		switch strings.ToLower(p.value) {
		case "yes", "true", "on":
			return tree.NewBool(true), nil
		case "no", "false", "off":
			return tree.NewBool(false), nil
		}
		return nil, b.errAt(p, "invalid boolean %q", p.value)
	case tagInt:
		return b.constructInt(p)
	case tagFloat:
		f, ok := constructFloat(p.value)
		if !ok {
			return nil, b.errAt(p, "invalid float %q", p.value)
		}
		return tree.NewFloat(f), nil
	}
	return tree.NewString(p.value), nil
}

// constructMap is OmegaConf's construct_mapping: it rejects repeated string
// keys as written (merged and non-string keys are exempt), then PyYAML
// flattens merge keys and builds a dict, where a later equal key replaces
// the value but keeps the first key and its position.
func (b *builder) constructMap(p *pnode) (*tree.Node, error) {
	seen := make(map[string]bool, len(p.pairs))
	for _, pr := range p.pairs {
		if pr.key.tag != tagStr {
			continue
		}
		if seen[pr.key.value] {
			return nil, b.errAt(pr.key, "found duplicate key %s", pr.key.value)
		}
		seen[pr.key.value] = true
	}
	if err := b.flatten(p); err != nil {
		return nil, err
	}
	m := tree.NewMap()
	index := make(map[pyKey]int, len(p.pairs))
	var unusable *tree.Node // a placeholder standing for the whole map
	for _, pr := range p.pairs {
		k, err := b.construct(pr.key)
		if err != nil {
			return nil, err
		}
		if k.Kind == tree.Map || k.Kind == tree.List {
			return nil, b.errAt(pr.key, "found unhashable key")
		}
		v, err := b.construct(pr.value)
		if err != nil {
			return nil, err
		}
		if unusable != nil {
			continue
		}
		if isPlaceholder(k) {
			unusable = k
			continue
		}
		e, id := b.entry(k)
		if i, ok := index[id]; ok {
			m.Entries[i].Value = v
			continue
		}
		switch {
		case e.KeyKind == tree.Null:
			unusable = b.deferErr(pr.key, "found null key; OmegaConf keys must be strings, numbers or booleans")
		case m.Has(e.Key):
			kind := e.KeyKind.String()
			if e.KeyKind == tree.BigInt {
				kind = tree.Int.String() // Python's type, whatever its size
			}
			unusable = b.deferErr(pr.key, "found key %s of type %s, which gym cannot tell apart from an earlier key of another type", e.Key, kind)
		default:
			e.Value = v
			index[id] = len(m.Entries)
			m.SetEntry(e)
		}
	}
	if unusable != nil {
		return unusable, nil
	}
	return m, nil
}

// pyKey is a key's identity under Python's dict equality, where True, 1
// and 1.0 are the same key. Integers beyond 64 bits are kind 'b' with their
// decimal digits in s.
type pyKey struct {
	kind byte
	s    string
	i    int64
	f    uint64
}

// entry turns a constructed scalar key into a tree entry (without value)
// and its Python identity.
func (b *builder) entry(k *tree.Node) (tree.Entry, pyKey) {
	switch k.Kind {
	case tree.Bool:
		var i int64
		if k.Bool {
			i = 1
		}
		return tree.Entry{Key: strconv.FormatBool(k.Bool), KeyKind: tree.Bool}, pyKey{kind: 'n', i: i}
	case tree.Int:
		return tree.Entry{Key: strconv.FormatInt(k.Int, 10), KeyKind: tree.Int}, pyKey{kind: 'n', i: k.Int}
	case tree.BigInt:
		text := k.IntText()
		return tree.Entry{Key: text, KeyKind: tree.BigInt}, pyKey{kind: 'b', s: text}
	case tree.Float:
		e := tree.Entry{Key: tree.PythonFloatRepr(k.Float), KeyKind: tree.Float}
		switch f := k.Float; {
		case math.IsNaN(f):
			b.nanKey++
			return e, pyKey{kind: 'x', i: int64(b.nanKey)}
		case f == math.Trunc(f) && !math.IsInf(f, 0):
			// An integral float is the same key as the int of its value,
			// beyond 64 bits too (2.0**64 and 2**64).
			_, id := b.entry(tree.FloatToInt(f))
			return e, id
		default:
			return e, pyKey{kind: 'f', f: math.Float64bits(f)}
		}
	case tree.Null:
		return tree.Entry{KeyKind: tree.Null}, pyKey{kind: '0'}
	}
	return tree.Entry{Key: k.Str, KeyKind: tree.String}, pyKey{kind: 's', s: k.Str}
}

// flatten is PyYAML's flatten_mapping: merge keys are removed and the pairs
// they name are put in front of the explicit ones (so explicit keys win),
// with the maps of a merge list taken last to first (so earlier maps win).
// Like PyYAML it rewrites the nodes, which later aliases then see.
func (b *builder) flatten(p *pnode) error {
	// PyYAML removes a merge key before following it, so a mapping that
	// merges itself terminates; chains of merges can still nest deeply,
	// where Python would stop at its recursion limit.
	if b.flattenDepth >= maxFlattenDepth {
		return b.errAt(p, "merge keys nest too deeply")
	}
	b.flattenDepth++
	defer func() { b.flattenDepth-- }()
	var merge []pair
	for i := 0; i < len(p.pairs); {
		k, v := p.pairs[i].key, p.pairs[i].value
		switch k.tag {
		case tagMerge:
			p.pairs = append(p.pairs[:i:i], p.pairs[i+1:]...)
			switch v.kind {
			case mappingNode:
				if err := b.flatten(v); err != nil {
					return err
				}
				merge = append(merge, v.pairs...)
			case sequenceNode:
				var subs [][]pair
				for _, sub := range v.items {
					if sub.kind != mappingNode {
						return b.errAt(sub, "expected a mapping for merging, but found %s", sub.kind)
					}
					if err := b.flatten(sub); err != nil {
						return err
					}
					subs = append(subs, sub.pairs)
				}
				for j := len(subs) - 1; j >= 0; j-- {
					merge = append(merge, subs[j]...)
				}
			default:
				return b.errAt(v, "expected a mapping or list of mappings for merging, but found %s", v.kind)
			}
		case tagValue:
			k.tag = tagStr
			i++
		default:
			i++
		}
	}
	if len(merge) > 0 {
		if err := b.spend(p, len(merge)); err != nil {
			return err
		}
		p.pairs = append(merge, p.pairs...)
	}
	return nil
}

func (b *builder) constructInt(p *pnode) (*tree.Node, error) {
	v := strings.ReplaceAll(p.value, "_", "")
	neg := v != "" && v[0] == '-'
	if v != "" && (v[0] == '+' || v[0] == '-') {
		v = v[1:]
	}
	var n *big.Int
	var err error
	switch {
	case v == "0":
		n = new(big.Int)
	case strings.HasPrefix(v, "0b"):
		n, err = pyParseInt(v[2:], 2)
	case strings.HasPrefix(v, "0x"):
		n, err = pyParseInt(v[2:], 16)
	case strings.HasPrefix(v, "0"):
		n, err = pyParseInt(v, 8)
	case strings.Contains(v, ":"):
		n = new(big.Int)
		unit := big.NewInt(1)
		parts := strings.Split(v, ":")
		for i := len(parts) - 1; i >= 0 && err == nil; i-- {
			var d *big.Int
			if d, err = pyParseInt(parts[i], 10); err == nil {
				n.Add(n, d.Mul(d, unit))
				unit.Mul(unit, big.NewInt(60))
			}
		}
	default:
		n, err = pyParseInt(v, 10)
	}
	if err != nil {
		if _, ok := errors.AsType[*tree.IntDigitsError](err); ok {
			// Python's int() raises ValueError, and PyYAML with it.
			return nil, b.errAt(p, "integer too long: %v, Python's limit for a decimal integer; quote it to keep it as a string", err)
		}
		return nil, b.errAt(p, "invalid integer %q", p.value)
	}
	if neg {
		n.Neg(n)
	}
	return tree.NewBigInt(n), nil
}

var errInvalidInt = errors.New("invalid integer")

// pyParseInt is Python's int(s, base) for bases 2, 8, 10 and 16. As in
// Python, base 10 refuses more than tree.MaxIntDigits digits, with a
// *tree.IntDigitsError; the other bases have no limit.
func pyParseInt(s string, base int) (*big.Int, error) {
	s = trimPySpace(pyNumericASCII(s))
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	prefix := map[int]string{2: "0b", 8: "0o", 16: "0x"}[base]
	if prefix != "" && len(s) >= 2 && strings.ToLower(s[:2]) == prefix {
		s = strings.TrimPrefix(s[2:], "_")
	}
	var digits strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '+' || s[i] == '-' {
			return nil, errInvalidInt // big.Int would take a second sign
		}
		if s[i] == '_' {
			if i == 0 || i+1 == len(s) || s[i+1] == '_' {
				return nil, errInvalidInt
			}
			continue
		}
		digits.WriteByte(s[i])
	}
	if base == 10 && digits.Len() > tree.MaxIntDigits {
		return nil, &tree.IntDigitsError{Digits: digits.Len()}
	}
	n, ok := new(big.Int).SetString(digits.String(), base)
	if !ok || digits.Len() == 0 {
		return nil, errInvalidInt
	}
	if neg {
		n.Neg(n)
	}
	return n, nil
}

// constructFloat is PyYAML's construct_yaml_float.
func constructFloat(value string) (float64, bool) {
	v := strings.ToLower(strings.ReplaceAll(value, "_", ""))
	sign := 1.0
	if v != "" && v[0] == '-' {
		sign = -1
	}
	if v != "" && (v[0] == '+' || v[0] == '-') {
		v = v[1:]
	}
	switch {
	case v == ".inf":
		return sign * math.Inf(1), true
	case v == ".nan":
		return math.NaN(), true
	case strings.Contains(v, ":"):
		parts := strings.Split(v, ":")
		total, unit := 0.0, 1.0
		for i := len(parts) - 1; i >= 0; i-- {
			d, ok := pyParseFloat(parts[i])
			if !ok {
				return 0, false
			}
			total += d * unit
			unit *= 60
		}
		return sign * total, true
	}
	f, ok := pyParseFloat(v)
	return sign * f, ok
}

// pyParseFloat is Python's float(s); out-of-range text becomes ±inf or 0
// as it does in Python.
func pyParseFloat(s string) (float64, bool) {
	text, ok := pyFloatText(s)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}
