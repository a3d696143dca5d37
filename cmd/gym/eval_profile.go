package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/profile"
)

type profileOptions struct {
	f            *Factory
	inputs       string
	rollouts     string
	allowPartial bool
	html         string
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
--allow-partial (NeMo Gym's +allow_partial_rollouts=true).

--html FILE also writes one self-contained page (inline SVG, no script)
with the reward distribution, the pass rate of each task and, when the run
captured its model calls (observability_enabled), tokens and latency per
call.`,
		Example: `  gym eval run --benchmark mcqa_example --model-type replay_model --split benchmark -o results/mcqa.jsonl
  gym eval profile --inputs results/mcqa_materialized_inputs.jsonl --rollouts results/mcqa.jsonl --html results/report.html`,
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
	cmd.Flags().StringVar(&opts.html, "html", "", "also write an HTML report with charts to this file")
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
	if err != nil || opts.html == "" {
		return err
	}
	return writeReport(roots.abs(opts.html), roots.abs(opts.rollouts), opts.f.IO.Out)
}

// writeReport writes the HTML report whole or not at all.
func writeReport(path, rollouts string, out io.Writer) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := profile.WriteHTML(tmp, rollouts); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	fmt.Fprintf(out, "Report: %s\n", path)
	return nil
}
