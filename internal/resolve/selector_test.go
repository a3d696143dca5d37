package resolve

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

const benchYAML = `my_agent:
  responses_api_agents:
    simple_agent:
      datasets:
      - name: bench
        type: benchmark
`

// installTree lays out the built-in components the §5.5 examples name.
func installTree(t testing.TB, install string) {
	write(t, install, "benchmarks/gsm8k/config.yaml", benchYAML)
	write(t, install, "benchmarks/finance_sec_search/config.yaml", benchYAML)
	write(t, install, "benchmarks/finance_sec_search/config_web_search.yaml", benchYAML)
	write(t, install, "benchmarks/aalcr/config.yaml", benchYAML)
	write(t, install, "benchmarks/suite/example.yaml", benchYAML)
	write(t, install, "benchmarks/suite/example/config.yaml", benchYAML)
	write(t, install, "benchmarks/livecodebench/v6/config.yaml", benchYAML)
	write(t, install, "benchmarks/livecodebench/v5/config.yaml", benchYAML)
	write(t, install, "benchmarks/livecodebench/v5_extra/config.yaml", benchYAML)
	write(t, install, "environments/circle_count/config.yaml", "")
	write(t, install, "environments/games/chess/config.yaml", "")
	write(t, install, "environments/games/chess.yaml", "")
	write(t, install, "resources_servers/mcqa/configs/mcqa.yaml", "")
	write(t, install, "resources_servers/math_with_judge/configs/math_with_judge.yaml", "")
	write(t, install, "resources_servers/math_with_judge/configs/dapo17k.yaml", "")
	write(t, install, "resources_servers/format_verification/configs/freeform_formatting.yaml", "")
	write(t, install, "responses_api_models/vllm_model/configs/vllm_model.yaml", "")
	write(t, install, "responses_api_models/openai_model/configs/openai_model.yaml", "")
}

func TestSelectMappings(t *testing.T) {
	base := tempDir(t)
	cwd := mkdir(t, base, "work")
	install := mkdir(t, base, "install")
	installTree(t, install)
	r := NewRoots("", cwd, install)

	tests := []struct {
		kind  Selector
		value string
		want  string
	}{
		// The examples of spec §5.5.
		{Benchmark, "gsm8k", "benchmarks/gsm8k/config.yaml"},
		{Benchmark, "finance_sec_search/config_web_search", "benchmarks/finance_sec_search/config_web_search.yaml"},
		{ResourcesServer, "mcqa", "resources_servers/mcqa/configs/mcqa.yaml"},
		{ResourcesServer, "math_with_judge/dapo17k", "resources_servers/math_with_judge/configs/dapo17k.yaml"},
		{ResourcesServer, "format_verification/freeform_formatting", "resources_servers/format_verification/configs/freeform_formatting.yaml"},
		{ModelType, "vllm_model", "responses_api_models/vllm_model/configs/vllm_model.yaml"},
		{Environment, "circle_count", "environments/circle_count/config.yaml"},
		// The nested form beats a same-named flavor file.
		{Benchmark, "suite/example", "benchmarks/suite/example/config.yaml"},
		{Benchmark, "livecodebench/v5", "benchmarks/livecodebench/v5/config.yaml"},
		{Environment, "games/chess", "environments/games/chess/config.yaml"},
		// A trailing "/" means the default flavor.
		{Benchmark, "gsm8k/", "benchmarks/gsm8k/config.yaml"},
		{ResourcesServer, "mcqa/", "resources_servers/mcqa/configs/mcqa.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.kind.String()+" "+tt.value, func(t *testing.T) {
			got, warnings, err := r.Select(tt.kind, tt.value)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(install, tt.want); got != want {
				t.Errorf("Select = %q, want %q", got, want)
			}
			if len(warnings) > 0 {
				t.Errorf("unexpected warnings %q", warnings)
			}
		})
	}
}

func TestSelectResolvesSymlinks(t *testing.T) {
	base := tempDir(t)
	install := mkdir(t, base, "install")
	installTree(t, install)
	symlink(t, install, filepath.Join(base, "link"))
	got, _, err := NewRoots("", filepath.Join(base, "link"), "").Select(Benchmark, "gsm8k")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(install, "benchmarks/gsm8k/config.yaml"); got != want {
		t.Errorf("Select = %q, want the symlink-free %q", got, want)
	}
}

// T68.
func TestSelectMultipleMatches(t *testing.T) {
	base := tempDir(t)
	cwd := mkdir(t, base, "work")
	install := mkdir(t, base, "install")
	plugins := mkdir(t, base, "plugins")
	installTree(t, install)

	t.Run("cwd equal to the install root matches once", func(t *testing.T) {
		_, warnings, err := NewRoots("", install, install).Select(ResourcesServer, "mcqa")
		if err != nil || warnings != nil {
			t.Errorf("warnings %q, err %v; want none", warnings, err)
		}
	})

	t.Run("a symlinked copy is the same config", func(t *testing.T) {
		other := mkdir(t, base, "other")
		symlink(t, filepath.Join(install, "benchmarks"), filepath.Join(other, "benchmarks"))
		got, warnings, err := NewRoots("", other, install).Select(Benchmark, "gsm8k")
		if err != nil || warnings != nil {
			t.Errorf("warnings %q, err %v; want none", warnings, err)
		}
		if want := filepath.Join(install, "benchmarks/gsm8k/config.yaml"); got != want {
			t.Errorf("Select = %q, want %q", got, want)
		}
	})

	write(t, cwd, "resources_servers/mcqa/configs/mcqa.yaml", "")
	write(t, plugins, "resources_servers/mcqa/configs/mcqa.yaml", "")
	write(t, cwd, "benchmarks/suite/example/config.yaml", benchYAML)

	tests := []struct {
		name    string
		extra   string
		kind    Selector
		value   string
		want    string
		warning string
	}{
		{"the cwd copy wins over the install root's", "", ResourcesServer, "mcqa",
			filepath.Join(cwd, "resources_servers/mcqa/configs/mcqa.yaml"),
			fmt.Sprintf("`--resources-server mcqa` matches multiple configs; using `%s` from the highest-priority root and ignoring `%s`. Pass `--config <path>` to select a different one.",
				filepath.Join(cwd, "resources_servers/mcqa/configs/mcqa.yaml"),
				filepath.Join(install, "resources_servers/mcqa/configs/mcqa.yaml"))},
		{"an extra root wins over both", plugins, ResourcesServer, "mcqa",
			filepath.Join(plugins, "resources_servers/mcqa/configs/mcqa.yaml"),
			fmt.Sprintf("`--resources-server mcqa` matches multiple configs; using `%s` from the highest-priority root and ignoring `%s`, `%s`. Pass `--config <path>` to select a different one.",
				filepath.Join(plugins, "resources_servers/mcqa/configs/mcqa.yaml"),
				filepath.Join(cwd, "resources_servers/mcqa/configs/mcqa.yaml"),
				filepath.Join(install, "resources_servers/mcqa/configs/mcqa.yaml"))},
		{"the nested form warns too", "", Benchmark, "suite/example",
			filepath.Join(cwd, "benchmarks/suite/example/config.yaml"),
			fmt.Sprintf("`--benchmark suite/example` matches multiple configs; using `%s` from the highest-priority root and ignoring `%s`. Pass `--config <path>` to select a different one.",
				filepath.Join(cwd, "benchmarks/suite/example/config.yaml"),
				filepath.Join(install, "benchmarks/suite/example/config.yaml"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warnings, err := NewRoots(tt.extra, cwd, install).Select(tt.kind, tt.value)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Select = %q, want %q", got, tt.want)
			}
			if want := []string{tt.warning}; !reflect.DeepEqual(warnings, want) {
				t.Errorf("warnings =\n%q\nwant\n%q", warnings, want)
			}
		})
	}
}

// T65 and the <hint>/<dirs> rules of spec §5.5.
func TestSelectErrors(t *testing.T) {
	base := tempDir(t)
	cwd := mkdir(t, base, "work")
	install := mkdir(t, base, "install")
	plugins := mkdir(t, base, "plugins")
	installTree(t, install)
	write(t, plugins, "benchmarks/mybench/config.yaml", benchYAML)
	// Not a benchmark: no `type: benchmark` entry.
	write(t, install, "benchmarks/mybench2/config.yaml", "foo: bar\n")
	mkdir(t, cwd, "resources_servers/empty_server/configs")
	write(t, install, "resources_servers/odd/configs/.yaml", "")

	msg := func(flag, value, path, hint string, dirs ...string) string {
		s := fmt.Sprintf("`--%s %s` was specified which implies config `%s`, which does not exist.%s See available %s configs in ", flag, value, path, hint, flag)
		for i, d := range dirs {
			if i > 0 {
				s += ", "
			}
			s += "`" + d + "`"
		}
		return s + "."
	}
	tests := []struct {
		name  string
		extra string
		kind  Selector
		value string
		want  string
	}{
		{"T65 unknown benchmark", "", Benchmark, "does_not_exist",
			msg("benchmark", "does_not_exist", "benchmarks/does_not_exist/config.yaml", "", filepath.Join(install, "benchmarks"))},
		{"T65 unknown flavor", "", ResourcesServer, "mcqa/nope",
			msg("resources-server", "mcqa/nope", "resources_servers/mcqa/configs/nope.yaml", "", filepath.Join(install, "resources_servers/mcqa/configs"))},
		{"benchmark typo", "", Benchmark, "aalcrr",
			msg("benchmark", "aalcrr", "benchmarks/aalcrr/config.yaml", " Did you mean `aalcr`?", filepath.Join(install, "benchmarks"))},
		{"benchmark from an extra root, every benchmarks dir listed sorted", plugins, Benchmark, "mybnch",
			msg("benchmark", "mybnch", "benchmarks/mybnch/config.yaml", " Did you mean `mybench`?",
				filepath.Join(install, "benchmarks"), filepath.Join(plugins, "benchmarks"))},
		{"a grouping directory suggests its shortest config; only a top-level X/config becomes X", "", Benchmark, "livecodebench",
			msg("benchmark", "livecodebench", "benchmarks/livecodebench/config.yaml", " Did you mean `livecodebench/v5/config`?", filepath.Join(install, "benchmarks"))},
		{"a benchmark flavor typo", "", Benchmark, "finance_sec_search/config_web",
			msg("benchmark", "finance_sec_search/config_web", "benchmarks/finance_sec_search/config_web.yaml",
				" Did you mean `finance_sec_search/config_web_search`?", filepath.Join(install, "benchmarks"))},
		{"flavor typo", "", ResourcesServer, "math_with_judge/dapo17",
			msg("resources-server", "math_with_judge/dapo17", "resources_servers/math_with_judge/configs/dapo17.yaml",
				" Did you mean `dapo17k`?", filepath.Join(install, "resources_servers/math_with_judge/configs"))},
		{"pathlib's stem of .yaml is .yaml", "", ResourcesServer, "odd/yaml",
			msg("resources-server", "odd/yaml", "resources_servers/odd/configs/yaml.yaml", " Did you mean `.yaml`?",
				filepath.Join(install, "resources_servers/odd/configs"))},
		{"server typo: server names, parent dirs", "", ResourcesServer, "mcqq",
			msg("resources-server", "mcqq", "resources_servers/mcqq/configs/mcqq.yaml", " Did you mean `mcqa`?",
				filepath.Join(install, "resources_servers"), filepath.Join(cwd, "resources_servers"))},
		{"a configs dir without YAML falls back to server names", "", ResourcesServer, "empty_server/x",
			msg("resources-server", "empty_server/x", "resources_servers/empty_server/configs/x.yaml", " Did you mean `empty_server`?",
				filepath.Join(install, "resources_servers"), filepath.Join(cwd, "resources_servers"))},
		{"model type typo", "", ModelType, "vlm_model",
			msg("model-type", "vlm_model", "responses_api_models/vlm_model/configs/vlm_model.yaml", " Did you mean `vllm_model`?",
				filepath.Join(install, "responses_api_models"))},
		{"environment typo", "", Environment, "circle_cont",
			msg("environment", "circle_cont", "environments/circle_cont/config.yaml", " Did you mean `circle_count`?",
				filepath.Join(install, "environments"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := NewRoots(tt.extra, cwd, install).Select(tt.kind, tt.value)
			var se *SelectorError
			if !errors.As(err, &se) {
				t.Fatalf("Select = %q, %v; want a *SelectorError", got, err)
			}
			if err.Error() != tt.want {
				t.Errorf("Error() =\n%s\nwant\n%s", err.Error(), tt.want)
			}
		})
	}

	t.Run("no component directories anywhere", func(t *testing.T) {
		_, _, err := NewRoots("", cwd, "").Select(Benchmark, "x")
		if want := msg("benchmark", "x", "benchmarks/x/config.yaml", ""); err == nil || err.Error() != want {
			t.Errorf("err = %v, want %s", err, want)
		}
	})
}

func TestBenchmarkConfigNames(t *testing.T) {
	dir := tempDir(t)
	write(t, dir, "gsm8k/config.yaml", benchYAML)
	write(t, dir, "suite/a/config.yaml", benchYAML)
	write(t, dir, "suite/b.yaml", "x:\n  - type: 'benchmark'\n")
	write(t, dir, "tau2/configs/airline.yaml", "datasets:\n- {name: a}\n- type: \"benchmark\"   # the one\n")
	write(t, dir, "top.yaml", "type: benchmark\r\n")
	write(t, dir, "broken/config.yaml", "type: benchmark\nfoo: [1, 2\nbar: : :\n")
	write(t, dir, "notabench/config.yaml", "type: benchmarks\nname: benchmark\ntype:benchmark\n")
	write(t, dir, "notabench/readme.md", "type: benchmark\n")
	write(t, dir, ".hidden/config.yaml", benchYAML)
	write(t, dir, "gsm8k/.wip.yaml", benchYAML)
	outside := tempDir(t)
	write(t, outside, "config.yaml", benchYAML)
	symlink(t, outside, filepath.Join(dir, "linked"))
	symlink(t, dir, filepath.Join(dir, "loop"))
	symlink(t, filepath.Join(dir, "absent.yaml"), filepath.Join(dir, "dangling.yaml"))
	write(t, dir, "unreadable/config.yaml", benchYAML)
	if os.Geteuid() != 0 {
		// Root reads anything; elsewhere an unreadable file must still count.
		os.Chmod(filepath.Join(dir, "unreadable/config.yaml"), 0)
	}

	got := benchmarkConfigNames(dir)
	slices.Sort(got)
	want := []string{"broken", "gsm8k", "linked", "suite/a/config", "suite/b", "tau2/configs/airline", "top", "unreadable"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("names = %q, want %q", got, want)
	}
}

func TestSortedDirs(t *testing.T) {
	// Sorted as NeMo Gym sorts the backticked strings: "`" sorts after "-".
	got := sortedDirs([]string{"/r/b", "/r/a", "/r/a-c", "/r/b"})
	if want := []string{"/r/a-c", "/r/a", "/r/b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("sortedDirs = %q, want %q", got, want)
	}
}

func TestSelectorAccessors(t *testing.T) {
	tests := []struct {
		s                              Selector
		flag, parent, sub, flavor, str string
	}{
		{Benchmark, "benchmark", "benchmarks", "", "config", "--benchmark"},
		{Environment, "environment", "environments", "", "config", "--environment"},
		{ResourcesServer, "resources-server", "resources_servers", "configs", "", "--resources-server"},
		{ModelType, "model-type", "responses_api_models", "configs", "", "--model-type"},
	}
	for _, tt := range tests {
		got := []string{tt.s.Flag(), tt.s.ParentDir(), tt.s.SubDir(), tt.s.DefaultFlavor(), tt.s.String()}
		if want := []string{tt.flag, tt.parent, tt.sub, tt.flavor, tt.str}; !reflect.DeepEqual(got, want) {
			t.Errorf("accessors = %q, want %q", got, want)
		}
	}
}

// BenchmarkSelect measures selection over a realistic tree: three roots, 300
// component directories and 110 benchmarks.
func BenchmarkSelect(b *testing.B) {
	base := tempDir(b)
	plugins := mkdir(b, base, "plugins")
	cwd := mkdir(b, base, "work")
	install := mkdir(b, base, "install")
	for i := range 300 {
		name := fmt.Sprintf("server_%03d", i)
		write(b, install, "resources_servers/"+name+"/configs/"+name+".yaml", "")
		write(b, install, "resources_servers/"+name+"/configs/"+name+"_alt.yaml", "")
	}
	for i := range 110 {
		write(b, install, fmt.Sprintf("benchmarks/bench_%03d/config.yaml", i), benchYAML)
	}
	for i := range 10 {
		write(b, plugins, fmt.Sprintf("benchmarks/plugin_bench_%d/config.yaml", i), benchYAML)
	}
	r := NewRoots(plugins, cwd, install)

	for _, bc := range []struct {
		name  string
		kind  Selector
		value string
		fails bool
	}{
		{"resources-server hit", ResourcesServer, "server_150", false},
		{"benchmark hit", Benchmark, "bench_042", false},
		{"benchmark nested miss then flavor hit", Benchmark, "bench_042/config", false},
		{"benchmark miss with hint", Benchmark, "bench_42", true},
		{"flavor miss with hint", ResourcesServer, "server_150/server_150_alr", true},
		{"server miss with hint", ResourcesServer, "server_15", true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				_, _, err := r.Select(bc.kind, bc.value)
				if (err != nil) != bc.fails {
					b.Fatalf("Select(%q) err = %v", bc.value, err)
				}
			}
		})
	}
}
