package config

import (
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Step is one element of a path into the tree: a map key, or a list index
// when IsIndex is set.
type Step struct {
	Key     string
	Index   int
	IsIndex bool
}

// Path addresses a node from the root.
type Path []Step

func (p Path) Key(k string) Path {
	q := make(Path, len(p), len(p)+1)
	copy(q, p)
	return append(q, Step{Key: k})
}

func (p Path) Index(i int) Path {
	q := make(Path, len(p), len(p)+1)
	copy(q, p)
	return append(q, Step{Index: i, IsIndex: true})
}

// String renders p as NeMo Gym's error messages do: keys joined by '.',
// list indices as [i] ("server.nested[0].k").
func (p Path) String() string {
	var b strings.Builder
	for i, s := range p {
		if s.IsIndex {
			b.WriteString("[" + strconv.Itoa(s.Index) + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.Key)
	}
	return b.String()
}

// trail is the path a walk has reached, kept as a chain from the deepest
// step up to the root, so that stepping down costs one small allocation
// however deep the walk is; copying a Path at every level made walks
// quadratic in depth. A trail is never changed once made, so one may be
// kept (in a list, a cache, an error) while the walk goes on. The nil
// trail is the root.
type trail struct {
	up    *trail
	step  Step
	depth int
	// node is the node the trail leads to, when the walk that made it
	// knows, so that a relative reference can start there instead of
	// walking down from the root again.
	node *tree.Node
}

func (t *trail) key(k string, n *tree.Node) *trail {
	return &trail{up: t, step: Step{Key: k}, depth: t.len() + 1, node: n}
}

func (t *trail) index(i int, n *tree.Node) *trail {
	return &trail{up: t, step: Step{Index: i, IsIndex: true}, depth: t.len() + 1, node: n}
}

func (t *trail) len() int {
	if t == nil {
		return 0
	}
	return t.depth
}

// ancestor is the trail n steps up, or false past the root.
func (t *trail) ancestor(n int) (*trail, bool) {
	for ; n > 0; n-- {
		if t == nil {
			return nil, false
		}
		t = t.up
	}
	return t, true
}

func (t *trail) path() Path {
	p := make(Path, t.len())
	for i := len(p) - 1; i >= 0; i-- {
		p[i], t = t.step, t.up
	}
	return p
}

func (t *trail) String() string { return t.path().String() }

// lastKey is the nearest map key on the trail, "" when there is none.
func (t *trail) lastKey() (string, bool) {
	for ; t != nil; t = t.up {
		if !t.step.IsIndex {
			return t.step.Key, true
		}
	}
	return "", false
}

// trailOf turns a Path into a trail whose nodes are unknown.
func trailOf(p Path) *trail {
	var t *trail
	for _, s := range p {
		t = &trail{up: t, step: s, depth: t.len() + 1}
	}
	return t
}
