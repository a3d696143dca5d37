package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/launcher"
	"github.com/nemo-gym-go/gym/internal/workload"
)

// testOptions are the inputs of `gym env test`.
type testOptions struct {
	IO              *iostreams.IOStreams
	ws              *workspace
	name            string
	kind            string
	updateExpected  bool
	json            bool
	all             bool
	resourcesServer string
	searchDirs      []string
	passthrough     []string
	// Decided from the above before running.
	mode      testMode
	component string
}

func newCmdEnvTest(f *Factory, runF func(context.Context, *testOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEnvTest
	}
	opts := &testOptions{IO: f.IOStreams, ws: f.Workspace}
	cmd := &cobra.Command{
		Use:   "test (NAME [--kind KIND] [--update-expected] [--json] | --resources-server NAME | --all)",
		Short: "Run a workload's verifier fixture, or a component's own tests",
		Long: `With a workload NAME (an environment or benchmark with a manifest.yaml),
validate it as gym env validate does, then run its resources server's verifier
fixture, as NeMo Gym's env test does: each case's request is verified on a
fresh server and its reward checked against the manifest's reward range and
the case's expected reward; a malformed case must fail with its expected
error. A resources server built into gym runs in this process (its cases:
resources_servers/<name>/tests/verifier_cases.jsonl in a search root); a
Python one runs NeMo Gym's fixture runner in its venv. --update-expected
writes the observed rewards into the fixture instead of comparing them.

With --resources-server NAME (or +entrypoint=<server_type>/<name>), find the
component in the search roots and run its own tests there: go test for a Go
component inside a Go module, pytest for a Python one, in its venv (set up
first when uv is on PATH), with the component and its root on PYTHONPATH.
--all does that for every server directory with a README.md in the roots.`,
		Example: `  # The built-in environment's verifier fixture, in process
  gym env test mcqa_genetics
  gym env test mcqa_genetics --json
  # One of your own; --update-expected records its current rewards
  gym env test my_env --search-dir ~/my-plugins
  gym env test my_env --search-dir ~/my-plugins --update-expected
  gym env test --resources-server my_env --search-dir ~/my-plugins
  gym env test --all --search-dir ~/my-plugins`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, tokens, err := workloadArgs(args, opts.kind)
			if err != nil {
				return err
			}
			opts.name, opts.passthrough = name, tokens
			if err := opts.target(); err != nil {
				return err
			}
			return runF(cmd.Context(), opts)
		},
	}
	kindFlag(cmd.Flags(), &opts.kind)
	cmd.Flags().BoolVar(&opts.updateExpected, "update-expected", false, "write the observed rewards into the verifier fixture")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the verifier report as JSON")
	cmd.Flags().StringVar(&opts.resourcesServer, "resources-server", "", "test resources_servers/`NAME`")
	cmd.Flags().StringArrayVar(&opts.searchDirs, "search-dir", nil, "extra search root (repeatable)")
	cmd.Flags().BoolVar(&opts.all, "all", false, "test every server in the search roots")
	return cmd
}

// testMode is what `gym env test` was asked to do.
type testMode int

const (
	testWorkloadMode testMode = iota + 1
	testComponentMode
	testAllMode
)

// target decides, from the flags and tokens, what to test, with NeMo Gym's
// argparse errors for combinations it refuses.
func (opts *testOptions) target() error {
	opts.component = ""
	if opts.resourcesServer != "" {
		name, _, _ := strings.Cut(opts.resourcesServer, "/")
		opts.component = "resources_servers/" + name
	}
	for _, t := range opts.passthrough {
		entry, ok := strings.CutPrefix(strings.TrimLeft(t, "+"), "entrypoint=")
		if !ok {
			return usageErrorf("gym env test takes NAME, --resources-server NAME or +entrypoint=<server_type>/<name>, not %q", t)
		}
		opts.component = strings.Trim(entry, `"'/`)
	}
	workloadSelected, legacySelected := opts.name != "", opts.component != ""
	switch {
	case workloadSelected && legacySelected:
		return usageErrorf("select a workload name or --resources-server, not both")
	case opts.all && (workloadSelected || legacySelected):
		return usageErrorf("--all tests every resources server, so it cannot be combined with a named target")
	case (opts.kind != "" || opts.updateExpected || opts.json) && !workloadSelected:
		return usageErrorf("--kind, --update-expected, and --json require a workload name")
	case workloadSelected:
		opts.mode = testWorkloadMode
	case legacySelected:
		if strings.Count(opts.component, "/") != 1 {
			return usageErrorf("say which component to test: --resources-server NAME or +entrypoint=<server_type>/<name>")
		}
		opts.mode = testComponentMode
	case !opts.all:
		return usageErrorf("requires a target: a workload name, --resources-server NAME, or --all to test every resources server.")
	default:
		opts.mode = testAllMode
	}
	return nil
}

func runEnvTest(ctx context.Context, opts *testOptions) error {
	switch opts.mode {
	case testWorkloadMode:
		return testWorkload(ctx, opts)
	case testComponentMode:
		return testComponent(ctx, opts, opts.component, opts.IO.Out)
	}
	return testAll(ctx, opts)
}

func testComponent(ctx context.Context, opts *testOptions, component string, out io.Writer) error {
	ws := opts.ws
	roots, err := ws.roots(opts.searchDirs)
	if err != nil {
		return err
	}
	return launcher.TestComponent(ctx, launcher.TestComponentOptions{
		Component: component,
		Roots:     roots.Roots,
		LookPath:  ws.LookPath,
		Environ:   ws.childEnviron(roots),
		VenvRoot:  roots.cwd,
		Out:       out,
		Err:       opts.IO.ErrOut,
	})
}

func testWorkload(ctx context.Context, opts *testOptions) error {
	roots, err := opts.ws.roots(opts.searchDirs)
	if err != nil {
		return err
	}
	t, err := workload.Find(roots.Roots, opts.name, opts.kind)
	if err != nil {
		return err
	}
	if t.Manifest == "" {
		return fmt.Errorf("%s '%s' has no manifest.yaml. Add one beside '%s' before running verifier checks.", capitalize(t.Kind), t.Name, t.Config)
	}
	o := opts.ws.workloadOptions(roots, opts.IO.ErrOut)
	o.Manifest, o.Config = t.Manifest, t.Config
	py := workload.RunOptions{Environ: opts.ws.childEnviron(roots), LookPath: opts.ws.LookPath, Log: opts.IO.ErrOut}
	report, _, err := workload.Exercise(ctx, o, py, opts.updateExpected)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(opts.IO.Out, report)
	}
	fmt.Fprintf(opts.IO.Out, "✓ Verifier: %s (%s) %d cases passed.\n", report.Name, report.ResourcesServer, len(report.Cases))
	return nil
}

// serverTypeDirs are the directories test-all looks for servers in.
var serverTypeDirs = []string{"resources_servers", "responses_api_agents", "responses_api_models", "environment_servers"}

// testAll is NeMo Gym's test_all: every server directory with a README.md
// across the roots (an earlier root's directory hiding a later one's of
// the same name), its own tests run one after another, then a summary.
// Go components built into gym are counted apart: their tests are gym's.
func testAll(ctx context.Context, opts *testOptions) error {
	roots, err := opts.ws.roots(opts.searchDirs)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var candidates, modules []string
	for _, root := range roots.List() {
		for _, typ := range serverTypeDirs {
			entries, _ := os.ReadDir(roots.abs(filepath.Join(root, typ)))
			names := make([]string, 0, len(entries))
			for _, e := range entries {
				if e.IsDir() && !strings.Contains(e.Name(), "pycache") {
					names = append(names, e.Name())
				}
			}
			sort.Strings(names)
			for _, name := range names {
				rel := typ + "/" + name
				if seen[rel] {
					continue
				}
				seen[rel] = true
				candidates = append(candidates, rel)
			}
		}
	}
	for _, rel := range candidates {
		if dir := roots.find(rel); dir != "" {
			if _, err := os.Stat(filepath.Join(dir, "README.md")); err == nil {
				modules = append(modules, rel)
			}
		}
	}
	out := opts.IO.Out
	fmt.Fprintf(out, "Found %d total modules:%s\n\nFound %d modules to test:%s\n\n", len(candidates), pathList(candidates), len(modules), pathList(modules))
	var passed, failed, builtin []string
	for _, rel := range modules {
		err := testComponent(ctx, opts, rel, out)
		var b *launcher.BuiltinGoError
		switch {
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case err == nil:
			passed = append(passed, rel)
		case errors.As(err, &b):
			builtin = append(builtin, rel)
		default:
			fmt.Fprintf(opts.IO.ErrOut, "%s: %v\n", rel, err)
			failed = append(failed, rel)
		}
	}
	n := len(modules)
	fmt.Fprintf(out, "\nTests passed %s:%s\n\nTests failed %s:%s\n\nBuilt into gym (tested by gym's own suite) %s:%s\n",
		pct(len(passed), n), pathList(passed), pct(len(failed), n), pathList(failed), pct(len(builtin), n), pathList(builtin))
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d modules failed their tests; rerun one with gym env test +entrypoint=%s", len(failed), n, failed[0])
	}
	return nil
}

func pathList(paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		b.WriteString("\n- " + p)
	}
	return b.String()
}

func pct(count, total int) string {
	if total == 0 {
		return "0 / 0"
	}
	return fmt.Sprintf("%d / %d (%.2f%%)", count, total, 100*float64(count)/float64(total))
}
