package scaffold

import (
	"errors"
	"go/format"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/catalog"
	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/gosource"
)

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name       string
		python, ok bool
	}{
		{"my_env", true, true},
		{"e2", true, true},
		{"a-b", false, true},
		{"v1.2", false, true},
		{"a-b", true, false},
		{"1sample", true, false},
		{"1sample", false, true},
		{"class", false, false},
		{"Uppercase", false, false},
		{"x/y", false, false},
		{"", false, false},
		{"_x", false, false},
	} {
		err := ValidateName(tc.name, tc.python)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateName(%q, python=%v) = %v, want ok=%v", tc.name, tc.python, err, tc.ok)
		}
	}
}

func TestClassName(t *testing.T) {
	for in, want := range map[string]string{"foo": "Foo", "my_env": "MyEnv", "e2": "E2", "a__b_": "AB", "zed_x": "ZedX"} {
		if got := className(in); got != want {
			t.Errorf("className(%q) = %q, want %q", in, got, want)
		}
	}
}

func relFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	sort.Strings(out)
	return out
}

// The file set of each kind and profile, as NeMo Gym 0.7.0 writes it (its
// example row moved to data/, where the config points).
func TestWorkloadFileSets(t *testing.T) {
	resources := []string{"resources_servers/s/README.md", "resources_servers/s/__init__.py", "resources_servers/s/app.py",
		"resources_servers/s/configs/s.yaml", "resources_servers/s/data/example.jsonl", "resources_servers/s/requirements.txt",
		"resources_servers/s/tests/__init__.py", "resources_servers/s/tests/test_app.py", "resources_servers/s/tests/verifier_cases.jsonl"}
	agent := []string{"responses_api_agents/s_agent/README.md", "responses_api_agents/s_agent/__init__.py",
		"responses_api_agents/s_agent/app.py", "responses_api_agents/s_agent/requirements.txt"}
	for _, kind := range []Kind{Environment, Benchmark} {
		for _, profile := range Profiles {
			t.Run(string(kind)+"/"+string(profile), func(t *testing.T) {
				root := t.TempDir()
				res, err := Workload(WorkloadOptions{Root: root, Kind: kind, Name: "s", Profile: profile})
				if err != nil {
					t.Fatal(err)
				}
				asset := map[Kind]string{Environment: "environments/s", Benchmark: "benchmarks/s"}[kind]
				want := append([]string{}, resources...)
				for _, f := range []string{"README.md", "__init__.py", "config.yaml", "data/example.jsonl", "manifest.yaml"} {
					want = append(want, asset+"/"+f)
				}
				if kind == Benchmark {
					want = append(want, asset+"/data/source.jsonl", asset+"/prepare.py", asset+"/prompt.yaml")
				}
				if profile == CustomGymAgentLoop || profile == ExternalAgentLoop {
					want = append(want, agent...)
				}
				if profile == ExternalRolloutDriver {
					want = append(want, asset+"/rollout_driver.py")
				}
				sort.Strings(want)
				if got := relFiles(t, root); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				if len(res.Created) != len(want) || res.Dir != filepath.Join(root, asset) {
					t.Errorf("result %+v", res)
				}
				// gym's own manifest loader reads what it wrote.
				m, err := catalog.LoadManifest(filepath.Join(root, asset, "manifest.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				if m.Name != "s" || m.Kind != string(kind) {
					t.Errorf("manifest %+v", m)
				}
				for _, y := range []string{asset + "/config.yaml", asset + "/manifest.yaml", "resources_servers/s/configs/s.yaml"} {
					data, _ := os.ReadFile(filepath.Join(root, y))
					if _, err := pyyaml.Load(data, y); err != nil {
						t.Errorf("%s: %v", y, err)
					}
				}
			})
		}
	}
}

// Names YAML would read as another type are quoted, as PyYAML quotes them.
func TestManifestQuotesNames(t *testing.T) {
	root := t.TempDir()
	// A reused verifier lets the name be no Python identifier.
	dir := filepath.Join(root, "resources_servers", "v")
	os.MkdirAll(filepath.Join(dir, "configs"), 0o755)
	os.WriteFile(filepath.Join(dir, "configs", "v.yaml"), []byte("v_server:\n  resources_servers:\n    v:\n      entrypoint: app.py\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "app.py"), []byte("from nemo_gym.verifier_fixture import (\n    VerifierFixture,  # the fixture\n    VERIFIER_FIXTURE,\n)\n"), 0o644)
	r, higher := [2]float64{0, 1e20}, true
	if _, err := Workload(WorkloadOptions{Root: root, Kind: Environment, Name: "1.5", ReuseVerifier: "v", RewardRange: &r, HigherIsBetter: &higher}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(root, "environments", "1.5", "manifest.yaml"))
	for _, want := range []string{"name: '1.5'\n", "  - 1.0e+20\n", "resources_server: v\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("manifest lacks %q:\n%s", want, data)
		}
	}
}

func TestRequireFixture(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		src string
		ok  bool
	}{
		{"VERIFIER_FIXTURE = VerifierFixture(\n  x)\n", true},
		{"VERIFIER_FIXTURE: VerifierFixture = fixtures.VerifierFixture(x)\n", true},
		{"from a.b import VERIFIER_FIXTURE\n", true},
		{"from a.b import X as VERIFIER_FIXTURE\n", true},
		{"from a.b import (\n  A,  # VERIFIER_FIXTURE\n  B,\n)\n", false},
		{"from a.b import VERIFIER_FIXTURE as F\n", false},
		{"def f():\n    VERIFIER_FIXTURE = VerifierFixture(x)\n", false},
		{"VERIFIER_FIXTURE = make()\n", false},
	} {
		p := filepath.Join(dir, "app.py")
		os.WriteFile(p, []byte(tc.src), 0o644)
		if err := requireFixture(p, "v", nil); (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok=%v", tc.src, err, tc.ok)
		}
	}
	if err := requireFixture(filepath.Join(dir, "none.py"), "v", func(string) bool { return true }); err != nil {
		t.Errorf("a Go built-in needs no fixture: %v", err)
	}
	if err := requireFixture(filepath.Join(dir, "none.py"), "v", func(string) bool { return false }); err == nil {
		t.Error("a missing entrypoint with no Go implementation was accepted")
	}
}

func TestWriteNeverOverwrites(t *testing.T) {
	root := t.TempDir()
	files := Files{"a/b.txt": "one\n", "a/c/d.txt": "two\n", "run": "#!/bin/sh\n"}
	res, err := Write(root, "a", files)
	if err != nil || len(res.Created) != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	if info, _ := os.Stat(filepath.Join(root, "run")); info.Mode().Perm()&0o111 == 0 {
		t.Errorf("run is %v, want executable", info.Mode())
	}
	res, err = Write(root, "a", files)
	if err != nil || len(res.Created) != 0 || len(res.Existing) != 3 {
		t.Fatalf("again: %+v %v", res, err)
	}
	os.WriteFile(filepath.Join(root, "a", "b.txt"), []byte("mine\n"), 0o644)
	os.RemoveAll(filepath.Join(root, "a", "c"))
	os.WriteFile(filepath.Join(root, "a", "c"), []byte("a file where a directory goes\n"), 0o644)
	_, err = Write(root, "a", files)
	var conflict *ConflictError
	if !errors.As(err, &conflict) || len(conflict.Paths) != 2 {
		t.Fatalf("err = %v, want two conflicts", err)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "a", "b.txt")); string(data) != "mine\n" {
		t.Errorf("b.txt was overwritten: %q", data)
	}
	os.Symlink(t.TempDir(), filepath.Join(root, "link"))
	if _, err := Write(root, "link", Files{"link/x": "x"}); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("writing through a symlink: %v", err)
	}
}

func TestRequirementsInACheckout(t *testing.T) {
	root := t.TempDir()
	if got := requirements(root, "resources_servers/x"); got != "nemo-gym[dev]\n" {
		t.Errorf("outside a checkout: %q", got)
	}
	os.WriteFile(filepath.Join(root, "pyproject.toml"), nil, 0o644)
	os.Mkdir(filepath.Join(root, "nemo_gym"), 0o755)
	if got := requirements(root, "resources_servers/x"); got != "-e nemo-gym[dev] @ ../..\n" {
		t.Errorf("in a checkout: %q", got)
	}
}

func TestResourcesServerExists(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "resources_servers", "x"), 0o755)
	_, err := ResourcesServer(ResourcesServerOptions{Root: root, Dir: "resources_servers/x"})
	var exists *ExistsError
	if !errors.As(err, &exists) {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "resources_servers", "x")); len(entries) != 0 {
		t.Errorf("wrote into an existing directory: %v", entries)
	}
}

func FuzzRequireFixture(f *testing.F) {
	f.Add("from a import (\n VERIFIER_FIXTURE,\n)\n")
	f.Add("VERIFIER_FIXTURE = VerifierFixture(\n")
	f.Add("from x import (# VERIFIER_FIXTURE\n")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, src string) {
		p := filepath.Join(dir, "app.py")
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		err := requireFixture(p, "v", nil)
		if err == nil && !strings.Contains(src, "VERIFIER_FIXTURE") {
			t.Fatalf("accepted %q, which has no VERIFIER_FIXTURE", src)
		}
	})
}

// The Go server's sources are gofmt-clean Go, its go.mod names the module
// copy, and no template text is left in any file of any scaffold.
func TestGoTemplates(t *testing.T) {
	m := &gosource.Module{Dir: "/cache/gym/gosrc-abc", GoVersion: "1.26.8", Requires: []gosource.Require{{Path: "go.yaml.in/yaml/v3", Version: "v3.0.6"}}, Sum: "go.yaml.in/yaml/v3 v3.0.6 h1:x=\n"}
	files := goResourcesServerFiles("resources_servers/my_env", "my_env", m, "cfg\n")
	for _, name := range []string{"main.go", "main_test.go"} {
		src := files["resources_servers/my_env/"+name]
		formatted, err := format.Source([]byte(src))
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, src)
		}
		if string(formatted) != src {
			t.Errorf("%s is not gofmt-clean", name)
		}
	}
	if !strings.Contains(files["resources_servers/my_env/main.go"], `ClassName: "MyEnvResourcesServer"`) {
		t.Error("main.go does not name the class")
	}
	if !strings.Contains(files["resources_servers/my_env/go.mod"], "module gym.local/resources_servers/my_env\n") ||
		!strings.Contains(files["resources_servers/my_env/go.mod"], "replace github.com/nemo-gym-go/gym => /cache/gym/gosrc-abc\n") {
		t.Errorf("go.mod:\n%s", files["resources_servers/my_env/go.mod"])
	}
	if !strings.Contains(files["resources_servers/my_env/run"], "go build -o .gym-build/my_env .\nexec ./.gym-build/my_env\n") {
		t.Errorf("run:\n%s", files["resources_servers/my_env/run"])
	}
	root := t.TempDir()
	for i, kind := range []Kind{Environment, Benchmark} {
		for _, p := range Profiles {
			sub := filepath.Join(root, string(kind), string(p))
			os.MkdirAll(sub, 0o755)
			if _, err := Workload(WorkloadOptions{Root: sub, Kind: kind, Name: "n" + strconv.Itoa(i), Profile: p, Lang: LangGo, Go: m}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := ResourcesServer(ResourcesServerOptions{Root: root, Dir: "resources_servers/py"}); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		if strings.Contains(string(data), "{{.") || strings.Contains(string(data), "{{\"") || strings.Contains(string(data), "<no value>") {
			t.Errorf("%s has template text left:\n%s", p, data)
		}
		return nil
	})
}
