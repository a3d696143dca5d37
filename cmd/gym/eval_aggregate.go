package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/export"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/rollout"
	"github.com/nemo-gym-go/gym/internal/server"
)

type aggregateOptions struct {
	IO          *iostreams.IOStreams
	ws          *workspace
	globals     *globalFlags
	config      configFlags
	inputs      string
	output      string
	servers     bool
	health      healthFlags
	passthrough []string
	flags       *pflag.FlagSet
}

// keyInputGlob is NeMo Gym's key for the shards to aggregate.
const keyInputGlob = "input_glob"

func newCmdEvalAggregate(f *Factory, g *globalFlags, runF func(context.Context, *aggregateOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEvalAggregate
	}
	opts := &aggregateOptions{IO: f.IOStreams, ws: f.Workspace, globals: g}
	cmd := &cobra.Command{
		Use:   "aggregate --input-glob GLOB[,GLOB...] -o OUT [flags] [+key=value ...]",
		Short: "Merge rollout shards and compute their aggregate metrics",
		Long: `Read every rollouts file the globs match (comma-separated; each glob's matches
sorted, duplicates dropped), sort the rollouts by task and rollout, write them
to OUT (unless +merge_shards=false) and compute each agent's metrics into
<OUT stem>_aggregate_metrics.json.

The metrics are computed in this process by the agent's resources server,
built into gym, so no server needs to run: give the same --benchmark/--config
the rollouts were collected with. An agent the config does not name, or whose
resources server is not a Go one, gets the baseline reward statistics only.
With --servers, running servers (gym env start) compute them, as in NeMo Gym.`,
		Example: `  # Shards of a split run, merged and scored offline
  gym eval run --benchmark mcqa_example --model-type replay_model \
    --split benchmark --shard 0/2 -o results/shard_0.jsonl
  gym eval run --benchmark mcqa_example --model-type replay_model \
    --split benchmark --shard 1/2 -o results/shard_1.jsonl
  gym eval aggregate --benchmark mcqa_example --input-glob 'results/shard_*.jsonl' -o results/all.jsonl

  # The same with NeMo Gym's keys
  gym eval aggregate --benchmark mcqa_example +input_glob='results/shard_*.jsonl' +output_jsonl_fpath=results/all.jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.passthrough = args
			return runF(cmd.Context(), opts)
		},
	}
	opts.config.register(cmd.Flags())
	cmd.Flags().StringVarP(&opts.inputs, "input-glob", "i", "", "rollouts files: globs separated by commas (input_glob; required)")
	cmd.Flags().StringVar(&opts.inputs, "input", "", "the same as --input-glob")
	_ = cmd.Flags().MarkHidden("input")
	cmd.Flags().StringVarP(&opts.output, "output", "o", "", "merged rollouts file to write (output_jsonl_fpath; required)")
	opts.health.register(cmd.Flags())
	opts.flags = cmd.Flags()
	cmd.Flags().BoolVar(&opts.servers, "servers", false, "ask the running servers (through the head server) instead of computing in process")
	return cmd
}

func runEvalAggregate(ctx context.Context, opts *aggregateOptions) error {
	var own []string
	if opts.flags != nil && (opts.flags.Changed("input-glob") || opts.flags.Changed("input")) {
		own = append(own, "++"+keyInputGlob+"="+override.Quote(opts.inputs))
	}
	if opts.flags != nil && opts.flags.Changed("output") {
		own = append(own, "++"+rollout.KeyOutput+"="+override.Quote(opts.output))
	}
	if opts.flags != nil {
		own = append(own, opts.health.tokens(opts.flags)...)
	}
	res, roots, err := opts.ws.loadConfig(ctx, opts.IO.ErrOut, &opts.config, opts.globals.verbose, own, opts.passthrough, config.Request{Seed: dummyPolicy()})
	if err != nil {
		return err
	}
	s := config.Settings{Result: res}
	hc, err := readHealthCheck(s)
	if err != nil {
		return err
	}
	inputs, err := s.String(keyInputGlob)
	if err != nil {
		return err
	}
	outputPath, err := s.String(rollout.KeyOutput)
	if err != nil {
		return err
	}
	var missing []string
	if inputs == "" {
		missing = append(missing, keyInputGlob)
	}
	if outputPath == "" {
		missing = append(missing, rollout.KeyOutput)
	}
	if len(missing) > 0 {
		return &config.MissingSettingsError{Keys: missing}
	}
	merge := true
	if n, _ := s.Node("merge_shards"); n != nil {
		merge = config.Truthy(n)
	}
	files, skipped, err := expandGlobs(inputs, roots)
	if err != nil {
		return err
	}
	if len(skipped) > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "Note: skipped %d of gym's own side files the globs matched: %s\n", len(skipped), strings.Join(skipped, ", "))
	}
	output := roots.abs(outputPath)
	// NeMo Gym makes the output's directory, so a fresh results folder works.
	if err := os.MkdirAll(filepath.Dir(output), 0o777); err != nil {
		return err
	}
	if merge {
		n, err := rollout.MergeShards(files, output)
		if err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.Out, "Merged %d rollouts from %d files into %s:\n", n, len(files), output)
		for _, file := range files {
			fmt.Fprintf(opts.IO.Out, "  %s\n", file)
		}
	}
	// The metrics cover what was merged: OUT may itself be among the
	// inputs, and is overwritten by then.
	if merge {
		files = []string{output}
	}
	path := rollout.PathsFor(output).Metrics
	rows, err := rollout.ReadMetricsRows(filepath.Dir(path), files...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var agg rollout.Aggregator
	if opts.servers {
		cs, err := rollout.ReadClientSettings(s)
		if err != nil {
			return err
		}
		runToken, _ := opts.ws.LookupEnv(server.RunTokenEnv)
		client := cs.NewClient(res, runToken, opts.IO.ErrOut)
		agg = rollout.AgentServers{Client: client, AgentURL: rollout.HeadAgentURLs(res, client)}
	} else {
		agg = rollout.InProcess{Handler: rollout.ResourcesServerMetrics(res, opts.ws.LookupEnv, opts.IO.ErrOut)}
	}
	trackers, err := export.FromConfig(s.Node)
	if err != nil {
		return err
	}
	if _, err := rollout.WriteAggregateMetrics(ctx, rows, agg, path, opts.IO.Out); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "Aggregate metrics: %s\n", path)
	// What was aggregated is checked: the merged file, else the shards.
	hc.run(ctx, files, filepath.Dir(output), opts.IO.Out, opts.IO.ErrOut)
	// The merged evaluation is what a tracker gets: the shards of a
	// sharded run are not tracked on their own.
	if trackers.MLflow != nil {
		trackers.Warn = opts.IO.ErrOut
		if masked, err := res.Resolved(true); err == nil {
			trackers.Start(ctx, masked)
		}
		trackers.Report(ctx, output, path)
		trackers.Finish(context.WithoutCancel(ctx), "FINISHED")
	}
	return nil
}

// expandGlobs expands comma-separated globs against the working directory:
// each glob's matches sorted, first-seen order kept across globs. The side
// files gym writes beside rollouts (materialized inputs, failures, reward
// profiles) are never rollouts: a glob's matches leave them out (and they
// are returned as skipped), and naming one outright is an error.
func expandGlobs(list string, roots commandRoots) (files, skipped []string, err error) {
	seen := map[string]bool{}
	for _, pattern := range strings.Split(list, ",") {
		pattern = strings.TrimSpace(pattern)
		if pattern == "" {
			continue
		}
		matches, err := filepath.Glob(roots.abs(pattern))
		if err != nil {
			return nil, nil, fmt.Errorf("bad glob %q: %w", pattern, err)
		}
		if len(matches) == 0 {
			return nil, nil, fmt.Errorf("no file matches %q (input_glob)", pattern)
		}
		literal := len(matches) == 1 && matches[0] == roots.abs(pattern)
		if literal && rollout.IsSideFile(matches[0]) {
			return nil, nil, fmt.Errorf("%s is a file gym writes beside a run's rollouts, not rollouts (input_glob)", matches[0])
		}
		for _, m := range matches {
			switch {
			case seen[m]:
			case rollout.IsSideFile(m):
				skipped = append(skipped, m)
			default:
				files = append(files, m)
			}
			seen[m] = true
		}
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("input_glob %q matches no rollouts file", list)
	}
	return files, skipped, nil
}
