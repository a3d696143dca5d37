package submit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
	State   string `json:"state"` // Slurm's (squeue, else sacct), or ENDED when neither knows it any more
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
// in the run directories under searchDirs and in this machine's index of
// its submissions, which also holds those made over SSH.
func FindRecord(ref string, searchDirs []string, indexDir string) (*Record, error) {
	byJobID := ref != "" && strings.Trim(ref, "0123456789") == ""
	if !byJobID {
		for _, dir := range []string{ref, filepath.Dir(ref)} {
			if rec, err := readRecord(filepath.Join(dir, RecordFile)); err == nil || !errors.Is(err, os.ErrNotExist) {
				return rec, err
			}
		}
	}
	var paths []string
	for _, root := range searchDirs {
		found, _ := filepath.Glob(filepath.Join(root, "gym-job-*", RecordFile))
		paths = append(paths, found...)
	}
	if indexDir != "" {
		found, _ := filepath.Glob(filepath.Join(indexDir, "gym-job-*.json"))
		paths = append(paths, found...)
	}
	for _, p := range paths {
		rec, err := readRecord(p)
		if err != nil {
			continue
		}
		if !byJobID {
			if rec.RunDir == ref || rec.RunDir == filepath.Dir(ref) {
				return rec, nil
			}
			continue
		}
		for _, b := range rec.Benchmarks {
			if b.JobID == ref || b.AggregateJobID == ref {
				return rec, nil
			}
		}
	}
	if !byJobID {
		return nil, fmt.Errorf("%s is neither a run directory of gym eval submit (holding %s) nor a Slurm job id, and no submission from this machine has that run directory", ref, RecordFile)
	}
	where := strings.Join(searchDirs, ", ")
	if indexDir != "" {
		where += " or in " + indexDir
	}
	return nil, fmt.Errorf("no submission under %s has Slurm job %s; give its run directory instead", where, ref)
}

// Locate finds the record ref names (a run directory, relative to cwd, or
// a Slurm job id) in the run directories in cwd and its subdirectories and
// in indexDir; with no ref, the newest there.
func Locate(ref, cwd, indexDir string) (*Record, error) {
	search := []string{cwd}
	entries, _ := os.ReadDir(cwd)
	for _, e := range entries {
		if e.IsDir() {
			search = append(search, filepath.Join(cwd, e.Name()))
		}
	}
	if ref != "" {
		if strings.Trim(ref, "0123456789") != "" && !filepath.IsAbs(ref) {
			ref = filepath.Join(cwd, ref)
		}
		return FindRecord(ref, search, indexDir)
	}
	// Run directories are named by their UTC submission time, so the
	// greatest name is the newest.
	var newest, newestName string
	consider := func(path, name string) {
		if name > newestName {
			newest, newestName = path, name
		}
	}
	for _, dir := range search {
		runs, _ := filepath.Glob(filepath.Join(dir, "gym-job-*", RecordFile))
		for _, r := range runs {
			consider(r, filepath.Base(filepath.Dir(r)))
		}
	}
	if indexDir != "" {
		indexed, _ := filepath.Glob(filepath.Join(indexDir, "gym-job-*.json"))
		for _, r := range indexed {
			consider(r, strings.TrimSuffix(filepath.Base(r), ".json"))
		}
	}
	if newest == "" {
		return nil, fmt.Errorf("no gym eval submit run directory (gym-job-*) under %s, and none submitted from this machine; name one, or a Slurm job id of it", cwd)
	}
	return readRecord(newest)
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
		return nil, fmt.Errorf("%s has schema_version %d; this gym reads version 1 (a newer gym wrote it, or it is not a record of gym eval submit)", path, rec.SchemaVersion)
	}
	return &rec, nil
}

// QueryStatus asks Slurm for the state of every task of rec and counts the
// rollouts each has written so far, on the host that holds the run.
func QueryStatus(ctx context.Context, rec *Record, h Host) (*Status, error) {
	st := &Status{RunDir: rec.RunDir, GymJobID: rec.GymJobID}
	var ids []string
	for _, b := range rec.Benchmarks {
		ids = append(ids, b.JobID, b.AggregateJobID)
	}
	states, err := jobStates(ctx, h, ids)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, b := range rec.Benchmarks {
		bs := BenchmarkStatus{Benchmark: b.Benchmark, JobDir: b.JobDir, AggregateJobID: b.AggregateJobID}
		shards := max(b.Shards, 1)
		for i := range shards {
			s := ShardStatus{Shard: i, JobID: b.JobID}
			output := filepath.Join(b.JobDir, "artifacts", "rollouts.jsonl")
			if shards > 1 {
				s.JobID = b.JobID + "_" + strconv.Itoa(i)
				output = filepath.Join(b.JobDir, "artifacts", "shard_"+strconv.Itoa(i)+".jsonl")
			}
			s.State, s.Reason = stateOf(states, s.JobID, b.JobID)
			files = append(files, output, strings.TrimSuffix(output, ".jsonl")+"_materialized_inputs.jsonl")
			bs.Shards = append(bs.Shards, s)
		}
		if b.AggregateJobID != "" {
			bs.AggregateState, _ = stateOf(states, b.AggregateJobID, "")
			files = append(files, filepath.Join(b.JobDir, "artifacts", "rollouts.jsonl"))
		}
		st.Benchmarks = append(st.Benchmarks, bs)
	}
	counts, err := countLines(ctx, h, files)
	if err != nil {
		return nil, err
	}
	k := 0
	for i := range st.Benchmarks {
		b := &st.Benchmarks[i]
		for j := range b.Shards {
			b.Shards[j].Done, b.Shards[j].Total = max(counts[k], 0), max(counts[k+1], 0)
			k += 2
		}
		if b.AggregateJobID != "" {
			b.Merged = counts[k] >= 0
			k++
		}
	}
	return st, nil
}

// stateOf is a task's state; an array task sacct still shows as part of
// its array's pending range takes the array's.
func stateOf(states map[string]jobState, id, array string) (string, string) {
	if js, ok := states[id]; ok {
		return js.state, js.reason
	}
	if js, ok := states[array+"_pending"]; ok && array != "" {
		return js.state, js.reason
	}
	return "ENDED", ""
}

type jobState struct{ state, reason string }

// jobStates reads squeue's view of the jobs, array tasks one by one and
// finished jobs too while Slurm keeps them; for what squeue has forgotten,
// sacct's, where the cluster keeps accounting.
func jobStates(ctx context.Context, h Host, ids []string) (map[string]jobState, error) {
	var list []string
	for _, id := range ids {
		if id != "" {
			list = append(list, id)
		}
	}
	states := map[string]jobState{}
	out, err := h.Run(ctx, nil, nil, "squeue", "-h", "-r", "--states=all", "-j", strings.Join(list, ","), "-o", "%i|%T|%r")
	// squeue refuses a list it no longer knows a job of; sacct still may.
	if err != nil && !strings.Contains(errText(err), "Invalid job id") {
		return nil, fmt.Errorf("squeue: %w", err)
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
	var forgotten []string
	for _, id := range list {
		if !knows(states, id) {
			forgotten = append(forgotten, id)
		}
	}
	if len(forgotten) == 0 {
		return states, nil
	}
	// Without accounting sacct fails, and those jobs are only known to
	// have ended.
	acct, err := h.Run(ctx, nil, nil, "sacct", "-n", "-P", "-X", "-j", strings.Join(forgotten, ","), "-o", "JobID,State")
	if err != nil {
		return states, nil
	}
	for _, line := range strings.Split(acct, "\n") {
		id, state, ok := strings.Cut(strings.TrimSpace(line), "|")
		if !ok {
			continue
		}
		// "CANCELLED by 0" is CANCELLED; "4242_[2-3]" is the array's tasks
		// that never started.
		state, _, _ = strings.Cut(state, " ")
		if array, _, pending := strings.Cut(id, "_["); pending {
			id = array + "_pending"
		}
		if _, seen := states[id]; !seen {
			states[id] = jobState{state: state}
		}
	}
	return states, nil
}

// knows is whether states has the job or, for an array, any task of it.
func knows(states map[string]jobState, id string) bool {
	if _, ok := states[id]; ok {
		return true
	}
	for k := range states {
		if strings.HasPrefix(k, id+"_") {
			return true
		}
	}
	return false
}

// Cancel cancels every job of rec: the shards, and the merge that waits
// for them.
func Cancel(ctx context.Context, rec *Record, h Host) ([]string, error) {
	var ids []string
	for _, b := range rec.Benchmarks {
		ids = append(ids, b.JobID)
		if b.AggregateJobID != "" {
			ids = append(ids, b.AggregateJobID)
		}
	}
	sort.Strings(ids)
	if _, err := h.Run(ctx, nil, nil, append([]string{"scancel"}, ids...)...); err != nil {
		return nil, err
	}
	return ids, nil
}

func errText(err error) string {
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce.Stderr
	}
	return ""
}

// countLines counts the lines of JSONL files on h, -1 for a file that is
// not there.
func countLines(ctx context.Context, h Host, paths []string) ([]int, error) {
	script := `for f do if [ -f "$f" ]; then wc -l < "$f"; else echo -1; fi; done`
	out, err := h.Run(ctx, nil, nil, append([]string{"sh", "-c", script, "sh"}, paths...)...)
	if err != nil {
		return nil, fmt.Errorf("counting the rollouts written so far: %w", err)
	}
	fields := strings.Fields(out)
	if len(fields) != len(paths) {
		return nil, fmt.Errorf("counting the rollouts written so far: %d answers for %d files", len(fields), len(paths))
	}
	counts := make([]int, len(fields))
	for i, f := range fields {
		if counts[i], err = strconv.Atoi(f); err != nil {
			return nil, fmt.Errorf("counting the rollouts written so far: %q is not a count", f)
		}
	}
	return counts, nil
}

// WriteText writes the status as gym eval status shows it: each
// benchmark, then a line per shard and one for the merge.
func (st *Status) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "Run directory: %s\n", st.RunDir)
	for _, b := range st.Benchmarks {
		fmt.Fprintf(bw, "%s\n", b.Benchmark)
		for _, s := range b.Shards {
			total := "?"
			if s.Total > 0 {
				total = fmt.Sprint(s.Total)
			}
			reason := ""
			if s.Reason != "" {
				reason = " (" + s.Reason + ")"
			}
			fmt.Fprintf(bw, "  shard %d  job %-10s %-10s %d/%s rollouts%s\n", s.Shard, s.JobID, s.State, s.Done, total, reason)
		}
		if b.AggregateJobID != "" {
			merged := "not yet merged"
			if b.Merged {
				merged = "merged into artifacts/rollouts.jsonl"
			}
			fmt.Fprintf(bw, "  merge    job %-10s %-10s %s\n", b.AggregateJobID, b.AggregateState, merged)
		}
	}
	return bw.Flush()
}
