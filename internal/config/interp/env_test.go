package interp

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// fakeEnv is a small stand-in for the config resolver: lookups walk a tree
// (resolving interpolated strings they land on), and a few resolvers mirror
// the ones OmegaConf's grammar tests register plus the oc.* ones Gym uses.
type fakeEnv struct {
	root   *tree.Node
	anchor []string // path of the container holding the value being resolved
	vars   map[string]string
	calls  []string // resolver names in call order
	depth  int
}

var errNotFound = errors.New("not found")

func (e *fakeEnv) Lookup(ref Ref) (*tree.Node, error) {
	base := []string{}
	if ref.Dots > 0 {
		up := ref.Dots - 1
		if up > len(e.anchor) {
			return nil, fmt.Errorf("%q goes above the root", ref.Key)
		}
		base = append(base, e.anchor[:len(e.anchor)-up]...)
	}
	full := append(base, ref.Path...)
	n := e.root
	var parent []string
	for i, k := range full {
		switch n.Kind {
		case tree.Map:
			n = n.Get(k)
		case tree.List:
			idx, ok := ParseIndex(k)
			if !ok || idx < 0 || idx >= len(n.Items) {
				return nil, fmt.Errorf("key %q: %w", ref.Key, errNotFound)
			}
			n = n.Items[idx]
		default:
			n = nil
		}
		if n == nil {
			return nil, fmt.Errorf("key %q: %w", ref.Key, errNotFound)
		}
		parent = full[:i]
	}
	if n.Kind == tree.String && HasInterpolation(n.Str) {
		return e.resolveAt(n.Str, parent)
	}
	return n, nil
}

func (e *fakeEnv) resolveAt(s string, anchor []string) (*tree.Node, error) {
	if e.depth > 20 {
		return nil, errors.New("recursive interpolation")
	}
	t, err := Parse(s)
	if err != nil {
		return nil, err
	}
	inner := *e
	inner.anchor = anchor
	inner.depth++
	v, err := t.Eval(&inner)
	e.calls = inner.calls
	return v, err
}

func (e *fakeEnv) Call(name string, args []*tree.Node, raw []string) (*tree.Node, error) {
	e.calls = append(e.calls, name)
	switch name {
	case "inherit_from", "copy", "oc.env", "oc.select", "oc.decode":
		if len(args) == 0 || args[0].Kind != tree.String && name != "oc.decode" {
			return nil, fmt.Errorf("%s needs a string argument", name)
		}
	}
	switch name {
	case "test", "ns1.ns2.test":
		if len(args) == 1 {
			return args[0], nil
		}
		return tree.NewList(args...), nil
	case "first":
		switch {
		case len(args) == 0 || args[0].Len() == 0 && args[0].Kind != tree.String:
			return nil, errors.New("first: nothing to take")
		case args[0].Kind == tree.Map:
			return keyNode(args[0].Entries[0]), nil
		case args[0].Kind == tree.List:
			return args[0].Items[0], nil
		case args[0].Kind == tree.String && args[0].Str != "":
			r, _ := utf8.DecodeRuneInString(args[0].Str)
			return tree.NewString(string(r)), nil
		}
		return nil, errors.New("first: not iterable")
	case "raw":
		return tree.NewList(stringNodes(raw)...), nil
	case "inherit_from", "copy":
		return tree.NewString("${" + name + ":" + raw[0] + "}"), nil
	case "oc.env":
		if v, ok := e.vars[args[0].Str]; ok {
			return tree.NewString(v), nil
		}
		if len(args) > 1 {
			if args[1].Kind == tree.Null {
				return tree.NewNull(), nil
			}
			return tree.NewString(PythonStr(args[1])), nil
		}
		return nil, fmt.Errorf("Environment variable '%s' not found", args[0].Str)
	case "oc.select":
		v, err := e.Lookup(KeyRef(args[0].Str))
		if errors.Is(err, errNotFound) {
			if len(args) > 1 {
				return args[1], nil
			}
			return tree.NewNull(), nil
		}
		return v, err
	case "oc.decode":
		switch args[0].Kind {
		case tree.Null:
			return tree.NewNull(), nil
		case tree.String:
			return DecodeString(args[0].Str, e)
		}
		return nil, errors.New("oc.decode can only take strings or None")
	}
	return nil, fmt.Errorf("Unsupported interpolation type %s", name)
}

func keyNode(en tree.Entry) *tree.Node {
	switch en.KeyKind {
	case tree.Null:
		return tree.NewNull()
	case tree.Bool:
		return tree.NewBool(en.Key == "true")
	case tree.Int, tree.BigInt:
		if n, err := tree.ParseDecimal(en.Key); err == nil {
			return n
		}
	case tree.Float:
		f, _ := parseFloat(en.Key)
		return tree.NewFloat(f)
	}
	return tree.NewString(en.Key)
}

func stringNodes(ss []string) []*tree.Node {
	out := make([]*tree.Node, len(ss))
	for i, s := range ss {
		out[i] = tree.NewString(s)
	}
	return out
}

// testConfig is OmegaConf's BASE_TEST_CFG from tests/test_grammar.py, plus
// a few values for string rendering and relative references.
func testConfig() *tree.Node {
	m := func(kv ...any) *tree.Node {
		n := tree.NewMap()
		for i := 0; i < len(kv); i += 2 {
			n.Set(kv[i].(string), kv[i+1].(*tree.Node))
		}
		return n
	}
	s, i := tree.NewString, tree.NewInt
	list := tree.NewList()
	for k := -1; k < 10; k++ {
		list.Items = append(list.Items, i(int64(k)))
	}
	return m(
		"str", s("hi"),
		"int", i(123),
		"float", tree.NewFloat(1.2),
		"dict", m("a", i(0), "b", m("c", i(1))),
		"list", list,
		"null", tree.NewNull(),
		"x@y", i(123),
		"$x$y$z$", i(456),
		"0", i(0),
		"FalsE", m("TruE", tree.NewBool(true)),
		"None", m("null", i(1)),
		"1", m("2", i(12)),
		"str_test", s("test"),
		"ref_str", s("str"),
		"options", m("a", s("A"), "b", s("B")),
		"choice", s("a"),
		"rel_opt", s(".options"),
		"quote", s("it's"),
		"t", tree.NewBool(true),
		"k", m("v", i(7)),
		"server", m("host", s("localhost"), "port", i(8000), "url", s("http://${.host}:${.port}/v1"),
			"peer", s("${..k.v}"), "mixed", tree.NewList(i(1), s("a"), tree.NewBool(true), tree.NewNull(), tree.NewFloat(0.5))),
		"chain", s("${int}"),
		"big", bigNum("123456789012345678901234567890"),
	)
}

// bigNum is an int of any size, from its decimal digits.
func bigNum(digits string) *tree.Node {
	n, err := tree.ParseDecimal(digits)
	if err != nil {
		panic(err)
	}
	return n
}

func newFakeEnv() *fakeEnv {
	return &fakeEnv{root: testConfig(), vars: map[string]string{"HOME": "/home/u"}}
}
