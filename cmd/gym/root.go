package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nemo-gym-go/gym/internal/resolve"
)

func run(args []string) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		if sig, ok := <-signals; ok {
			cancel(&interruptedError{sig: sig.(syscall.Signal)})
		}
	}()
	f := newFactory()
	root := newCmdRoot(f)
	root.SetArgs(jsonAfterCommand(args))
	cmd, err := root.ExecuteContextC(ctx)
	return exitCode(err, context.Cause(ctx), cmd != nil && cmd.Annotations[interruptIsTheEnd] == "true", f.IOStreams.ErrOut)
}

// jsonAfterCommand moves a --json given before the command (gym --json
// list benchmarks) after it, where the reporting command's own --json
// takes it, as NeMo Gym's parser lets a pre-command --json reach the
// command; with --version it stays the root's.
func jsonAfterCommand(args []string) []string {
	at := -1
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			break
		}
		switch a {
		case "--version":
			return args
		case "--json":
			at = i
		}
	}
	if at < 0 || at == len(args)-1 {
		return args
	}
	moved := append(append([]string(nil), args[:at]...), args[at+1:]...)
	return append(moved, "--json")
}

// globalFlags are accepted before or after the subcommand.
type globalFlags struct {
	verbose bool
}

func newCmdRoot(f *Factory) *cobra.Command {
	g := &globalFlags{}
	vopts := &versionOptions{IO: f.IOStreams, ws: f.Workspace, version: f.Version}
	var showVersion bool
	root := &cobra.Command{
		Use:   "gym",
		Short: "Start NeMo Gym servers, list benchmarks and run evaluations",
		Long: `gym is a Go implementation of NeMo Gym's command line: it reads NeMo Gym's
layered YAML configs (config_paths, env.yaml, +key=value overrides, ${...}
interpolation) and resolves components across search roots.`,
		Example: `  # Print the resolved config of a model server, with each value's origin
  gym env resolve --config responses_api_models/openai_model/configs/openai_model.yaml \
    +policy_base_url=http://localhost:8000/v1 +policy_api_key=dummy +policy_model_name=m --show-origin

  # The version, the Python and uv it would run Python servers with, and the system
  gym --version --json`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "verbose output (adds +verbose=true)")
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(newCmdEnv(f, g), newCmdEval(f, g), newCmdServe(f), newCmdWatchdog())
	root.AddCommand(newCmdList(f, nil), newCmdSearch(f, nil), newCmdDev(f))
	root.AddCommand(newCmdDataset(f, g))
	makeGroup(root)
	positionalErrorsAreUsage(root)
	root.Flags().BoolVar(&showVersion, "version", false, "show gym's version, the NeMo Gym version it follows, and the system, then exit")
	root.Flags().BoolVar(&vopts.json, "json", false, "with --version, output as JSON")
	listCommands := root.RunE
	root.RunE = func(c *cobra.Command, args []string) error {
		switch {
		case showVersion:
			return runVersion(c.Context(), vopts)
		case vopts.json:
			return usageErrorf("gym: --json applies to --version here; reporting commands take their own --json (gym list benchmarks --json)")
		}
		return listCommands(c, args)
	}
	return root
}

func newCmdEnv(f *Factory, g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Inspect and run server environments",
		Example: `  gym env resolve --resources-server example_single_tool_call --model-type replay_model
  gym env start --resources-server example_single_tool_call --model-type replay_model
  gym env status`,
	}
	cmd.AddCommand(newCmdEnvResolve(f, g, nil), newCmdEnvStart(f, g, nil), newCmdEnvPrefetch(f, g, nil), newCmdEnvStatus(f, g, nil), newCmdEnvTest(f, nil), newCmdEnvInit(f, nil))
	cmd.AddCommand(newCmdEnvSchema(f, nil))
	cmd.AddCommand(newCmdEnvValidate(f, g, nil), newCmdEnvPublish(f, nil), newCmdEnvPackages(f, nil))
	makeGroup(cmd)
	return cmd
}

// makeGroup makes a command that only holds subcommands reject an unknown
// subcommand with argparse's wording and a did-you-mean hint (cobra's own
// suggestions use a different distance than NeMo Gym's difflib).
func makeGroup(cmd *cobra.Command) {
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		var names []string
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		sort.Strings(names)
		return usageErrorf("%s: invalid choice: '%s' (choose from %s)%s",
			c.CommandPath(), args[0], "'"+strings.Join(names, "', '")+"'", resolve.DidYouMean(args[0], names))
	}
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	cmd.DisableSuggestions = true
}

// positionalErrorsAreUsage makes a wrong number of positional arguments
// a usage error (exit 2), as argparse treats it, in every command of the
// tree; cobra's own validators return plain errors.
func positionalErrorsAreUsage(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			err := check(c, args)
			var usage *usageError
			if err == nil || errors.As(err, &usage) {
				return err
			}
			return usageErrorf("%s: %v (see '%s --help')", c.CommandPath(), err, c.CommandPath())
		}
	}
	for _, sub := range cmd.Commands() {
		positionalErrorsAreUsage(sub)
	}
}

// flagError turns pflag's "unknown flag" into argparse's wording with a
// did-you-mean over the command's own flags.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	var bad string
	switch {
	case strings.HasPrefix(msg, "unknown flag: "):
		bad = strings.TrimPrefix(msg, "unknown flag: ")
	case strings.HasPrefix(msg, "unknown shorthand flag: "):
		if i := strings.LastIndex(msg, " in "); i >= 0 {
			bad = msg[i+len(" in "):]
		}
	default:
		return usageErrorf("%s: %s (see '%s --help')", cmd.CommandPath(), msg, cmd.CommandPath())
	}
	name, _, _ := strings.Cut(bad, "=")
	var known []string
	cmd.Flags().VisitAll(func(fl *pflag.Flag) { known = append(known, "--"+fl.Name) })
	cmd.InheritedFlags().VisitAll(func(fl *pflag.Flag) { known = append(known, "--"+fl.Name) })
	return usageErrorf("%s: unrecognized arguments: %s%s (see '%s --help')",
		cmd.CommandPath(), bad, resolve.DidYouMean(name, known), cmd.CommandPath())
}
