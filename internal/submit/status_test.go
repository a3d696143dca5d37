package submit

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A job id is looked up in the records it may belong to, never taken for
// the run directory the command happens to run in.
func TestFindRecordByJobIDIgnoresTheCurrentDirectory(t *testing.T) {
	root := t.TempDir()
	write := func(name, jobID string) string {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(Record{GymJobID: name, RunDir: dir, SchemaVersion: 1, Benchmarks: []BenchmarkJob{{Benchmark: "b", JobID: jobID}}})
		if err := os.WriteFile(filepath.Join(dir, RecordFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a := write("gym-job-a", "1111")
	write("gym-job-b", "9999")
	t.Chdir(a)
	rec, err := FindRecord("9999", []string{root}, "")
	if err != nil || rec.GymJobID != "gym-job-b" {
		t.Fatalf("FindRecord(9999) = %+v, %v; want run b", rec, err)
	}
	if _, err := FindRecord("5555", []string{root}, ""); err == nil || !strings.Contains(err.Error(), "no submission under") {
		t.Errorf("an unknown job id: %v", err)
	}
	if rec, err := FindRecord(a, nil, ""); err != nil || rec.GymJobID != "gym-job-a" {
		t.Errorf("FindRecord(run dir) = %+v, %v", rec, err)
	}
}

// scriptedSlurm answers squeue and sacct as a cluster would, and runs
// everything else on this machine.
type scriptedSlurm struct {
	localHost
	squeue, squeueErr, sacct string
	sacctFails               bool
}

func (s *scriptedSlurm) Run(ctx context.Context, stdin io.Reader, env []string, argv ...string) (string, error) {
	switch argv[0] {
	case "squeue":
		if s.squeueErr != "" {
			return "", &CommandError{Cmd: "squeue", Err: errors.New("exit status 1"), Stderr: s.squeueErr}
		}
		return s.squeue, nil
	case "sacct":
		if s.sacctFails {
			return "", &CommandError{Cmd: "sacct", Err: errors.New("exit status 1"), Stderr: "Slurm accounting storage is disabled"}
		}
		return s.sacct, nil
	}
	return s.localHost.Run(ctx, stdin, env, argv...)
}

// What squeue has forgotten, sacct tells; without accounting a job is only
// known to have ended. Rollouts are counted from the shard files.
func TestQueryStatusFallsBackToSacct(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "artifacts"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "artifacts", "shard_1.jsonl"), []byte("{}\n{}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "artifacts", "shard_1_materialized_inputs.jsonl"), []byte("{}\n{}\n{}\n"), 0o644)
	rec := &Record{RunDir: dir, Benchmarks: []BenchmarkJob{{Benchmark: "b", JobDir: dir, JobID: "40", Shards: 4, AggregateJobID: "41"}}}
	cases := []struct {
		name  string
		slurm *scriptedSlurm
		want  []string // shard 0..3, then the merge
	}{
		{"squeue knows all", &scriptedSlurm{squeue: "40_0|RUNNING|None\n40_1|PENDING|Priority\n40_2|COMPLETED|None\n40_3|FAILED|NonZeroExitCode\n41|PENDING|Dependency\n"},
			[]string{"RUNNING", "PENDING", "COMPLETED", "FAILED", "PENDING"}},
		{"squeue forgot, sacct knows", &scriptedSlurm{squeueErr: "slurm_load_jobs error: Invalid job id specified", sacct: "40_0|COMPLETED\n40_1|CANCELLED by 0\n40_[2-3]|PENDING\n41|CANCELLED by 0\n"},
			[]string{"COMPLETED", "CANCELLED", "PENDING", "PENDING", "CANCELLED"}},
		{"squeue forgot the merge only", &scriptedSlurm{squeue: "40_0|COMPLETED|None\n40_1|COMPLETED|None\n40_2|COMPLETED|None\n40_3|COMPLETED|None\n", sacct: "41|COMPLETED\n"},
			[]string{"COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED"}},
		{"no accounting", &scriptedSlurm{squeueErr: "slurm_load_jobs error: Invalid job id specified", sacctFails: true},
			[]string{"ENDED", "ENDED", "ENDED", "ENDED", "ENDED"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := QueryStatus(context.Background(), rec, tc.slurm)
			if err != nil {
				t.Fatal(err)
			}
			b := st.Benchmarks[0]
			var got []string
			for _, s := range b.Shards {
				got = append(got, s.State)
			}
			got = append(got, b.AggregateState)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("states %v, want %v", got, tc.want)
			}
			if s := b.Shards[1]; s.Done != 2 || s.Total != 3 || b.Shards[0].Done != 0 || b.Merged {
				t.Errorf("counts: shard 1 %d/%d, shard 0 %d, merged %v", s.Done, s.Total, b.Shards[0].Done, b.Merged)
			}
		})
	}
}

// A squeue failure other than forgotten jobs is an error, not a guess.
func TestQueryStatusReportsSqueueFailure(t *testing.T) {
	rec := &Record{Benchmarks: []BenchmarkJob{{Benchmark: "b", JobDir: t.TempDir(), JobID: "40"}}}
	_, err := QueryStatus(context.Background(), rec, &scriptedSlurm{squeueErr: "squeue: error: Unable to contact slurm controller (connect failure)"})
	if err == nil || !strings.Contains(err.Error(), "Unable to contact slurm controller") {
		t.Fatalf("err = %v", err)
	}
}
