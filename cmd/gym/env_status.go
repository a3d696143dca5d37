package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/launcher"
)

// statusOptions are the inputs of `gym env status`.
type statusOptions struct {
	IO          *iostreams.IOStreams
	ws          *workspace
	globals     *globalFlags
	config      configFlags
	json        bool
	passthrough []string
}

func newCmdEnvStatus(f *Factory, g *globalFlags, runF func(context.Context, *statusOptions) error) *cobra.Command {
	if runF == nil {
		runF = runStatus
	}
	opts := &statusOptions{IO: f.IOStreams, ws: f.Workspace, globals: g}
	cmd := &cobra.Command{
		Use:   "status [flags] [+key=value ...]",
		Short: "Show the servers a running gym env start is supervising",
		Long: `Ask the head server (head_server.host:port from the config, 127.0.0.1:11000 by
default) which servers it started, and check that each answers.`,
		Example: `  gym env status
  gym env status --json | jq '.[] | select(.status != "success")'
  gym env status ++head_server.port=12000`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.passthrough = args
			return runF(cmd.Context(), opts)
		},
	}
	// The head server's address is all it reads: selector and model flags
	// would do nothing, so they are not accepted.
	opts.config.registerFilesOnly(cmd.Flags())
	cmd.Flags().BoolVar(&opts.json, "json", false, "print a JSON array of instances")
	return cmd
}

func runStatus(ctx context.Context, opts *statusOptions) error {
	res, _, err := opts.ws.loadConfig(ctx, opts.IO.ErrOut, &opts.config, opts.globals.verbose, nil, opts.passthrough, config.Request{Offline: true})
	if err != nil {
		return err
	}
	infos, err := launcher.Status(ctx, launcher.NewHeadClient(res), time.Now())
	if err != nil {
		if opts.json {
			_, err := fmt.Fprintln(opts.IO.Out, "[]")
			return err
		}
		fmt.Fprintf(opts.IO.ErrOut, "Warning: no head server answered (%v)\n", err)
		fmt.Fprintln(opts.IO.Out, "No NeMo Gym servers found running.")
		return nil
	}
	if opts.json {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(infos)
	}
	fmt.Fprint(opts.IO.Out, "NeMo Gym Server Status:\n\n")
	launcher.WriteStatus(opts.IO.Out, infos)
	return nil
}
