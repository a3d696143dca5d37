package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
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

With compute.<name>.hostname naming another machine (an SSH destination),
the run directory is staged there over one SSH connection and sbatch runs
there; host: env values travel inside the connection, never in a file.

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
	o := submit.Options{
		Self: self, Version: f.Version, Shards: opts.shards, DryRun: opts.dryRun,
		Now: time.Now(), Out: f.IO.Out, LookupEnv: f.LookupEnv, IndexDir: submit.IndexDir(f.LookupEnv),
	}
	if !opts.dryRun {
		if o.Host, err = submit.OpenHost(ctx, c.Compute.Hostname); err != nil {
			return err
		}
		defer o.Host.Close()
	}
	rec, err := submit.Submit(ctx, c, o)
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

func newCmdEvalStatus(f *Factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [RUN_DIR|JOB_ID]",
		Short: "Show the Slurm state and progress of a submitted evaluation",
		Long: `Show, for each benchmark of a gym eval submit run, the Slurm state of every
shard (squeue, and sacct once squeue has forgotten a job) and the rollouts
it has written so far, and whether the merge has run. Name the run by its
directory or by any Slurm job id of it (looked up in the run directories
under this directory and its subdirectories, and in this machine's index
of its submissions, which also holds those made over SSH); without one,
the newest run there. A run on a login node is reached over SSH again.`,
		Example: `  gym eval status results/gym-job-20261201T120000Z-1a2b3c
  gym eval status 4242 --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rec, h, err := openSubmission(cmd.Context(), f, args)
			if err != nil {
				return err
			}
			defer h.Close()
			st, err := submit.QueryStatus(cmd.Context(), rec, h)
			if err != nil {
				return err
			}
			if asJSON {
				data, err := json.MarshalIndent(st, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintf(f.IO.Out, "%s\n", data)
				return nil
			}
			fmt.Fprintf(f.IO.Out, "Run directory: %s\n", st.RunDir)
			for _, b := range st.Benchmarks {
				fmt.Fprintf(f.IO.Out, "%s\n", b.Benchmark)
				for _, s := range b.Shards {
					total := "?"
					if s.Total > 0 {
						total = fmt.Sprint(s.Total)
					}
					reason := ""
					if s.Reason != "" {
						reason = " (" + s.Reason + ")"
					}
					fmt.Fprintf(f.IO.Out, "  shard %d  job %-10s %-10s %d/%s rollouts%s\n", s.Shard, s.JobID, s.State, s.Done, total, reason)
				}
				if b.AggregateJobID != "" {
					merged := "not yet merged"
					if b.Merged {
						merged = "merged into artifacts/rollouts.jsonl"
					}
					fmt.Fprintf(f.IO.Out, "  merge    job %-10s %-10s %s\n", b.AggregateJobID, b.AggregateState, merged)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

func newCmdEvalCancel(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel RUN_DIR|JOB_ID",
		Short: "Cancel every Slurm job of a submitted evaluation",
		Long: `Cancel (scancel) every job of a gym eval submit run: each benchmark's job or
array of shards and the merge waiting for it. Slurm ends every process the
jobs started on the nodes.`,
		Example: `  gym eval cancel results/gym-job-20261201T120000Z-1a2b3c`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rec, h, err := openSubmission(cmd.Context(), f, args)
			if err != nil {
				return err
			}
			defer h.Close()
			ids, err := submit.Cancel(cmd.Context(), rec, h)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "Cancelled Slurm jobs %s of %s\n", strings.Join(ids, ", "), rec.RunDir)
			return nil
		},
	}
}

// openSubmission reads the record args name and connects to the host
// that holds its run.
func openSubmission(ctx context.Context, f *Factory, args []string) (*submit.Record, submit.Host, error) {
	rec, err := findSubmission(f, args)
	if err != nil {
		return nil, nil, err
	}
	hostname := ""
	if rec.Hostname != nil {
		hostname = *rec.Hostname
	}
	h, err := submit.OpenHost(ctx, hostname)
	return rec, h, err
}

// findSubmission reads the record args name, or the newest under the
// current directory or submitted from this machine.
func findSubmission(f *Factory, args []string) (*submit.Record, error) {
	cwd, err := f.Getwd()
	if err != nil {
		return nil, err
	}
	ref := ""
	if len(args) == 1 {
		ref = args[0]
	}
	return submit.Locate(ref, cwd, submit.IndexDir(f.LookupEnv))
}
