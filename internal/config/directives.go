package config

import (
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

const (
	inheritPrefix = "${inherit_from:"
	copyPrefix    = "${copy:"
	inheritKey    = "_inherit_from"
	copyKey       = "_copy"
	deleteKey     = "_delete_key"
)

// applyDirectives processes `${inherit_from:..}`, `${copy:..}`,
// `_inherit_from`, `_copy` and `_delete_key` the way NeMo Gym does: values
// come from a snapshot taken before any directive runs (so chains are not
// re-processed), while a source's parent must still exist in the live tree
// and inherit removes the source from it.
func applyDirectives(root *tree.Node) error {
	// Most configs have none, and the snapshot is a copy of everything.
	if !hasDirectives(root) {
		return nil
	}
	d := directiveWalk{root: root, snapshot: root.Clone()}
	return d.walkMap(root, nil)
}

// hasDirectives reports whether the walk would find anything to do below n.
func hasDirectives(n *tree.Node) bool {
	for _, e := range n.Entries {
		switch v := e.Value; {
		case e.Key == inheritKey || e.Key == copyKey || e.Key == deleteKey:
			return true
		case v.Kind == tree.String && (isDirectiveString(v.Str, inheritPrefix) || isDirectiveString(v.Str, copyPrefix)):
			return true
		case hasDirectives(v):
			return true
		}
	}
	for _, it := range n.Items {
		if hasDirectives(it) {
			return true
		}
	}
	return false
}

type directiveWalk struct {
	root, snapshot *tree.Node
}

func (d *directiveWalk) walkMap(m *tree.Node, at *trail) error {
	for _, key := range m.Keys() {
		v := m.Get(key)
		if v == nil { // moved away by an earlier inherit in this walk
			continue
		}
		here := at.key(key, nil)
		switch {
		case v.Kind == tree.String && isDirectiveString(v.Str, inheritPrefix):
			src, err := d.take(v.Str[len(inheritPrefix):len(v.Str)-1], v.Origin)
			if err != nil {
				return err
			}
			m.Set(key, src)
			d.remove(v.Str[len(inheritPrefix) : len(v.Str)-1])
		case v.Kind == tree.String && isDirectiveString(v.Str, copyPrefix):
			src, err := d.take(v.Str[len(copyPrefix):len(v.Str)-1], v.Origin)
			if err != nil {
				return err
			}
			m.Set(key, src)
		case v.Kind == tree.Map:
			out, err := d.mapDirective(v, here)
			if err != nil {
				return err
			}
			m.Set(key, out)
		case v.Kind == tree.List:
			if err := d.walkList(v, here); err != nil {
				return err
			}
		}
	}
	return nil
}

// walkList enters maps inside lists, but as upstream does, neither directive
// strings in the list nor a list element's own _inherit_from/_copy are applied:
// only the element's children are.
func (d *directiveWalk) walkList(l *tree.Node, at *trail) error {
	for i, it := range l.Items {
		var err error
		switch it.Kind {
		case tree.Map:
			err = d.walkMap(it, at.index(i, nil))
		case tree.List:
			err = d.walkList(it, at.index(i, nil))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// mapDirective handles one map value that may carry _inherit_from, _copy or
// _delete_key, and returns what replaces it.
func (d *directiveWalk) mapDirective(v *tree.Node, at *trail) (*tree.Node, error) {
	source, sourceKey := v.Get(inheritKey), inheritKey
	if source == nil {
		source, sourceKey = v.Get(copyKey), copyKey
	}
	del := v.Get(deleteKey)
	if source == nil && del == nil {
		return v, d.walkMap(v, at)
	}
	var toDelete []string
	if del != nil {
		if del.Kind != tree.String {
			return nil, errorf(ClassConfig, del.Origin, "'%s' must be a comma-separated string of keys, got a %s", at.key(deleteKey, nil), del.Kind)
		}
		v.Delete(deleteKey)
		var keys []string
		for _, k := range strings.Split(del.Str, ",") {
			if k = strings.TrimSpace(k); k != "" {
				keys = append(keys, k)
			}
		}
		toDelete = v.DeleteAll(keys)
	}
	if source == nil {
		return v, d.walkMap(v, at)
	}
	if source.Kind != tree.String {
		return nil, errorf(ClassConfig, source.Origin, "'%s' must be a dotted path string such as 'test_resource', got a %s", at.key(sourceKey, nil), source.Kind)
	}
	v.Delete(sourceKey)
	if err := d.walkMap(v, at); err != nil {
		return nil, err
	}
	base, err := d.take(source.Str, source.Origin)
	if err != nil {
		return nil, err
	}
	if sourceKey == inheritKey {
		d.remove(source.Str)
	}
	if isMissing(base) {
		return base, nil
	}
	out, err := merge(base, v, at)
	if err != nil {
		return nil, err
	}
	if missing := out.DeleteAll(toDelete); len(missing) > 0 {
		return nil, errorf(ClassConfig, del.Origin,
			"'%s' lists '%s', which is neither in '%s' nor in what it takes from '%s'. Remove it from %s",
			at.key(deleteKey, nil), missing[0], at, source.Str, deleteKey)
	}
	return out, nil
}

func isDirectiveString(s, prefix string) bool {
	return strings.HasPrefix(s, prefix) && strings.HasSuffix(s, "}")
}

func splitDirectivePath(p string) []string {
	parts := strings.Split(strings.TrimSpace(p), ".")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// take returns a copy of the snapshot's value at the dotted path. Like
// upstream, the path's parent must exist in the live tree (so a source under
// a node an earlier inherit moved is gone), and the value comes from the
// snapshot. A MISSING value on the way makes the result MISSING.
func (d *directiveWalk) take(dotted string, where tree.Origin) (*tree.Node, error) {
	parts := splitDirectivePath(dotted)
	parent, missing := descend(d.root, parts[:len(parts)-1])
	if missing {
		return tree.NewString(missingMarker), nil
	}
	if parent == nil {
		return nil, inheritNotFound(parts[:len(parts)-1], where)
	}
	v, missing := descend(d.snapshot, parts)
	if missing {
		return tree.NewString(missingMarker), nil
	}
	if v == nil {
		return nil, inheritNotFound(parts, where)
	}
	return v.Clone(), nil
}

func (d *directiveWalk) remove(dotted string) {
	parts := splitDirectivePath(dotted)
	parent, _ := descend(d.root, parts[:len(parts)-1])
	if parent != nil && parent.Kind == tree.Map {
		parent.Delete(parts[len(parts)-1])
	}
}

// descend follows parts from n through maps (and lists, by index). It
// returns nil when a step does not exist, and missing=true when it meets a
// MISSING value on the way.
func descend(n *tree.Node, parts []string) (_ *tree.Node, missing bool) {
	for _, p := range parts {
		if isMissing(n) {
			return nil, true
		}
		switch n.Kind {
		case tree.Map:
			n = n.Get(p)
		case tree.List:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(n.Items) {
				return nil, false
			}
			n = n.Items[i]
		default:
			return nil, false
		}
		if n == nil {
			return nil, false
		}
	}
	return n, isMissing(n)
}

func inheritNotFound(parts []string, where tree.Origin) *Error {
	quoted := make([]string, len(parts))
	for i, p := range parts {
		quoted[i] = interp.PythonRepr(tree.NewString(p))
	}
	return errorf(ClassInheritPathNotFound, where,
		"Path specified does not exist in config: [%s]. Directive paths are dotted and absolute from the top of the config (e.g. ${inherit_from:test_resource}); check the spelling and that the source is defined in a loaded config",
		strings.Join(quoted, ", "))
}
