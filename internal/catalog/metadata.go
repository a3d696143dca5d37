package catalog

import (
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// Metadata is what a listing shows about a config beyond its name.
type Metadata struct {
	Domain      string // "" when the config declares none
	Description string
}

// ReadMetadata is NeMo Gym's read_config_metadata (spec §2.9): the first
// non-empty domain and description of any server mapping in the raw file.
// What is still missing is then looked up, the same way, in the files the
// config's config_paths name (resolved across roots, depth first), which is
// how a benchmark inheriting a resources server gets that server's domain.
// Unlike NeMo Gym it does not resolve ${...} or _inherit_from to find them.
// It never fails: an unreadable file has no metadata.
func ReadMetadata(path string, roots *resolve.Roots) Metadata {
	var m Metadata
	readMetadata(path, roots, &m, map[string]bool{})
	return m
}

func readMetadata(path string, roots *resolve.Roots, m *Metadata, seen map[string]bool) {
	if seen[path] || len(seen) > 32 {
		return
	}
	seen[path] = true
	n := loadRaw(path)
	fillMetadata(n, m)
	if (m.Domain != "" && m.Description != "") || n == nil || roots == nil {
		return
	}
	cp := n.Get("config_paths")
	if cp == nil || cp.Kind != tree.List {
		return
	}
	for _, it := range cp.Items {
		if rel := str(it); rel != "" {
			readMetadata(roots.Resolve(rel), roots, m, seen)
		}
	}
}

// fillMetadata sets what m still lacks from the server mappings of n.
func fillMetadata(n *tree.Node, m *Metadata) {
	for _, s := range servers(n) {
		if m.Domain == "" {
			m.Domain = str(s.body.Get("domain"))
		}
		if m.Description == "" {
			m.Description = str(s.body.Get("description"))
		}
	}
}
