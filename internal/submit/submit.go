package submit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"time"
)

// RecordFile is the run directory's record of what was submitted.
const RecordFile = "gym-job.json"

// Options are what a submission needs besides its config.
type Options struct {
	Self    string // this gym binary, staged into the run directory for the jobs to run
	Version string
	Shards  int
	DryRun  bool
	Now     time.Time
	Out     io.Writer // the dry run's scripts
	// Slurm runs a Slurm command (sbatch, scancel) and returns its
	// standard output; its error carries the command's standard error.
	Slurm func(ctx context.Context, name string, args ...string) (string, error)
}

// Record is what gym-job.json holds, in NeMo Gym's field names where it
// has them.
type Record struct {
	GymJobID      string         `json:"gym_job_id"`
	GymVersion    string         `json:"gym_version"`
	SubmittedAt   string         `json:"submitted_at"`
	RunDir        string         `json:"run_dir"`
	Cluster       string         `json:"cluster"`
	Executor      string         `json:"executor"`
	SubmittedBy   string         `json:"submitted_by"`
	Benchmarks    []BenchmarkJob `json:"benchmarks"`
	SchemaVersion int            `json:"schema_version"`
}

// BenchmarkJob is one benchmark's jobs.
type BenchmarkJob struct {
	Benchmark      string `json:"benchmark"`
	JobDir         string `json:"job_dir"`
	JobID          string `json:"job_id"`
	Shards         int    `json:"shards"`
	AggregateJobID string `json:"aggregate_job_id,omitempty"`
}

// SubmitError is a submission Slurm refused; whatever was already queued
// has been cancelled.
type SubmitError struct {
	Benchmark   string
	Cmd         string
	Stderr      string
	Err         error
	Cancelled   []string
	StillQueued []string // scancel failed: cancel these by hand
}

func (e *SubmitError) Error() string {
	msg := fmt.Sprintf("submitting benchmark '%s' failed: %s: %v", e.Benchmark, e.Cmd, e.Err)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += "\n" + s
	}
	if len(e.Cancelled) > 0 {
		msg += "\nCancelled the jobs already submitted: " + strings.Join(e.Cancelled, ", ")
	}
	if len(e.StillQueued) > 0 {
		msg += "\nCould not cancel these, which are still queued; scancel them by hand: " + strings.Join(e.StillQueued, ", ")
	}
	return msg
}

func (e *SubmitError) Unwrap() error { return e.Err }

// Submit stages the run directory and submits every benchmark, or with
// DryRun prints the scripts it would submit and writes nothing.
func Submit(ctx context.Context, c *Config, o Options) (*Record, error) {
	if o.Shards < 1 {
		return nil, fmt.Errorf("--shards must be at least 1, got %d", o.Shards)
	}
	if o.Shards > 1 {
		for _, b := range c.Driver.Benchmarks {
			if b.Prepare != nil && b.Prepare.Len() > 0 {
				return nil, &ConfigError{Msg: fmt.Sprintf("Benchmark '%s' has a prepare step, which every shard would run at once over the same files; prepare its data first (gym eval prepare) and submit without `prepare`, or submit it unsharded", b.Name)}
			}
		}
	}
	id, err := runID(o.Now)
	if err != nil {
		return nil, err
	}
	runDir := filepath.Join(c.Output, id)
	jobs := c.Render(RenderOptions{RunDir: runDir, Gym: filepath.Join(runDir, "bin", "gym"), Shards: o.Shards})
	if o.DryRun {
		fmt.Fprintf(o.Out, "[dry-run] run dir: %s\n", runDir)
		for _, j := range jobs {
			banner(o.Out, "sbatch script for benchmark: "+j.Benchmark, j.Script)
			if j.Aggregate != "" {
				banner(o.Out, "sbatch script merging the shards of: "+j.Benchmark+" (after every shard succeeded)", j.Aggregate)
			}
		}
		return nil, nil
	}
	// Nothing is staged where Slurm's commands cannot be run.
	if _, err := o.Slurm(ctx, "sbatch", "--version"); err != nil {
		return nil, err
	}
	if err := stage(runDir, o.Self, jobs); err != nil {
		os.RemoveAll(runDir)
		return nil, err
	}
	rec := &Record{GymJobID: id, GymVersion: o.Version, SubmittedAt: o.Now.UTC().Format("2006-01-02T15:04:05Z"), RunDir: runDir,
		Cluster: c.Compute.Name, Executor: "slurm", SubmittedBy: userName(), SchemaVersion: 1}
	var queued []string
	fail := func(bench, cmd string, err error) error {
		se := &SubmitError{Benchmark: bench, Cmd: cmd, Err: err}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			se.Stderr = string(ee.Stderr)
		}
		for _, q := range queued {
			if _, cerr := o.Slurm(context.WithoutCancel(ctx), "scancel", q); cerr == nil {
				se.Cancelled = append(se.Cancelled, q)
			} else {
				se.StillQueued = append(se.StillQueued, q)
			}
		}
		// With nothing left queued the staged run is removed: no half
		// submission is left behind.
		if len(se.Cancelled) == len(queued) {
			os.RemoveAll(runDir)
		}
		return se
	}
	for _, j := range jobs {
		script := filepath.Join(j.Dir, "job.sh")
		jobID, err := sbatch(ctx, o, script)
		if err != nil {
			return nil, fail(j.Benchmark, "sbatch "+script, err)
		}
		queued = append(queued, jobID)
		bj := BenchmarkJob{Benchmark: j.Benchmark, JobDir: j.Dir, JobID: jobID, Shards: o.Shards}
		if j.Aggregate != "" {
			agg := filepath.Join(j.Dir, "aggregate.sh")
			aggID, err := sbatch(ctx, o, "--dependency=afterok:"+jobID, agg)
			if err != nil {
				return nil, fail(j.Benchmark, "sbatch --dependency=afterok:"+jobID+" "+agg, err)
			}
			queued = append(queued, aggID)
			bj.AggregateJobID = aggID
		}
		rec.Benchmarks = append(rec.Benchmarks, bj)
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(runDir, RecordFile), append(data, '\n'), 0o644); err != nil {
		return rec, fmt.Errorf("submitted, but could not write %s: %w; already queued: %s", filepath.Join(runDir, RecordFile), err, strings.Join(queued, ", "))
	}
	return rec, nil
}

// sbatch submits and returns the job id `--parsable` prints
// (`<id>` or `<id>;<cluster>`).
func sbatch(ctx context.Context, o Options, args ...string) (string, error) {
	out, err := o.Slurm(ctx, "sbatch", append([]string{"--parsable"}, args...)...)
	if err != nil {
		return "", err
	}
	fields := strings.Fields(out)
	if len(fields) == 0 {
		return "", errors.New("sbatch printed no job id")
	}
	id, _, _ := strings.Cut(fields[len(fields)-1], ";")
	if strings.Trim(id, "0123456789") != "" || id == "" {
		return "", fmt.Errorf("sbatch printed %q, not a job id", strings.TrimSpace(out))
	}
	return id, nil
}

// stage writes the run directory: the gym binary the jobs run, and per
// benchmark its scripts, logs/ and artifacts/.
func stage(runDir, self string, jobs []Job) error {
	if err := os.MkdirAll(filepath.Join(runDir, "bin"), 0o755); err != nil {
		return err
	}
	if err := copyExecutable(self, filepath.Join(runDir, "bin", "gym")); err != nil {
		return fmt.Errorf("staging the gym binary into %s: %w", runDir, err)
	}
	for _, j := range jobs {
		for _, sub := range []string{"logs", "artifacts"} {
			if err := os.MkdirAll(filepath.Join(j.Dir, sub), 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(j.Dir, "job.sh"), []byte(j.Script), 0o700); err != nil {
			return err
		}
		if j.Aggregate != "" {
			if err := os.WriteFile(filepath.Join(j.Dir, "aggregate.sh"), []byte(j.Aggregate), 0o700); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyExecutable(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// runID is NeMo Gym's: gym-job-<UTC time>-<6 hex digits>.
func runID(now time.Time) (string, error) {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "gym-job-" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b), nil
}

func banner(w io.Writer, title, body string) {
	rule := strings.Repeat("=", 60)
	fmt.Fprintf(w, "%s\n[dry-run] %s\n%s\n%s", rule, title, rule, body)
}

func userName() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

// RunSlurm runs a Slurm command on this machine.
func RunSlurm(ctx context.Context, name string, args ...string) (string, error) {
	if _, err := exec.LookPath(name); err != nil {
		return "", fmt.Errorf("%s is not on PATH: gym eval submit runs Slurm's own commands, so run it where Slurm's client tools are installed (a login node): %w", name, err)
	}
	// Output keeps the command's stderr in the *exec.ExitError.
	out, err := exec.CommandContext(ctx, name, args...).Output()
	return string(out), err
}
