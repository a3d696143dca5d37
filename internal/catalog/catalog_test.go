package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/resolve"
)

func TestBenchmarkName(t *testing.T) {
	tests := []struct{ rel, want string }{
		{"aime24/config.yaml", "aime24"},
		{"graphwalks/config_n3_1m.yaml", "graphwalks/config_n3_1m"},
		{"tau2/configs/tau2.yaml", "tau2/configs/tau2"},
		{"livecodebench/v5_2408_2502/config.yaml", "livecodebench/v5_2408_2502/config"},
		{"top.yaml", "top"},
	}
	for _, tt := range tests {
		if got := BenchmarkName(tt.rel); got != tt.want {
			t.Errorf("BenchmarkName(%q) = %q, want %q", tt.rel, got, tt.want)
		}
	}
}

func TestFuzzyMatches(t *testing.T) {
	tests := []struct {
		query  string
		fields []string
		want   bool
	}{
		{"", nil, true},
		{"GSM", []string{"gsm8k"}, true},
		{"knowlege", []string{"knowledge"}, true},
		{"judge", []string{"math_with_judge"}, true},
		{"jduge", []string{"math_with_judge"}, true},
		{"physics", []string{"math_with_judge", "", "Math dataset"}, false},
	}
	for _, tt := range tests {
		if got := FuzzyMatches(tt.query, tt.fields...); got != tt.want {
			t.Errorf("FuzzyMatches(%q, %q) = %v, want %v", tt.query, tt.fields, got, tt.want)
		}
	}
}

func TestDiscoverShadowing(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const bench = "a:\n  responses_api_agents:\n    s:\n      datasets: [{name: d, type: benchmark}]\n"
	write("user/benchmarks/b/config.yaml", bench)
	write("install/benchmarks/b/config.yaml", bench)
	write("install/environments/mcqa/config.yaml", "x: 1\n")
	write("install/resources_servers/mcqa/configs/mcqa.yaml",
		"r:\n  resources_servers:\n    mcqa: {domain: knowledge}\na:\n  responses_api_agents:\n    s:\n      datasets: [{name: d}]\n")
	roots := resolve.NewRoots(filepath.Join(dir, "user"), dir, filepath.Join(dir, "install"))
	cat, err := Discover(roots)
	if err != nil {
		t.Fatal(err)
	}
	got := cat.Entries
	if len(got) != 2 {
		t.Fatalf("Discover: %d entries, want 2: %+v", len(got), got)
	}
	if got[0].Name != "b" || got[0].Kind != KindBenchmark || got[0].Config != filepath.Join(dir, "user/benchmarks/b/config.yaml") {
		t.Errorf("entry 0 = %+v", got[0])
	}
	if len(got[0].Shadowed) != 1 || got[0].Shadowed[0] != filepath.Join(dir, "install/benchmarks/b/config.yaml") {
		t.Errorf("shadowed = %v", got[0].Shadowed)
	}
	// environments/mcqa hides the resource-tree workload of the same kind.
	if got[1].Name != "mcqa" || got[1].Kind != KindEnvironment || len(got[1].Shadowed) != 1 {
		t.Errorf("entry 1 = %+v", got[1])
	}
}

// writeTree writes files (path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// manifestYAML is a valid manifest for name and kind.
func manifestYAML(name, kind string) string {
	return "name: " + name + "\nversion: 0.1.0\nkind: " + kind +
		"\nintegration_profile: custom-gym-verifier\ndomain: other\ndescription: " + name +
		" manifest entry\nmodality: text\nlicensing: Apache-2.0\n"
}

const benchConfig = "agent:\n  responses_api_agents:\n    simple_agent:\n      datasets:\n      - {name: d, type: benchmark}\n"

// summary is "kind name status" per entry, in catalog order.
func summary(entries []Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Kind + " " + e.Name + " " + e.Status
	}
	return out
}

func TestDiscoverManifests(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"environments/manifest_env/manifest.yaml": manifestYAML("manifest_env", "environment"),
		"environments/manifest_env/config.yaml":   "{}\n",
		"environments/legacy_env/config.yaml":     "e:\n  resources_servers:\n    e: {domain: agent, description: Legacy}\n",
		"environments/suite/alpha/manifest.yaml":  manifestYAML("suite/alpha", "environment"),
		"environments/suite/alpha/config.yaml":    "{}\n",
		// A manifest that does not load is left out; its config stays a
		// legacy entry.
		"environments/broken/manifest.yaml": "name: broken\nversion: [\n",
		"environments/broken/config.yaml":   "{}\n",
		// A manifest covers only its own config.yaml: other flavours of
		// the benchmark stay legacy entries.
		"benchmarks/suite/manifest.yaml":          manifestYAML("suite", "benchmark"),
		"benchmarks/suite/config.yaml":            benchConfig,
		"benchmarks/suite/strict.yaml":            benchConfig,
		"benchmarks/deep/nested/manifest.yaml":    manifestYAML("deep/nested", "benchmark"),
		"benchmarks/deep/nested/config.yaml":      benchConfig,
		"benchmarks/plain/config.yaml":            benchConfig,
		"benchmarks/.hidden/x/manifest.yaml":      "not: [valid\n",
		"resources_servers/rs/configs/rs.yaml":    "r:\n  resources_servers:\n    rs: {}\na:\n  responses_api_agents:\n    s:\n      datasets: [{name: d}]\n",
		"resources_servers/rs/configs/judge.yaml": "j:\n  responses_api_models:\n    m: {}\n",
	})
	cat, err := Discover(resolve.NewRoots("", dir, ""))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"environment broken no-manifest",
		"benchmark deep/nested experimental",
		"environment legacy_env no-manifest",
		"environment manifest_env experimental",
		"benchmark plain no-manifest",
		"environment resources_servers/rs no-manifest",
		"benchmark suite experimental",
		"environment suite/alpha experimental",
		"benchmark suite/strict no-manifest",
	}
	if got := summary(cat.Entries); !slices.Equal(got, want) {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if cat.Manifests() != 4 {
		t.Errorf("Manifests() = %d, want 4", cat.Manifests())
	}
	var bad *ManifestError
	if len(cat.Ignored) != 1 || !errors.As(cat.Ignored[0], &bad) ||
		bad.Path != filepath.Join(dir, "environments/broken/manifest.yaml") || !strings.Contains(bad.Error(), "at line 3") {
		t.Errorf("Ignored = %v", cat.Ignored)
	}
	var env *Entry
	for i := range cat.Entries {
		if cat.Entries[i].Name == "manifest_env" {
			env = &cat.Entries[i]
		}
	}
	wantEnv := Entry{Name: "manifest_env", Kind: KindEnvironment, Status: StatusExperimental,
		Metadata: Metadata{Domain: "other", Description: "manifest_env manifest entry"},
		Config:   filepath.Join(dir, "environments/manifest_env/config.yaml"),
		Manifest: filepath.Join(dir, "environments/manifest_env/manifest.yaml"),
		Version:  "0.1.0", IntegrationProfile: "custom-gym-verifier", Modality: "text", Licensing: "Apache-2.0", Lifecycle: "active"}
	if env == nil || !reflect.DeepEqual(*env, wantEnv) {
		t.Errorf("manifest_env = %+v\nwant %+v", env, wantEnv)
	}
}

func TestDiscoverManifestShadowing(t *testing.T) {
	dir := t.TempDir()
	high, low := filepath.Join(dir, "high"), filepath.Join(dir, "low")
	writeTree(t, dir, map[string]string{
		// A legacy entry of an earlier root beats a later root's manifest,
		// which is then not even loaded.
		"high/environments/shared/config.yaml":  "{}\n",
		"low/environments/shared/manifest.yaml": manifestYAML("declared-elsewhere", "benchmark"),
		"low/environments/shared/config.yaml":   "{}\n",
		// A manifest of an earlier root beats a later root's legacy config.
		"high/benchmarks/gsm8k/manifest.yaml": manifestYAML("gsm8k", "benchmark"),
		"high/benchmarks/gsm8k/config.yaml":   benchConfig,
		"low/benchmarks/gsm8k/config.yaml":    benchConfig,
		// A shadowed nested manifest no longer covers its config.yaml,
		// which becomes a legacy entry of its own name, as in NeMo Gym.
		"high/benchmarks/a/b/manifest.yaml": manifestYAML("a/b", "benchmark"),
		"high/benchmarks/a/b/config.yaml":   benchConfig,
		"low/benchmarks/a/b/manifest.yaml":  manifestYAML("a/b", "benchmark"),
		"low/benchmarks/a/b/config.yaml":    benchConfig,
	})
	cat, err := Discover(resolve.NewRoots(high, low, ""))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"benchmark a/b experimental",
		"benchmark a/b/config no-manifest",
		"benchmark gsm8k experimental",
		"environment shared no-manifest",
	}
	if got := summary(cat.Entries); !slices.Equal(got, want) {
		t.Fatalf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	shadowed := map[string][]string{}
	for _, e := range cat.Entries {
		shadowed[e.Name] = e.Shadowed
	}
	wantShadowed := map[string][]string{
		"a/b":        {filepath.Join(low, "benchmarks/a/b/manifest.yaml")},
		"a/b/config": nil,
		"gsm8k":      {filepath.Join(low, "benchmarks/gsm8k/config.yaml")},
		// Reported once, for the manifest, not again for its config.yaml.
		"shared": {filepath.Join(low, "environments/shared/manifest.yaml")},
	}
	if !reflect.DeepEqual(shadowed, wantShadowed) {
		t.Errorf("shadowed = %v\nwant %v", shadowed, wantShadowed)
	}
	if cat.Entries[0].Config != filepath.Join(high, "benchmarks/a/b/config.yaml") {
		t.Errorf("a/b config = %s", cat.Entries[0].Config)
	}
}

func TestDiscoverRegistryErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{
			name:  "manifest at the tree root",
			files: map[string]string{"environments/manifest.yaml": manifestYAML("x", "environment")},
			want:  "Manifest '{dir}/environments/manifest.yaml' must be inside a named catalog directory.",
		},
		{
			name: "kind contradicts the tree",
			files: map[string]string{
				"benchmarks/wrong-kind/manifest.yaml": manifestYAML("wrong-kind", "environment"),
				"benchmarks/wrong-kind/config.yaml":   benchConfig,
			},
			want: "Manifest '{dir}/benchmarks/wrong-kind/manifest.yaml' declares kind 'environment', but its catalog path requires 'benchmark'.\n  (at {dir}/benchmarks/wrong-kind/manifest.yaml:3)",
		},
		{
			name: "name contradicts the path",
			files: map[string]string{
				"environments/suite/path-name/manifest.yaml": manifestYAML("declared-name", "environment"),
				"environments/suite/path-name/config.yaml":   "{}\n",
			},
			want: "Manifest '{dir}/environments/suite/path-name/manifest.yaml' declares name 'declared-name', but its catalog path requires 'suite/path-name'.\n  (at {dir}/environments/suite/path-name/manifest.yaml:1)",
		},
		{
			name:  "no sibling config.yaml",
			files: map[string]string{"environments/lonely/manifest.yaml": manifestYAML("lonely", "environment")},
			want:  "Manifest '{dir}/environments/lonely/manifest.yaml' requires a sibling config.yaml (resolved to '{dir}/environments/lonely/config.yaml').",
		},
		{
			name:  "named config_path missing",
			files: map[string]string{"benchmarks/b/v2/manifest.yaml": manifestYAML("b/v2", "benchmark") + "config_path: ../v2.yaml\n"},
			want:  "Manifest '{dir}/benchmarks/b/v2/manifest.yaml' requires ../v2.yaml (resolved to '{dir}/benchmarks/b/v2.yaml').",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tt.files)
			cat, err := Discover(resolve.NewRoots("", dir, ""))
			var re *RegistryError
			if !errors.As(err, &re) {
				t.Fatalf("Discover = %v, %v; want a *RegistryError", cat, err)
			}
			if want := strings.ReplaceAll(tt.want, "{dir}", dir); err.Error() != want {
				t.Errorf("error\n%s\nwant\n%s", err, want)
			}
		})
	}
}

// NeMo Gym 0.7.0's flavor manifests point config_path at a config beside
// their directory; that config is then no second, legacy entry. A
// config_path that is absolute or leaves the tree makes the manifest
// invalid, so it is left out.
func TestDiscoverManifestConfigPath(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"benchmarks/aalcr/config.yaml":               benchConfig,
		"benchmarks/aalcr/config_v1_1.yaml":          benchConfig,
		"benchmarks/aalcr/config_v1_1/manifest.yaml": manifestYAML("aalcr/config_v1_1", "benchmark") + "config_path: ../config_v1_1.yaml\n",
		"benchmarks/absolute/manifest.yaml":          manifestYAML("absolute", "benchmark") + "config_path: /etc/passwd\n",
		"benchmarks/absolute/config.yaml":            benchConfig,
		"benchmarks/escaping/manifest.yaml":          manifestYAML("escaping", "benchmark") + "config_path: ../../outside.yaml\n",
		"outside.yaml":                               benchConfig,
	})
	cat, err := Discover(resolve.NewRoots("", dir, ""))
	if err != nil {
		t.Fatal(err)
	}
	got := summary(cat.Entries)
	want := []string{"benchmark aalcr no-manifest", "benchmark aalcr/config_v1_1 experimental", "benchmark absolute no-manifest"}
	if !slices.Equal(got, want) {
		t.Fatalf("entries %q, want %q", got, want)
	}
	if c := cat.Entries[1].Config; c != filepath.Join(dir, "benchmarks/aalcr/config_v1_1.yaml") {
		t.Errorf("config = %s, want the manifest's config_path", c)
	}
	var msgs []string
	for _, e := range cat.Ignored {
		msgs = append(msgs, e.Error())
	}
	for _, want := range []string{
		"Manifest '" + dir + "/benchmarks/absolute/manifest.yaml' config_path must be relative.",
		"Manifest '" + dir + "/benchmarks/escaping/manifest.yaml' config_path escapes catalog tree '" + dir + "/benchmarks'.",
	} {
		if !slices.Contains(msgs, want) {
			t.Errorf("ignored %q, want %q among them", msgs, want)
		}
	}
}

func TestDiscoverWorkloadClaims(t *testing.T) {
	dir := t.TempDir()
	const workload = "r:\n  resources_servers:\n    x: {}\na:\n  responses_api_agents:\n    s:\n      datasets: [oops, {name: d}]\n"
	writeTree(t, dir, map[string]string{
		// Two workloads whose selectors end alike are both listed; the
		// canonical name hides a workload only from entries before it.
		"first/resources_servers/mcqa/configs/mcqa.yaml":    workload,
		"first/resources_servers/other/configs/mcqa.yaml":   workload,
		"second/environments/mcqa/config.yaml":              "{}\n",
		"second/resources_servers/empty/configs/empty.yaml": "r:\n  resources_servers:\n    x: {}\na:\n  responses_api_agents:\n    s:\n      datasets: [oops]\n",
	})
	cat, err := Discover(resolve.NewRoots(filepath.Join(dir, "first"), filepath.Join(dir, "second"), ""))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"environment mcqa no-manifest",
		"environment resources_servers/mcqa no-manifest",
		"environment resources_servers/other/mcqa no-manifest",
	}
	if got := summary(cat.Entries); !slices.Equal(got, want) {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSortPaths(t *testing.T) {
	got := []string{"b/a.yaml", "a.yaml", "a/config.yaml", "a-b/config.yaml", "A/x.yaml"}
	sortPaths(got)
	want := []string{"A/x.yaml", "a/config.yaml", "a-b/config.yaml", "a.yaml", "b/a.yaml"}
	if !slices.Equal(got, want) {
		t.Errorf("sortPaths = %v, want %v", got, want)
	}
}

func TestReadMetadata(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"shared/math.yaml": "math_rs:\n  resources_servers:\n    math:\n      domain: math\n      description: Math via config_paths\n      api_key: ${judge_api_key}\n",
		"inline.yaml":      "e:\n  resources_servers:\n    e:\n      domain: 7\n      description: ${not_resolved_in_the_raw_pass}\n",
		"paths.yaml":       "config_paths: [shared/math.yaml]\nagent:\n  responses_api_agents:\n    simple_agent:\n      datasets: [{name: d, type: benchmark}]\n",
		// Reached only through _inherit_from: no server mapping holds it.
		"inherit.yaml": "defaults:\n  scorer: {domain: games, description: '${defaults.text}', entrypoint: app.py}\n  text: Inherited text\n" +
			"bench:\n  resources_servers:\n    scorer:\n      _inherit_from: defaults.scorer\n",
		"missing.yaml": "bench:\n  resources_servers:\n    scorer:\n      _inherit_from: defaults.scorer\n      api_key: ???\ndefaults:\n  scorer: {domain: knowledge}\n",
		// Each undefined interpolation key gets a placeholder in turn.
		"unset.yaml": "judge_url: ${judge_base_url}/v1\njudge_key: ${judge_api_key}\n" +
			"bench:\n  resources_servers:\n    scorer:\n      _inherit_from: defaults.scorer\ndefaults:\n  scorer: {domain: e2e}\n",
		"broken.yaml": "config_paths: [does/not/exist.yaml]\ne:\n  resources_servers:\n    e: {description: Only raw}\n",
		"list.yaml":   "- a\n",
	})
	roots := resolve.NewRoots("", dir, "")
	tests := []struct {
		file string
		want Metadata
	}{
		{"inline.yaml", Metadata{Domain: "7", Description: "${not_resolved_in_the_raw_pass}"}},
		{"paths.yaml", Metadata{Domain: "math", Description: "Math via config_paths"}},
		{"inherit.yaml", Metadata{Domain: "games", Description: "Inherited text"}},
		{"missing.yaml", Metadata{Domain: "knowledge"}},
		{"unset.yaml", Metadata{Domain: "e2e"}},
		{"broken.yaml", Metadata{Description: "Only raw"}},
		{"list.yaml", Metadata{}},
		{"absent.yaml", Metadata{}},
	}
	for _, tt := range tests {
		if got := ReadMetadata(filepath.Join(dir, tt.file), roots); got != tt.want {
			t.Errorf("ReadMetadata(%s) = %+v, want %+v", tt.file, got, tt.want)
		}
	}
}
