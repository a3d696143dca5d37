package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/iostreams"
)

// resolveOptions are the inputs of `gym env resolve`.
type resolveOptions struct {
	IO          *iostreams.IOStreams
	ws          *workspace
	globals     *globalFlags
	config      configFlags
	showOrigin  bool
	passthrough []string
}

func newCmdEnvResolve(f *Factory, g *globalFlags, runF func(context.Context, *resolveOptions) error) *cobra.Command {
	if runF == nil {
		runF = runResolve
	}
	opts := &resolveOptions{IO: f.IOStreams, ws: f.Workspace, globals: g}
	cmd := &cobra.Command{
		Use:   "resolve [flags] [+key=value ...]",
		Short: "Print the fully resolved config, secrets masked",
		Long: `Merge config files (config_paths, --config and the selector flags), the first
env.yaml found across the search roots and the +key=value overrides; apply
_inherit_from/_copy/_delete_key; validate server instances; fill defaults and
ports; resolve every ${...}; and print the result as YAML with secret-like
values masked.`,
		Example: `  # A model server config, with the policy values on the command line
  gym env resolve --config responses_api_models/openai_model/configs/openai_model.yaml \
    +policy_base_url=http://localhost:8000/v1 +policy_api_key=dummy +policy_model_name=m

  # Where did each value come from?
  gym env resolve --config my.yaml --show-origin

  # Resolve your own components first
  gym env resolve --search-dir ~/my-plugins --resources-server my_env`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.passthrough = args
			return runF(cmd.Context(), opts)
		},
	}
	opts.config.register(cmd.Flags())
	opts.config.registerAgentType(cmd.Flags())
	cmd.Flags().BoolVar(&opts.showOrigin, "show-origin", false, "show beside every value where it came from (file:line, cli: +k=v, default)")
	return cmd
}

func runResolve(ctx context.Context, opts *resolveOptions) error {
	res, _, err := opts.ws.loadConfig(ctx, opts.IO.ErrOut, &opts.config, opts.globals.verbose, nil, opts.passthrough, config.Request{})
	if err != nil {
		return err
	}
	out, err := res.Resolved(true)
	if err != nil {
		return err
	}
	var dump pyyaml.Options
	if opts.showOrigin {
		dump.LeafComment = func(n *tree.Node) string { return n.Origin.String() }
	}
	_, err = fmt.Fprintf(opts.IO.Out, "%s\n", pyyaml.Dump(out, dump))
	return err
}
