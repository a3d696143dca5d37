package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nemo-gym-go/gym/internal/capture"
	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/export"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/progress"
	"github.com/nemo-gym-go/gym/internal/rollout"
	"github.com/nemo-gym-go/gym/internal/server"
)

func newCmdEval(f *Factory, g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Prepare benchmarks, collect rollouts and compute their metrics",
		Example: `  # A built-in benchmark, end to end, offline
  gym eval run --benchmark example_single_tool_call --model-type replay_model \
    --split benchmark -o results/example.jsonl

  # Reward statistics of a finished run, from its files alone
  gym eval profile --inputs results/example_materialized_inputs.jsonl --rollouts results/example.jsonl`,
	}
	cmd.AddCommand(newCmdEvalPrepare(f, g, nil), newCmdEvalRun(f, g, nil), newCmdEvalAggregate(f, g, nil), newCmdEvalReverify(f, g, nil), newCmdEvalProfile(f, nil), newCmdEvalSubmit(f, nil), newCmdEvalStatus(f, nil), newCmdEvalCancel(f, nil), newCmdEvalExport(f, nil))
	cmd.AddCommand(newCmdEvalCompare(f, g, nil), newCmdEvalHealthCheck(f, nil))
	makeGroup(cmd)
	return cmd
}

// runOptions are the inputs of `gym eval run`.
type runOptions struct {
	IO      *iostreams.IOStreams
	ws      *workspace
	globals *globalFlags
	config  configFlags
	noServe bool
	// Flags that become config keys; set only when given.
	resume, disableAggregation, jsonProgress bool
	interleaveRepeats                        bool
	health                                   healthFlags
	agent, input, output, numRepeats         string
	promptConfig, split, shard               string
	limit, concurrency, maxRetries           int
	temperature, topP                        float64
	maxOutputTokens                          int
	timeout                                  time.Duration
	flags                                    *pflag.FlagSet
	passthrough                              []string
}

func newCmdEvalRun(f *Factory, g *globalFlags, runF func(context.Context, *runOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEvalRun
	}
	opts := &runOptions{IO: f.IOStreams, ws: f.Workspace, globals: g}
	cmd := &cobra.Command{
		Use:   "run [flags] [+key=value ...]",
		Short: "Collect rollouts: run every input row through its agent and score it",
		Long: `Without --no-serve: collate the --split datasets of the config's agents into
<output stem>/preprocessed_datasets/<split>.jsonl, start every configured
server, collect, and stop them. With --no-serve: collect from --input against
servers already started with 'gym env start', found through the head server.

Each input row is materialized (prompt applied, agent_ref, task and rollout
indices, repeats) into <stem>_materialized_inputs.jsonl, then POSTed to its
agent's /run. Results are appended as they complete: successes to the output,
failures to <stem>_failures.jsonl. A rollout whose /run still fails after its
retries is recorded as failed and the run goes on (exit 1 at the end);
--resume runs exactly the rollouts that are missing. Metrics go to
<stem>_aggregate_metrics.json.

--shard I/N runs one of N parts of the evaluation: the rollouts of the tasks
whose index modulo N is I (after --limit), every repeat of a task in the same
part, with the indices of the whole run. The N outputs merged by 'gym eval
aggregate' are the whole run, with its metrics.`,
		Example: `  # A built-in benchmark offline, on the replay model
  gym eval run --benchmark example_single_tool_call --model-type replay_model \
    --split benchmark -o results/example.jsonl

  # The same benchmark against a real model, 32 rollouts at a time
  gym eval run --benchmark mcqa_example --model-type openai_model \
    --model gpt-4.1-mini --model-url https://api.openai.com/v1 --model-api-key "$OPENAI_API_KEY" \
    --split benchmark -o results/mcqa.jsonl --concurrency 32

  # Against servers already running (gym env start), then finish after a crash
  gym eval run --no-serve -a example_single_tool_call_simple_agent \
    -i my_rows.jsonl -o results/mine.jsonl
  gym eval run --no-serve -a example_single_tool_call_simple_agent \
    -i my_rows.jsonl -o results/mine.jsonl --resume

  # Part 2 of 4 (the tasks whose index % 4 is 2); the parts merged once all have run
  gym eval run --benchmark mcqa_example --model-type replay_model --split benchmark \
    -o results/mcqa/shard_2.jsonl --shard 2/4 --disable-aggregation
  gym eval aggregate --benchmark mcqa_example -i 'results/mcqa/shard_*.jsonl' -o results/mcqa/rollouts.jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.passthrough = args
			opts.flags = cmd.Flags()
			return runF(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	opts.config.register(fs)
	opts.config.registerAgentType(fs)
	opts.config.registerBuiltinServers(fs)
	fs.BoolVar(&opts.noServe, "no-serve", false, "collect against servers already started with 'gym env start'")
	fs.BoolVar(&opts.resume, "resume", false, "continue an earlier run of the same output: run only the rollouts it is missing")
	fs.StringVarP(&opts.agent, "agent", "a", "", "agent instance for rows without an agent_ref (agent_name)")
	fs.StringVarP(&opts.input, "input", "i", "", "input JSONL (input_jsonl_fpath); replaced by the collated split without --no-serve")
	fs.StringVarP(&opts.output, "output", "o", "", "output JSONL of the rollouts (output_jsonl_fpath); required")
	fs.IntVar(&opts.limit, "limit", 0, "use only the first N input rows (limit)")
	fs.StringVar(&opts.shard, "shard", "", "run only part `I/N` of the tasks, those whose index % N is I, such as 2/4 (shard)")
	fs.StringVar(&opts.numRepeats, "num-repeats", "", "rollouts per row: N, or a map such as '{my_agent: 4, _default: 1}' (num_repeats)")
	fs.BoolVar(&opts.interleaveRepeats, "interleave-repeats", false, "dispatch the repeats round by round (abcabc) rather than each task's back to back (aabbcc) (interleave_repeats)")
	fs.StringVar(&opts.promptConfig, "prompt-config", "", "prompt YAML {system, user} rendered from each row's fields (prompt_config)")
	fs.IntVar(&opts.concurrency, "concurrency", 0, fmt.Sprintf("rollouts in flight at once (num_samples_in_parallel; default %d)", rollout.DefaultConcurrency))
	fs.StringVar(&opts.split, "split", "", "dataset type to collect without --no-serve: train, validation or benchmark (split)")
	fs.Float64Var(&opts.temperature, "temperature", 0, "sampling temperature for every row (responses_create_params.temperature)")
	fs.Float64Var(&opts.topP, "top-p", 0, "nucleus sampling for every row (responses_create_params.top_p)")
	fs.IntVar(&opts.maxOutputTokens, "max-output-tokens", 0, "output token cap for every row (responses_create_params.max_output_tokens)")
	fs.BoolVar(&opts.disableAggregation, "disable-aggregation", false, "skip the metrics; compute them later with 'gym eval aggregate'")
	opts.health.register(fs)
	fs.BoolVar(&opts.jsonProgress, "json-progress", false, "progress as one JSON object per line on stderr")
	fs.DurationVar(&opts.timeout, "timeout", 0, fmt.Sprintf("time limit of one rollout attempt (rollout_timeout_seconds; default %s)", rollout.DefaultTimeout))
	fs.IntVar(&opts.maxRetries, "max-retries", 0, fmt.Sprintf("retries of a rollout whose /run fails transiently, within one run (rollout_max_retries; default %d)", rollout.DefaultMaxRetries))
	return cmd
}

// tokens translates the eval flags that were given into ++key=value
// overrides, which set a key whether or not a config file already has it.
func (o *runOptions) tokens() []string {
	var t []string
	set := func(flag, key, value string) {
		if o.flags.Changed(flag) {
			t = append(t, "++"+key+"="+value)
		}
	}
	set("resume", rollout.KeyResume, "true")
	set("agent", rollout.KeyAgent, override.Quote(o.agent))
	set("input", rollout.KeyInput, override.Quote(o.input))
	set("output", rollout.KeyOutput, override.Quote(o.output))
	set("limit", rollout.KeyLimit, strconv.Itoa(o.limit))
	set("shard", rollout.KeyShard, override.Quote(o.shard))
	numRepeats := strings.TrimSpace(o.numRepeats)
	if !strings.HasPrefix(numRepeats, "{") {
		numRepeats = override.Quote(numRepeats)
	}
	set("num-repeats", rollout.KeyNumRepeats, numRepeats)
	set("interleave-repeats", rollout.KeyInterleaveRepeats, "true")
	set("prompt-config", rollout.KeyPromptConfig, override.Quote(o.promptConfig))
	set("concurrency", rollout.KeyConcurrency, strconv.Itoa(o.concurrency))
	set("split", rollout.KeySplit, override.Quote(o.split))
	set("temperature", rollout.KeyParams+".temperature", strconv.FormatFloat(o.temperature, 'g', -1, 64))
	set("top-p", rollout.KeyParams+".top_p", strconv.FormatFloat(o.topP, 'g', -1, 64))
	set("max-output-tokens", rollout.KeyParams+".max_output_tokens", strconv.Itoa(o.maxOutputTokens))
	set("disable-aggregation", rollout.KeyDisableAggregation, "true")
	set("timeout", rollout.KeyTimeout, strconv.FormatFloat(o.timeout.Seconds(), 'g', -1, 64))
	set("max-retries", rollout.KeyMaxRetries, strconv.Itoa(o.maxRetries))
	return append(t, o.health.tokens(o.flags)...)
}

// evalRun is one `gym eval run` after its config is read.
type evalRun struct {
	opts     *runOptions
	res      *config.Result
	roots    commandRoots
	settings rollout.EvalSettings
	output   string
	client   *server.Client
	agentURL rollout.AgentURLs
	capture  []*capture.Store
	tokens   *rollout.TokenCapture
	trackers *export.Trackers
	health   healthCheck
}

func runEvalRun(ctx context.Context, opts *runOptions) error {
	if opts.noServe && opts.config.builtinServers != "" {
		return usageErrorf("--builtin-servers chooses how gym starts servers; with --no-serve it starts none")
	}
	if opts.noServe && opts.config.agentType != "" {
		return usageErrorf("`--agent-type` chooses which agent runs the task, which is settled once the servers are running, so it cannot be combined with `--no-serve`. Use `--agent` to name one of them.")
	}
	if opts.IO.IsStderrTTY() && !opts.jsonProgress {
		// The bar, server lines, the rollout log and retry warnings all
		// write to stderr: one Screen owns the terminal, so no line lands
		// on the bar.
		screen := progress.NewScreen(opts.IO.ErrOut)
		shared := *opts
		shared.IO = opts.IO.WithErrOut(screen)
		opts = &shared
		defer screen.Flush()
	}
	res, roots, err := opts.ws.loadConfig(ctx, opts.IO.ErrOut, &opts.config, opts.globals.verbose, opts.tokens(), opts.passthrough, config.Request{})
	if err != nil {
		return err
	}
	s := config.Settings{Result: res}
	es, err := rollout.ReadEvalSettings(s, opts.noServe)
	if err != nil {
		return err
	}
	run := &evalRun{opts: opts, res: res, roots: roots, settings: es, output: roots.abs(es.Output)}
	if run.health, err = readHealthCheck(s); err != nil {
		return err
	}
	// Checked before any server starts: the model servers refuse the same
	// settings.
	if run.tokens, err = rollout.TokenCaptureFrom(s); err != nil {
		return err
	}
	if run.capture, err = rollout.CaptureStores(s); err != nil {
		return err
	}
	if run.trackers, err = export.FromConfig(s.Node); err != nil {
		return err
	}
	for _, k := range es.Ignored {
		fmt.Fprintf(opts.IO.ErrOut, "Warning: %s is set, but it is a NeMo Gym collection setting gym does not implement; it has no effect here\n", k)
	}
	runToken, _ := opts.ws.LookupEnv(server.RunTokenEnv)
	run.client = es.NewClient(res, runToken, opts.IO.ErrOut)
	if opts.noServe {
		run.agentURL = rollout.HeadAgentURLs(res, run.client)
		return run.tracked(ctx, func() error { return run.collect(ctx, roots.resolveExisting(es.Input), "--input") })
	}
	return run.tracked(ctx, func() error { return run.endToEnd(ctx) })
}

// tracked runs the evaluation inside its tracker run (MLflow), which gets
// the config (secrets masked) first and the evaluation's outcome last.
func (r *evalRun) tracked(ctx context.Context, evaluate func() error) error {
	errOut := r.opts.IO.ErrOut
	r.trackers.Warn = errOut
	if r.settings.Shard.Count > 1 && r.trackers.MLflow != nil {
		fmt.Fprintf(errOut, "Note: shard %s is not tracked in MLflow on its own; gym eval aggregate, which merges the shards, tracks the evaluation\n", r.settings.Shard)
		r.trackers.MLflow = nil
	}
	if masked, err := r.res.Resolved(true); err == nil {
		r.trackers.Start(ctx, masked)
	}
	err := evaluate()
	r.trackers.Finish(context.WithoutCancel(ctx), export.RunStatus(err))
	return err
}

// endToEnd collates the split, starts the servers, collects and stops.
func (r *evalRun) endToEnd(ctx context.Context) error {
	errOut, split := r.opts.IO.ErrOut, r.settings.Split
	if len(r.res.Instances) == 0 {
		return errors.New("no server instances are configured: give --benchmark, --environment, --resources-server or --config so there is something to run")
	}
	resolved, err := r.res.Resolved(false)
	if err != nil {
		return err
	}
	datasets, err := rollout.AgentDatasets(resolved)
	if err != nil {
		return err
	}
	collated := rollout.CollatePath(r.output, split)
	if _, statErr := os.Stat(collated); r.settings.ReuseCollation && statErr == nil {
		fmt.Fprintf(errOut, "Reusing the collated data in %s (%s=true)\n", collated, rollout.KeyReuseCollation)
	} else {
		fmt.Fprintf(errOut, "Collating the %s datasets into %s\n", split, collated)
		if err := rollout.Collate(ctx, rollout.CollateOptions{
			Datasets: datasets, Split: split, OutputPath: collated, Resolve: r.roots.find,
		}); err != nil {
			return err
		}
	}

	// A server that dies mid-run ends the collection: what finished is
	// kept and --resume finishes the rest once it is fixed.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	l, err := r.opts.ws.startForRun(ctx, cancel, r.res, r.roots, errOut)
	if err != nil {
		return err
	}
	defer l.Stop()
	if l.DryRun {
		return nil
	}
	r.agentURL = rollout.ConfigAgentURLs(r.res.Config)
	err = r.collect(ctx, collated, "collated "+split+" data")
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// collect materializes, collects and aggregates.
func (r *evalRun) collect(ctx context.Context, input, inputFlag string) error {
	ios, es := r.opts.IO, r.settings
	mo := rollout.MaterializeOptions{
		InputPath: input, InputFlag: inputFlag, Warnings: ios.ErrOut,
		AgentName: es.Agent, Limit: es.Limit, Shard: es.Shard, Repeats: es.Repeats,
		AddSeed: es.AddSeed, Interleave: es.InterleaveRepeats, Overrides: es.Overrides,
	}
	if es.PromptConfig != "" {
		var err error
		if mo.Prompt, err = rollout.LoadPrompt(r.roots.resolveExisting(es.PromptConfig)); err != nil {
			return err
		}
	}
	var agg rollout.Aggregator
	if !es.DisableAggregation {
		agg = rollout.AgentServers{Client: r.client, AgentURL: r.agentURL}
	}
	paths := rollout.PathsFor(r.output)
	_, err := rollout.Run(ctx, rollout.RunOptions{
		Paths:       paths,
		Materialize: mo,
		Collect: rollout.CollectOptions{
			MaxAttempts: rollout.MaxAttempts(r.opts.ws.LookupEnv, ios.ErrOut),
			Concurrency: es.Concurrency,
			AgentURL:    r.agentURL,
			Client:      r.client,
			Progress:    progress.New(progress.Options{Out: ios.ErrOut, Mode: ios.ProgressMode(r.opts.jsonProgress), Title: "Collecting rollouts"}),
			Log:         ios.ErrOut,
			Capture:     r.capture,
			Tokens:      r.tokens,
			GCBudget:    collectGCBudget(r.opts.ws.LookupEnv),
			Processors:  collectProcessors(r.opts.ws.LookupEnv),
		},
		Resume:     es.Resume,
		Aggregator: agg,
		Out:        ios.Out,
		Log:        ios.ErrOut,
	})
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(ios.ErrOut, "Interrupted: the finished rollouts are in %s; run the same command with --resume to finish.\n", r.output)
	}
	var failures *rollout.RequestFailuresError
	if err == nil || errors.As(err, &failures) {
		if !es.DisableAggregation {
			r.health.run(ctx, []string{paths.Output}, "", ios.Out, ios.ErrOut)
		}
		r.trackers.Report(context.WithoutCancel(ctx), paths.Output, paths.Metrics)
	}
	return err
}

// collectProcessors is how many threads run the collector's Go code: one,
// unless the user chose a number with GOMAXPROCS (the runtime ignores any
// other value, and so does this). The collector waits on its agents far
// more than it computes; with more threads than it keeps busy, Go's
// scheduler spends CPU waking and parking them.
func collectProcessors(lookupEnv func(string) (string, bool)) int {
	v, _ := lookupEnv("GOMAXPROCS")
	if n, err := strconv.ParseInt(v, 10, 32); err == nil && n > 0 {
		return 0
	}
	return 1
}

// collectGCBudget is the heap budget rollout collection runs with: a
// server's, unless the user chose with GOGC.
func collectGCBudget(lookupEnv func(string) (string, bool)) uint64 {
	if server.TunesGC(lookupEnv) {
		return server.HeapBudget
	}
	return 0
}
