package gosource

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym"
)

// ThirdParty and the embedded packages are exactly what gymserver's build
// needs: go list says which modules and which of gym's packages that is.
func TestThirdPartyIsGymserversImports(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go tool")
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}} {{$.ImportPath}}{{end}}", "./gymserver")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var modules, packages []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		mod, pkg, _ := strings.Cut(line, " ")
		if mod == ModulePath {
			packages = append(packages, strings.TrimPrefix(pkg, ModulePath+"/"))
		} else if !slices.Contains(modules, mod) {
			modules = append(modules, mod)
		}
	}
	slices.Sort(modules)
	if !slices.Equal(modules, ThirdParty) {
		t.Errorf("gymserver needs modules %v; ThirdParty is %v", modules, ThirdParty)
	}
	for _, p := range packages {
		if matches, _ := filepathGlob(p); len(matches) == 0 {
			t.Errorf("gym.GoSource lacks package %s, which gymserver imports", p)
		}
	}
}

func filepathGlob(pkg string) ([]string, error) {
	entries, err := gym.GoSource.ReadDir(pkg)
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") {
			out = append(out, e.Name())
		}
	}
	return out, err
}

func TestMaterialize(t *testing.T) {
	cache := t.TempDir()
	m, err := Materialize(gym.GoSource, cache)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(m.Dir) != cache || !strings.HasPrefix(filepath.Base(m.Dir), "gosrc-") {
		t.Errorf("Dir = %s", m.Dir)
	}
	gomod, _ := os.ReadFile(filepath.Join(m.Dir, "go.mod"))
	if !strings.HasPrefix(string(gomod), "module "+ModulePath+"\n\ngo "+m.GoVersion+"\n") || strings.Contains(string(gomod), "cobra") {
		t.Errorf("go.mod:\n%s", gomod)
	}
	tests, _ := filepath.Glob(filepath.Join(m.Dir, "internal", "server", "*_test.go"))
	sources, _ := filepath.Glob(filepath.Join(m.Dir, "gymserver", "*.go"))
	if len(tests) != 0 || len(sources) == 0 {
		t.Errorf("tests %v, gymserver sources %v", tests, sources)
	}
	for _, line := range strings.Split(strings.TrimSpace(m.Sum), "\n") {
		if !slices.ContainsFunc(m.Requires, func(r Require) bool { return strings.HasPrefix(line, r.Path+" "+r.Version) }) {
			t.Errorf("go.sum line of a module not required: %s", line)
		}
	}
	if len(strings.Split(strings.TrimSpace(m.Sum), "\n")) != 2*len(ThirdParty) {
		t.Errorf("go.sum has not one h1 and one go.mod line per module:\n%s", m.Sum)
	}
	again, err := Materialize(gym.GoSource, cache)
	if err != nil || again.Dir != m.Dir {
		t.Errorf("a second materialization: %v, %v", again, err)
	}
	mod := m.ComponentGoMod("gym.local/x")
	if !strings.Contains(mod, "replace "+ModulePath+" => "+m.Dir+"\n") || !strings.Contains(mod, "require "+ModulePath+" "+PlaceholderVersion+"\n") {
		t.Errorf("component go.mod:\n%s", mod)
	}
	m.Dir = "/a dir/with space"
	if mod := m.ComponentGoMod("x"); !strings.Contains(mod, `=> "/a dir/with space"`) {
		t.Errorf("a path with a space is not quoted:\n%s", mod)
	}
}

func TestParseGoModErrors(t *testing.T) {
	if _, err := parseGoMod("module x\n"); err == nil || !strings.Contains(err.Error(), "no go directive") {
		t.Errorf("no go directive: %v", err)
	}
	if _, err := parseGoMod("module x\n\ngo 1.22\n\nrequire github.com/tidwall/gjson v1.0.0\n"); err == nil || !strings.Contains(err.Error(), "does not require github.com/tidwall/match") {
		t.Errorf("missing requirements: %v", err)
	}
}

func FuzzParseGoMod(f *testing.F) {
	data, _ := gym.GoSource.ReadFile("go.mod")
	f.Add(string(data))
	f.Add("require (\n)\n// x\ngo\n")
	f.Fuzz(func(t *testing.T, text string) {
		m, err := parseGoMod(text)
		if err == nil && (m.GoVersion == "" || len(m.Requires) != len(ThirdParty)) {
			t.Fatalf("accepted %q as %+v", text, m)
		}
	})
}
