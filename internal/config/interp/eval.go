package interp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Eval evaluates the template. A template that is exactly one
// interpolation yields the node Env gives for it, type and all (the node is
// Env's own, not a copy); anything else yields a string in which each
// interpolation is rendered with PythonStr, as OmegaConf's str() does.
func (t *Template) Eval(env Env) (*tree.Node, error) {
	if in := t.Single(); in != nil {
		return evalInterp(in, env)
	}
	s, err := render(t.Parts, env)
	if err != nil {
		return nil, err
	}
	return tree.NewString(s), nil
}

func render(parts []Part, env Env) (string, error) {
	var b strings.Builder
	for _, p := range parts {
		if p.Interp == nil {
			b.WriteString(p.Text)
			continue
		}
		v, err := evalInterp(p.Interp, env)
		if err != nil {
			return "", err
		}
		b.WriteString(PythonStr(v))
	}
	return b.String(), nil
}

func evalInterp(in *Interp, env Env) (*tree.Node, error) {
	if env == nil {
		return nil, &EvalError{Text: in.Text, Err: errors.New("no environment to resolve interpolations in")}
	}
	if in.Call != nil {
		return evalCall(in, env)
	}
	r := in.Ref
	ref := r.static
	if ref == nil {
		names := make([]string, len(r.Keys))
		for i, k := range r.Keys {
			var err error
			if names[i], err = keyName(k, env, "is used as a config key"); err != nil {
				return nil, wrap(in, nil, "", err)
			}
		}
		built := r.ref(names, in.Text)
		ref = &built
	}
	v, err := env.Lookup(*ref)
	if err != nil {
		return nil, wrap(in, ref, "", err)
	}
	return orNull(v), nil
}

func evalCall(in *Interp, env Env) (*tree.Node, error) {
	c := in.Call
	name, ok := c.StaticName()
	if !ok {
		parts := make([]string, len(c.Name))
		for i, k := range c.Name {
			var err error
			if parts[i], err = keyName(k, env, "is used in a resolver name"); err != nil {
				return nil, wrap(in, nil, "", err)
			}
		}
		name = strings.Join(parts, ".")
	}
	args := make([]*tree.Node, len(c.Args))
	raw := make([]string, len(c.Args))
	for i, a := range c.Args {
		v, err := a.eval(env)
		if err != nil {
			return nil, err
		}
		args[i], raw[i] = v, a.Raw
	}
	v, err := env.Call(name, args, raw)
	if err != nil {
		return nil, wrap(in, nil, name, err)
	}
	return orNull(v), nil
}

// keyName evaluates one key or resolver-name component, which OmegaConf
// requires to be a string.
func keyName(k KeyPart, env Env, use string) (string, error) {
	if k.Interp == nil {
		return k.Name, nil
	}
	v, err := evalInterp(k.Interp, env)
	if err != nil {
		return "", err
	}
	if v.Kind != tree.String {
		return "", fmt.Errorf("the interpolation %s %s and must give a string, but gave %s (%s)",
			k.Interp.Text, use, PythonStr(v), v.Kind)
	}
	return v.Str, nil
}

// wrap ties err to the interpolation that failed, unless it already names a
// deeper one.
func wrap(in *Interp, ref *Ref, resolver string, err error) error {
	if _, ok := errors.AsType[*EvalError](err); ok {
		return err
	}
	return &EvalError{Text: in.Text, Ref: ref, Resolver: resolver, Err: err}
}

// orNull lets Env return nil for Python's None.
func orNull(v *tree.Node) *tree.Node {
	if v == nil {
		return tree.NewNull()
	}
	return v
}

func (e *Element) eval(env Env) (*tree.Node, error) {
	switch e.Kind {
	case ElemInterp:
		return evalInterp(e.Interp, env)
	case ElemString:
		s, err := render(e.Parts, env)
		if err != nil {
			return nil, err
		}
		return tree.NewString(s), nil
	case ElemList:
		items := make([]*tree.Node, len(e.Items))
		for i, it := range e.Items {
			v, err := it.eval(env)
			if err != nil {
				return nil, err
			}
			items[i] = v
		}
		return tree.NewList(items...), nil
	case ElemDict:
		m := tree.NewMap()
		for i, en := range e.Entries {
			v, err := en.Value.eval(env)
			if err != nil {
				return nil, err
			}
			if slot := e.slots[i]; slot < len(m.Entries) {
				m.Entries[slot].Value = v
				continue
			}
			m.SetEntry(tree.Entry{Key: en.Key, KeyKind: en.KeyKind, Value: v})
		}
		return m, nil
	}
	// Constants are shared by every evaluation of the template, and callers
	// may stamp origins on what they get.
	return e.Value.Clone(), nil
}
