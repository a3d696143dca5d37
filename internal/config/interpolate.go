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
	active    map[*tree.Node]bool // values being resolved, to catch cycles
	// nested is how many of them resolve through one another, and deepest
	// the most there have been during the current resolution, counting
	// what cached results once needed, so that a cache never lets a chain
	// grow past tree.MaxDepth.
	nested, deepest int
	// memo caches what a node resolves to: a container fully, a string one
	// level. It is only safe while the tree does not change, so only
	// passes that just read set it.
	memo map[*tree.Node]memoEntry
	work *workBudget
}

// workBudget is how much work resolvers may still do; see
// resolveBudgetBase.
type workBudget struct{ left, limit int }

// allow raises the limit to at least units.
func (w *workBudget) allow(units int) {
	if units > w.limit {
		w.left += units - w.limit
		w.limit = units
	}
}

type memoEntry struct {
	n     *tree.Node
	size  int // nodes
	chain int // the nesting it took below where it was resolved
}

// Interpolations, like YAML aliases, let a small config describe an
// exponentially large result (a list of ten references to a list of ten
// references...) or an exponential amount of work (a string of two
// references to a string of two references...). OmegaConf does it all;
// gym caps the work of resolving one config, however many resolvers share
// it, at a generous multiple of the config's size. A unit is one
// interpolation evaluated, one node built or copied for an
// interpolation's result, or 64 bytes of string rendered; a real config
// needs a few per interpolation.
const (
	resolveBudgetBase    = 50_000
	resolveBudgetPerNode = 2
)

func newResolver(root *tree.Node, env Env) *resolver {
	if env.work == nil {
		env.work = &workBudget{}
	}
	env.work.allow(resolveBudgetBase + resolveBudgetPerNode*countNodes(root))
	return &resolver{root: root, env: env, templates: map[string]*interp.Template{},
		active: map[*tree.Node]bool{}, work: env.work}
}

func countNodes(n *tree.Node) int {
	count := 1
	for _, e := range n.Entries {
		count += countNodes(e.Value)
	}
	for _, it := range n.Items {
		count += countNodes(it)
	}
	return count
}

// spend takes units from the budget on behalf of the value n at at.
func (r *resolver) spend(units int, n *tree.Node, at *trail) error {
	r.work.left -= units
	if r.work.left >= 0 {
		return nil
	}
	return errorf(ClassInterpolation, n.Origin,
		"Config value '%s' could not be resolved: the config's interpolations expand to more than %d nodes and steps, far beyond its own size (references that each refer many times over to others that do the same). gym stops there; refer to fewer copies",
		at, r.work.limit)
}

// copying charges for building nodes of a result, which only an
// interpolation can multiply: the config's own nodes are copied once.
func (r *resolver) copying(units int, n *tree.Node, at *trail) error {
	if r.nested == 0 {
		return nil
	}
	return r.spend(units, n, at)
}

func (r *resolver) template(s string, where tree.Origin, at *trail) (*interp.Template, error) {
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
	return r.valueAt(n, trailOf(at))
}

func (r *resolver) valueAt(n *tree.Node, at *trail) (*tree.Node, error) {
	if n == nil || n.Kind != tree.String || !interp.HasInterpolation(n.Str) {
		return n, nil
	}
	if done, ok := r.memo[n]; ok {
		return r.copyOf(done, n, at)
	}
	if r.active[n] {
		return nil, errorf(ClassInterpolation, n.Origin,
			"Config value '%s' refers back to itself through its interpolations (%s); break the cycle", at, n.Str)
	}
	if err := r.reach(r.nested + 1); err != nil {
		return nil, err
	}
	// Evaluating a string costs about its length, whatever it gives.
	if err := r.spend(1+len(n.Str)/64, n, at); err != nil {
		return nil, err
	}
	t, err := r.template(n.Str, n.Origin, at)
	if err != nil {
		return nil, err
	}
	r.active[n] = true
	outer := r.enter()
	out, err := t.Eval(evalEnv{r: r, n: n, at: at})
	chain := r.leave(outer)
	delete(r.active, n)
	if err != nil {
		return nil, r.evalError(err, n, at)
	}
	size := 1
	if out.IsScalar() {
		if err := r.spend(len(out.Str)/64, n, at); err != nil {
			return nil, err
		}
		out = &tree.Node{Kind: out.Kind, Bool: out.Bool, Int: out.Int, Big: out.Big, Float: out.Float, Str: out.Str, Origin: n.Origin}
	} else if r.memo != nil {
		size = countNodes(out)
	}
	if r.memo != nil {
		r.memo[n] = memoEntry{out, size, chain + 1}
	}
	return out, nil
}

// reach records that resolution has nested to level, refusing it past
// tree.MaxDepth. Only an interpolation can nest, so the value being
// evaluated reports the error, as one it could not resolve.
func (r *resolver) reach(level int) error {
	if level > tree.MaxDepth {
		return errTooDeep{}
	}
	r.deepest = max(r.deepest, level)
	return nil
}

type errTooDeep struct{}

func (errTooDeep) Error() string {
	return tree.DepthProblem() + " of interpolations referring to further interpolations; shorten the chain (NeMo Gym stops far sooner, at Python's recursion limit)"
}

// enter starts resolving one level deeper; leave ends it, given what enter
// returned, and tells how much deeper than that level resolution went.
func (r *resolver) enter() (outer int) {
	outer = r.deepest
	r.nested++
	r.deepest = r.nested
	return outer
}

func (r *resolver) leave(outer int) (chain int) {
	chain = r.deepest - r.nested
	r.nested--
	r.deepest = max(outer, r.deepest)
	return chain
}

// copyOf returns a copy of a cached result, so that no two places of a
// result share a node.
func (r *resolver) copyOf(done memoEntry, n *tree.Node, at *trail) (*tree.Node, error) {
	if err := r.reach(r.nested + done.chain); err != nil {
		return nil, err
	}
	if err := r.spend(done.size, n, at); err != nil {
		return nil, err
	}
	c := done.n.Clone()
	if c.IsScalar() {
		c.Origin = n.Origin
	}
	return c, nil
}

// full returns a deep copy of n with every interpolation resolved.
func (r *resolver) full(n *tree.Node, at Path) (*tree.Node, error) {
	out, _, err := r.fullAt(n, trailOf(at))
	return out, err
}

// fullAt is full, also returning the result's node count.
func (r *resolver) fullAt(n *tree.Node, at *trail) (*tree.Node, int, error) {
	if n.IsScalar() {
		v, err := r.valueAt(n, at)
		if err != nil {
			return nil, 0, err
		}
		if v == n {
			return n.Clone(), 1, r.copying(1, n, at)
		}
		if v.IsScalar() {
			return v, 1, nil
		}
		// The value a container came from need not be as deep as where
		// it lands.
		if deep := tree.TooDeep(v, at.len()+1); deep != nil {
			return nil, 0, errorf(ClassInterpolation, n.Origin,
				"Config value '%s' (%s) resolves to a value that reaches %s; NeMo Gym fails on it too, at Python's recursion limit",
				at, n.Str, tree.DepthProblem())
		}
		return v, countNodes(v), nil
	}
	if done, ok := r.memo[n]; ok {
		c, err := r.copyOf(done, n, at)
		return c, done.size, err
	}
	if err := r.copying(1, n, at); err != nil {
		return nil, 0, err
	}
	// The container's chain is how deep its values' interpolations go
	// below the level it is resolved at.
	outer := r.deepest
	r.deepest = r.nested
	defer func() { r.deepest = max(outer, r.deepest) }()
	size := 1
	var out *tree.Node
	switch n.Kind {
	case tree.Map:
		out = &tree.Node{Kind: tree.Map, Origin: n.Origin, Entries: make([]tree.Entry, 0, len(n.Entries))}
		for _, e := range n.Entries {
			v, vs, err := r.child(e.Value, at, func() *trail { return at.key(e.Key, e.Value) })
			if err != nil {
				return nil, 0, err
			}
			size += vs
			out.SetEntry(tree.Entry{Key: e.Key, KeyKind: e.KeyKind, Value: v})
		}
	default:
		out = &tree.Node{Kind: tree.List, Origin: n.Origin, Items: make([]*tree.Node, len(n.Items))}
		for i, it := range n.Items {
			v, vs, err := r.child(it, at, func() *trail { return at.index(i, it) })
			if err != nil {
				return nil, 0, err
			}
			size += vs
			out.Items[i] = v
		}
	}
	if r.memo != nil {
		r.memo[n] = memoEntry{out, size, r.deepest - r.nested}
	}
	return out, size, nil
}

// child is fullAt for a child of the node at at, making the child's trail
// only when it is needed: most values are plain scalars.
func (r *resolver) child(n *tree.Node, at *trail, step func() *trail) (*tree.Node, int, error) {
	if n.IsScalar() && !hasInterpolation(n) {
		return n.Clone(), 1, r.copying(1, n, at)
	}
	return r.fullAt(n, step())
}

func hasInterpolation(n *tree.Node) bool {
	return n.Kind == tree.String && interp.HasInterpolation(n.Str)
}

// nodeAt follows keys from the node at base (the root when nil),
// resolving interpolations met on the way (so `${a.b}` works when a is
// `${c}`). It returns nil when a step is absent, and the trail to the node
// found.
func (r *resolver) nodeAt(base *trail, keys []string) (*tree.Node, *trail, error) {
	n, at := r.root, (*trail)(nil)
	var err error
	switch {
	case base == nil:
	case base.node != nil:
		n, at = base.node, base
	default:
		for _, s := range base.path() {
			if n, at, err = r.step(n, at, s); n == nil || err != nil {
				return nil, nil, err
			}
		}
	}
	for _, k := range keys {
		if n, at, err = r.step(n, at, Step{Key: k}); n == nil || err != nil {
			return nil, nil, err
		}
	}
	return n, at, nil
}

// step goes from n, at at, to its child s, or nil when there is none.
func (r *resolver) step(n *tree.Node, at *trail, s Step) (*tree.Node, *trail, error) {
	v, err := r.valueAt(n, at)
	if err != nil {
		return nil, nil, err
	}
	var child *tree.Node
	switch {
	case v.Kind == tree.Map && !s.IsIndex:
		child = v.Get(s.Key)
	case v.Kind == tree.List:
		idx := s.Index
		if !s.IsIndex {
			var err error
			if idx, err = strconv.Atoi(s.Key); err != nil {
				return nil, nil, nil
			}
		}
		if idx < 0 || idx >= len(v.Items) {
			return nil, nil, nil
		}
		child = v.Items[idx]
	}
	if child == nil {
		return nil, nil, nil
	}
	return child, &trail{up: at, step: s, depth: at.len() + 1, node: child}, nil
}

// errMissingRef marks a reference to a key that does not exist.
type errMissingRef struct{ key, abs string }

func (e *errMissingRef) Error() string { return "key '" + e.key + "' is not set" }

// errResolver marks a resolver that failed.
type errResolver struct{ msg string }

func (e *errResolver) Error() string { return e.msg }

func (r *resolver) evalError(err error, n *tree.Node, at *trail) error {
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

// evalEnv answers the lookups and resolver calls of n's template.
type evalEnv struct {
	r  *resolver
	n  *tree.Node
	at *trail
}

func (e evalEnv) Lookup(ref interp.Ref) (*tree.Node, error) {
	// Dots anchor the reference at the node holding the value (one dot)
	// or that node's ancestors; none anchor it at the root.
	var base *trail
	if ref.Dots > 0 {
		var ok bool
		if base, ok = e.at.ancestor(ref.Dots); !ok {
			return nil, &errMissingRef{key: ref.Key, abs: ref.Key}
		}
	}
	n, at, err := e.r.nodeAt(base, ref.Path)
	if err != nil {
		return nil, err
	}
	if n == nil || isMissing(n) {
		return nil, &errMissingRef{key: ref.Key, abs: absPath(base, ref.Path)}
	}
	if n.IsScalar() {
		return e.r.valueAt(n, at)
	}
	out, _, err := e.r.fullAt(n, at)
	return out, err
}

// absPath is the dotted path of keys below base, for messages.
func absPath(base *trail, keys []string) string {
	p := base.path()
	for _, k := range keys {
		p = append(p, Step{Key: k})
	}
	return p.String()
}

// Call runs a resolver, charging for the text it reads (oc.create and
// oc.decode parse theirs) and the nodes it makes (oc.create of a YAML
// string expands its aliases).
func (e evalEnv) Call(name string, args []*tree.Node, raw []string) (*tree.Node, error) {
	units := 0
	for _, a := range args {
		units += len(a.Str) / 64
	}
	if err := e.r.spend(units, e.n, e.at); err != nil {
		return nil, err
	}
	v, err := e.call(name, args, raw)
	if err == nil && v != nil && !v.IsScalar() {
		err = e.r.spend(countNodes(v), e.n, e.at)
	}
	return v, err
}

func (e evalEnv) call(name string, args []*tree.Node, raw []string) (*tree.Node, error) {
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
