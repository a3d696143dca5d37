package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// resolver evaluates `${...}` against one config tree, OmegaConf style:
// lazily, with whole-value interpolations keeping their type, relative
// references anchored at the node that holds the value, and a reference to
// a node that is itself an interpolation followed through.
type resolver struct {
	root      *tree.Node
	env       Env
	templates map[string]*interp.Template
	active    map[string]bool // values being resolved, to catch cycles
	// memo caches fully resolved containers by path. It is only safe while
	// the tree does not change, so only the final output pass sets it.
	memo map[string]*tree.Node
}

func newResolver(root *tree.Node, env Env) *resolver {
	return &resolver{root: root, env: env, templates: map[string]*interp.Template{}, active: map[string]bool{}}
}

func (r *resolver) template(s string, where tree.Origin, at Path) (*interp.Template, error) {
	if t, ok := r.templates[s]; ok {
		return t, nil
	}
	t, err := interp.Parse(s)
	if err != nil {
		return nil, &Error{Class: ClassInterpolation, Where: where, Err: err,
			Msg: fmt.Sprintf("Config value '%s' is not valid interpolation syntax: %v. Escape a literal ${ as \\${", at, err)}
	}
	r.templates[s] = t
	return t, nil
}

// value resolves n one level: a string holding interpolations becomes what
// they evaluate to (possibly a container, itself fully resolved); anything
// else is returned as is.
func (r *resolver) value(n *tree.Node, at Path) (*tree.Node, error) {
	if n == nil || n.Kind != tree.String || !interp.HasInterpolation(n.Str) {
		return n, nil
	}
	key := at.String()
	if r.active[key] {
		return nil, errorf(ClassInterpolation, n.Origin,
			"Config value '%s' refers back to itself through its interpolations (%s); break the cycle", key, n.Str)
	}
	t, err := r.template(n.Str, n.Origin, at)
	if err != nil {
		return nil, err
	}
	r.active[key] = true
	defer delete(r.active, key)
	out, err := t.Eval(evalEnv{r: r, at: at})
	if err != nil {
		return nil, r.evalError(err, n, at)
	}
	if out.IsScalar() {
		out = &tree.Node{Kind: out.Kind, Bool: out.Bool, Int: out.Int, Big: out.Big, Float: out.Float, Str: out.Str, Origin: n.Origin}
	}
	return out, nil
}

// full returns a deep copy of n with every interpolation resolved.
func (r *resolver) full(n *tree.Node, at Path) (*tree.Node, error) {
	if r.memo != nil && !n.IsScalar() {
		if done, ok := r.memo[at.String()]; ok {
			return done.Clone(), nil
		}
	}
	var out *tree.Node
	switch n.Kind {
	case tree.Map:
		out = &tree.Node{Kind: tree.Map, Origin: n.Origin, Entries: make([]tree.Entry, 0, len(n.Entries))}
		for _, e := range n.Entries {
			v, err := r.full(e.Value, at.Key(e.Key))
			if err != nil {
				return nil, err
			}
			out.SetEntry(tree.Entry{Key: e.Key, KeyKind: e.KeyKind, Value: v})
		}
	case tree.List:
		out = &tree.Node{Kind: tree.List, Origin: n.Origin, Items: make([]*tree.Node, len(n.Items))}
		for i, it := range n.Items {
			v, err := r.full(it, at.Index(i))
			if err != nil {
				return nil, err
			}
			out.Items[i] = v
		}
	default:
		v, err := r.value(n, at)
		if err != nil {
			return nil, err
		}
		if v == n {
			return n.Clone(), nil
		}
		return v, nil
	}
	if r.memo != nil {
		r.memo[at.String()] = out.Clone()
	}
	return out, nil
}

// nodeAt walks path from the root, resolving interpolations met on the way
// (so `${a.b}` works when a is `${c}`). It returns nil when a step is absent.
func (r *resolver) nodeAt(path Path) (*tree.Node, error) {
	n := r.root
	for i, s := range path {
		v, err := r.value(n, path[:i])
		if err != nil {
			return nil, err
		}
		switch {
		case v.Kind == tree.Map && !s.IsIndex:
			n = v.Get(s.Key)
		case v.Kind == tree.List:
			idx := s.Index
			if !s.IsIndex {
				var err error
				if idx, err = strconv.Atoi(s.Key); err != nil {
					return nil, nil
				}
			}
			if idx < 0 || idx >= len(v.Items) {
				return nil, nil
			}
			n = v.Items[idx]
		default:
			return nil, nil
		}
		if n == nil {
			return nil, nil
		}
	}
	return n, nil
}

// refPath turns a reference into an absolute path: dots anchor it at the
// node holding the value (one dot) or that node's ancestors.
func refPath(ref interp.Ref, at Path) (Path, bool) {
	var base Path
	if ref.Dots > 0 {
		up := len(at) - ref.Dots
		if up < 0 {
			return nil, false
		}
		base = append(Path{}, at[:up]...)
	}
	for _, k := range ref.Path {
		base = append(base, Step{Key: k})
	}
	return base, true
}

// errMissingRef marks a reference to a key that does not exist.
type errMissingRef struct{ key, abs string }

func (e *errMissingRef) Error() string { return "key '" + e.key + "' is not set" }

// errResolver marks a resolver that failed.
type errResolver struct{ msg string }

func (e *errResolver) Error() string { return e.msg }

func (r *resolver) evalError(err error, n *tree.Node, at Path) error {
	var cfgErr *Error
	if errors.As(err, &cfgErr) {
		return cfgErr
	}
	var missing *errMissingRef
	if errors.As(err, &missing) {
		return errorf(ClassInterpolation, n.Origin,
			"Config value '%s' references '%s', which is not set after merging.\n\nProvide it via a CLI override, in env.yaml, or in a config you pass via config_paths.\nFor example, on the command line:\n  ++%s=<value>",
			at, missing.key, missing.abs)
	}
	var grammar *interp.GrammarError
	if errors.As(err, &grammar) {
		return &Error{Class: ClassInterpolation, Where: n.Origin, Err: err,
			Msg: fmt.Sprintf("Config value '%s' is not valid interpolation syntax: %v", at, err)}
	}
	shown := maskSecretShapes(n.Str)
	if secretPath(at) {
		shown = secretMask
	}
	return &Error{Class: ClassInterpolation, Where: n.Origin, Err: err,
		Msg: fmt.Sprintf("Config value '%s' (%s) could not be resolved: %s", at, shown, innermost(err))}
}

func innermost(err error) string {
	var ev *interp.EvalError
	for errors.As(err, &ev) {
		err = ev.Err
	}
	return err.Error()
}

// evalEnv answers one template's lookups and resolver calls.
type evalEnv struct {
	r  *resolver
	at Path
}

func (e evalEnv) Lookup(ref interp.Ref) (*tree.Node, error) {
	path, ok := refPath(ref, e.at)
	if !ok {
		return nil, &errMissingRef{key: ref.Key, abs: ref.Key}
	}
	n, err := e.r.nodeAt(path)
	if err != nil {
		return nil, err
	}
	if n == nil || isMissing(n) {
		return nil, &errMissingRef{key: ref.Key, abs: path.String()}
	}
	if n.IsScalar() {
		return e.r.value(n, path)
	}
	return e.r.full(n, path)
}

func (e evalEnv) Call(name string, args []*tree.Node, raw []string) (*tree.Node, error) {
	switch name {
	case "oc.env":
		return e.ocEnv(args)
	case "oc.select":
		return e.ocSelect(args)
	case "oc.decode":
		if len(args) != 1 {
			return nil, &errResolver{"oc.decode takes one argument"}
		}
		switch args[0].Kind {
		case tree.Null:
			return args[0], nil
		case tree.String:
			return interp.DecodeString(args[0].Str, e)
		}
		return nil, &errResolver{fmt.Sprintf("`oc.decode` can only take strings or None as input, but `%s` is of type %s", interp.PythonStr(args[0]), args[0].Kind)}
	case "oc.create":
		if len(args) != 1 {
			return nil, &errResolver{"oc.create takes one argument"}
		}
		if args[0].Kind == tree.String {
			return pyyaml.Load([]byte(args[0].Str), "oc.create argument")
		}
		return args[0], nil
	case "oc.deprecated":
		if len(args) < 1 || args[0].Kind != tree.String {
			return nil, &errResolver{"oc.deprecated takes the new key as its first argument"}
		}
		msg := fmt.Sprintf("'%s' is deprecated. Change your code and config to use '%s'", e.at, args[0].Str)
		if len(args) > 1 {
			msg = strings.NewReplacer("$OLD_KEY", e.at.String(), "$NEW_KEY", args[0].Str).Replace(interp.PythonStr(args[1]))
		}
		fmt.Fprintln(e.r.env.Warnings, "Warning:", msg)
		return e.Lookup(interp.Ref{Key: args[0].Str, Path: strings.Split(args[0].Str, ".")})
	case "oc.dict.keys", "oc.dict.values":
		return e.dictView(name, args)
	case "inherit_from", "copy":
		// Leftover directives resolve to their own text, as upstream's
		// identity resolvers make them.
		return tree.NewString("${" + name + ":" + strings.Join(raw, ",") + "}"), nil
	case "now":
		if len(args) != 1 || args[0].Kind != tree.String {
			return nil, &errResolver{"now takes one strftime pattern, e.g. ${now:%Y-%m-%d}"}
		}
		return tree.NewString(strftime(e.r.env.Now(), args[0].Str)), nil
	}
	return nil, &errResolver{fmt.Sprintf("Unsupported interpolation type %s. Known resolvers: oc.env, oc.select, oc.decode, oc.create, oc.deprecated, oc.dict.keys, oc.dict.values, now", name)}
}

func (e evalEnv) ocEnv(args []*tree.Node) (*tree.Node, error) {
	if len(args) < 1 || len(args) > 2 || args[0].Kind != tree.String {
		return nil, &errResolver{"oc.env takes a variable name and an optional default: ${oc.env:VAR,default}"}
	}
	if v, ok := e.r.env.LookupEnv(args[0].Str); ok {
		return tree.NewString(v), nil
	}
	if len(args) == 2 {
		if args[1].Kind == tree.Null {
			return tree.NewNull(), nil
		}
		return tree.NewString(interp.PythonStr(args[1])), nil
	}
	return nil, &errResolver{fmt.Sprintf("Environment variable '%s' not found. Set it, or give a default: ${oc.env:%s,<default>}", args[0].Str, args[0].Str)}
}

func (e evalEnv) ocSelect(args []*tree.Node) (*tree.Node, error) {
	if len(args) < 1 || len(args) > 2 || args[0].Kind != tree.String {
		return nil, &errResolver{"oc.select takes a key and an optional default: ${oc.select:key,default}"}
	}
	ref := selectRef(args[0].Str)
	v, err := e.Lookup(ref)
	var missing *errMissingRef
	if errors.As(err, &missing) {
		if len(args) == 2 {
			return args[1], nil
		}
		return tree.NewNull(), nil
	}
	return v, err
}

func selectRef(key string) interp.Ref {
	dots := len(key) - len(strings.TrimLeft(key, "."))
	rest := key[dots:]
	var path []string
	if rest != "" {
		path = strings.Split(rest, ".")
	}
	return interp.Ref{Key: key, Dots: dots, Path: path}
}

func (e evalEnv) dictView(name string, args []*tree.Node) (*tree.Node, error) {
	if len(args) != 1 {
		return nil, &errResolver{name + " takes one argument: the key of a map"}
	}
	m := args[0]
	if m.Kind == tree.String {
		var err error
		if m, err = e.Lookup(selectRef(m.Str)); err != nil {
			return nil, err
		}
	}
	if m.Kind != tree.Map {
		return nil, &errResolver{fmt.Sprintf("%s needs a map, got a %s", name, m.Kind)}
	}
	out := tree.NewList()
	for _, en := range m.Entries {
		if name == "oc.dict.keys" {
			out.Items = append(out.Items, tree.NewString(en.Key))
		} else {
			out.Items = append(out.Items, en.Value.Clone())
		}
	}
	return out, nil
}
