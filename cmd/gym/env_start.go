package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/launcher"
	"github.com/nemo-gym-go/gym/internal/server"
)

// startOptions are the inputs of `gym env start` and `gym env prefetch`.
type startOptions struct {
	f           *Factory
	globals     *globalFlags
	config      configFlags
	grace       time.Duration
	passthrough []string
}

func newCmdEnvStart(f *Factory, g *globalFlags) *cobra.Command {
	opts := &startOptions{f: f, globals: g}
	cmd := &cobra.Command{
		Use:   "start [flags] [+key=value ...]",
		Short: "Start the configured servers and keep them running until Ctrl-C",
		Long: `Resolve the config as 'gym env resolve' does, start NeMo Gym's head server and
one process per server instance (a Python entrypoint with uv or python3, an
executable entrypoint, or a Go implementation built into gym), wait until each
answers and the upstream model endpoints answer, then supervise them. Every
line a server prints is prefixed with its instance name. Ctrl-C (or SIGTERM)
stops every server's whole process group and exits 0; a server that exits on
its own stops the rest and exits 1.`,
		Example: `  # A resources server, its agent and the policy model
  gym env start --resources-server example_single_tool_call --model-type openai_model \
    --model gpt-4o-mini --model-url https://api.openai.com/v1 --model-api-key "$OPENAI_API_KEY"

  # Set up every Python server's venv, one after another, then exit
  gym env start --config my_servers.yaml +dry_run=true`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.passthrough = args
			return runStart(cmd.Context(), opts, false)
		},
	}
	opts.config.register(cmd.Flags())
	cmd.Flags().DurationVar(&opts.grace, "shutdown-grace", 3*time.Second, "how long servers get to stop after SIGTERM before SIGKILL")
	return cmd
}

func newCmdEnvPrefetch(f *Factory, g *globalFlags) *cobra.Command {
	opts := &startOptions{f: f, globals: g}
	cmd := &cobra.Command{
		Use:   "prefetch [flags] [+key=value ...]",
		Short: "Set up every Python server's environment without starting anything",
		Example: `  # Build the uv venvs of a benchmark's servers ahead of a cluster job
  gym env prefetch --benchmark aime24 --model-type openai_model`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.passthrough = args
			return runStart(cmd.Context(), opts, true)
		},
	}
	opts.config.register(cmd.Flags())
	return cmd
}

func runStart(ctx context.Context, opts *startOptions, prefetchOnly bool) error {
	f := opts.f
	roots, err := f.roots(opts.config.searchDirs)
	if err != nil {
		return err
	}
	tokens, warnings, err := opts.config.overrides(roots.Roots, opts.globals.verbose, opts.passthrough)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(f.IO.ErrOut, "Warning:", w)
	}
	res, err := config.Load(ctx, f.configEnv(roots), config.Request{Overrides: tokens})
	if err != nil {
		return err
	}
	self, err := f.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the gym binary to run Go servers: %w", err)
	}
	lopts := launcher.Options{
		Result:          res,
		Roots:           roots.Roots,
		Environ:         f.childEnviron(roots),
		LookPath:        f.LookPath,
		Self:            self,
		Registered:      func(kind string) bool { _, ok := server.Lookup(kind); return ok },
		RegisteredKinds: server.Kinds(),
		Cwd:             roots.cwd,
		Out:             f.IO.Out,
		Color:           f.colorOutput(),
		Grace:           opts.grace,
	}
	if prefetchOnly {
		return launcher.Prefetch(ctx, lopts)
	}
	l, err := launcher.Start(ctx, lopts)
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(f.IO.Out, "Interrupted; every server stopped.")
		return nil
	}
	if err != nil || l.DryRun {
		return err
	}
	err = l.Wait(ctx)
	l.Stop()
	if err == nil {
		fmt.Fprintln(f.IO.Out, "Every server stopped.")
	}
	return err
}
