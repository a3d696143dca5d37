package nemogym

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestInitMatchesNeMoGymInit scaffolds each kind and profile with NeMo
// Gym's `gym env init` and with gym's, and compares the trees byte for
// byte. The one difference is gym's on purpose: NeMo Gym 0.7.0 writes a
// resources server's example row to <server>/example.jsonl, where its own
// config does not look; gym writes it to data/example.jsonl, where it does.
// NeMo Gym's manifest validator then reads gym's environments and
// benchmarks.
func TestInitMatchesNeMoGymInit(t *testing.T) {
	h := newHarness(t)
	cases := [][]string{
		{"--resources-server", "foo"},
		{"--environment", "env_a"},
		{"--benchmark", "bench_b", "--profile", "external-rollout-driver"},
		{"--environment", "loop_c", "--profile", "custom-gym-agent-loop"},
		{"--benchmark", "ext_d", "--profile", "external-agent-loop"},
		{"--environment", "reuse-e", "--reuse-verifier", "example_single_tool_call", "--reward-range", "-1", "2.5", "--lower-is-better"},
	}
	for i, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			ng := filepath.Join("ng", strconv.Itoa(i))
			mine := filepath.Join("ours", strconv.Itoa(i))
			for _, d := range []string{ng, mine} {
				if err := os.MkdirAll(filepath.Join(h.work, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			reuse := strings.Contains(strings.Join(args, " "), "--reuse-verifier")
			if reuse {
				// Both reuse the server NeMo Gym ships (its config has the
				// environment server gym's built-in config lacks).
				for _, d := range []string{ng, mine} {
					src := filepath.Join(h.root, sitePackages, "resources_servers/example_single_tool_call")
					dst := filepath.Join(h.work, d, "resources_servers")
					os.MkdirAll(dst, 0o755)
					if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
						t.Fatalf("%v\n%s", err, out)
					}
				}
			}
			out, err := h.run(context.Background(), "/bin/sh -c 'cd "+filepath.Join(h.in, ng)+" && ng env init "+strings.Join(args, " ")+"'")
			if err != nil {
				t.Fatalf("NeMo Gym's env init: %v\n%s", err, out)
			}
			gym := exec.Command(filepath.Join(buildDir, "gym"), append([]string{"env", "init"}, args...)...)
			gym.Dir = filepath.Join(h.work, mine)
			gym.Env = []string{"PATH=" + buildDir, "HOME=" + filepath.Join(h.work, "home"), "NO_COLOR=1"}
			if out, err := gym.CombinedOutput(); err != nil {
				t.Fatalf("gym env init: %v\n%s", err, out)
			}
			want := tree(t, filepath.Join(h.work, ng))
			got := tree(t, filepath.Join(h.work, mine))
			for p, content := range want {
				moved := p
				if dir, ok := strings.CutSuffix(p, "/example.jsonl"); ok && strings.Count(dir, "/") == 1 && strings.HasPrefix(dir, "resources_servers/") {
					moved = dir + "/data/example.jsonl"
				}
				if got[moved] != content {
					t.Errorf("%s differs from NeMo Gym's %s:\ngym:\n%s\nNeMo Gym:\n%s", moved, p, got[moved], content)
				}
				delete(got, moved)
			}
			for p := range got {
				t.Errorf("gym wrote %s, which NeMo Gym does not", p)
			}
			if args[0] == "--resources-server" {
				return
			}
			kind := map[string]string{"--environment": "environments", "--benchmark": "benchmarks"}[args[0]]
			manifest := kind + "/" + args[1] + "/manifest.yaml"
			out, err = h.run(context.Background(), "/bin/sh -c 'cd "+filepath.Join(h.in, mine)+" && ng env validate --manifest "+manifest+"'")
			if err != nil || !strings.Contains(out, "Manifest: "+args[1]+" 0.1.0") {
				t.Errorf("NeMo Gym's env validate of gym's %s: %v\n%s", manifest, err, out)
			}
		})
	}
}

// tree reads every file under dir but Hydra's outputs/ and the copied
// verifier, keyed by slash path.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && (rel == "outputs" || rel == "resources_servers/example_single_tool_call") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files[rel] = string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("%s: %s", dir, strings.Join(names, ", "))
	return files
}
