package submit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ShardStatus is one task of a benchmark's job (the job itself when it is
// not sharded).
type ShardStatus struct {
	Shard   int    `json:"shard"`
	JobID   string `json:"job_id"`
	State   string `json:"state"` // Slurm's, or FINISHED once Slurm has forgotten the job
	Reason  string `json:"reason,omitempty"`
	Done    int    `json:"rollouts_done"`
	Total   int    `json:"rollouts_total"` // 0 until the task has materialized its rows
	Restart int    `json:"restarts,omitempty"`
}

// BenchmarkStatus is a benchmark's shards and its merge.
type BenchmarkStatus struct {
	Benchmark      string        `json:"benchmark"`
	JobDir         string        `json:"job_dir"`
	Shards         []ShardStatus `json:"shards"`
	AggregateJobID string        `json:"aggregate_job_id,omitempty"`
	AggregateState string        `json:"aggregate_state,omitempty"`
	Merged         bool          `json:"merged"` // artifacts/rollouts.jsonl of a sharded run exists
}

// Status is what `gym eval status` reports of a submission.
type Status struct {
	RunDir     string            `json:"run_dir"`
	GymJobID   string            `json:"gym_job_id"`
	Benchmarks []BenchmarkStatus `json:"benchmarks"`
}

// FindRecord reads the record of a submission named by its run directory
// (or a benchmark directory in it), or by a Slurm job id of it, looked up
// in the run directories under searchDirs.
func FindRecord(ref string, searchDirs []string) (*Record, error) {
	if ref == "" || strings.Trim(ref, "0123456789") != "" {
		for _, dir := range []string{ref, filepath.Dir(ref)} {
			if rec, err := readRecord(filepath.Join(dir, RecordFile)); err == nil || !errors.Is(err, os.ErrNotExist) {
				return rec, err
			}
		}
		return nil, fmt.Errorf("%s is neither a run directory of gym eval submit (holding %s) nor a Slurm job id", ref, RecordFile)
	}
	for _, root := range searchDirs {
		paths, _ := filepath.Glob(filepath.Join(root, "gym-job-*", RecordFile))
		for _, p := range paths {
			rec, err := readRecord(p)
			if err != nil {
				continue
			}
			for _, b := range rec.Benchmarks {
				if b.JobID == ref || b.AggregateJobID == ref {
					return rec, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("no submission under %s has Slurm job %s; give its run directory instead", strings.Join(searchDirs, ", "), ref)
}

func readRecord(path string) (*Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if rec.SchemaVersion != 1 {
		return nil, fmt.Errorf("%s has schema_version %d; this gym reads version 1", path, rec.SchemaVersion)
	}
	return &rec, nil
}

// QueryStatus asks Slurm for the state of every task of rec and counts the
// rollouts each has written so far.
func QueryStatus(ctx context.Context, rec *Record, slurm func(ctx context.Context, name string, args ...string) (string, error)) (*Status, error) {
	st := &Status{RunDir: rec.RunDir, GymJobID: rec.GymJobID}
	for _, b := range rec.Benchmarks {
		states, err := jobStates(ctx, slurm, b.JobID, b.AggregateJobID)
		if err != nil {
			return nil, err
		}
		bs := BenchmarkStatus{Benchmark: b.Benchmark, JobDir: b.JobDir, AggregateJobID: b.AggregateJobID}
		shards := max(b.Shards, 1)
		for i := range shards {
			s := ShardStatus{Shard: i, JobID: b.JobID}
			output := filepath.Join(b.JobDir, "artifacts", "rollouts.jsonl")
			if shards > 1 {
				s.JobID = b.JobID + "_" + strconv.Itoa(i)
				output = filepath.Join(b.JobDir, "artifacts", "shard_"+strconv.Itoa(i)+".jsonl")
			}
			s.State, s.Reason = "FINISHED", ""
			if js, ok := states[s.JobID]; ok {
				s.State, s.Reason = js.state, js.reason
			}
			s.Done = countLines(output)
			s.Total = countLines(strings.TrimSuffix(output, ".jsonl") + "_materialized_inputs.jsonl")
			bs.Shards = append(bs.Shards, s)
		}
		if b.AggregateJobID != "" {
			bs.AggregateState = "FINISHED"
			if js, ok := states[b.AggregateJobID]; ok {
				bs.AggregateState = js.state
			}
			_, err := os.Stat(filepath.Join(b.JobDir, "artifacts", "rollouts.jsonl"))
			bs.Merged = err == nil
		}
		st.Benchmarks = append(st.Benchmarks, bs)
	}
	return st, nil
}

type jobState struct{ state, reason string }

// jobStates reads squeue's view of the jobs, array tasks one by one and
// finished jobs too while Slurm keeps them.
func jobStates(ctx context.Context, slurm func(ctx context.Context, name string, args ...string) (string, error), ids ...string) (map[string]jobState, error) {
	var list []string
	for _, id := range ids {
		if id != "" {
			list = append(list, id)
		}
	}
	out, err := slurm(ctx, "squeue", "-h", "-r", "--states=all", "-j", strings.Join(list, ","), "-o", "%i|%T|%r")
	states := map[string]jobState{}
	if err != nil {
		// squeue refuses ids it no longer knows: every job is finished.
		if strings.Contains(errText(err), "Invalid job id") {
			return states, nil
		}
		return nil, fmt.Errorf("squeue: %w%s", err, errText(err))
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) == 3 {
			reason := f[2]
			if reason == "None" {
				reason = ""
			}
			states[f[0]] = jobState{f[1], reason}
		}
	}
	return states, nil
}

// Cancel cancels every job of rec: the shards, and the merge that waits
// for them.
func Cancel(ctx context.Context, rec *Record, slurm func(ctx context.Context, name string, args ...string) (string, error)) ([]string, error) {
	var ids []string
	for _, b := range rec.Benchmarks {
		ids = append(ids, b.JobID)
		if b.AggregateJobID != "" {
			ids = append(ids, b.AggregateJobID)
		}
	}
	sort.Strings(ids)
	if _, err := slurm(ctx, "scancel", ids...); err != nil {
		return nil, fmt.Errorf("scancel %s: %w%s", strings.Join(ids, " "), err, errText(err))
	}
	return ids, nil
}

func errText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

// countLines counts a JSONL file's lines; a missing file has none.
func countLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	buf := make([]byte, 64<<10)
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err != nil {
			return n
		}
	}
}
