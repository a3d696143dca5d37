package config

import (
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// missingMarker is OmegaConf's "mandatory value" scalar.
const missingMarker = "???"

func isMissing(n *tree.Node) bool { return n != nil && n.Kind == tree.String && n.Str == missingMarker }

// merge overlays b onto a with OmegaConf's untyped merge semantics and
// returns the result; a is modified in place when it is a map. Maps merge
// key by key (a's order, new keys appended); lists and scalars replace; a
// MISSING value never erases a set one. OmegaConf refuses to merge a map
// with a list either way round; so do we, naming both places.
func merge(a, b *tree.Node, at *trail) (*tree.Node, error) {
	if isMissing(b) && a != nil {
		return a, nil
	}
	if a == nil || b.Kind != tree.Map || a.Kind != tree.Map {
		if a != nil && ((a.Kind == tree.Map && b.Kind == tree.List) || (a.Kind == tree.List && b.Kind == tree.Map)) {
			return nil, &Error{
				Class: ClassMerge,
				Msg: "cannot merge a " + b.Kind.String() + " (" + b.Origin.String() + ") onto the " + a.Kind.String() +
					" at '" + at.String() + "' (" + a.Origin.String() + "); OmegaConf refuses to merge a map with a list." +
					" Make both layers the same kind, or delete the key first with ~" + at.String(),
				Where: b.Origin,
			}
		}
		return b, nil
	}
	for _, e := range b.Entries {
		old := a.Get(e.Key)
		if old == nil {
			a.SetEntry(e)
			continue
		}
		merged, err := merge(old, e.Value, at.key(e.Key, nil))
		if err != nil {
			return nil, err
		}
		a.SetEntry(tree.Entry{Key: e.Key, KeyKind: e.KeyKind, Value: merged})
	}
	return a, nil
}

// mergeAll merges layers left to right (later wins) into a fresh map.
// Layers are cloned so that callers' trees stay untouched.
func mergeAll(layers ...*tree.Node) (*tree.Node, error) {
	out := tree.NewMap()
	for _, l := range layers {
		if l == nil {
			continue
		}
		var err error
		if out, err = merge(out, l.Clone(), nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}
