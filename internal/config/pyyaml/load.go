// Package pyyaml reads and writes YAML the way NeMo Gym does: loading with
// PyYAML's SafeLoader as OmegaConf customises it (YAML 1.1 scalars, no
// timestamps, duplicate keys rejected) and dumping byte for byte as
// OmegaConf.to_yaml, which is PyYAML's emitter behind OmegaConf's string
// representer.
//
// yaml.v3 only tokenises and parses; every YAML 1.1 decision (which plain
// scalars are numbers, merge keys, key equality) is made here, because
// yaml.v3 resolves scalars by YAML 1.2 rules. Where yaml.v3's parser is more
// lenient than PyYAML's scanner, checkSource closes the gap for tabs, the
// `\'` escape and block scalar headers. Known remaining differences, all
// rare in configs: yaml.v3 rejects the escape `\/` and compact flow entries
// such as `{a:[1]}`, reads `{a:, b}` with a key "a:", treats `! "1"` as a
// string where PyYAML resolves it, and reports syntax errors with its own
// wording and without a column.
package pyyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"go.yaml.in/yaml/v3"
)

// Load parses one YAML document into a tree. file names the source in
// origins and errors. An empty document (or a bare null) is an empty map,
// as OmegaConf.load makes it; otherwise the top level may be of any kind.
func Load(data []byte, file string) (root *tree.Node, err error) {
	doc, err := parseSingle(data, file)
	if err == nil {
		err = checkSource(data, doc, file)
	}
	if err != nil {
		return nil, err
	}
	if doc == nil {
		return emptyMap(file), nil
	}
	c := &composer{file: file, nodes: map[*yaml.Node]*pnode{}, anchors: map[string]*pnode{}}
	p, err := c.compose(doc, 1)
	if err != nil {
		return nil, err
	}
	b := &builder{file: file, budget: c.count + aliasExpansion}
	root, err = b.construct(p)
	if err == nil {
		err = b.checkDeferred(root)
	}
	if err != nil {
		return nil, err
	}
	if root.Kind == tree.Null {
		return emptyMap(file), nil
	}
	return root, nil
}

func emptyMap(file string) *tree.Node {
	n := tree.NewMap()
	n.Origin = tree.Origin{Kind: tree.FromFile, File: file}
	return n
}

// parseSingle returns the content node of the only document in data, or nil
// when there is none. PyYAML's yaml.load refuses a second document.
func parseSingle(data []byte, file string) (content *yaml.Node, err error) {
	defer func() {
		// yaml.v3 reports some states it considers impossible by panicking;
		// a config loader must fail cleanly on any input instead.
		if r := recover(); r != nil {
			content, err = nil, &SyntaxError{File: file, Problem: fmt.Sprint("YAML parser failed: ", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fromV3Error(file, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, fromV3Error(file, err)
	default:
		return nil, &SyntaxError{File: file, Line: next.Line, Column: next.Column,
			Problem: "expected a single document in the stream, but found another document"}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

type pkind uint8

const (
	scalarNode pkind = iota
	sequenceNode
	mappingNode
)

func (k pkind) String() string {
	switch k {
	case sequenceNode:
		return "sequence"
	case mappingNode:
		return "mapping"
	}
	return "scalar"
}

// pnode is PyYAML's representation graph: an alias is the very node it
// names, and each node carries its resolved tag. Construction mutates it
// the way PyYAML's flatten_mapping does.
type pnode struct {
	kind      pkind
	tag       string
	value     string
	items     []*pnode
	pairs     []pair
	anchor    string
	line, col int
	// height is how many levels of collections p spans, itself included
	// (0 for a scalar), so that an alias can tell how deep it nests.
	height int

	built     *tree.Node // first construction of an anchored node, cloned for later aliases
	builtSize int
	busy      bool // being constructed: meeting it again is a cycle
}

type pair struct{ key, value *pnode }

type composer struct {
	file    string
	nodes   map[*yaml.Node]*pnode
	anchors map[string]*pnode
	count   int
}

func (c *composer) errAt(n *yaml.Node, format string, args ...any) error {
	return &SyntaxError{File: c.file, Line: n.Line, Column: n.Column, Problem: fmt.Sprintf(format, args...)}
}

// compose builds the node n at the given level (the top is level 1),
// refusing collections nested past tree.MaxDepth, an alias's anchor
// counted where the alias stands. Stopping there also bounds the recursion
// of every later stage.
func (c *composer) compose(n *yaml.Node, level int) (*pnode, error) {
	if n.Kind == yaml.AliasNode {
		target := c.nodes[n.Alias]
		if target == nil {
			return nil, c.errAt(n, "found undefined alias '%s'", n.Value)
		}
		// A recursive alias has no height yet; the builder rejects it.
		if level+target.height-1 > tree.MaxDepth {
			return nil, c.errAt(n, "%s", tree.DepthProblem())
		}
		return target, nil
	}
	if n.Kind != yaml.ScalarNode && level > tree.MaxDepth {
		return nil, c.errAt(n, "%s", tree.DepthProblem())
	}
	p := &pnode{line: n.Line, col: n.Column, anchor: n.Anchor}
	c.count++
	if n.Anchor != "" {
		if first, ok := c.anchors[n.Anchor]; ok {
			return nil, c.errAt(n, "found duplicate anchor '%s' (first occurrence at line %d, column %d)", n.Anchor, first.line, first.col)
		}
		c.anchors[n.Anchor] = p
	}
	// Registered before the children so that an alias inside its own anchor
	// finds it, as in PyYAML; the builder rejects the cycle.
	c.nodes[n] = p
	explicit := n.Style&yaml.TaggedStyle != 0
	switch n.Kind {
	case yaml.ScalarNode:
		p.kind, p.value = scalarNode, n.Value
		switch {
		case explicit:
			p.tag = longTag(n.Tag)
		case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0:
			p.tag = tagStr
		default:
			p.tag = resolvePlain(n.Value)
		}
	case yaml.SequenceNode:
		p.kind, p.tag = sequenceNode, tagSeq
		if explicit {
			p.tag = longTag(n.Tag)
		}
		p.items = make([]*pnode, len(n.Content))
		for i, child := range n.Content {
			item, err := c.compose(child, level+1)
			if err != nil {
				return nil, err
			}
			p.items[i] = item
			p.height = max(p.height, item.height)
		}
		p.height++
	case yaml.MappingNode:
		p.kind, p.tag = mappingNode, tagMap
		if explicit {
			p.tag = longTag(n.Tag)
		}
		p.pairs = make([]pair, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := c.compose(n.Content[i], level+1)
			if err != nil {
				return nil, err
			}
			vlevel := mergedLevel(k, n.Content[i+1], level)
			v, err := c.compose(n.Content[i+1], vlevel)
			if err != nil {
				return nil, err
			}
			p.pairs = append(p.pairs, pair{k, v})
			p.height = max(p.height, k.height, v.height-(level+1-vlevel))
		}
		p.height++
	default:
		return nil, c.errAt(n, "unexpected YAML node kind %d", n.Kind)
	}
	return p, nil
}

// mergedLevel is the level at which the value of key k in a mapping at
// level stands, for depth: one below the mapping, except that a merge key's
// mapping gives the mapping its pairs, so it counts one level up, and the
// mappings of a merge list two.
func mergedLevel(k *pnode, value *yaml.Node, level int) int {
	if k.tag != tagMerge {
		return level + 1
	}
	if value.Kind == yaml.AliasNode && value.Alias != nil {
		value = value.Alias
	}
	if value.Kind == yaml.SequenceNode {
		return level - 1
	}
	return level
}

func longTag(tag string) string {
	if rest, ok := strings.CutPrefix(tag, "!!"); ok {
		return tagPrefix + rest
	}
	return tag
}
