package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/launcher"
	"github.com/nemo-gym-go/gym/internal/server"
)

// startOptions are the inputs of `gym env start` and `gym env prefetch`.
type startOptions struct {
	IO          *iostreams.IOStreams
	ws          *workspace
	globals     *globalFlags
	config      configFlags
	grace       time.Duration
	passthrough []string
	// prefetchOnly sets up the venvs and starts nothing (gym env prefetch).
	prefetchOnly bool
}

func newCmdEnvStart(f *Factory, g *globalFlags, runF func(context.Context, *startOptions) error) *cobra.Command {
	if runF == nil {
		runF = runStart
	}
	opts := &startOptions{IO: f.IOStreams, ws: f.Workspace, globals: g}
	cmd := &cobra.Command{
		Annotations: map[string]string{interruptIsTheEnd: "true"},
		Use:         "start [flags] [+key=value ...]",
		Short:       "Start the configured servers and keep them running until Ctrl-C",
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
			return runF(cmd.Context(), opts)
		},
	}
	opts.config.register(cmd.Flags())
	opts.config.registerAgentType(cmd.Flags())
	opts.config.registerBuiltinServers(cmd.Flags())
	cmd.Flags().DurationVar(&opts.grace, "shutdown-grace", defaultShutdownGrace, "how long servers get to stop after SIGTERM before SIGKILL")
	return cmd
}

func newCmdEnvPrefetch(f *Factory, g *globalFlags, runF func(context.Context, *startOptions) error) *cobra.Command {
	if runF == nil {
		runF = runStart
	}
	opts := &startOptions{IO: f.IOStreams, ws: f.Workspace, globals: g, prefetchOnly: true}
	cmd := &cobra.Command{
		Use:   "prefetch [flags] [+key=value ...]",
		Short: "Set up every Python server's environment without starting anything",
		Long: `Build the uv venv of every Python server the config names, exactly as
gym env start (and NeMo Gym's own env start) builds it: uv venv with
python_version, then uv pip install of requirements.txt (or pyproject.toml)
with the head_server_deps pins; outside a NeMo Gym checkout nemo-gym comes
from the index. Nothing is started: no server, no head server, no Ray. Go
servers need no setup. A venv that cannot be built fails with uv's own
error; nothing is reported ready that was not built.`,
		Example: `  # Built-in (Go) servers only: says there is nothing to set up
  gym env prefetch --benchmark example_single_tool_call --model-type replay_model

  # NeMo Gym's Python servers from a checkout, ahead of a cluster job
  gym env prefetch --search-dir ~/Gym --config ~/Gym/resources_servers/example_single_tool_call/configs/example_single_tool_call.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.passthrough = args
			return runF(cmd.Context(), opts)
		},
	}
	opts.config.register(cmd.Flags())
	opts.config.registerAgentType(cmd.Flags())
	opts.config.registerBuiltinServers(cmd.Flags())
	return cmd
}

func runStart(ctx context.Context, opts *startOptions) error {
	res, roots, err := opts.ws.loadConfig(ctx, opts.IO.ErrOut, &opts.config, opts.globals.verbose, nil, opts.passthrough, config.Request{})
	if err != nil {
		return err
	}
	lopts, err := opts.ws.launchOptions(res, roots, opts.IO.Out, opts.IO.ColorEnabled(), opts.grace)
	if err != nil {
		return err
	}
	if opts.prefetchOnly {
		return launcher.Prefetch(ctx, lopts)
	}
	l, err := launcher.Start(ctx, lopts)
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(opts.IO.Out, "Interrupted; every server stopped.")
		return nil
	}
	if err != nil || l.DryRun {
		return err
	}
	err = l.Wait(ctx)
	l.Stop()
	if err == nil {
		fmt.Fprintln(opts.IO.Out, "Every server stopped.")
	}
	return err
}

// startForRun starts res's servers for a run that writes its results to
// stdout: their lines go to errOut, plain. A server that dies once all
// are up ends the run, through cancel, with its error as the cause.
func (ws *workspace) startForRun(ctx context.Context, cancel context.CancelCauseFunc, res *config.Result, roots commandRoots, errOut io.Writer) (*launcher.Launch, error) {
	lopts, err := ws.launchOptions(res, roots, errOut, false, defaultShutdownGrace)
	if err != nil {
		return nil, err
	}
	l, err := launcher.Start(ctx, lopts)
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(errOut, "Interrupted while starting the servers; every server stopped.")
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if !l.DryRun {
		go func() {
			if err := l.Wait(ctx); err != nil {
				cancel(err)
			}
		}()
	}
	return l, nil
}

// defaultShutdownGrace is how long servers get between SIGTERM and SIGKILL.
const defaultShutdownGrace = 3 * time.Second

// launchOptions are the launcher's inputs for a loaded config: servers'
// lines go to out, Go servers run as this binary.
func (ws *workspace) launchOptions(res *config.Result, roots commandRoots, out io.Writer, color bool, grace time.Duration) (launcher.Options, error) {
	self, err := ws.Executable()
	if err != nil {
		return launcher.Options{}, fmt.Errorf("cannot find the gym binary to run Go servers: %w", err)
	}
	return launcher.Options{
		Result:          res,
		Roots:           roots.Roots,
		Environ:         ws.childEnviron(roots),
		LookPath:        ws.LookPath,
		Self:            self,
		Builtin:         server.UnknownConfigKeys,
		RegisteredKinds: server.Kinds(),
		Cwd:             roots.cwd,
		Out:             out,
		Color:           color,
		Grace:           grace,
	}, nil
}
