package submit

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeSlurm answers sbatch with the next job id, failing the nth
// submission as Slurm refuses one, and records every call.
type fakeSlurm struct {
	failAt int
	calls  []string
	next   int
}

func (f *fakeSlurm) run(_ context.Context, name string, args ...string) (string, error) {
	f.calls = append(f.calls, name+" "+strings.Join(args, " "))
	if name != "sbatch" || args[0] == "--version" {
		return "", nil
	}
	f.next++
	if f.next == f.failAt {
		return "", &exec.ExitError{Stderr: []byte("sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified")}
	}
	return strconv.Itoa(f.next) + ";cluster\n", nil
}

// submittable is the minimal config with its output in a temp dir, and a
// binary to stage.
func submittable(t *testing.T) (*Config, string) {
	t.Helper()
	c, err := load(t, minimal)
	if err != nil {
		t.Fatal(err)
	}
	c.Output = t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return c, self
}

// When Slurm refuses a submission, what was already queued is cancelled,
// the refusal is shown, and the staged run is removed.
func TestSubmitCancelsWhatWasQueuedWhenSlurmRefuses(t *testing.T) {
	c, self := submittable(t)
	slurm := &fakeSlurm{failAt: 2}
	_, err := Submit(context.Background(), c, Options{Self: self, Shards: 3, Now: time.Now(), Slurm: slurm.run})
	var se *SubmitError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "Invalid account") || strings.Join(se.Cancelled, ",") != "1" {
		t.Fatalf("err = %v", err)
	}
	if got := slurm.calls[len(slurm.calls)-1]; got != "scancel 1" {
		t.Errorf("last call %q, calls %v", got, slurm.calls)
	}
	if left, _ := filepath.Glob(filepath.Join(c.Output, "*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// A submission Slurm takes is recorded: the array job and its merge.
func TestSubmitRecordsTheJobs(t *testing.T) {
	c, self := submittable(t)
	slurm := &fakeSlurm{}
	rec, err := Submit(context.Background(), c, Options{Self: self, Shards: 3, Now: time.Now(), Slurm: slurm.run})
	if err != nil {
		t.Fatal(err)
	}
	b := rec.Benchmarks[0]
	if b.JobID != "1" || b.AggregateJobID != "2" || b.Shards != 3 {
		t.Errorf("record %+v", b)
	}
	if got := slurm.calls[2]; !strings.HasPrefix(got, "sbatch --parsable --dependency=afterok:1 ") {
		t.Errorf("merge submitted as %q", got)
	}
	again, err := FindRecord(rec.RunDir, nil)
	if err != nil || again.Benchmarks[0].AggregateJobID != "2" {
		t.Errorf("record read back: %+v, %v", again, err)
	}
	if _, err := os.Stat(filepath.Join(rec.RunDir, "bin", "gym")); err != nil {
		t.Errorf("the gym binary is not staged: %v", err)
	}
}
