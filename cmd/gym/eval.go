package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nemo-gym-go/gym/internal/capture"
	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/export"
	"github.com/nemo-gym-go/gym/internal/launcher"
	"github.com/nemo-gym-go/gym/internal/progress"
	"github.com/nemo-gym-go/gym/internal/resolve"
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
	cmd.AddCommand(newCmdEvalPrepare(f, g), newCmdEvalRun(f, g), newCmdEvalAggregate(f, g), newCmdEvalProfile(f), newCmdEvalSubmit(f), newCmdEvalStatus(f), newCmdEvalCancel(f), newCmdEvalExport(f))
	makeGroup(cmd)
	return cmd
}

// runOptions are the inputs of `gym eval run`.
type runOptions struct {
	f       *Factory
	globals *globalFlags
	config  configFlags
	noServe bool
	// Flags that become config keys; set only when given.
	resume, disableAggregation, jsonProgress bool
	agent, input, output, numRepeats         string
	promptConfig, split, shard               string
	limit, concurrency, maxRetries           int
	temperature, topP                        float64
	maxOutputTokens                          int
	timeout                                  time.Duration
	flags                                    *pflag.FlagSet
	passthrough                              []string
}

// The config keys of `gym eval run`, NeMo Gym's names, plus gym's own for
// the per-rollout timeout and retries.
const (
	keyResume             = "resume_from_cache"
	keyAgent              = "agent_name"
	keyInput              = "input_jsonl_fpath"
	keyOutput             = "output_jsonl_fpath"
	keyLimit              = "limit"
	keyShard              = "shard"
	keyNumRepeats         = "num_repeats"
	keyAddSeed            = "num_repeats_add_seed"
	keyPromptConfig       = "prompt_config"
	keyConcurrency        = "num_samples_in_parallel"
	keySplit              = "split"
	keyDisableAggregation = "disable_aggregation"
	keyReuseCollation     = "reuse_existing_data_preparation"
	keyParams             = "responses_create_params"
	keyTimeout            = "rollout_timeout_seconds"
	keyMaxRetries         = "rollout_max_retries"
	keySkills             = "skills"
	keyDriver             = "rollout_collection_driver"
	maxAttemptsEnv        = "NEMO_GYM_MAX_ROLLOUT_ATTEMPTS"
	defaultMaxAttempts    = 3
	defaultConcurrency    = 256
	defaultTimeout        = 3 * time.Hour
	defaultMaxRetries     = 3
)

func newCmdEvalRun(f *Factory, g *globalFlags) *cobra.Command {
	opts := &runOptions{f: f, globals: g}
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
			return runEvalRun(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	opts.config.register(fs)
	opts.config.registerBuiltinServers(fs)
	fs.BoolVar(&opts.noServe, "no-serve", false, "collect against servers already started with 'gym env start'")
	fs.BoolVar(&opts.resume, "resume", false, "continue an earlier run of the same output: run only the rollouts it is missing")
	fs.StringVarP(&opts.agent, "agent", "a", "", "agent instance for rows without an agent_ref (agent_name)")
	fs.StringVarP(&opts.input, "input", "i", "", "input JSONL (input_jsonl_fpath); replaced by the collated split without --no-serve")
	fs.StringVarP(&opts.output, "output", "o", "", "output JSONL of the rollouts (output_jsonl_fpath); required")
	fs.IntVar(&opts.limit, "limit", 0, "use only the first N input rows (limit)")
	fs.StringVar(&opts.shard, "shard", "", "run only part `I/N` of the tasks, those whose index % N is I, such as 2/4 (shard)")
	fs.StringVar(&opts.numRepeats, "num-repeats", "", "rollouts per row: N, or a map such as '{my_agent: 4, _default: 1}' (num_repeats)")
	fs.StringVar(&opts.promptConfig, "prompt-config", "", "prompt YAML {system, user} rendered from each row's fields (prompt_config)")
	fs.IntVar(&opts.concurrency, "concurrency", 0, fmt.Sprintf("rollouts in flight at once (num_samples_in_parallel; default %d)", defaultConcurrency))
	fs.StringVar(&opts.split, "split", "", "dataset type to collect without --no-serve: train, validation or benchmark (split)")
	fs.Float64Var(&opts.temperature, "temperature", 0, "sampling temperature for every row (responses_create_params.temperature)")
	fs.Float64Var(&opts.topP, "top-p", 0, "nucleus sampling for every row (responses_create_params.top_p)")
	fs.IntVar(&opts.maxOutputTokens, "max-output-tokens", 0, "output token cap for every row (responses_create_params.max_output_tokens)")
	fs.BoolVar(&opts.disableAggregation, "disable-aggregation", false, "skip the metrics; compute them later with 'gym eval aggregate'")
	fs.BoolVar(&opts.jsonProgress, "json-progress", false, "progress as one JSON object per line on stderr")
	fs.DurationVar(&opts.timeout, "timeout", 0, fmt.Sprintf("time limit of one rollout attempt (rollout_timeout_seconds; default %s)", defaultTimeout))
	fs.IntVar(&opts.maxRetries, "max-retries", 0, fmt.Sprintf("retries of a rollout whose /run fails transiently, within one run (rollout_max_retries; default %d)", defaultMaxRetries))
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
	set("resume", keyResume, "true")
	set("agent", keyAgent, override.Quote(o.agent))
	set("input", keyInput, override.Quote(o.input))
	set("output", keyOutput, override.Quote(o.output))
	set("limit", keyLimit, strconv.Itoa(o.limit))
	set("shard", keyShard, override.Quote(o.shard))
	numRepeats := strings.TrimSpace(o.numRepeats)
	if !strings.HasPrefix(numRepeats, "{") {
		numRepeats = override.Quote(numRepeats)
	}
	set("num-repeats", keyNumRepeats, numRepeats)
	set("prompt-config", keyPromptConfig, override.Quote(o.promptConfig))
	set("concurrency", keyConcurrency, strconv.Itoa(o.concurrency))
	set("split", keySplit, override.Quote(o.split))
	set("temperature", keyParams+".temperature", strconv.FormatFloat(o.temperature, 'g', -1, 64))
	set("top-p", keyParams+".top_p", strconv.FormatFloat(o.topP, 'g', -1, 64))
	set("max-output-tokens", keyParams+".max_output_tokens", strconv.Itoa(o.maxOutputTokens))
	set("disable-aggregation", keyDisableAggregation, "true")
	set("timeout", keyTimeout, strconv.FormatFloat(o.timeout.Seconds(), 'g', -1, 64))
	set("max-retries", keyMaxRetries, strconv.Itoa(o.maxRetries))
	return t
}

// evalRun is one `gym eval run` after its config is read.
type evalRun struct {
	f        *Factory
	res      *config.Result
	roots    commandRoots
	s        settings
	output   string
	resume   bool
	shard    rollout.Shard
	client   *server.Client
	agentURL func(ctx context.Context, agent string) (string, error)
	capture  []*capture.Store
	tokens   *rollout.TokenCapture
	trackers *export.Trackers
}

func runEvalRun(ctx context.Context, opts *runOptions) error {
	f := opts.f
	if opts.noServe && opts.config.builtinServers != "" {
		return usageErrorf("--builtin-servers chooses how gym starts servers; with --no-serve it starts none")
	}
	if f.ErrIsTerminal && !opts.jsonProgress {
		// The bar, server lines, the rollout log and retry warnings all
		// write to stderr: one Screen owns the terminal, so no line lands
		// on the bar.
		screen := progress.NewScreen(f.IO.ErrOut)
		shared := *f
		shared.IO.ErrOut = screen
		opts.f, f = &shared, &shared
		defer screen.Flush()
	}
	res, roots, err := f.loadConfig(ctx, &opts.config, opts.globals.verbose, opts.tokens(), opts.passthrough, config.Request{})
	if err != nil {
		return err
	}
	s := settings{res}
	output, err := s.str(keyOutput)
	if err != nil {
		return err
	}
	split, err := s.str(keySplit)
	if err != nil {
		return err
	}
	var missing []string
	if output == "" {
		missing = append(missing, keyOutput)
	}
	if !opts.noServe && split == "" {
		missing = append(missing, keySplit)
	}
	if len(missing) > 0 {
		return missingConfig(missing...)
	}
	if driver, _ := s.str(keyDriver); driver != "" {
		return fmt.Errorf("%s=%s names a Python collection function; gym collects natively and cannot call it", keyDriver, driver)
	}
	if n, _ := s.node(keySkills); n != nil {
		return fmt.Errorf("%s is set, but gym does not support agent skills yet; remove it to collect without them", keySkills)
	}
	run := &evalRun{f: f, res: res, roots: roots, s: s, output: roots.abs(output)}
	if run.resume, err = s.boolean(keyResume); err != nil {
		return err
	}
	if run.shard, err = readShard(s); err != nil {
		return err
	}
	// Checked before any server starts: the model servers refuse the same
	// settings.
	if run.tokens, err = tokenCapture(s); err != nil {
		return err
	}
	if run.capture, err = captureStores(s); err != nil {
		return err
	}
	if run.trackers, err = export.FromConfig(s.node); err != nil {
		return err
	}
	for _, k := range rollout.NeMoGymOnlyKeys {
		if n, _ := s.node(k); n != nil {
			fmt.Fprintf(f.IO.ErrOut, "Warning: %s is set, but it is a NeMo Gym collection setting gym does not implement; it has no effect here\n", k)
		}
	}
	if run.client, err = rolloutClient(f, s); err != nil {
		return err
	}
	if opts.noServe {
		input, err := s.str(keyInput)
		if err != nil {
			return err
		}
		if input == "" {
			return missingConfig(keyInput)
		}
		run.agentURL = headAgentURLs(res, run.client)
		return run.tracked(ctx, func() error { return run.collect(ctx, opts, roots.resolveExisting(input), "--input") })
	}
	return run.tracked(ctx, func() error { return run.endToEnd(ctx, opts, split) })
}

// tracked runs the evaluation inside its tracker run (MLflow), which gets
// the config (secrets masked) first and the evaluation's outcome last.
func (r *evalRun) tracked(ctx context.Context, evaluate func() error) error {
	r.trackers.Warn = r.f.IO.ErrOut
	if r.shard.Count > 1 && r.trackers.MLflow != nil {
		fmt.Fprintf(r.f.IO.ErrOut, "Note: shard %s is not tracked in MLflow on its own; gym eval aggregate, which merges the shards, tracks the evaluation\n", r.shard)
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
func (r *evalRun) endToEnd(ctx context.Context, opts *runOptions, split string) error {
	f := r.f
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
	reuse, err := r.s.boolean(keyReuseCollation)
	if err != nil {
		return err
	}
	if _, statErr := os.Stat(collated); reuse && statErr == nil {
		fmt.Fprintf(f.IO.ErrOut, "Reusing the collated data in %s (%s=true)\n", collated, keyReuseCollation)
	} else {
		fmt.Fprintf(f.IO.ErrOut, "Collating the %s datasets into %s\n", split, collated)
		if err := rollout.Collate(ctx, rollout.CollateOptions{
			Datasets: datasets, Split: split, OutputPath: collated, Resolve: r.roots.find,
		}); err != nil {
			return err
		}
	}

	// Server lines go to stderr, plain: stdout carries the results.
	lopts, err := f.launchOptions(r.res, r.roots, f.IO.ErrOut, false, defaultShutdownGrace)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	l, err := launcher.Start(ctx, lopts)
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(f.IO.ErrOut, "Interrupted while starting the servers; every server stopped.")
		return err
	}
	if err != nil {
		return err
	}
	defer l.Stop()
	if l.DryRun {
		return nil
	}
	// A server that dies mid-run ends the collection: what finished is
	// kept and --resume finishes the rest once it is fixed.
	go func() {
		if err := l.Wait(ctx); err != nil {
			cancel(err)
		}
	}()
	r.agentURL = configAgentURLs(r.res.Config)
	err = r.collect(ctx, opts, collated, "collated "+split+" data")
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// collect materializes, collects and aggregates.
func (r *evalRun) collect(ctx context.Context, opts *runOptions, input, inputFlag string) error {
	f, s := r.f, r.s
	mo := rollout.MaterializeOptions{InputPath: input, InputFlag: inputFlag, Warnings: f.IO.ErrOut}
	var err error
	if mo.AgentName, err = s.str(keyAgent); err != nil {
		return err
	}
	if mo.Limit, err = s.integer(keyLimit, 0); err != nil {
		return err
	}
	if mo.Limit < 0 {
		return fmt.Errorf("invalid configuration: %s must not be negative, got %d", keyLimit, mo.Limit)
	}
	mo.Shard = r.shard
	if mo.Repeats, err = r.repeats(); err != nil {
		return err
	}
	if mo.AddSeed, err = s.boolean(keyAddSeed); err != nil {
		return err
	}
	if mo.Overrides, err = s.object(keyParams); err != nil {
		return err
	}
	promptPath, err := s.str(keyPromptConfig)
	if err != nil {
		return err
	}
	if promptPath != "" {
		if mo.Prompt, err = rollout.LoadPrompt(r.roots.resolveExisting(promptPath)); err != nil {
			return err
		}
	}
	concurrency, err := s.integer(keyConcurrency, defaultConcurrency)
	if err != nil {
		return err
	}
	if concurrency < 1 {
		return fmt.Errorf("invalid configuration: %s must be at least 1, got %d", keyConcurrency, concurrency)
	}
	disable, err := s.boolean(keyDisableAggregation)
	if err != nil {
		return err
	}
	var agg rollout.Aggregator
	if !disable {
		agg = rollout.AgentServers{Client: r.client, AgentURL: r.agentURL}
	}
	mode := progress.Plain
	switch {
	case opts.jsonProgress:
		mode = progress.JSON
	case f.ErrIsTerminal:
		mode = progress.Terminal
	}
	_, err = rollout.Run(ctx, rollout.RunOptions{
		Paths:       rollout.PathsFor(r.output),
		Materialize: mo,
		Collect: rollout.CollectOptions{
			MaxAttempts: maxAttempts(f),
			Concurrency: concurrency,
			AgentURL:    r.agentURL,
			Client:      r.client,
			Progress:    progress.New(progress.Options{Out: f.IO.ErrOut, Mode: mode, Title: "Collecting rollouts"}),
			Log:         f.IO.ErrOut,
			Capture:     r.capture,
			Tokens:      r.tokens,
		},
		Resume:     r.resume,
		Aggregator: agg,
		Out:        f.IO.Out,
		Log:        f.IO.ErrOut,
	})
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(f.IO.ErrOut, "Interrupted: the finished rollouts are in %s; run the same command with --resume to finish.\n", r.output)
	}
	var failures *rollout.RequestFailuresError
	if err == nil || errors.As(err, &failures) {
		paths := rollout.PathsFor(r.output)
		r.trackers.Report(context.WithoutCancel(ctx), paths.Output, paths.Metrics)
	}
	return err
}

// readShard reads shard, the I/N of --shard; unset is the whole run. It is
// read before anything is collated or started, so a bad value costs
// nothing.
func readShard(s settings) (rollout.Shard, error) {
	n, err := s.node(keyShard)
	if err != nil || n == nil {
		return rollout.Shard{}, err
	}
	text := describeValue(n)
	if n.Kind == tree.String {
		text = n.Str
	}
	shard, err := rollout.ParseShard(text)
	if err != nil {
		return rollout.Shard{}, usageErrorf("invalid configuration: %s (--shard) is %s: %v", keyShard, describeValue(n), err)
	}
	return shard, nil
}

// repeats reads num_repeats: an int, or a map of agent → int with _default.
func (r *evalRun) repeats() (rollout.Repeats, error) {
	n, err := r.s.node(keyNumRepeats)
	if err != nil || n == nil {
		return rollout.Repeats{All: 1}, err
	}
	if n.Kind == tree.Map {
		per := map[string]int{}
		for _, e := range n.Entries {
			switch {
			case e.Value.Kind == tree.Null:
				per[e.Key] = 1
			case e.Value.Kind == tree.Int && e.Value.Int >= 1:
				per[e.Key] = int(e.Value.Int)
			default:
				return rollout.Repeats{}, fmt.Errorf("invalid configuration: %s.%s must be an integer of at least 1, got %s", keyNumRepeats, e.Key, describeValue(e.Value))
			}
		}
		return rollout.Repeats{PerAgent: per}, nil
	}
	v, err := r.s.integer(keyNumRepeats, 1)
	if err != nil {
		return rollout.Repeats{}, err
	}
	if v < 1 {
		return rollout.Repeats{}, fmt.Errorf("invalid configuration: %s must be at least 1, got %d", keyNumRepeats, v)
	}
	return rollout.Repeats{All: v}, nil
}

// rolloutClient is the client of agents' /run and /aggregate_metrics, with
// the per-rollout timeout and retries the config sets.
func rolloutClient(f *Factory, s settings) (*server.Client, error) {
	timeout, err := s.number(keyTimeout, defaultTimeout.Seconds())
	if err != nil {
		return nil, err
	}
	retries, err := s.integer(keyMaxRetries, defaultMaxRetries)
	if err != nil {
		return nil, err
	}
	if timeout < 0 || retries < 0 {
		return nil, fmt.Errorf("invalid configuration: %s and %s must not be negative", keyTimeout, keyMaxRetries)
	}
	if retries == 0 {
		retries = -1 // the client reads 0 as "its default"
	}
	// From another machine, the run's servers answer only with its token.
	token, _ := f.LookupEnv(server.RunTokenEnv)
	return server.NewClient(server.ClientOptions{
		Timeout:    time.Duration(timeout * float64(time.Second)),
		MaxRetries: retries,
		RunToken:   token,
		RunServers: server.RunServers(s.res.Config, s.res.LookupEnv),
		Logger:     slog.New(slog.NewTextHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}), nil
}

// maxAttempts reads NEMO_GYM_MAX_ROLLOUT_ATTEMPTS; a bad value warns and
// falls back to 3, as in NeMo Gym.
func maxAttempts(f *Factory) int {
	v, ok := f.LookupEnv(maxAttemptsEnv)
	if !ok || v == "" {
		return defaultMaxAttempts
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		fmt.Fprintf(f.IO.ErrOut, "Warning: %s=%q is not a positive integer; using %d\n", maxAttemptsEnv, v, defaultMaxAttempts)
		return defaultMaxAttempts
	}
	return n
}

// configAgentURLs finds agents in a config whose ports are assigned.
func configAgentURLs(global *tree.Node) func(context.Context, string) (string, error) {
	var cache sync.Map
	return func(_ context.Context, agent string) (string, error) {
		if u, ok := cache.Load(agent); ok {
			return u.(string), nil
		}
		if n := global.Get(agent); n == nil || n.Kind != tree.Map || n.Get("responses_api_agents") == nil {
			var known []string
			for _, e := range global.Entries {
				if e.Value.Kind == tree.Map && e.Value.Get("responses_api_agents") != nil {
					known = append(known, e.Key)
				}
			}
			return "", fmt.Errorf("no agent server instance is named %q; the config has %s.%s", agent, strings.Join(known, ", "), resolve.DidYouMean(agent, known))
		}
		u, err := server.ServerURL(global, agent)
		if err != nil {
			return "", err
		}
		cache.Store(agent, u)
		return u, nil
	}
}

// headAgentURLs finds agents through the head server of servers started by
// `gym env start`, as NeMo Gym's --no-serve collector does.
func headAgentURLs(res *config.Result, client *server.Client) func(context.Context, string) (string, error) {
	var (
		once   sync.Once
		lookup func(context.Context, string) (string, error)
		err    error
	)
	return func(ctx context.Context, agent string) (string, error) {
		once.Do(func() {
			var global *tree.Node
			global, err = launcher.NewHeadClient(res).Config(ctx)
			if err == nil {
				lookup = configAgentURLs(global)
				// The servers are the head server's, which the local config
				// may not name: they get the run token (if any) too.
				client.TrustServers(server.RunServers(global, res.LookupEnv))
			}
		})
		if err != nil {
			return "", err
		}
		return lookup(ctx, agent)
	}
}

// abs makes a path the user typed absolute against the working directory.
func (r commandRoots) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(r.cwd, p)
}

// resolveExisting finds a read path over the search roots; a path found
// nowhere comes back anchored at the working directory, so errors name
// the user's own location.
func (r commandRoots) resolveExisting(p string) string {
	if found := r.find(p); found != "" {
		return found
	}
	return r.abs(p)
}

// find is where a read path exists over the search roots; "" if nowhere.
func (r commandRoots) find(p string) string {
	found := r.Roots.Resolve(p)
	if !filepath.IsAbs(found) {
		found = filepath.Join(r.cwd, found)
	}
	if _, err := os.Stat(found); err == nil {
		return found
	}
	return ""
}
