package resolve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Selector is one of the asset-selector flags (`--benchmark`, `--environment`,
// `--resources-server`, `--model-type`, `--agent-type`) that name a config
// instead of giving its path.
type Selector int

const (
	Benchmark Selector = iota
	Environment
	ResourcesServer
	ModelType
	AgentType
)

type selectorSpec struct {
	flag, parent, subDir, defaultFlavor string
}

// spec is NeMo Gym's table of spec §5.5. An empty default flavor means "the
// component's own name".
func (s Selector) spec() selectorSpec {
	switch s {
	case Benchmark:
		return selectorSpec{"benchmark", "benchmarks", "", "config"}
	case Environment:
		return selectorSpec{"environment", "environments", "", "config"}
	case ResourcesServer:
		return selectorSpec{"resources-server", "resources_servers", "configs", ""}
	case ModelType:
		return selectorSpec{"model-type", "responses_api_models", "configs", ""}
	case AgentType:
		return selectorSpec{"agent-type", "responses_api_agents", "configs", ""}
	}
	panic(fmt.Sprintf("resolve: unknown Selector %d", int(s)))
}

// Flag is the flag name without dashes, e.g. "resources-server".
func (s Selector) Flag() string { return s.spec().flag }

// ParentDir is the directory under each root holding the components.
func (s Selector) ParentDir() string { return s.spec().parent }

// SubDir is the directory inside a component holding its configs ("" for none).
func (s Selector) SubDir() string { return s.spec().subDir }

// DefaultFlavor is the config used when the value names no flavor; "" means
// the config named after the component itself.
func (s Selector) DefaultFlavor() string { return s.spec().defaultFlavor }

func (s Selector) String() string { return "--" + s.Flag() }

// SelectorError is a selector value that names no config. It is a usage error:
// the CLI reports it on stderr and exits 2.
type SelectorError struct {
	Flag  string   // e.g. "benchmark"
	Value string   // as given
	Path  string   // the relative config path the value implies
	Hint  string   // "" or " Did you mean `...`?"
	Dirs  []string // resolved directories worth browsing, in message order
}

func (e *SelectorError) Error() string {
	quoted := make([]string, len(e.Dirs))
	for i, d := range e.Dirs {
		quoted[i] = "`" + d + "`"
	}
	return fmt.Sprintf("`--%s %s` was specified which implies config `%s`, which does not exist.%s See available %s configs in %s.",
		e.Flag, e.Value, e.Path, e.Hint, e.Flag, strings.Join(quoted, ", "))
}

// Select maps a selector value (`name` or `name/flavor`) to the absolute,
// symlink-free path of its config, searching every root (spec §5.5).
//
// For benchmarks and environments a value with a "/" is first tried as a
// nested component, <parent>/<value>/config.yaml, which beats a flavor file of
// the same name. When several roots hold the config the highest-priority one
// is used and a warning says which were ignored. When none does, the error is
// a *SelectorError.
func (r *Roots) Select(kind Selector, value string) (path string, warnings []string, err error) {
	sp := kind.spec()
	name, flavor, _ := strings.Cut(value, "/")
	if flavor == "" {
		flavor = sp.defaultFlavor
	}
	if flavor == "" {
		flavor = name
	}
	configDir := strings.TrimRight(sp.parent+"/"+name+"/"+sp.subDir, "/")
	rel := configDir + "/" + flavor + ".yaml"

	if (kind == Benchmark || kind == Environment) && strings.Contains(value, "/") {
		if found := r.existingResolved(joinPath(sp.parent, value, "config.yaml")); len(found) > 0 {
			return found[0], multipleMatches(sp.flag, value, found), nil
		}
	}
	if found := r.existingResolved(rel); len(found) > 0 {
		return found[0], multipleMatches(sp.flag, value, found), nil
	}

	e := &SelectorError{Flag: sp.flag, Value: value, Path: rel}
	if kind == Benchmark {
		e.Hint, e.Dirs = r.benchmarkHint(value)
	} else {
		e.Hint, e.Dirs = r.componentHint(sp.parent, configDir, name, flavor)
	}
	return "", nil, e
}

// existingResolved returns the resolved root/rel for every root where it
// exists, each place once: two roots reaching one file through symlinks, or a
// cwd equal to the install root, are not an ambiguity.
func (r *Roots) existingResolved(rel string) []string {
	var found []string
	seen := map[string]bool{}
	for _, rt := range r.roots {
		p := joinPath(rt.abs, rel)
		if !exists(p) {
			continue
		}
		if real := realPath(p); !seen[real] {
			seen[real] = true
			found = append(found, real)
		}
	}
	return found
}

func multipleMatches(flag, value string, found []string) []string {
	if len(found) < 2 {
		return nil
	}
	ignored := make([]string, len(found)-1)
	for i, p := range found[1:] {
		ignored[i] = "`" + p + "`"
	}
	return []string{fmt.Sprintf("`--%s %s` matches multiple configs; using `%s` from the highest-priority root and ignoring %s. Pass `--config <path>` to select a different one.",
		flag, value, found[0], strings.Join(ignored, ", "))}
}

// benchmarkHint suggests among the names `gym list benchmarks` would show,
// because benchmark configs may sit at any depth: when value is a directory
// that only groups benchmarks, the shortest name under it; otherwise the
// closest name overall.
func (r *Roots) benchmarkHint(value string) (string, []string) {
	names := map[string]bool{}
	var dirs []string
	for _, rt := range r.roots {
		dir := joinPath(rt.abs, "benchmarks")
		if !isDir(dir) {
			continue
		}
		dirs = append(dirs, realPath(dir))
		for _, n := range benchmarkConfigNames(dir) {
			names[n] = true
		}
	}
	var under, all []string
	for n := range names {
		all = append(all, n)
		if strings.HasPrefix(n, value+"/") {
			under = append(under, n)
		}
	}
	if len(under) > 0 {
		sort.Slice(under, func(i, j int) bool {
			if len(under[i]) != len(under[j]) {
				return len(under[i]) < len(under[j])
			}
			return under[i] < under[j]
		})
		return " Did you mean `" + under[0] + "`?", sortedDirs(dirs)
	}
	return DidYouMean(value, all), sortedDirs(dirs)
}

// componentHint suggests a flavor when the component has configs in some
// root, else a component name.
func (r *Roots) componentHint(parent, configDir, name, flavor string) (string, []string) {
	var dirs, stems []string
	for _, rt := range r.roots {
		dir := joinPath(rt.abs, configDir)
		if !isDir(dir) {
			continue
		}
		dirs = append(dirs, realPath(dir))
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if stem, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
				if stem == "" {
					// pathlib gives ".yaml" no suffix, so its stem is the whole name.
					stem = e.Name()
				}
				stems = append(stems, stem)
			}
		}
	}
	if len(stems) > 0 {
		return DidYouMean(flavor, stems), sortedDirs(dirs)
	}

	dirs = nil
	var children []string
	for _, rt := range r.roots {
		dir := joinPath(rt.abs, parent)
		if !isDir(dir) {
			continue
		}
		dirs = append(dirs, realPath(dir))
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if entryIsDir(dir, e) {
				children = append(children, e.Name())
			}
		}
	}
	return DidYouMean(name, children), sortedDirs(dirs)
}

// sortedDirs de-duplicates dirs and orders them as NeMo Gym's sorted list of
// backticked strings does, so the message is stable across runs.
func sortedDirs(dirs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range dirs {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return "`"+out[i]+"`" < "`"+out[j]+"`" })
	return out
}

// declaresBenchmark stands in for parsing the YAML: `type: benchmark`,
// quoted or not, at any indent, as a list item or inside a flow mapping. A file that would not parse
// still counts, as it does upstream, so its resolve step can report it.
var declaresBenchmark = regexp.MustCompile(`(?m)(?:^[ \t]*(?:-[ \t]+)?|[{,][ \t]*)["']?type["']?[ \t]*:[ \t]+["']?benchmark["']?[ \t\r]*(?:[,}#]|$)`)

// benchmarkConfigNames lists the names of the benchmark configs under dir:
// each *.yaml at any depth that declares a benchmark, as its path relative to
// dir without ".yaml", `X/config` shortened to `X`. Hidden files and
// directories are skipped and symlinked directories followed, as Python's
// recursive glob does.
func benchmarkConfigNames(dir string) []string {
	var names []string
	var walk func(abs, rel string, ancestors []os.FileInfo)
	walk = func(abs, rel string, ancestors []os.FileInfo) {
		entries, err := os.ReadDir(abs)
		if err != nil {
			return
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p := filepath.Join(abs, e.Name())
			relName := e.Name()
			if rel != "" {
				relName = rel + "/" + e.Name()
			}
			if entryIsDir(abs, e) {
				fi, err := os.Stat(p)
				// A symlink back to an ancestor would recurse forever.
				if err != nil || slices.ContainsFunc(ancestors, func(a os.FileInfo) bool { return os.SameFile(a, fi) }) {
					continue
				}
				walk(p, relName, append(ancestors, fi))
				continue
			}
			// Only files: reading a FIFO that happens to end in .yaml would block.
			regular := e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0
			stem, ok := strings.CutSuffix(relName, ".yaml")
			if !ok || !regular || !isBenchmarkConfig(p) {
				continue
			}
			if d, base, nested := strings.Cut(stem, "/"); nested && base == "config" {
				stem = d
			}
			names = append(names, stem)
		}
	}
	if fi, err := os.Stat(dir); err == nil {
		walk(dir, "", []os.FileInfo{fi})
	}
	return names
}

// entryIsDir reports whether the entry e of dir is a directory, following a
// symlink; only symlinks cost a stat.
func entryIsDir(dir string, e fs.DirEntry) bool {
	if e.Type()&fs.ModeSymlink != 0 {
		return isDir(filepath.Join(dir, e.Name()))
	}
	return e.IsDir()
}

func isBenchmarkConfig(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		// Unreadable is treated like unparseable: listed, so that selecting it
		// reports the real problem. A dangling symlink is no config at all.
		return !errors.Is(err, fs.ErrNotExist)
	}
	return declaresBenchmark.Match(data)
}
