package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/profile"
)

type profileOptions struct {
	IO           *iostreams.IOStreams
	ws           *workspace
	inputs       string
	rollouts     string
	allowPartial bool
	html         string
}

func newCmdEvalProfile(f *Factory, runF func(context.Context, *profileOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEvalProfile
	}
	opts := &profileOptions{IO: f.IOStreams, ws: f.Workspace}
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
			if err := opts.readKeys(args); err != nil {
				return err
			}
			var missing []string
			if opts.inputs == "" {
				missing = append(missing, "materialized_inputs_jsonl_fpath")
			}
			if opts.rollouts == "" {
				missing = append(missing, "rollouts_jsonl_fpath")
			}
			if len(missing) > 0 {
				return &config.MissingSettingsError{Keys: missing}
			}
			return runF(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.inputs, "inputs", "", "the run's <stem>_materialized_inputs.jsonl (required)")
	cmd.Flags().StringVar(&opts.rollouts, "rollouts", "", "the run's rollouts JSONL (required)")
	cmd.Flags().BoolVar(&opts.allowPartial, "allow-partial", false, "profile the matched rows when some inputs have no rollout")
	cmd.Flags().StringVar(&opts.html, "html", "", "also write an HTML report with charts to this file")
	return cmd
}

func runEvalProfile(ctx context.Context, opts *profileOptions) error {
	cwd, err := opts.ws.Getwd()
	if err != nil {
		return err
	}
	roots := commandRoots{cwd: cwd}
	_, err = profile.Run(ctx, profile.Options{
		InputsPath:   roots.abs(opts.inputs),
		RolloutsPath: roots.abs(opts.rollouts),
		AllowPartial: opts.allowPartial,
		Out:          opts.IO.Out,
	})
	if err != nil || opts.html == "" {
		return err
	}
	return writeReport(roots.abs(opts.html), roots.abs(opts.rollouts), opts.IO.Out)
}

// parseAddition parses a +key=value (or ++key=value) token of a command
// that reads NeMo Gym's keys itself; any other token is refused.
func parseAddition(a string) (override.Override, error) {
	ov, err := override.Parse(a)
	if err != nil {
		return ov, usageErrorf("%v", err)
	}
	if ov.Value == nil || (ov.Op != override.Add && ov.Op != override.ForceAdd) {
		return ov, usageErrorf("unrecognized arguments: %s", a)
	}
	return ov, nil
}

// readKeys reads NeMo Gym's form of the flags: +materialized_inputs_jsonl_fpath=,
// +rollouts_jsonl_fpath= and +allow_partial_rollouts= (with + or ++).
func (o *profileOptions) readKeys(args []string) error {
	for _, a := range args {
		ov, err := parseAddition(a)
		if err != nil {
			return err
		}
		switch ov.Key {
		case "materialized_inputs_jsonl_fpath", "rollouts_jsonl_fpath":
			if ov.Value.Kind != tree.String {
				return usageErrorf("invalid configuration: %s must be a path, got %s", ov.Key, config.DescribeValue(ov.Value))
			}
			if ov.Key == "rollouts_jsonl_fpath" {
				o.rollouts = ov.Value.Str
			} else {
				o.inputs = ov.Value.Str
			}
		case "allow_partial_rollouts":
			on, err := config.LaxBool(ov.Value)
			if err != nil {
				return usageErrorf("invalid configuration: allow_partial_rollouts: %v", err)
			}
			o.allowPartial = on
		default:
			return usageErrorf("unrecognized arguments: %s (gym eval profile takes +materialized_inputs_jsonl_fpath=, +rollouts_jsonl_fpath= and +allow_partial_rollouts=)", a)
		}
	}
	return nil
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
