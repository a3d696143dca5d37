package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/submit"
)

type submitOptions struct {
	f      *Factory
	config string
	dryRun bool
	json   bool
	shards int
}

func newCmdEvalSubmit(f *Factory) *cobra.Command {
	opts := &submitOptions{f: f}
	cmd := &cobra.Command{
		Use:   "submit --config SUBMIT.yaml [--dry-run] [--shards N] [+key=value ...]",
		Short: "Submit evaluations to a Slurm cluster",
		Long: `Read NeMo Gym's submit config (services, one Slurm compute, the driver's
benchmarks, job.output_path), stage <output_path>/gym-job-<time>-<id>/ with
this gym binary and one <benchmark>/ directory per benchmark (job.sh, logs/,
artifacts/), and submit each benchmark with sbatch. Jobs run this same
binary on the nodes: nothing needs installing on the cluster; a service or
the driver runs in a container only when it names one (Pyxis).

--shards N splits each evaluation into an array job of N tasks, each a
gym eval run over its slice of the rows; a pre-empted or requeued task
resumes its own shard, and a job that waits for every task to succeed
merges the shards into artifacts/rollouts.jsonl with their metrics.`,
		Example: `  cat > submit.yaml <<'EOF'
  services: {}
  compute:
    cluster: {type: slurm, account: my-account, walltime: "01:00:00"}
  driver:
    policy_model_type: replay_model
    benchmarks:
      mcqa: {run: {config_paths: [benchmarks/mcqa_example/config.yaml], split: benchmark}}
  job: {output_path: results}
  EOF
  gym eval submit --config submit.yaml --shards 4 --dry-run`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.config == "" {
				return usageErrorf("the following arguments are required: --config/-c")
			}
			if opts.shards < 1 {
				return usageErrorf("argument --shards: must be at least 1, got %d", opts.shards)
			}
			return runEvalSubmit(cmd.Context(), opts, args)
		},
	}
	cmd.Flags().StringVarP(&opts.config, "config", "c", "", "the submit config YAML (required)")
	cmd.Flags().BoolVar(&opts.dryRun, "dry-run", false, "print the job scripts without staging or submitting anything")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the submission record as JSON")
	cmd.Flags().IntVar(&opts.shards, "shards", 1, "split each evaluation into an array job of N tasks")
	return cmd
}

func runEvalSubmit(ctx context.Context, opts *submitOptions, overrides []string) error {
	f := opts.f
	cwd, err := f.Getwd()
	if err != nil {
		return err
	}
	path := opts.config
	if !filepath.IsAbs(path) {
		path = filepath.Join(cwd, path)
	}
	c, err := submit.Load(path, overrides, f.LookupEnv)
	if err != nil {
		return err
	}
	for _, w := range c.IdleGPUs() {
		fmt.Fprintln(f.IO.ErrOut, "Warning:", w)
	}
	self, err := f.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the gym binary to stage for the jobs: %w", err)
	}
	rec, err := submit.Submit(ctx, c, submit.Options{
		Self: self, Version: f.Version, Shards: opts.shards, DryRun: opts.dryRun,
		Now: time.Now(), Out: f.IO.Out, Slurm: submit.RunSlurm,
	})
	if err != nil || rec == nil {
		return err
	}
	if opts.json {
		data, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(f.IO.Out, "%s\n", data)
		return nil
	}
	fmt.Fprintf(f.IO.Out, "Run directory: %s\n", rec.RunDir)
	for _, b := range rec.Benchmarks {
		if b.AggregateJobID != "" {
			fmt.Fprintf(f.IO.Out, "submitted %s → Slurm job %s (%d shards), merged by job %s\n", b.Benchmark, b.JobID, b.Shards, b.AggregateJobID)
		} else {
			fmt.Fprintf(f.IO.Out, "submitted %s → Slurm job %s\n", b.Benchmark, b.JobID)
		}
	}
	return nil
}
