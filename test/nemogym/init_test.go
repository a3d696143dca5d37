package nemogym

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
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

// TestNeMoGymValidatesGoWorkload: an environment whose resources server
// gym writes in Go (entrypoint: run) is a manifest NeMo Gym's validator
// accepts, its components and dataset resolved.
func TestNeMoGymValidatesGoWorkload(t *testing.T) {
	h := newHarness(t)
	gym := exec.Command(filepath.Join(buildDir, "gym"), "env", "init", "--environment", "goe", "--lang", "go")
	gym.Dir = h.work
	gym.Env = []string{"PATH=" + buildDir, "HOME=" + filepath.Join(h.work, "home"), "NO_COLOR=1"}
	if out, err := gym.CombinedOutput(); err != nil {
		t.Fatalf("gym env init: %v\n%s", err, out)
	}
	out, err := h.run(context.Background(), "ng env validate --manifest environments/goe/manifest.yaml")
	for _, want := range []string{"Manifest: goe 0.1.0 kind=environment profile=custom-gym-verifier", "resources_server: goe_resources_server -> goe", "goe: 1 rows (example)"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("NeMo Gym's env validate: %v, lacks %q:\n%s", err, want, out)
		}
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

// recordedAnswer is a rollout the replay model answers the scaffold's
// example row from: the right answer.
const recordedAnswer = `{"responses_create_params": {"input": [{"role": "user", "content": "What is 6 x 7? Reply with only the answer."}]}, "response": {"id": "resp_1", "created_at": 0, "model": "recorded", "object": "response", "output": [{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "42", "annotations": []}]}], "parallel_tool_calls": true, "tool_choice": "auto", "tools": []}, "reward": 1.0}
`

// TestInitPythonScaffoldUnderGym: the Python resources server gym env init
// writes passes its own tests (NeMo Gym's verifier fixture, under pytest in
// the venv gym env test builds) and runs under gym env start, where its
// verifier scores a rollout of its example row.
func TestInitPythonScaffoldUnderGym(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if out, err := h.run(ctx, h.gym+" env init --resources-server foo"); err != nil {
		t.Fatalf("gym env init: %v\n%s", err, out)
	}
	h.write("recorded.jsonl", recordedAnswer, 0o644)
	out, err := h.run(ctx, h.gym+" env test --resources-server foo")
	if err != nil || !strings.Contains(out, "1 passed") {
		t.Fatalf("gym env test of the scaffold: %v\n%s", err, out)
	}
	head := freePort(t)
	start := h.start(ctx, h.gym+" env start --config resources_servers/foo/configs/foo.yaml --model-type replay_model"+
		" ++policy_model.responses_api_models.replay_model.rollouts_jsonl_fpath=recorded.jsonl"+
		" ++uv_cache_dir=/var/cache/uv ++head_server.port="+strconv.Itoa(head))
	start.waitFor(t, "All 4 / 4 servers ready", startTimeout)
	if !strings.Contains(start.output(), "resources_servers/foo (python)") {
		t.Errorf("the scaffold's app.py did not run with Python:\n%s", start.output())
	}
	row, err := os.ReadFile(filepath.Join(h.work, "resources_servers/foo/data/example.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	instances := serverInstances(t, head)
	if reward := postRun(t, urlOf(t, instances, "foo_simple_agent"), strings.TrimSpace(string(row))); reward != 1 {
		t.Errorf("reward = %v, want 1: the scaffold's verifier rewards the expected answer", reward)
	}
	// Only the exit code: the root is shared, and its other Ray processes
	// are not this test's to judge (or end).
	if code := start.stop(t, syscall.SIGINT); code != 0 {
		t.Errorf("env start exited %d after SIGINT:\n%s", code, start.output())
	}
}
