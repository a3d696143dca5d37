package nemogym

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shippedForCollate are NeMo Gym servers whose example data both collate:
// plain chat rows, tool definitions, multi-turn inputs, underscore keys,
// legacy agent_ref, datasets on the agent or the resources server, and a
// taskset routed to an Environment Server.
var shippedForCollate = []string{
	"example_single_tool_call", "mcqa", "conversational_tool_use_simulation",
	"example_multi_step", "calendar", "code_gen", "nemo_user_sim",
}

// TestDatasetCommandsMatchNeMoGym runs NeMo Gym 0.7.0's own `gym dataset
// collate` and `gym dataset render`, then gym's, in the same directory of
// the root on the same inputs: every file either writes must be the
// other's, byte for byte.
func TestDatasetCommandsMatchNeMoGym(t *testing.T) {
	h := newHarness(t)
	toy := filepath.Join("..", "..", "internal", "dataset", "testdata", "toy")
	sp := filepath.Join("/", sitePackages)
	cases := []struct {
		name     string
		fixture  string // copied into the directory first; "" for none
		commands []string
	}{{
		name:    "toy",
		fixture: toy,
		commands: []string{
			"dataset collate --config resources_servers/toy/configs/toy.yaml --mode example_validation --output-dir out_ex",
			"dataset collate --config resources_servers/toy/configs/toy.yaml --mode train_preparation --output-dir out_tr",
			"dataset render -i render.jsonl --prompt-config resources_servers/toy/prompts/toy.yaml -o rendered/render.jsonl",
		},
	}}
	for _, rs := range shippedForCollate {
		cases = append(cases, struct {
			name     string
			fixture  string
			commands []string
		}{name: rs, commands: []string{"dataset collate --resources-server " + rs + " --mode example_validation --output-dir out"}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(h.work, "collate-"+tc.name)
			in := filepath.Join(h.in, "collate-"+tc.name)
			reset := func() {
				os.RemoveAll(dir)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if tc.fixture != "" {
					if out, err := exec.Command("cp", "-r", tc.fixture+"/.", dir).CombinedOutput(); err != nil {
						t.Fatalf("%v: %s", err, out)
					}
				}
			}
			run := func(who, bin, extra string) map[string][]byte {
				reset()
				for _, c := range tc.commands {
					start := time.Now()
					out, err := h.run(context.Background(), "/bin/bash -c "+shellQuote("cd "+in+" && "+bin+" "+c+extra))
					if err != nil {
						t.Fatalf("%s's `gym %s`: %v\n%s", who, c, err, out)
					}
					t.Logf("%s: gym %s (%s)", who, c, time.Since(start).Round(10*time.Millisecond))
				}
				return snapshot(t, dir)
			}
			ng := run("NeMo Gym", "gym", "")
			// gym finds NeMo Gym's shipped servers as a search root; its
			// own built-ins must not shadow them.
			gym := run("gym", h.gym, " --search-dir "+sp)
			compared := 0
			for name, want := range ng {
				got, ok := gym[name]
				switch {
				case !ok:
					t.Errorf("gym wrote no %s", name)
				case !bytes.Equal(got, want):
					t.Errorf("%s differs:\n gym: %s\n  ng: %s", name, got, want)
				default:
					compared++
				}
			}
			for name := range gym {
				if _, ok := ng[name]; !ok {
					t.Errorf("gym wrote %s, which NeMo Gym does not", name)
				}
			}
			if compared < 4 {
				t.Fatalf("only %d files compared", compared)
			}
			t.Logf("%s: %d files identical", tc.name, compared)
		})
	}
}

// snapshot reads every file under dir except Hydra's outputs/; the
// fixture's inputs are read too, so a command that changes one shows.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if rel == "outputs" || rel == "home" {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[rel] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
