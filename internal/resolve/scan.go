package resolve

import (
	"os"
	"strings"
)

// Found is one component directory found by Scan.
type Found struct {
	Name     string   // the directory name, e.g. "math_with_judge"
	Dir      string   // <root>/<typeDir>/<name> of the copy in use
	Root     string   // the root that copy came from
	Shadowed []string // Dirs of same-named copies in lower-priority roots
}

// Scan lists the component directories <root>/<typeDir>/<name> across all
// roots for the listing commands (spec §5.4). On a name collision the earlier
// root wins and the later copies are recorded as shadowed, so a listing can
// tell a user their plugin hides a built-in. Order is each root's names in
// lexical order, roots in priority order, a name placed where it first
// appears. Hidden directories are not components and are skipped.
func (r *Roots) Scan(typeDir string) []Found {
	var out []Found
	index := map[string]int{}
	for _, rt := range r.roots {
		entries, err := os.ReadDir(joinPath(rt.abs, typeDir))
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || !entryIsDir(joinPath(rt.abs, typeDir), e) {
				continue
			}
			dir := joinPath(rt.given, typeDir, name)
			if i, ok := index[name]; ok {
				out[i].Shadowed = append(out[i].Shadowed, dir)
				continue
			}
			index[name] = len(out)
			out = append(out, Found{Name: name, Dir: dir, Root: rt.given})
		}
	}
	return out
}
