// Package catalog discovers NeMo Gym components across the search roots for
// the listing commands (`gym list …`, `gym search`): the unified catalog of
// environments and benchmarks, agents, models and resources servers, each
// with its metadata, the copies it shadows, fuzzy query matching and the
// shared inspect view. It reads files and starts nothing.
package catalog

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// Catalog kinds.
const (
	KindEnvironment = "environment"
	KindBenchmark   = "benchmark"
)

// Catalog statuses: an entry backed by a manifest.yaml is experimental
// unless the manifest says experimental: false, when it has no status.
const (
	StatusExperimental = "experimental"
	StatusNoManifest   = "no-manifest"
)

// Entry is one environment or benchmark of the unified catalog (spec §2.2).
type Entry struct {
	Name   string
	Kind   string // KindEnvironment or KindBenchmark
	Status string
	Metadata
	// Config is the config file, under the root it was found in.
	Config string
	// Manifest is the manifest.yaml of an experimental entry, "" otherwise.
	Manifest string
	// From the manifest; "" for legacy entries.
	Version, IntegrationProfile, Modality, Licensing, Lifecycle string
	// Selector is the --resources-server value of a resource-tree
	// workload (`<dir>` or `<dir>/<stem>`), "" otherwise.
	Selector string
	// Shadowed lists the configs (or manifests) of same-keyed entries in
	// lower-priority roots or trees that this one hides.
	Shadowed []string
}

// Matches reports whether the entry matches a search query (spec §2.7).
func (e *Entry) Matches(query string) bool {
	return FuzzyMatches(query, e.Name, e.Domain, e.Description)
}

// Usage is the command that starts the entry.
func (e *Entry) Usage() string {
	if e.Selector != "" {
		return "gym env start --resources-server " + e.Selector + " --model-type vllm_model"
	}
	return "gym env start --" + e.Kind + " " + e.Name + " --model-type vllm_model"
}

// Catalog is the discovered catalog, sorted by (casefolded name, name, kind).
type Catalog struct {
	Entries []Entry
	// Ignored are the manifests left out because they failed to load
	// (each a *ManifestError), which NeMo Gym does silently.
	Ignored []error
}

// Manifests counts the manifest-backed entries.
func (c *Catalog) Manifests() int {
	n := 0
	for i := range c.Entries {
		if c.Entries[i].Manifest != "" {
			n++
		}
	}
	return n
}

type catalogKey struct{ kind, name string }

// discovery accumulates entries over the roots; a key claimed by an
// earlier root or tree shadows later ones.
type discovery struct {
	Catalog
	claimed map[catalogKey]int // → index in Entries
}

// claim adds e under key unless the key is taken, in which case e's config
// is recorded as shadowed by the holder.
func (d *discovery) claim(key catalogKey, e Entry) {
	if i, ok := d.claimed[key]; ok {
		d.Entries[i].Shadowed = append(d.Entries[i].Shadowed, e.Config)
		return
	}
	d.claimed[key] = len(d.Entries)
	d.Entries = append(d.Entries, e)
}

// Discover builds the unified catalog over roots: per root, environments/,
// then benchmarks/ (each: manifests, then legacy configs), then
// resource-tree workloads. A manifest that contradicts its place in the
// tree is a *RegistryError and nothing is listed.
func Discover(roots *resolve.Roots) (*Catalog, error) {
	d := &discovery{claimed: map[catalogKey]int{}}
	for _, root := range roots.List() {
		for _, t := range []struct{ dir, kind string }{
			{filepath.Join(root, "environments"), KindEnvironment},
			{filepath.Join(root, "benchmarks"), KindBenchmark},
		} {
			if err := d.tree(t.dir, t.kind); err != nil {
				return nil, err
			}
		}
		d.workloads(filepath.Join(root, "resources_servers"))
	}
	for i := range d.Entries {
		if e := &d.Entries[i]; e.Manifest == "" && e.Selector == "" {
			e.Metadata = ReadMetadata(e.Config, roots)
		}
	}
	sort.SliceStable(d.Entries, func(i, j int) bool {
		a, b := d.Entries[i], d.Entries[j]
		if fa, fb := strings.ToLower(a.Name), strings.ToLower(b.Name); fa != fb {
			return fa < fb
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Kind < b.Kind
	})
	return &d.Catalog, nil
}

// tree discovers one environments/ or benchmarks/ tree: every manifest,
// then the legacy configs its manifests do not cover.
func (d *discovery) tree(dir, kind string) error {
	if !isDir(dir) {
		return nil
	}
	// A manifest's own config.yaml is not a second entry, and the
	// config.yaml of a shadowed manifest is not reported as shadowed twice.
	covered, reported := map[string]bool{}, map[string]bool{}
	for _, path := range manifestPaths(dir) {
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			continue
		}
		if rel == "." {
			return &RegistryError{Msg: fmt.Sprintf("Manifest '%s' must be inside a named catalog directory.", path)}
		}
		key := catalogKey{kind, filepath.ToSlash(rel)}
		m, err := LoadManifest(path)
		config := filepath.Join(filepath.Dir(path), siblingConfig)
		if err == nil {
			var named string
			if named, err = m.resolveConfig(path, dir); err == nil {
				config = named
			}
		}
		if i, ok := d.claimed[key]; ok {
			d.Entries[i].Shadowed = append(d.Entries[i].Shadowed, path)
			reported[realPath(config)] = true
			continue
		}
		if err != nil {
			d.Ignored = append(d.Ignored, err)
			continue
		}
		if m.Kind != kind {
			return &RegistryError{Where: m.kindAt, Msg: fmt.Sprintf(
				"Manifest '%s' declares kind '%s', but its catalog path requires '%s'.", path, m.Kind, kind)}
		}
		if m.Name != key.name {
			return &RegistryError{Where: m.nameAt, Msg: fmt.Sprintf(
				"Manifest '%s' declares name '%s', but its catalog path requires '%s'.", path, m.Name, key.name)}
		}
		if !isFile(config) {
			expected := m.ConfigPath
			if expected == siblingConfig {
				expected = "a sibling config.yaml"
			}
			return &RegistryError{Msg: fmt.Sprintf("Manifest '%s' requires %s (resolved to '%s').", path, expected, config)}
		}
		status := ""
		if m.Experimental {
			status = StatusExperimental
		}
		d.claim(key, Entry{
			Name: m.Name, Kind: kind, Status: status,
			Metadata: Metadata{Domain: m.Domain, Description: m.Description},
			Config:   config, Manifest: path,
			Version: m.Version, IntegrationProfile: m.IntegrationProfile,
			Modality: m.Modality, Licensing: m.Licensing, Lifecycle: m.Lifecycle,
		})
		covered[realPath(config)] = true
	}
	legacy := environments
	if kind == KindBenchmark {
		legacy = benchmarks
	}
	for _, e := range legacy(dir) {
		real, key := realPath(e.Config), catalogKey{e.Kind, e.Name}
		if _, taken := d.claimed[key]; covered[real] || taken && reported[real] {
			continue
		}
		d.claim(key, e)
	}
	return nil
}

// manifestPaths lists every manifest.yaml under dir, in Python's sorted
// Path order (component by component). Hidden directories are skipped, as
// the legacy benchmark scan skips them.
func manifestPaths(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && path != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == ManifestFile {
			out = append(out, path)
		}
		return nil
	})
	sortPaths(out)
	return out
}

// sortPaths sorts paths as Python sorts pathlib paths: by their components,
// so that `a/config.yaml` comes before `a.yaml`.
func sortPaths(paths []string) {
	sort.SliceStable(paths, func(i, j int) bool {
		a := strings.Split(filepath.ToSlash(paths[i]), "/")
		b := strings.Split(filepath.ToSlash(paths[j]), "/")
		return slices.Compare(a, b) < 0
	})
}

// environments lists the legacy environments/<dir>/config.yaml, dirs sorted.
func environments(dir string) []Entry {
	var out []Entry
	for _, name := range subdirs(dir) {
		cfg := filepath.Join(dir, name, "config.yaml")
		if isFile(cfg) {
			out = append(out, Entry{Name: name, Kind: KindEnvironment, Status: StatusNoManifest, Config: cfg})
		}
	}
	return out
}

// benchmarks lists the legacy benchmarks: every **/*.yaml under dir
// (sorted, hidden files and manifest.yaml excluded) whose YAML holds a
// `type: benchmark` mapping anywhere; as in NeMo Gym, a file that fails to
// parse is kept.
func benchmarks(dir string) []Entry {
	var files []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if path != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".yaml") && d.Name() != ManifestFile {
			files = append(files, path)
		}
		return nil
	})
	sortPaths(files)
	var out []Entry
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n, err := pyyaml.Load(data, f); err == nil && !containsTypeBenchmark(n) {
			continue
		}
		rel, err := filepath.Rel(dir, f)
		if err != nil {
			continue
		}
		out = append(out, Entry{Name: BenchmarkName(rel), Kind: KindBenchmark, Status: StatusNoManifest, Config: f})
	}
	return out
}

// BenchmarkName is NeMo Gym's _benchmark_config_name: the config path
// relative to benchmarks/ without .yaml, shortened to the directory only
// for `<dir>/config.yaml`.
func BenchmarkName(rel string) string {
	name := strings.TrimSuffix(filepath.ToSlash(rel), ".yaml")
	if dir, last, ok := strings.Cut(name, "/"); ok && last == "config" {
		return dir
	}
	return name
}

// workloads adds the runnable resources_servers/<dir>/configs/*.yaml: at
// least one resources server and an agent with datasets. One is hidden by
// an earlier entry of its kind named like the last part of its selector
// (environments/mcqa hides resources_servers/mcqa), but claims only its
// own name.
func (d *discovery) workloads(dir string) {
	for _, sub := range subdirs(dir) {
		for _, f := range yamlFiles(filepath.Join(dir, sub, "configs")) {
			n := loadRaw(f)
			kind, ok := runnableKind(n)
			if !ok {
				continue
			}
			sel := flavorName(sub, f)
			e := Entry{Name: "resources_servers/" + sel, Kind: kind, Status: StatusNoManifest, Config: f, Selector: sel}
			fillMetadata(n, &e.Metadata, nil)
			if i, ok := d.claimed[catalogKey{kind, sel[strings.LastIndex(sel, "/")+1:]}]; ok {
				d.Entries[i].Shadowed = append(d.Entries[i].Shadowed, f)
				continue
			}
			d.claim(catalogKey{kind, e.Name}, e)
		}
	}
}

// runnableKind reports whether a raw config is a runnable workload (a
// resources server, and agents whose datasets lists hold at least one
// mapping) and, if so, whether it is a benchmark (one of those datasets has
// type: benchmark).
func runnableKind(n *tree.Node) (kind string, ok bool) {
	resources := false
	var datasets []*tree.Node
	for _, s := range servers(n) {
		switch s.group {
		case "resources_servers":
			resources = true
		case "responses_api_agents":
			if ds := s.body.Get("datasets"); ds != nil && ds.Kind == tree.List {
				for _, it := range ds.Items {
					if it.Kind == tree.Map {
						datasets = append(datasets, it)
					}
				}
			}
		}
	}
	if !resources || len(datasets) == 0 {
		return "", false
	}
	for _, ds := range datasets {
		if str(ds.Get("type")) == "benchmark" {
			return KindBenchmark, true
		}
	}
	return KindEnvironment, true
}

// flavorName is `<dir>` when the config's stem is the directory name, else
// `<dir>/<stem>`.
func flavorName(dir, file string) string {
	stem := strings.TrimSuffix(filepath.Base(file), ".yaml")
	if stem == dir {
		return dir
	}
	return dir + "/" + stem
}

// subdirs lists the non-hidden directories in dir, sorted.
func subdirs(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil && fi.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// yamlFiles lists dir/*.yaml, sorted.
func yamlFiles(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	sort.Strings(files)
	return files
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// realPath is the symlink-free absolute path, to tell whether two paths
// name one file.
func realPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
}
