package override

import (
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Apply applies one parsed override to layer, a map, as Hydra 1.3's
// _apply_overrides_to_config does on its struct-mode config:
//
//   - k=v replaces an existing k (a map value merges into an existing map)
//     and may add no key anywhere;
//   - +k=v fails when k holds a set value and v is not a map or list;
//     otherwise, like ++k=v, it runs OmegaConf.update(merge=True,
//     force_add=True): maps merge, lists and scalars replace, missing
//     parents become maps;
//   - ~k and ~k=v delete a set k (and with =v only when it equals v).
//
// A failed override leaves layer unchanged. Errors are *ApplyError.
func Apply(layer *tree.Node, ov Override) error {
	a := &applier{ov: ov, origin: tree.Origin{Kind: tree.FromCLI, Token: ov.Token}}
	switch {
	case layer == nil || layer.Kind != tree.Map:
		return a.fail("cannot apply override '" + ov.Token + "': the CLI layer is not a map")
	case len(ov.Path) == 0:
		return a.fail("cannot apply override '" + ov.Token + "': it has no key")
	case ov.Key == "hydra" || strings.HasPrefix(ov.Key, "hydra."):
		return a.fail("Could not override '" + ov.Key + "': it is Hydra's own runtime config, which gym does not have; remove '" + ov.Token + "'")
	case ov.Op != Delete && ov.Value == nil:
		return a.fail("cannot apply override '" + ov.Token + "': it has no value")
	}
	switch ov.Op {
	case Delete:
		return a.delete(layer)
	case Add:
		cur, _, err := a.lookup(layer)
		if err != nil {
			return err
		}
		if !unset(cur) && ov.Value.IsScalar() {
			return a.fail("Could not append to config. An item is already at '" + ov.Key + "'.\n" +
				"Either remove + prefix: '" + strings.TrimPrefix(ov.Token, "+") + "'\n" +
				"Or add a second + to add or override '" + ov.Key + "': '+" + ov.Token + "'")
		}
		return a.update(layer, true)
	case ForceAdd:
		return a.update(layer, true)
	case Change:
		return a.update(layer, false)
	}
	return a.fail("cannot apply override '" + ov.Token + "': unknown operation " + ov.Op.String())
}

type applier struct {
	ov     Override
	origin tree.Origin
}

func (a *applier) fail(msg string) *ApplyError {
	return &ApplyError{Token: a.ov.Token, Key: a.ov.Key, Msg: msg}
}

// mergeFail is Hydra's wrapper around an OmegaConf error.
func (a *applier) mergeFail(detail string) *ApplyError {
	return a.fail("Error merging override " + a.ov.Token + ": " + detail)
}

// couldNotOverride is struct mode refusing a key that does not exist.
func (a *applier) couldNotOverride() *ApplyError {
	return a.fail("Could not override '" + a.ov.Key + "'.\nTo append to your config use +" + a.ov.Token)
}

// unset is what OmegaConf.select reports as None: absent, null or MISSING.
func unset(n *tree.Node) bool {
	return n == nil || n.Kind == tree.Null || isMissing(n)
}

func isMissing(n *tree.Node) bool { return n.Kind == tree.String && n.Str == "???" }

// child returns the entry for path segment i of n: a map key, or a list
// index read as Python's int() reads it. It is nil when absent; idx is the
// list index.
func (a *applier) child(n *tree.Node, i int) (c *tree.Node, idx int, err *ApplyError) {
	seg := a.ov.Path[i]
	if n.Kind == tree.Map {
		return n.Get(seg), -1, nil
	}
	if !digitRun(seg) {
		return nil, 0, a.mergeFail("'" + strings.Join(a.ov.Path[:i], ".") + "' is a list, and its index '" + seg + "' is not an int")
	}
	idx, convErr := strconv.Atoi(strings.ReplaceAll(seg, "_", ""))
	if convErr != nil || idx >= len(n.Items) {
		return nil, idx, nil
	}
	return n.Items[idx], idx, nil
}

func (a *applier) outOfRange(i int, list *tree.Node) *ApplyError {
	return a.mergeFail("list index " + a.ov.Path[i] + " is out of range: '" +
		strings.Join(a.ov.Path[:i], ".") + "' has " + strconv.Itoa(len(list.Items)) + " items")
}

// lookup is OmegaConf.select of the override's key: the node (nil when
// absent) and its parent. A scalar on the way is an error, as in OmegaConf.
func (a *applier) lookup(root *tree.Node) (node, parent *tree.Node, err *ApplyError) {
	node = root
	for i := range a.ov.Path {
		parent = node
		if node, _, err = a.child(parent, i); err != nil || node == nil {
			return nil, nil, err
		}
		if i < len(a.ov.Path)-1 && node.IsScalar() {
			return nil, nil, a.mergeFail("Error trying to access " + a.ov.Key + ": node `" +
				strings.Join(a.ov.Path[:i+1], ".") + "` is not a container and thus cannot contain `" + a.ov.Path[i+1] + "`")
		}
	}
	return node, parent, nil
}

// update is OmegaConf.update(cfg, key, value, merge=True), with force_add
// for + and ++. Without it the config is in struct mode: any key that does
// not exist yet is refused.
func (a *applier) update(root *tree.Node, force bool) error {
	path := a.ov.Path
	cur := root
	for i := 0; i < len(path)-1; i++ {
		next, idx, err := a.child(cur, i)
		if err != nil {
			return err
		}
		if cur.Kind == tree.List && next == nil {
			return a.outOfRange(i, cur)
		}
		if next == nil || next.IsScalar() {
			// OmegaConf replaces a missing or scalar parent with an empty
			// map; in struct mode the key below it is then new, so no.
			if !force {
				return a.couldNotOverride()
			}
			next = tree.NewMap()
			next.Origin = a.origin
			a.set(cur, i, idx, next)
		}
		cur = next
	}
	last := len(path) - 1
	existing, idx, err := a.child(cur, last)
	if err != nil {
		return err
	}
	if cur.Kind == tree.List && existing == nil {
		return a.outOfRange(last, cur)
	}
	val := a.ov.Value.Clone()
	if !val.IsScalar() && existing != nil && !existing.IsScalar() {
		if err := a.checkMerge(existing, val, !force, []string{a.ov.Key}); err != nil {
			return err
		}
		a.set(cur, last, idx, mergeInto(existing, val))
		return nil
	}
	if existing == nil && !force {
		return a.couldNotOverride()
	}
	a.set(cur, last, idx, val)
	return nil
}

func (a *applier) set(parent *tree.Node, i, idx int, v *tree.Node) {
	if parent.Kind == tree.List {
		parent.Items[idx] = v
		return
	}
	parent.Set(a.ov.Path[i], v)
}

// checkMerge finds what would make mergeInto fail, before anything changes:
// a map meeting a list (OmegaConf's ConfigTypeError), or in struct mode a
// key the existing map lacks. at is the dotted path down to dest, joined
// only for a message so that deep values stay linear.
func (a *applier) checkMerge(dest, src *tree.Node, strict bool, at []string) *ApplyError {
	if dest.Kind != src.Kind {
		return a.mergeFail("cannot merge a " + src.Kind.String() + " into the " + dest.Kind.String() + " at '" + strings.Join(at, ".") +
			"' (Cannot merge " + omegaType(dest) + " with " + omegaType(src) + ")")
	}
	if dest.Kind == tree.List {
		return nil
	}
	for _, e := range src.Entries {
		d := dest.Get(e.Key)
		switch {
		case d == nil && strict:
			return a.couldNotOverride()
		case d != nil && !d.IsScalar() && !e.Value.IsScalar():
			if err := a.checkMerge(d, e.Value, strict, append(at, e.Key)); err != nil {
				return err
			}
		}
	}
	return nil
}

func omegaType(n *tree.Node) string {
	if n.Kind == tree.List {
		return "ListConfig"
	}
	return "DictConfig"
}

// mergeInto is OmegaConf's merge_with of src into dest, two containers of
// the same kind that checkMerge accepted: a list is replaced; maps merge
// key by key, new keys appended, and a MISSING value never replaces one
// that is there.
func mergeInto(dest, src *tree.Node) *tree.Node {
	if dest.Kind == tree.List {
		return src
	}
	for _, e := range src.Entries {
		d := dest.Get(e.Key)
		switch {
		case d == nil:
			dest.SetEntry(e)
		case isMissing(e.Value):
		case !d.IsScalar() && !e.Value.IsScalar():
			dest.Set(e.Key, mergeInto(d, e.Value))
		default:
			dest.Set(e.Key, e.Value)
		}
	}
	return dest
}

func (a *applier) delete(root *tree.Node) error {
	cur, parent, err := a.lookup(root)
	if err != nil {
		return err
	}
	key := a.ov.Key
	if unset(cur) {
		return a.fail("Could not delete from config. '" + key + "' does not exist.")
	}
	// Hydra compares only when a non-null value is given: ~k=null is ~k.
	if v := a.ov.Value; v != nil && v.Kind != tree.Null && !pyEqual(v, cur) {
		return a.fail("Could not delete from config. The value of '" + key + "' is " + PythonStr(cur) + " and not " + PythonStr(v) + ".")
	}
	if parent.Kind == tree.List {
		// Hydra's `del node["0"]` on a ListConfig raises a TypeError.
		return a.fail("Could not delete from config. '" + key + "' is a list item, and Hydra cannot delete list items.")
	}
	parent.Delete(a.ov.Path[len(a.ov.Path)-1])
	return nil
}
