package main

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/launcher"
	"github.com/nemo-gym-go/gym/internal/server"
)

// newCmdServe is the hidden entry point of every Go server process: `gym env
// start` runs this binary as `gym serve` with NEMO_GYM_CONFIG_DICT and
// NEMO_GYM_CONFIG_PATH set, exactly as it would run a Python app.py.
func newCmdServe(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:    "serve",
		Short:  "Run one Go server instance (started by gym env start)",
		Hidden: true,
		// A server's normal end is the launcher's SIGTERM.
		Annotations: map[string]string{interruptIsTheEnd: "true"},
		Args:        cobra.NoArgs,
		Example:     `  NEMO_GYM_CONFIG_DICT="$(cat config.yaml)" NEMO_GYM_CONFIG_PATH=policy_model gym serve`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return server.Main(cmd.Context(), f.Workspace.LookupEnv, f.IOStreams.Out)
		},
	}
}

// newCmdWatchdog is the hidden process `gym env start` and `gym eval run`
// leave beside a run: it reads its fd 3 until gym's end closes, however gym
// ends, then kills whatever is left of the run's cgroup.
func newCmdWatchdog() *cobra.Command {
	return &cobra.Command{
		Use:     "watchdog CGROUP_DIR",
		Short:   "End a run's processes once gym is gone (started by gym env start)",
		Hidden:  true,
		Args:    cobra.ExactArgs(1),
		Example: `  gym watchdog /sys/fs/cgroup/gym-1234 3<pipe`,
		RunE: func(_ *cobra.Command, args []string) error {
			// Only gym's going may end it: a Ctrl-C or a hang-up of the
			// terminal reaches gym, which then closes the pipe.
			signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
			alive := os.NewFile(3, "gym")
			if alive == nil {
				return errors.New("fd 3 is not open: the watchdog is started by gym with a pipe on it")
			}
			return launcher.WatchRun(args[0], alive)
		},
	}
}
