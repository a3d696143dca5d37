package catalog

import (
	"os"
	"path/filepath"
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
	got := Discover(roots)
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
