package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/submit"
)

type submitOptions struct {
	IO          *iostreams.IOStreams
	ws          *workspace
	version     string
	config      string
	dryRun      bool
	resolveOnly bool
	json        bool
	shards      int
	overrides   []string
}

func newCmdEvalSubmit(f *Factory, runF func(context.Context, *submitOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEvalSubmit
	}
	opts := &submitOptions{IO: f.IOStreams, ws: f.Workspace, version: f.Version}
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
			opts.overrides = args
			return runF(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.config, "config", "c", "", "the submit config YAML (required)")
	cmd.Flags().BoolVar(&opts.dryRun, "dry-run", false, "print the job scripts without staging or submitting anything")
	cmd.Flags().BoolVar(&opts.resolveOnly, "resolve-only", false, "compose, resolve and validate the submit config, print it (YAML, or JSON with --json; secrets masked) and stop before any job script is rendered")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the submission record (with --resolve-only, the resolved config) as JSON")
	cmd.Flags().IntVar(&opts.shards, "shards", 1, "split each evaluation into an array job of N tasks")
	return cmd
}

func runEvalSubmit(ctx context.Context, opts *submitOptions) error {
	ws, out := opts.ws, opts.IO.Out
	cwd, err := ws.Getwd()
	if err != nil {
		return err
	}
	c, err := submit.Load(commandRoots{cwd: cwd}.abs(opts.config), opts.overrides, ws.LookupEnv)
	if err != nil {
		return err
	}
	if opts.resolveOnly {
		return printResolvedSubmit(out, c, opts.json)
	}
	for _, w := range c.IdleGPUs() {
		fmt.Fprintln(opts.IO.ErrOut, "Warning:", w)
	}
	self, err := ws.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the gym binary to stage for the jobs: %w", err)
	}
	o := submit.Options{
		Self: self, Version: opts.version, Shards: opts.shards, DryRun: opts.dryRun,
		Now: time.Now(), Out: out, LookupEnv: ws.LookupEnv, IndexDir: submit.IndexDir(ws.LookupEnv),
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
		return writeJSONIndent(out, rec)
	}
	fmt.Fprintf(out, "Run directory: %s\n", rec.RunDir)
	for _, b := range rec.Benchmarks {
		if b.AggregateJobID != "" {
			fmt.Fprintf(out, "submitted %s → Slurm job %s (%d shards), merged by job %s\n", b.Benchmark, b.JobID, b.Shards, b.AggregateJobID)
		} else {
			fmt.Fprintf(out, "submitted %s → Slurm job %s\n", b.Benchmark, b.JobID)
		}
	}
	return nil
}

// printResolvedSubmit prints the submit config as validated, secrets masked.
func printResolvedSubmit(out io.Writer, c *submit.Config, asJSON bool) error {
	resolved := config.Masked(c.Resolved)
	if !asJSON {
		_, err := io.WriteString(out, config.Dump(resolved))
		return err
	}
	b, err := tree.JSON(resolved, 2)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", b)
	return err
}

// jobOptions are the inputs of `gym eval status` and `gym eval cancel`.
type jobOptions struct {
	IO   *iostreams.IOStreams
	ws   *workspace
	ref  string // run directory or Slurm job id; "" is the newest run
	json bool
}

func newCmdEvalStatus(f *Factory, runF func(context.Context, *jobOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEvalStatus
	}
	opts := &jobOptions{IO: f.IOStreams, ws: f.Workspace}
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
			if len(args) == 1 {
				opts.ref = args[0]
			}
			return runF(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the status as JSON")
	return cmd
}

func runEvalStatus(ctx context.Context, opts *jobOptions) error {
	rec, h, err := openSubmission(ctx, opts)
	if err != nil {
		return err
	}
	defer h.Close()
	st, err := submit.QueryStatus(ctx, rec, h)
	if err != nil {
		return err
	}
	if opts.json {
		return writeJSONIndent(opts.IO.Out, st)
	}
	return st.WriteText(opts.IO.Out)
}

func newCmdEvalCancel(f *Factory, runF func(context.Context, *jobOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEvalCancel
	}
	opts := &jobOptions{IO: f.IOStreams, ws: f.Workspace}
	return &cobra.Command{
		Use:   "cancel RUN_DIR|JOB_ID",
		Short: "Cancel every Slurm job of a submitted evaluation",
		Long: `Cancel (scancel) every job of a gym eval submit run: each benchmark's job or
array of shards and the merge waiting for it. Slurm ends every process the
jobs started on the nodes.`,
		Example: `  gym eval cancel results/gym-job-20261201T120000Z-1a2b3c`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ref = args[0]
			return runF(cmd.Context(), opts)
		},
	}
}

func runEvalCancel(ctx context.Context, opts *jobOptions) error {
	rec, h, err := openSubmission(ctx, opts)
	if err != nil {
		return err
	}
	defer h.Close()
	ids, err := submit.Cancel(ctx, rec, h)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "Cancelled Slurm jobs %s of %s\n", strings.Join(ids, ", "), rec.RunDir)
	return nil
}

// openSubmission reads the record opts names, or the newest under the
// current directory or submitted from this machine, and connects to the
// host that holds its run.
func openSubmission(ctx context.Context, opts *jobOptions) (*submit.Record, submit.Host, error) {
	cwd, err := opts.ws.Getwd()
	if err != nil {
		return nil, nil, err
	}
	rec, err := submit.Locate(opts.ref, cwd, submit.IndexDir(opts.ws.LookupEnv))
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

// writeJSONIndent writes v as indented JSON and a newline.
func writeJSONIndent(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}
