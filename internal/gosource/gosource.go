// Package gosource gives Go components outside gym's module a copy of the
// part of it they build against (the public package gymserver and what it
// imports). gym's module is on no module proxy, so a component's go.mod
// requires it at a placeholder version and replaces it with this copy,
// written from the binary's embedded sources into gym's cache directory;
// a `go install`ed gym has it as surely as a checkout does. The third-party
// modules the copy needs come from the Go module cache (where building gym
// put them) or the proxy, checked against gym's own go.sum.
package gosource

import (
	"bufio"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"testing/fstest"

	"github.com/nemo-gym-go/gym/internal/resolve"
)

// ModulePath is gym's module.
const ModulePath = "github.com/nemo-gym-go/gym"

// PlaceholderVersion is the version a component requires gym's module at;
// the replace directive decides what it builds. It is what `go mod tidy`
// writes for a replaced module that has no version.
const PlaceholderVersion = "v0.0.0-00010101000000-000000000000"

// ThirdParty are the modules outside gym that gymserver's packages import,
// directly or through one another; TestThirdPartyIsGymserversImports keeps
// the list equal to `go list -deps ./gymserver`.
var ThirdParty = []string{
	"github.com/tidwall/gjson",
	"github.com/tidwall/match",
	"github.com/tidwall/pretty",
	"github.com/tidwall/sjson",
	"go.yaml.in/yaml/v3",
}

// Require is one module requirement.
type Require struct{ Path, Version string }

// Module is gym's module as a component's go.mod uses it.
type Module struct {
	Dir       string    // the source copy's directory, absolute
	GoVersion string    // gym's go directive, which a component must meet
	Requires  []Require // ThirdParty at gym's versions, sorted
	Sum       string    // go.sum lines of ThirdParty
}

// Materialize writes the source copy of src (gym.GoSource: go.mod, go.sum
// and package sources) to <cacheDir>/gosrc-<content hash>, tests left out
// and go.mod cut down to ThirdParty, and describes it.
func Materialize(src fs.FS, cacheDir string) (*Module, error) {
	gomod, err := fs.ReadFile(src, "go.mod")
	if err != nil {
		return nil, fmt.Errorf("gym's embedded go.mod: %w", err)
	}
	gosum, err := fs.ReadFile(src, "go.sum")
	if err != nil {
		return nil, fmt.Errorf("gym's embedded go.sum: %w", err)
	}
	m, err := parseGoMod(string(gomod))
	if err != nil {
		return nil, err
	}
	m.Sum = m.filterSum(string(gosum))
	tree := fstest.MapFS{
		"go.mod": {Data: []byte(m.goMod(ModulePath))},
		"go.sum": {Data: []byte(m.Sum)},
	}
	err = fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".go" || strings.HasSuffix(p, "_test.go") {
			return err
		}
		data, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		tree[p] = &fstest.MapFile{Data: data, Mode: 0o644}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading gym's embedded sources: %w", err)
	}
	if m.Dir, err = resolve.MaterializeAs(tree, cacheDir, "gosrc"); err != nil {
		return nil, err
	}
	return m, nil
}

// parseGoMod reads the go directive and the requirements of ThirdParty
// from gym's go.mod.
func parseGoMod(text string) (*Module, error) {
	m := &Module{}
	want := map[string]bool{}
	for _, p := range ThirdParty {
		want[p] = true
	}
	inBlock := false
	sc := bufio.NewScanner(strings.NewReader(text))
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(strings.SplitN(sc.Text(), "//", 2)[0])
		switch {
		case len(f) == 0:
		case f[0] == "go" && len(f) == 2:
			m.GoVersion = f[1]
		case f[0] == "require" && len(f) == 2 && f[1] == "(":
			inBlock = true
		case inBlock && f[0] == ")":
			inBlock = false
		case inBlock && len(f) == 2, f[0] == "require" && len(f) == 3:
			p, v := f[len(f)-2], f[len(f)-1]
			if want[p] {
				m.Requires = append(m.Requires, Require{p, v})
				delete(want, p)
			}
		}
	}
	if m.GoVersion == "" {
		return nil, fmt.Errorf("gym's embedded go.mod has no go directive")
	}
	if len(want) > 0 {
		var missing []string
		for p := range want {
			missing = append(missing, p)
		}
		sort.Strings(missing)
		return nil, fmt.Errorf("gym's embedded go.mod does not require %s", strings.Join(missing, ", "))
	}
	sort.Slice(m.Requires, func(i, j int) bool { return m.Requires[i].Path < m.Requires[j].Path })
	return m, nil
}

// filterSum keeps the go.sum lines of the required modules at their
// versions: what `go mod tidy` keeps for a module that imports gymserver.
func (m *Module) filterSum(text string) string {
	want := map[string]bool{}
	for _, r := range m.Requires {
		want[r.Path+" "+r.Version] = true
		want[r.Path+" "+r.Version+"/go.mod"] = true
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if f := strings.Fields(line); len(f) == 3 && want[f[0]+" "+f[1]] {
			b.WriteString(line)
		}
	}
	return b.String()
}

// goMod is a go.mod for module requiring m's third-party modules, as `go
// mod tidy` writes one.
func (m *Module) goMod(module string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\ngo %s\n\nrequire (\n", module, m.GoVersion)
	for _, r := range m.Requires {
		fmt.Fprintf(&b, "\t%s %s\n", r.Path, r.Version)
	}
	b.WriteString(")\n")
	return b.String()
}

// ComponentGoMod is the go.mod of a component module that imports
// gymserver: gym's module at the placeholder version, replaced with the
// source copy, and the third-party modules it brings, indirect, as `go mod
// tidy` lists them.
func (m *Module) ComponentGoMod(module string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\ngo %s\n\nrequire %s %s\n\nrequire (\n", module, m.GoVersion, ModulePath, PlaceholderVersion)
	for _, r := range m.Requires {
		fmt.Fprintf(&b, "\t%s %s // indirect\n", r.Path, r.Version)
	}
	dir := m.Dir
	if strings.ContainsAny(dir, " \t\"'`\\") {
		dir = strconv.Quote(dir)
	}
	fmt.Fprintf(&b, ")\n\nreplace %s => %s\n", ModulePath, dir)
	return b.String()
}
