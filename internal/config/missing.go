package config

import (
	"fmt"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// checkMissing reports every leaf still '???' after merging and directives,
// in document order, with the override that would fill each.
func checkMissing(root *tree.Node) error {
	var paths []*trail
	var where []tree.Origin
	var walk func(n *tree.Node, at *trail)
	walk = func(n *tree.Node, at *trail) {
		switch {
		case isMissing(n):
			paths = append(paths, at)
			where = append(where, n.Origin)
		case n.Kind == tree.Map:
			for _, e := range n.Entries {
				if !e.Value.IsScalar() || isMissing(e.Value) {
					walk(e.Value, at.key(e.Key, nil))
				}
			}
		case n.Kind == tree.List:
			for i, it := range n.Items {
				if !it.IsScalar() || isMissing(it) {
					walk(it, at.index(i, nil))
				}
			}
		}
	}
	walk(root, nil)
	if len(paths) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d required config value(s) are unset (still '???') after merging:\n", len(paths))
	for i, p := range paths {
		b.WriteString("  - " + p.String())
		if o := where[i].String(); o != "" {
			b.WriteString("    (" + o + ")")
		}
		b.WriteByte('\n')
	}
	b.WriteString("\nProvide each value via a CLI override, in env.yaml, or in a config you pass via config_paths.\n")
	b.WriteString("For example, on the command line:\n")
	for i, p := range paths {
		if i == 3 {
			break
		}
		b.WriteString("  ++" + p.String() + "=<value>\n")
	}
	return &Error{Class: ClassMissingValues, Msg: strings.TrimRight(b.String(), "\n")}
}
