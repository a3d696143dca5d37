package submit

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden scripts in testdata/")

// The scripts, byte for byte: on the node alone, with containers and a
// vLLM service, and as an array of shards with the job that merges them.
func TestRenderGolden(t *testing.T) {
	tests := []struct {
		name, yaml string
		shards     int
	}{
		{"node", minimal, 1},
		{"containers_vllm", withPolicy, 1},
		{"shards", minimal, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(t, tt.yaml)
			if err != nil {
				t.Fatal(err)
			}
			jobs := c.Render(RenderOptions{RunDir: "/runs/gym-job-20260101T000000Z-abcdef", Gym: "/runs/gym-job-20260101T000000Z-abcdef/bin/gym", Shards: tt.shards})
			got := jobs[0].Script
			if jobs[0].Aggregate != "" {
				got += "# ---- aggregate.sh ----\n" + jobs[0].Aggregate
			}
			golden := filepath.Join("testdata", tt.name+".sh")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s (go test -update to accept):\n%s", tt.name, golden, got)
			}
		})
	}
}

// Override values keep their meaning through Hydra's grammar and the shell.
func TestFlattenQuotes(t *testing.T) {
	c, err := load(t, strings.Replace(minimal, "split: benchmark}", "split: benchmark, prompt: \"it's a: test\", path: 'C:\\dir\\', re: 'a\\b', n: 3, t: 0.7, big: 123456789012345678901234567890, flag: 'true', nested: {k: [a, 'b c']}}", 1))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(flatten("", c.Driver.Benchmarks[0].Run), " ")
	want := `+config_paths=[benchmarks/mcqa_example/config.yaml] ++split=benchmark ++prompt='it\'s a: test' ++path='C:\dir\\' ++re='a\b' ++n=3 ++t=0.7 ++big=123456789012345678901234567890 ++flag='true' ++nested.k=[a,'b c']`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// A literal env value stays literal in the script, whatever it holds,
// an escaped interpolation included.
func TestLiteralEnvIsQuoted(t *testing.T) {
	c, err := load(t, strings.Replace(withPolicy, `CUDA_CACHE: "lit:/tmp/cuda"`, `CUDA_CACHE: 'lit:\${HOME}"; echo INJECTED; "'`, 1))
	if err != nil {
		t.Fatal(err)
	}
	script := c.Render(RenderOptions{RunDir: "/runs/r", Gym: "/runs/r/bin/gym", Shards: 1})[0].Script
	if want := `CUDA_CACHE='${HOME}"; echo INJECTED; "'`; !strings.Contains(script, want) {
		t.Errorf("script does not hold %s:\n%s", want, script)
	}
}

// A dry run for a login node reached over SSH names the host with the run
// directory and prints the scripts that would be staged there; a host:
// value is named, never written.
func TestDryRunOverSSHGolden(t *testing.T) {
	yaml := strings.NewReplacer("account: acct}", "account: acct, hostname: login.example.com}",
		"output_path: results", "output_path: /lustre/evals",
		"policy_model_type: replay_model", "policy_model_type: replay_model\n  env: {HF_TOKEN: \"host:HF_TOKEN\"}").Replace(minimal)
	c, err := load(t, yaml)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if _, err := Submit(context.Background(), c, Options{Shards: 2, DryRun: true, Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Out: &out}); err != nil {
		t.Fatal(err)
	}
	got := regexp.MustCompile(`gym-job-20260101T000000Z-[0-9a-f]{6}`).ReplaceAllString(out.String(), "gym-job-20260101T000000Z-abcdef")
	if strings.Contains(got, "hf-secret") {
		t.Fatalf("the dry run holds the host: value:\n%s", got)
	}
	golden := filepath.Join("testdata", "ssh_dry_run.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("differs from %s (go test -update to accept):\n%s", golden, got)
	}
}
