package config

import (
	"strconv"
	"strings"
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
