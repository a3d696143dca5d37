// Package catalog discovers NeMo Gym components across the search roots for
// the listing commands (`gym list …`, `gym search`): the unified catalog of
// environments and benchmarks, agents, models and resources servers, each
// with its metadata, the copies it shadows, fuzzy query matching and the
// shared inspect view. It reads files and starts nothing.
package catalog

import (
	"io/fs"
	"os"
	"path/filepath"
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

// StatusNoManifest is the status of an entry with no manifest.yaml.
const StatusNoManifest = "no-manifest"

// Entry is one environment or benchmark of the unified catalog (spec §2.2).
type Entry struct {
	Name   string
	Kind   string // KindEnvironment or KindBenchmark
	Status string
	Metadata
	// Config is the config file, under the root it was found in.
	Config string
	// Selector is the --resources-server value of a resource-tree
	// workload (`<dir>` or `<dir>/<stem>`), "" otherwise.
	Selector string
	// Shadowed lists the configs of same-keyed entries in lower-priority
	// roots or trees that this one hides.
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

type catalogKey struct{ kind, name string }

// Discover builds the unified catalog over roots: per root, environments/,
// then benchmarks/, then resource-tree workloads, with a (kind, name) key
// claimed by an earlier root or tree shadowing later ones. The result is
// sorted by (casefolded name, name, kind).
func Discover(roots *resolve.Roots) []Entry {
	var out []Entry
	claimed := map[catalogKey]int{}
	add := func(e Entry, key catalogKey) {
		if i, ok := claimed[key]; ok {
			out[i].Shadowed = append(out[i].Shadowed, e.Config)
			return
		}
		claimed[key] = len(out)
		claimed[catalogKey{e.Kind, e.Name}] = len(out)
		out = append(out, e)
	}
	for _, root := range roots.List() {
		for _, e := range environments(filepath.Join(root, "environments")) {
			add(e, catalogKey{e.Kind, e.Name})
		}
		for _, e := range benchmarks(filepath.Join(root, "benchmarks")) {
			add(e, catalogKey{e.Kind, e.Name})
		}
		for _, e := range workloads(filepath.Join(root, "resources_servers")) {
			last := e.Selector[strings.LastIndex(e.Selector, "/")+1:]
			add(e, catalogKey{e.Kind, last})
		}
	}
	for i := range out {
		if out[i].Selector == "" {
			out[i].Metadata = ReadMetadata(out[i].Config, roots)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if fa, fb := strings.ToLower(a.Name), strings.ToLower(b.Name); fa != fb {
			return fa < fb
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Kind < b.Kind
	})
	return out
}

// environments lists environments/<dir>/config.yaml, dirs sorted.
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

// benchmarks lists every **/*.yaml under dir (sorted, manifest.yaml
// excluded) whose YAML holds a `type: benchmark` mapping anywhere; as in
// NeMo Gym, a file that fails to parse is kept.
func benchmarks(dir string) []Entry {
	var files []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && path != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".yaml") && d.Name() != "manifest.yaml" {
			files = append(files, path)
		}
		return nil
	})
	sort.Strings(files)
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

// workloads lists the runnable resources_servers/<dir>/configs/*.yaml: at
// least one resources server and an agent with a non-empty datasets list.
func workloads(dir string) []Entry {
	var out []Entry
	for _, d := range subdirs(dir) {
		for _, f := range yamlFiles(filepath.Join(dir, d, "configs")) {
			n := loadRaw(f)
			kind, ok := runnableKind(n)
			if !ok {
				continue
			}
			sel := flavorName(d, f)
			e := Entry{Name: "resources_servers/" + sel, Kind: kind, Status: StatusNoManifest, Config: f, Selector: sel}
			fillMetadata(n, &e.Metadata)
			out = append(out, e)
		}
	}
	return out
}

// runnableKind reports whether a raw config is a runnable workload and, if
// so, whether it is a benchmark (some agent dataset has type: benchmark).
func runnableKind(n *tree.Node) (kind string, ok bool) {
	if !hasGroup(n, "resources_servers") {
		return "", false
	}
	kind = KindEnvironment
	for _, s := range servers(n) {
		if s.group != "responses_api_agents" {
			continue
		}
		ds := s.body.Get("datasets")
		if ds == nil || ds.Kind != tree.List || len(ds.Items) == 0 {
			continue
		}
		maps := true
		for _, it := range ds.Items {
			if it.Kind != tree.Map {
				maps = false
				break
			}
		}
		if !maps {
			continue
		}
		ok = true
		for _, it := range ds.Items {
			if str(it.Get("type")) == "benchmark" {
				kind = KindBenchmark
			}
		}
	}
	return kind, ok
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
