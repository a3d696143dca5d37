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
	// Host is where sbatch runs and the run directory is staged.
	Host      Host
	LookupEnv func(string) (string, bool)
	// IndexDir keeps a copy of every record on this machine, so that a
	// submission over SSH is found again by its job id; "" keeps none.
	IndexDir string
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
	Hostname      *string        `json:"hostname"` // null: submitted on this machine, without SSH
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
		where := runDir
		if c.Compute.Hostname != "" {
			where = c.Compute.Hostname + ":" + runDir
		}
		fmt.Fprintf(o.Out, "[dry-run] run dir: %s\n", where)
		for _, j := range jobs {
			banner(o.Out, "sbatch script for benchmark: "+j.Benchmark, j.Script)
			if j.Aggregate != "" {
				banner(o.Out, "sbatch script merging the shards of: "+j.Benchmark+" (after every shard succeeded)", j.Aggregate)
			}
		}
		return nil, nil
	}
	h := o.Host
	if err := checkPlatform(ctx, h); err != nil {
		return nil, err
	}
	// Nothing is staged where Slurm's commands cannot be run.
	if _, err := h.Run(ctx, nil, nil, "sbatch", "--version"); err != nil {
		return nil, err
	}
	// Over SSH the submitting shell's host: values go with each sbatch;
	// here sbatch inherits them.
	var env []string
	if h.Name() != "" {
		for _, name := range c.HostVars {
			v, _ := o.LookupEnv(name)
			env = append(env, name+"="+v)
		}
	}
	removeRun := func() {
		h.Run(context.WithoutCancel(ctx), nil, nil, "rm", "-rf", "--", runDir)
	}
	if err := h.Put(ctx, runDir, stagedFiles(o.Self, jobs, runDir)); err != nil {
		removeRun()
		return nil, err
	}
	rec := &Record{GymJobID: id, GymVersion: o.Version, SubmittedAt: o.Now.UTC().Format("2006-01-02T15:04:05Z"), RunDir: runDir,
		Cluster: c.Compute.Name, Executor: "slurm", SubmittedBy: userName(), SchemaVersion: 1}
	if c.Compute.Hostname != "" {
		rec.Hostname = &c.Compute.Hostname
	}
	var queued []string
	fail := func(bench, cmd string, err error) error {
		se := &SubmitError{Benchmark: bench, Cmd: cmd, Err: err}
		var ce *CommandError
		if errors.As(err, &ce) {
			se.Stderr, se.Err = ce.Stderr, ce.Err
		}
		for _, q := range queued {
			if _, cerr := h.Run(context.WithoutCancel(ctx), nil, nil, "scancel", q); cerr == nil {
				se.Cancelled = append(se.Cancelled, q)
			} else {
				se.StillQueued = append(se.StillQueued, q)
			}
		}
		// With nothing left queued the staged run is removed: no half
		// submission is left behind.
		if len(se.Cancelled) == len(queued) {
			removeRun()
		}
		return se
	}
	for _, j := range jobs {
		script := filepath.Join(j.Dir, "job.sh")
		jobID, err := sbatch(ctx, h, env, script)
		if err != nil {
			return nil, fail(j.Benchmark, "sbatch "+script, err)
		}
		queued = append(queued, jobID)
		bj := BenchmarkJob{Benchmark: j.Benchmark, JobDir: j.Dir, JobID: jobID, Shards: o.Shards}
		if j.Aggregate != "" {
			agg := filepath.Join(j.Dir, "aggregate.sh")
			aggID, err := sbatch(ctx, h, env, "--dependency=afterok:"+jobID, agg)
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
	data = append(data, '\n')
	// The machine's own copy first: it cannot fail the submission, and
	// it is what finds the jobs again if the run directory's copy fails.
	if o.IndexDir != "" {
		if err := os.MkdirAll(o.IndexDir, 0o755); err == nil {
			os.WriteFile(filepath.Join(o.IndexDir, id+".json"), data, 0o644)
		}
	}
	if err := h.Put(ctx, runDir, []File{{Path: RecordFile, Mode: 0o644, Data: data}}); err != nil {
		return rec, fmt.Errorf("submitted, but could not write %s: %w; already queued: %s", filepath.Join(runDir, RecordFile), err, strings.Join(queued, ", "))
	}
	return rec, nil
}

// sbatch submits and returns the job id `--parsable` prints
// (`<id>` or `<id>;<cluster>`).
func sbatch(ctx context.Context, h Host, env []string, args ...string) (string, error) {
	out, err := h.Run(ctx, nil, env, append([]string{"sbatch", "--parsable"}, args...)...)
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

// stagedFiles are the run directory's files: the gym binary the jobs run,
// and per benchmark its scripts, logs/ and artifacts/.
func stagedFiles(self string, jobs []Job, runDir string) []File {
	files := []File{{Path: "bin/gym", Mode: 0o755, Source: self}}
	for _, j := range jobs {
		rel, _ := filepath.Rel(runDir, j.Dir)
		for _, sub := range []string{"logs", "artifacts"} {
			files = append(files, File{Path: filepath.Join(rel, sub), Mode: os.ModeDir | 0o755})
		}
		files = append(files, File{Path: filepath.Join(rel, "job.sh"), Mode: 0o700, Data: []byte(j.Script)})
		if j.Aggregate != "" {
			files = append(files, File{Path: filepath.Join(rel, "aggregate.sh"), Mode: 0o700, Data: []byte(j.Aggregate)})
		}
	}
	return files
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

// IndexDir is where this machine keeps a copy of the records of its
// submissions: $XDG_CACHE_HOME/gym/jobs, by default ~/.cache/gym/jobs,
// beside NeMo Gym's ~/.cache/nemo-gym/jobs.
func IndexDir(lookupEnv func(string) (string, bool)) string {
	if base, ok := lookupEnv("XDG_CACHE_HOME"); ok && filepath.IsAbs(base) {
		return filepath.Join(base, "gym", "jobs")
	}
	if home, ok := lookupEnv("HOME"); ok && home != "" {
		return filepath.Join(home, ".cache", "gym", "jobs")
	}
	return ""
}
