package main

import (
	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/server"
)

// newCmdServe is the hidden entry point of every Go server process: `gym env
// start` runs this binary as `gym serve` with NEMO_GYM_CONFIG_DICT and
// NEMO_GYM_CONFIG_PATH set, exactly as it would run a Python app.py.
func newCmdServe(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "serve",
		Short:   "Run one Go server instance (started by gym env start)",
		Hidden:  true,
		Args:    cobra.NoArgs,
		Example: `  NEMO_GYM_CONFIG_DICT="$(cat config.yaml)" NEMO_GYM_CONFIG_PATH=policy_model gym serve`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return server.Main(cmd.Context(), f.LookupEnv, f.IO.Out)
		},
	}
}
