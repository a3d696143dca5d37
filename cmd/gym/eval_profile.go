package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/profile"
)

type profileOptions struct {
	f            *Factory
	inputs       string
	rollouts     string
	allowPartial bool
}

func newCmdEvalProfile(f *Factory) *cobra.Command {
	opts := &profileOptions{f: f}
	cmd := &cobra.Command{
		Use:   "profile --inputs MATERIALIZED --rollouts ROLLOUTS",
		Short: "Reward statistics per task and per agent, offline from a run's files",
		Long: `Match each rollout to its materialized input by (task, rollout) and write
RewardProfiler's statistics: <rollouts stem>_reward_profiling.jsonl (one line
per task, with the task's input row as its sample and its completion counts)
and <rollouts stem>_agent_metrics.json (one entry per agent). Runs offline.
A rollout with no input, or an input with no rollout, is an error unless
--allow-partial (NeMo Gym's +allow_partial_rollouts=true).`,
		Example: `  gym eval profile --inputs results/example_materialized_inputs.jsonl --rollouts results/example.jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var missing []string
			if opts.inputs == "" {
				missing = append(missing, "materialized_inputs_jsonl_fpath")
			}
			if opts.rollouts == "" {
				missing = append(missing, "rollouts_jsonl_fpath")
			}
			if len(missing) > 0 {
				return missingConfig(missing...)
			}
			for _, a := range args {
				if a == "++allow_partial_rollouts=true" || a == "+allow_partial_rollouts=true" {
					opts.allowPartial = true
				} else {
					return usageErrorf("unrecognized arguments: %s", a)
				}
			}
			return runEvalProfile(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.inputs, "inputs", "", "the run's <stem>_materialized_inputs.jsonl (required)")
	cmd.Flags().StringVar(&opts.rollouts, "rollouts", "", "the run's rollouts JSONL (required)")
	cmd.Flags().BoolVar(&opts.allowPartial, "allow-partial", false, "profile the matched rows when some inputs have no rollout")
	return cmd
}

func runEvalProfile(ctx context.Context, opts *profileOptions) error {
	cwd, err := opts.f.Getwd()
	if err != nil {
		return err
	}
	roots := commandRoots{cwd: cwd}
	_, err = profile.Run(ctx, profile.Options{
		InputsPath:   roots.abs(opts.inputs),
		RolloutsPath: roots.abs(opts.rollouts),
		AllowPartial: opts.allowPartial,
		Out:          opts.f.IO.Out,
	})
	return err
}
