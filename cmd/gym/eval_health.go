package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/health"
	"github.com/nemo-gym-go/gym/internal/iostreams"
)

type healthOptions struct {
	IO           *iostreams.IOStreams
	runDir       string
	rolloutsFile string
	workers      int
	ignored      []string
	json         bool
}

func newCmdEvalHealthCheck(f *Factory, runF func(context.Context, *healthOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEvalHealthCheck
	}
	opts := &healthOptions{IO: f.IOStreams}
	var ignore string
	cmd := &cobra.Command{
		Use:   "health-check RUN_DIR [--rollouts-file PATH] [--workers N] [--ignore-checks CHECK[,CHECK...]] [--json]",
		Short: "Verify rollout quality for an existing run directory",
		Long: `Run NeMo Gym's rollout-health checks over a run's rollouts (RUN_DIR/rollouts.jsonl,
or --rollouts-file, relative to RUN_DIR): each record and its ng_trajectory is
checked for unreadable records, duplicate identities, missing or hollow agent
turns, failed model calls (and a rollout that ended on one), zero or missing
token counts, calls the trajectory refers to but did not capture, token totals
that disagree with the capture and runaway generations; then each task for
repeats that are all unhealthy or have no successful model call.

A rollout with a finding is unhealthy; one whose evidence was not recorded
(no trajectory, no captured calls) is unobserved; the rest are healthy.
Writes RUN_DIR/quality_summary.json and RUN_DIR/rollout_verdicts.jsonl and
prints a one-line summary (--json: the summary as JSON). Exits 0 whatever
the verdicts; --ignore-checks leaves checks out of them.

Check IDs: ` + checkIDs() + `.`,
		Example: `  gym eval run --benchmark example_single_tool_call --model-type replay_model --split benchmark -o run/rollouts.jsonl
  gym eval health-check run
  gym eval health-check run --ignore-checks rollout_token_count_mismatch --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("%s: the following arguments are required: RUN_DIR", cmd.CommandPath())
			}
			if len(args) > 1 {
				return usageErrorf("%s: health-check does not accept Hydra overrides", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.runDir = args[0]
			if cmd.Flags().Changed("workers") && opts.workers < 1 {
				return usageErrorf("%s: workers must be at least 1", cmd.CommandPath())
			}
			if cmd.Flags().Changed("ignore-checks") || cmd.Flags().Changed("ignore") {
				opts.ignored = nil
				for _, id := range strings.Split(ignore, ",") {
					if id = strings.TrimSpace(id); id == "" {
						return usageErrorf("argument --ignore-checks/--ignore: check IDs must be a comma-separated list without empty entries")
					}
					opts.ignored = append(opts.ignored, id)
				}
			}
			return runF(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.rolloutsFile, "rollouts-file", "", "rollouts JSONL; a relative path is under RUN_DIR (default: rollouts.jsonl)")
	fl.IntVar(&opts.workers, "workers", 0, "number of parallel workers, at least 1 (default: the CPUs, at most 8)")
	fl.StringVar(&ignore, "ignore-checks", "", "comma-separated check IDs to leave out of the verdicts")
	fl.StringVar(&ignore, "ignore", "", "the same as --ignore-checks")
	_ = fl.MarkHidden("ignore")
	fl.BoolVar(&opts.json, "json", false, "print the summary as JSON")
	return cmd
}

func checkIDs() string {
	ids := make([]string, len(health.Registry))
	for i, c := range health.Registry {
		ids[i] = c.ID
	}
	return strings.Join(ids, ", ")
}

func runEvalHealthCheck(ctx context.Context, opts *healthOptions) error {
	res, err := health.RunDir(ctx, opts.runDir, opts.rolloutsFile, opts.workers, opts.ignored)
	var usage *health.UsageError
	if errors.As(err, &usage) {
		return usageErrorf("gym eval health-check: %v", err)
	}
	if err != nil {
		return err
	}
	defer res.Close()
	if opts.json {
		fmt.Fprintln(opts.IO.Out, string(res.SummaryJSON()))
		return nil
	}
	fmt.Fprintln(opts.IO.Out, health.Report(res))
	return nil
}
