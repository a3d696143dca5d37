package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/export"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/progress"
	"github.com/nemo-gym-go/gym/internal/rollout"
	"github.com/nemo-gym-go/gym/internal/server"
)

// reverifyOptions are the inputs of `gym eval reverify`.
type reverifyOptions struct {
	IO      *iostreams.IOStreams
	ws      *workspace
	globals *globalFlags
	config  configFlags
	// Flags that become config keys; set only when given.
	inputs, rollouts, output                                             string
	concurrency, limit                                                   int
	force, overwrite, resume, disableAggregation, judgeFailedOnly, appnd bool
	flags                                                                *pflag.FlagSet
	passthrough                                                          []string
}

func newCmdEvalReverify(f *Factory, g *globalFlags, runF func(context.Context, *reverifyOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEvalReverify
	}
	opts := &reverifyOptions{IO: f.IOStreams, ws: f.Workspace, globals: g}
	cmd := &cobra.Command{
		Use:   "reverify --inputs MATERIALIZED --rollouts ROLLOUTS -o OUT [flags] [+key=value ...]",
		Short: "Re-verify existing rollouts to recompute rewards with an updated resources server",
		Long: `POST each rollout of a finished run again to its resources server's /verify,
with its materialized input (joined on task and rollout index), and write the
new results to OUT; the run's own files are left as they are. No model or
agent is called: gym starts only the resources servers the rollouts go to
(and any server their configs reference, such as a judge model), and stops
them when done or interrupted.

Each resources server is first asked its GET /reverify_mode: one that is not
"stateless" stops the command, unless --force, which names the outputs
unsafe_<OUT>. Successes go to OUT, failures to <OUT stem>_failures.jsonl,
metrics to <OUT stem>_aggregate_metrics.json. An existing OUT is refused
unless --overwrite (start over) or --resume (verify only what it is missing).

--judge-failed-only recovers a run's judge failures: the successes of
ROLLOUTS are copied to OUT unchanged and only the rows of
<ROLLOUTS stem>_failures.jsonl whose judge failed are verified again (no
reverify_mode check); with --append they are added to an existing OUT.`,
		Example: `  gym eval run --benchmark mcqa_example --model-type replay_model --split benchmark -o results/mcqa.jsonl
  gym eval reverify --benchmark mcqa_example \
    --inputs results/mcqa_materialized_inputs.jsonl --rollouts results/mcqa.jsonl -o results/mcqa_reverified.jsonl

  # Recover the rollouts whose judge call failed, into the run's own file
  gym eval reverify --benchmark mcqa_example --judge-failed-only --append \
    --inputs results/mcqa_materialized_inputs.jsonl --rollouts results/mcqa.jsonl -o results/mcqa.jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.passthrough = args
			opts.flags = cmd.Flags()
			return runF(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	opts.config.registerSelectors(fs)
	fs.StringVar(&opts.inputs, "inputs", "", "the run's <stem>_materialized_inputs.jsonl (materialized_inputs_jsonl_fpath); required")
	fs.StringVar(&opts.rollouts, "rollouts", "", "the run's rollouts JSONL (rollouts_jsonl_fpath); required")
	fs.StringVarP(&opts.output, "output", "o", "", "output JSONL with the recomputed rewards (output_jsonl_fpath); required")
	fs.IntVar(&opts.concurrency, "concurrency", 0, fmt.Sprintf("rollouts verified at once (num_samples_in_parallel; default %d)", rollout.DefaultConcurrency))
	fs.IntVar(&opts.limit, "limit", 0, "re-verify at most N rollouts (limit)")
	fs.BoolVar(&opts.force, "force", false, "re-verify even against servers whose reverify_mode is not stateless; outputs are prefixed unsafe_ (force)")
	fs.BoolVar(&opts.overwrite, "overwrite", false, "delete an existing output and its failures file first (overwrite)")
	fs.BoolVar(&opts.resume, "resume", false, "continue an earlier reverification of the same output: verify only what it is missing (resume_from_cache)")
	fs.BoolVar(&opts.disableAggregation, "disable-aggregation", false, "skip the metrics; compute them later with 'gym eval aggregate'")
	fs.BoolVar(&opts.judgeFailedOnly, "judge-failed-only", false, "carry the successes through and re-verify only the judge failures of <rollouts stem>_failures.jsonl (judge_failed_only)")
	fs.BoolVar(&opts.appnd, "append", false, "with --judge-failed-only: add the recovered rows to an existing output instead of a fresh one (append)")
	return cmd
}

// tokens translates the flags that were given into ++key=value overrides.
func (o *reverifyOptions) tokens() []string {
	var t []string
	set := func(flag, key, value string) {
		if o.flags.Changed(flag) {
			t = append(t, "++"+key+"="+value)
		}
	}
	set("inputs", rollout.KeyMaterializedInputs, override.Quote(o.inputs))
	set("rollouts", rollout.KeyRollouts, override.Quote(o.rollouts))
	set("output", rollout.KeyOutput, override.Quote(o.output))
	set("concurrency", rollout.KeyConcurrency, strconv.Itoa(o.concurrency))
	set("limit", rollout.KeyLimit, strconv.Itoa(o.limit))
	set("force", rollout.KeyForce, strconv.FormatBool(o.force))
	set("overwrite", rollout.KeyOverwrite, strconv.FormatBool(o.overwrite))
	set("resume", rollout.KeyResume, strconv.FormatBool(o.resume))
	set("disable-aggregation", rollout.KeyDisableAggregation, strconv.FormatBool(o.disableAggregation))
	set("judge-failed-only", rollout.KeyJudgeFailedOnly, strconv.FormatBool(o.judgeFailedOnly))
	set("append", rollout.KeyAppend, strconv.FormatBool(o.appnd))
	return t
}

func runEvalReverify(ctx context.Context, opts *reverifyOptions) error {
	errOut := opts.IO.ErrOut
	// The rollouts' model is not started, so a benchmark's config loads
	// without one, as `gym eval aggregate`'s does.
	res, roots, err := opts.ws.loadConfig(ctx, errOut, &opts.config, opts.globals.verbose, opts.tokens(), opts.passthrough, config.Request{Seed: dummyPolicy()})
	if err != nil {
		return err
	}
	s := config.Settings{Result: res}
	settings, err := rollout.ReadReverifySettings(s)
	if err != nil {
		return err
	}
	trackers, err := export.FromConfig(s.Node)
	if err != nil {
		return err
	}
	for _, k := range settings.Ignored {
		fmt.Fprintf(errOut, "Warning: %s is set, but it is a NeMo Gym reverification setting gym does not implement; it has no effect here\n", k)
	}
	resolved, err := res.Resolved(false)
	if err != nil {
		return err
	}
	routes, err := rollout.NewRoutes(resolved)
	if err != nil {
		return err
	}
	if routes.Warning != "" {
		fmt.Fprintln(errOut, "Warning: "+routes.Warning)
	}
	settings.Inputs = roots.resolveExisting(settings.Inputs)
	settings.Rollouts = roots.resolveExisting(settings.Rollouts)
	settings.Output = roots.abs(settings.Output)
	runToken, _ := opts.ws.LookupEnv(server.RunTokenEnv)
	plan, err := rollout.PlanReverify(ctx, rollout.ReverifyOptions{
		ReverifySettings: settings,
		Routes:           routes,
		MaxAttempts:      rollout.MaxAttempts(opts.ws.LookupEnv, errOut),
		Client:           settings.NewClient(res, runToken, errOut),
		ServerURL:        func(_ context.Context, name string) (string, error) { return server.ServerURL(res.Config, name) },
		Progress:         progress.New(progress.Options{Out: errOut, Mode: opts.IO.ProgressMode(false), Title: "Re-verifying rollouts"}),
		Out:              opts.IO.Out,
		Log:              errOut,
	})
	var exists *rollout.OutputExistsError
	if errors.As(err, &exists) {
		return usageErrorf("%v", err)
	}
	if err != nil {
		return err
	}

	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if len(plan.Servers) > 0 {
		// Only the servers the rollouts need: the policy model and the
		// agents they were collected with are not called.
		needed := *res
		needed.Instances = rollout.ServersFor(res, resolved, plan.Servers)
		// A server that dies mid-run ends the reverification: what
		// finished is kept and --resume does the rest once it is fixed.
		l, err := opts.ws.startForRun(ctx, cancel, &needed, roots, errOut)
		if err != nil {
			return err
		}
		defer l.Stop()
		if l.DryRun {
			return nil
		}
	}
	trackers.Warn = errOut
	if masked, err := res.Resolved(true); err == nil {
		trackers.Start(ctx, masked)
	}
	sum, err := plan.Run(ctx)
	var failures *rollout.VerifyFailuresError
	if (err == nil || errors.As(err, &failures)) && sum != nil {
		metrics := "" // metrics of an earlier run are not this one's
		if sum.MetricsWritten {
			metrics = sum.Paths.Metrics
		}
		trackers.Report(context.WithoutCancel(ctx), sum.Paths.Output, metrics)
	}
	status := err
	if parent.Err() != nil {
		status = context.Canceled
	}
	trackers.Finish(context.WithoutCancel(ctx), export.RunStatus(status))
	if errors.As(err, &exists) {
		return usageErrorf("%v", err)
	}
	if ctx.Err() != nil && sum != nil && sum.Paths.Output != "" {
		fmt.Fprintf(errOut, "Interrupted: the re-verified rollouts so far are in %s; run the same command with --resume to finish.\n", sum.Paths.Output)
	}
	// A signal's exit code and message come from the root; a server that
	// died is this command's error.
	if parent.Err() != nil {
		return context.Canceled
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}
