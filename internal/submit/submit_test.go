package submit

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeSlurm is this machine with a Slurm that answers sbatch with the
// next job id, failing the nth submission as Slurm refuses one, and
// records every Slurm call.
type fakeSlurm struct {
	localHost
	failAt int
	calls  []string
	next   int
}

func (f *fakeSlurm) Run(ctx context.Context, stdin io.Reader, env []string, argv ...string) (string, error) {
	name, args := argv[0], argv[1:]
	switch name {
	case "sbatch", "scancel", "squeue", "sacct":
	default:
		return f.localHost.Run(ctx, stdin, env, argv...)
	}
	f.calls = append(f.calls, strings.Join(argv, " "))
	if name != "sbatch" || args[0] == "--version" {
		return "", nil
	}
	f.next++
	if f.next == f.failAt {
		return "", &CommandError{Cmd: "sbatch", Err: errors.New("exit status 1"), Stderr: "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified"}
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
	_, err := Submit(context.Background(), c, Options{Self: self, Shards: 3, Now: time.Now(), Host: slurm})
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
	rec, err := Submit(context.Background(), c, Options{Self: self, Shards: 3, Now: time.Now(), Host: slurm})
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
	again, err := FindRecord(rec.RunDir, nil, "")
	if err != nil || again.Benchmarks[0].AggregateJobID != "2" {
		t.Errorf("record read back: %+v, %v", again, err)
	}
	if _, err := os.Stat(filepath.Join(rec.RunDir, "bin", "gym")); err != nil {
		t.Errorf("the gym binary is not staged: %v", err)
	}
}

// What is staged over SSH is one tar stream with the directories, modes
// and contents the local staging writes.
func TestStagedFilesAsTar(t *testing.T) {
	self := filepath.Join(t.TempDir(), "gym")
	os.WriteFile(self, []byte("binary"), 0o755)
	jobs := []Job{{Benchmark: "b", Dir: "/run/b", Script: "#!/bin/bash\n", Aggregate: "#!/bin/bash\nagg\n"}}
	var buf bytes.Buffer
	if err := writeTar(&buf, stagedFiles(self, jobs, "/run")); err != nil {
		t.Fatal(err)
	}
	var got []string
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		got = append(got, fmt.Sprintf("%s %o %q", h.Name, h.Mode, data))
	}
	want := []string{`b/ 755 ""`, `b/artifacts/ 755 ""`, `b/logs/ 755 ""`, `bin/ 755 ""`,
		`bin/gym 755 "binary"`, `b/job.sh 700 "#!/bin/bash\n"`, `b/aggregate.sh 700 "#!/bin/bash\nagg\n"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("tar:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
