package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/launcher"
)

// testOptions are the inputs of `gym env test`.
type testOptions struct {
	IO              *iostreams.IOStreams
	ws              *workspace
	resourcesServer string
	searchDirs      []string
	passthrough     []string
}

func newCmdEnvTest(f *Factory, runF func(context.Context, *testOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEnvTest
	}
	opts := &testOptions{IO: f.IOStreams, ws: f.Workspace}
	cmd := &cobra.Command{
		Use:   "test (--resources-server NAME | +entrypoint=<server_type>/<name>)",
		Short: "Run a component's own tests (go test or pytest)",
		Long: `Find the component in the search roots (--search-dir, NEMO_GYM_EXTRA_ROOTS, the
cwd, the install root) and run its own tests there: go test for a Go component
inside a Go module, pytest for a Python one, in its venv (set up first, as NeMo
Gym's env test does, when uv is on PATH; under the working directory, with gym's
pins and uv's own cache), with the component and its root on PYTHONPATH.`,
		Example: `  gym env test --resources-server my_env --search-dir ~/my-plugins
  gym env test +entrypoint=responses_api_agents/my_agent`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.passthrough = args
			return runF(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.resourcesServer, "resources-server", "", "test resources_servers/`NAME`")
	cmd.Flags().StringArrayVar(&opts.searchDirs, "search-dir", nil, "extra search root (repeatable)")
	return cmd
}

func runEnvTest(ctx context.Context, opts *testOptions) error {
	component := ""
	if opts.resourcesServer != "" {
		name, _, _ := strings.Cut(opts.resourcesServer, "/")
		component = "resources_servers/" + name
	}
	for _, t := range opts.passthrough {
		entry, ok := strings.CutPrefix(strings.TrimLeft(t, "+"), "entrypoint=")
		if !ok {
			return usageErrorf("gym env test takes --resources-server NAME or +entrypoint=<server_type>/<name>, not %q", t)
		}
		component = strings.Trim(entry, `"'/`)
	}
	if strings.Count(component, "/") != 1 {
		return usageErrorf("say which component to test: --resources-server NAME or +entrypoint=<server_type>/<name>")
	}
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
		Out:       opts.IO.Out,
		Err:       opts.IO.ErrOut,
	})
}
