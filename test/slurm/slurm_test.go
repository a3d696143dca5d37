// Package slurm holds the real Slurm cluster gym's submission is tested
// on (cluster.sh starts one, private to a directory) and the contract gym
// eval submit builds on: array jobs, a requeued task that runs again with
// its restart count, and a dependent job that waits for the requeued task.
package slurm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/test/gymbin"
)

// cluster is a running test cluster.
type cluster struct {
	dir  string
	conf string // SLURM_CONF for every command
}

// startCluster starts a cluster of one node (or two, each a test host of
// its own; and with "accounting", slurmdbd) for the test and stops it at
// its end; it skips, saying why, where none can be started.
func startCluster(t *testing.T, options ...string) *cluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "gym-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"start", dir}, options...)
	// Stopped whatever happens: a start that fails half way has started
	// something.
	t.Cleanup(func() {
		exec.Command(script, "stop", dir).Run()
		os.RemoveAll(dir)
	})
	out, err := exec.Command(script, args...).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		t.Skipf("no Slurm can be started here: %s", strings.TrimSpace(string(exit.Stderr)))
	}
	if err != nil {
		t.Fatalf("cluster.sh start: %v\n%s", err, exitStderr(err))
	}
	return &cluster{dir: dir, conf: strings.TrimPrefix(strings.TrimSpace(string(out)), "SLURM_CONF=")}
}

// command is a command that talks to the cluster.
func (c *cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.conf)
	return cmd
}

// run runs a Slurm command against the cluster and returns its output.
func (c *cluster) run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := c.command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, exitStderr(err))
	}
	return strings.TrimSpace(string(out))
}

// waitFor polls the cluster until cond holds, failing after three
// minutes: as long as slurmd waits for a killed step (cluster.sh's
// UnkillableStepTimeout), since a loaded CI machine once took over a
// minute to end a SIGKILLed shard. On a timeout it says what the queue
// and the nodes look like, how every job log under each of jobDirs and
// the daemons' logs end, and which processes run, so that a requeued or
// stuck job says why.
func (c *cluster) waitFor(t *testing.T, what string, cond func() bool, jobDirs ...string) {
	t.Helper()
	var slowest time.Duration
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		start := time.Now()
		if cond() {
			return
		}
		slowest = max(slowest, time.Since(start))
	}
	t.Fatalf("timed out waiting for %s (the slowest poll took %v); queue:\n%s\nnodes not up, and why:\n%s%s%s", what, slowest.Round(time.Millisecond), c.run(t, "squeue"), c.run(t, "sinfo", "-R"), jobLogTails(jobDirs), c.daemonState())
}

// daemonState is how the daemons' logs end and which processes run, for a
// timeout: a step that does not end says there what it waits for.
func (c *cluster) daemonState() string {
	var b strings.Builder
	logs, _ := filepath.Glob(filepath.Join(c.dir, "slurm*.log"))
	for _, name := range logs {
		data, _ := os.ReadFile(name)
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "\n%s ends:\n  %s", filepath.Base(name), strings.Join(lines[max(0, len(lines)-60):], "\n  "))
	}
	ps, err := exec.Command("ps", "-N", "--ppid", "2", "--pid", "2", "-o", "pid,ppid,pgid,stat,wchan:20,args", "--forest").CombinedOutput()
	fmt.Fprintf(&b, "\nprocesses other than the kernel's (ps: %v):\n%s", err, ps)
	return b.String()
}

// jobLogTails is the last lines of every file in a logs/ directory under
// dirs.
func jobLogTails(dirs []string) string {
	var b strings.Builder
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Base(filepath.Dir(path)) != "logs" {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
			fmt.Fprintf(&b, "\n%s ends:\n  %s", path, strings.Join(lines[max(0, len(lines)-20):], "\n  "))
			return nil
		})
	}
	return b.String()
}

// startRequeued lets each requeued job of ids that waits out Slurm's
// requeue delay start at once: the tests need not wait for it. It is
// called while polling, so a job that changes state (or leaves the queue)
// between its two commands is left for the next poll, not an error.
func (c *cluster) startRequeued(t *testing.T, ids ...string) {
	t.Helper()
	slurm := func(name string, args ...string) string {
		out, _ := c.command(name, args...).Output()
		return strings.TrimSpace(string(out))
	}
	for _, id := range ids {
		if slurm("squeue", "-h", "-j", id, "-o", "%t %r") == "PD BeginTime" {
			slurm("scontrol", "update", "jobid="+id, "StartTime=now")
		}
	}
}

func exitStderr(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(exit.Stderr)
	}
	return ""
}

func TestArrayRequeueAndDependency(t *testing.T) {
	c := startCluster(t)
	runs := filepath.Join(c.dir, "runs.txt")
	job := filepath.Join(c.dir, "task.sh")
	// Task 1 holds on in its first run, so that it is requeued while it
	// runs.
	if err := os.WriteFile(job, []byte(`#!/bin/bash
#SBATCH --output=`+c.dir+`/task-%A_%a.log
echo "task $SLURM_ARRAY_TASK_ID restart ${SLURM_RESTART_COUNT:-0}" >> `+runs+`
if [ "$SLURM_ARRAY_TASK_ID" = 1 ] && [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then
  sleep 300
fi
`), 0o755); err != nil {
		t.Fatal(err)
	}
	array := c.run(t, "sbatch", "--parsable", "--requeue", "--array=0-3", job)
	after := c.run(t, "sbatch", "--parsable", "--dependency=afterok:"+array, "--output="+c.dir+"/after.log", "--wrap", "echo aggregated >> "+runs)

	// Running in squeue's eyes is not yet running the script: on a loaded
	// machine a requeue could come before the first run wrote its line.
	c.waitFor(t, "task 1 to run", func() bool {
		data, _ := os.ReadFile(runs)
		return c.run(t, "squeue", "-h", "-j", array+"_1", "-o", "%t") == "R" && strings.Contains(string(data), "task 1 restart 0\n")
	})
	c.run(t, "scontrol", "requeue", array+"_1")
	// A requeued job waits a while before it may start again; the test
	// need not.
	c.waitFor(t, "the dependent job to finish", func() bool {
		c.startRequeued(t, array+"_1")
		return c.run(t, "squeue", "-h", "-j", array+","+after) == ""
	})
	data, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	want := map[string]bool{"task 0 restart 0": true, "task 1 restart 0": true, "task 1 restart 1": true, "task 2 restart 0": true, "task 3 restart 0": true}
	for _, l := range lines[:len(lines)-1] {
		if !want[l] {
			t.Errorf("unexpected run %q", l)
		}
		delete(want, l)
	}
	if len(want) > 0 || lines[len(lines)-1] != "aggregated" {
		t.Errorf("runs, in order:\n%s\nmissing: %v; the dependent job must run last", data, want)
	}
}

// buildGym builds the gym binary the jobs run.
func buildGym(t *testing.T) string {
	t.Helper()
	gym, err := gymbin.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return gym
}

// gym runs the gym binary in dir against the cluster, with the repository
// as install root for the built-in benchmark.
func (c *cluster) gym(t *testing.T, gym, dir string, args ...string) string {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gym, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.conf, "GYM_INSTALL_ROOT="+repo, "NO_COLOR=1", "NEMO_GYM_EXTRA_ROOTS=", "XDG_CACHE_HOME="+filepath.Join(dir, ".cache"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gym %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// A built-in benchmark submitted as 4 shards merges into every rollout
// exactly once, with the metrics of the same evaluation run locally, though
// one shard's gym is SIGKILLed half way (the shard requeues itself) and
// another is pre-empted half way (Slurm requeues it).
func TestShardedSubmissionEqualsALocalRun(t *testing.T) {
	c := startCluster(t)
	gym := buildGym(t)
	work := t.TempDir()
	// 2,000 repeats of each of the 10 rows, one at a time: shards that
	// run long enough to be stopped in the middle.
	const repeats = "2000"
	if err := os.WriteFile(filepath.Join(work, "submit.yaml"), []byte(`services: {}
compute:
  cluster: {type: slurm, account: test, walltime: "00:10:00"}
driver:
  policy_model_type: replay_model
  benchmarks:
    mcqa:
      run: {config_paths: [benchmarks/mcqa_example/config.yaml], split: benchmark, num_repeats: `+repeats+`, num_samples_in_parallel: 1}
job: {output_path: results}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := c.gym(t, gym, work, "eval", "submit", "--config", "submit.yaml", "--shards", "4", "--json")
	rec := parseSubmission(t, out)
	b := rec.Benchmarks[0]
	shardFile := func(i int) string { return filepath.Join(b.JobDir, "artifacts", "shard_"+strconv.Itoa(i)+".jsonl") }
	// Shards 1 and 2 are stopped once they have written some of their
	// rollouts and not all, each watched on its own: the array's shards
	// run side by side, and slurmctld can take seconds to accept a stop,
	// long enough for a shard nobody is watching to finish.
	stops := map[int][]string{
		1: {"scancel", "--signal=KILL", b.JobID + "_1.0"},
		2: {"scontrol", "requeue", b.JobID + "_2"},
	}
	type stop struct {
		shard, written, total int
		err                   error
	}
	stopped := make(chan stop, len(stops))
	deadline := time.Now().Add(time.Minute)
	for shard, how := range stops {
		go func() {
			inputs := strings.TrimSuffix(shardFile(shard), ".jsonl") + "_materialized_inputs.jsonl"
			for {
				n, total := lineCount(shardFile(shard)), lineCount(inputs)
				switch {
				case total > 0 && n >= total:
					stopped <- stop{shard: shard, err: fmt.Errorf("shard %d finished before it could be stopped", shard)}
					return
				case n >= 100:
					err := c.stopShard(how)
					stopped <- stop{shard, lineCount(shardFile(shard)), lineCount(inputs), err}
					return
				case time.Now().After(deadline):
					stopped <- stop{shard: shard, err: fmt.Errorf("timed out waiting for shard %d to be under way", shard)}
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	written, totals := map[int]int{}, map[int]int{}
	for range stops {
		s := <-stopped
		if s.err != nil {
			t.Fatalf("%v; queue:\n%s", s.err, c.run(t, "squeue"))
		}
		written[s.shard], totals[s.shard] = s.written, s.total
		t.Logf("shard %d stopped (%s) with %d of its %d rollouts written", s.shard, strings.Join(stops[s.shard], " "), s.written, s.total)
	}
	c.waitFor(t, "the shards and their merge to finish", func() bool {
		c.startRequeued(t, b.JobID+"_1", b.JobID+"_2")
		return c.run(t, "squeue", "-h", "-j", b.JobID+","+b.AggregateJobID) == ""
	}, work)
	// The second run of each stopped shard resumed it: it kept what the
	// first had written.
	var resumed []string
	logs, _ := filepath.Glob(filepath.Join(b.JobDir, "logs", "driver-*.log"))
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "Resuming: ") {
				resumed = append(resumed, line)
			}
		}
	}
	for shard, n := range written {
		total := totals[shard]
		found := false
		for _, line := range resumed {
			var materialized, done int
			if _, err := fmt.Sscanf(line, "Resuming: %d rollouts materialized; %d already done", &materialized, &done); err == nil && materialized == total && done >= n {
				found = true
			}
		}
		if !found {
			t.Errorf("shard %d was not resumed with its %d rollouts kept; resumptions: %q", shard, n, resumed)
		}
		if info := c.run(t, "scontrol", "show", "job", b.JobID+"_"+strconv.Itoa(shard)); !strings.Contains(info, "Restarts=1") {
			t.Errorf("shard %d was not requeued:\n%s", shard, info)
		}
	}
	merged := filepath.Join(b.JobDir, "artifacts", "rollouts.jsonl")
	if _, err := os.Stat(merged); err != nil {
		t.Fatalf("the merge wrote nothing: %v\n%s", err, jobLogs(b.JobDir))
	}

	// Status names each shard's rollouts, found by the run dir or a job id.
	var st struct {
		Benchmarks []struct {
			Shards []struct {
				Done  int `json:"rollouts_done"`
				Total int `json:"rollouts_total"`
			} `json:"shards"`
			Merged bool `json:"merged"`
		} `json:"benchmarks"`
	}
	statusOut := c.gym(t, gym, work, "eval", "status", b.JobID, "--json")
	if err := json.Unmarshal([]byte(statusOut), &st); err != nil {
		t.Fatalf("%v: %s", err, statusOut)
	}
	done := 0
	for _, sh := range st.Benchmarks[0].Shards {
		if sh.Done != sh.Total {
			t.Errorf("a finished shard shows %d of %d rollouts", sh.Done, sh.Total)
		}
		done += sh.Done
	}
	if len(st.Benchmarks[0].Shards) != 4 || done != 20000 || !st.Benchmarks[0].Merged {
		t.Errorf("status: %s", statusOut)
	}
	if text := c.gym(t, gym, work, "eval", "status", rec.RunDir); !strings.Contains(text, "merged into artifacts/rollouts.jsonl") {
		t.Errorf("status:\n%s", text)
	}

	c.gym(t, gym, work, "eval", "run", "--benchmark", "mcqa_example", "--model-type", "replay_model", "--split", "benchmark", "-o", "local/rollouts.jsonl", "++num_repeats="+repeats)
	local := filepath.Join(work, "local", "rollouts.jsonl")
	if got, want := pairs(t, merged), pairs(t, local); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("merged rollouts %v, local run %v", got, want)
	}
	gotMetrics, err := os.ReadFile(strings.TrimSuffix(merged, ".jsonl") + "_aggregate_metrics.json")
	if err != nil {
		t.Fatal(err)
	}
	wantMetrics, err := os.ReadFile(strings.TrimSuffix(local, ".jsonl") + "_aggregate_metrics.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(gotMetrics) != string(wantMetrics) {
		t.Errorf("metrics of the sharded run:\n%s\nof the local run:\n%s", gotMetrics, wantMetrics)
	}
}

// stopShard runs a Slurm command that stops a shard. On a loaded machine
// slurmctld can still hold the shard's step as pending for a moment after
// the shard has written its lines, so that refusal is retried.
func (c *cluster) stopShard(how []string) error {
	for try := 0; ; try++ {
		out, err := c.command(how[0], how[1:]...).CombinedOutput()
		if err == nil {
			return nil
		}
		if try == 50 || !strings.Contains(string(out), "pending execution") {
			return fmt.Errorf("%s: %v\n%s", strings.Join(how, " "), err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// lineCount is how many whole lines path holds so far.
func lineCount(path string) int {
	data, _ := os.ReadFile(path)
	return strings.Count(string(data), "\n")
}

// jobLogs is every log of a benchmark's job directory, for a failure.
func jobLogs(jobDir string) string {
	var all strings.Builder
	paths, _ := filepath.Glob(filepath.Join(jobDir, "logs", "*"))
	for _, l := range paths {
		data, _ := os.ReadFile(l)
		fmt.Fprintf(&all, "%s:\n%s\n", l, data)
	}
	return all.String()
}

// submission is the record gym eval submit --json prints.
type submission struct {
	RunDir     string  `json:"run_dir"`
	Hostname   *string `json:"hostname"`
	Benchmarks []struct {
		JobDir         string `json:"job_dir"`
		JobID          string `json:"job_id"`
		AggregateJobID string `json:"aggregate_job_id"`
	} `json:"benchmarks"`
}

// parseSubmission reads the record from gym eval submit --json's output.
func parseSubmission(t *testing.T, out string) submission {
	t.Helper()
	var rec submission
	if i := strings.Index(out, "{"); i < 0 || json.Unmarshal([]byte(out[i:]), &rec) != nil {
		t.Fatalf("not a submission record: %s", out)
	}
	return rec
}

// pairs lists a rollouts file's (task, rollout) indices, sorted; a pair
// that appears twice appears twice.
func pairs(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var row struct {
			Task    int `json:"_ng_task_index"`
			Rollout int `json:"_ng_rollout_index"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, fmt.Sprintf("%d:%d", row.Task, row.Rollout))
	}
	sort.Strings(out)
	return out
}

// A submission that cannot start yet is cancelled whole by gym eval
// cancel; one Slurm refuses says why and leaves nothing queued.
func TestCancelAndRefusedSubmissions(t *testing.T) {
	c := startCluster(t)
	gym := buildGym(t)
	work := t.TempDir()
	config := func(name, compute string) {
		if err := os.WriteFile(filepath.Join(work, name), []byte(`services: {}
compute:
  cluster: `+compute+`
driver:
  policy_model_type: replay_model
  benchmarks:
    mcqa: {run: {config_paths: [benchmarks/mcqa_example/config.yaml], split: benchmark}}
job: {output_path: results}
`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config("later.yaml", `{type: slurm, account: test, extra_args: {begin: now+1hour}}`)
	out := c.gym(t, gym, work, "eval", "submit", "-c", "later.yaml", "--shards", "2")
	if !strings.Contains(out, "(2 shards), merged by job") {
		t.Fatalf("submit: %s", out)
	}
	out = c.gym(t, gym, work, "eval", "cancel", filepath.Join(work, "results", mustGlob(t, filepath.Join(work, "results", "gym-job-*"))))
	if !strings.Contains(out, "Cancelled Slurm jobs") {
		t.Fatalf("cancel: %s", out)
	}
	c.waitFor(t, "every job to be gone", func() bool {
		return c.run(t, "squeue", "-h", "-t", "PD,R") == ""
	})

	config("nowhere.yaml", `{type: slurm, account: test, node_pools: {gpu: {partition: nowhere}}}`)
	cmd := c.command(gym, "eval", "submit", "-c", "nowhere.yaml")
	cmd.Dir = work
	refused, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(refused), "invalid partition specified: nowhere") {
		t.Errorf("an unknown partition: %v\n%s", err, refused)
	}
	if q := c.run(t, "squeue", "-h"); q != "" {
		t.Errorf("left queued:\n%s", q)
	}

	cmd = exec.Command(gym, "eval", "submit", "-c", "later.yaml")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PATH=/nonexistent")
	missing, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(missing), "sbatch is not on PATH") {
		t.Errorf("no sbatch: %v\n%s", err, missing)
	}
}

func mustGlob(t *testing.T, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) != 1 {
		t.Fatalf("%s: %v %v", pattern, m, err)
	}
	return filepath.Base(m[0])
}

// A shard that fails requeues itself and, once what failed it is fixed,
// resumes and completes; the merge then runs.
func TestFailedShardRequeuesItself(t *testing.T) {
	c := startCluster(t)
	gym := buildGym(t)
	work := t.TempDir()
	late := filepath.Join(work, "late.yaml")
	if err := os.WriteFile(filepath.Join(work, "submit.yaml"), []byte(`services: {}
compute:
  cluster: {type: slurm, account: test}
driver:
  policy_model_type: replay_model
  benchmarks:
    mcqa: {run: {config_paths: [benchmarks/mcqa_example/config.yaml, `+late+`], split: benchmark}}
job: {output_path: results}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := c.gym(t, gym, work, "eval", "submit", "--config", "submit.yaml", "--shards", "2", "--json")
	rec := parseSubmission(t, out)
	b := rec.Benchmarks[0]
	// Both shards fail on the missing config and go back in the queue.
	for _, task := range []string{"_0", "_1"} {
		c.waitFor(t, "shard"+task+" to requeue itself", func() bool {
			return strings.Contains(c.run(t, "scontrol", "show", "job", b.JobID+task), "Restarts=1")
		})
	}
	if err := os.WriteFile(late, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(jobLogs(b.JobDir))
		}
	})
	c.waitFor(t, "the shards and their merge to finish", func() bool {
		c.startRequeued(t, b.JobID+"_0", b.JobID+"_1")
		return c.run(t, "squeue", "-h", "-j", b.JobID+","+b.AggregateJobID) == ""
	}, work)
	merged := filepath.Join(b.JobDir, "artifacts", "rollouts.jsonl")
	if got := pairs(t, merged); len(got) != 10 {
		t.Errorf("merged %v", got)
	}
}

// Two nodes, each a test host with its own address and name: the servers
// run on one (use_absolute_ip: they bind and announce node1's address), the
// collector on the other, in one job sharing the run's token.
func TestServersOnOneNodeCollectorOnTheOther(t *testing.T) {
	c := startCluster(t, "2")
	gym := buildGym(t)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(c.dir, "out", "r.jsonl")
	job := filepath.Join(c.dir, "two.sh")
	if err := os.WriteFile(job, []byte(`#!/bin/bash
#SBATCH --nodes=2
#SBATCH --output=`+c.dir+`/two-%j.out
export GYM_INSTALL_ROOT=`+repo+` NO_COLOR=1
export GYM_RUN_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
srun --overlap -w node1 -N1 -n1 `+gym+` env start --benchmark mcqa_example --model-type replay_model \
  ++use_absolute_ip=true ++head_server.host=0.0.0.0 ++head_server.port=18444 > `+c.dir+`/servers.log 2>&1 &
for i in $(seq 150); do curl -sf http://node1:18444/ >/dev/null && break; sleep 0.2; done
srun --overlap -w node2 -N1 -n1 `+gym+` eval run --no-serve --agent mcqa_example_mcqa_simple_agent \
  --input `+repo+`/benchmarks/mcqa_example/data/mcqa_example_benchmark.jsonl -o `+out+` \
  ++head_server.host=node1 ++head_server.port=18444
rc=$?
kill %1
wait
exit $rc
`), 0o755); err != nil {
		t.Fatal(err)
	}
	id := c.run(t, "sbatch", "--parsable", job)
	c.waitFor(t, "the job to finish", func() bool { return c.run(t, "squeue", "-h", "-j", id) == "" })
	logs := func() string {
		a, _ := os.ReadFile(filepath.Join(c.dir, "two-"+id+".out"))
		b, _ := os.ReadFile(filepath.Join(c.dir, "servers.log"))
		return string(a) + "\n--- servers:\n" + string(b)
	}
	if got := pairs(t, out); len(got) != 5 {
		t.Fatalf("rollouts %v\n%s", got, logs())
	}
	servers, _ := os.ReadFile(filepath.Join(c.dir, "servers.log"))
	if !strings.Contains(string(servers), "'policy_model' listening on http://10.218.") {
		t.Errorf("the servers did not bind node1's own address:\n%s", logs())
	}
}

// startSSHD starts an SSH server whose sessions reach the cluster c: a
// login node, on loopback. It returns the directory of an ssh that
// reaches it as the host gym-login.
func startSSHD(t *testing.T, c *cluster) string {
	t.Helper()
	dir := filepath.Join(c.dir, "sshd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("sshd.sh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Command(script, "stop", dir).Run() })
	out, err := exec.Command(script, "start", dir, c.conf).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		t.Skipf("no sshd can be started here: %s", strings.TrimSpace(string(exit.Stderr)))
	}
	if err != nil {
		t.Fatalf("sshd.sh start: %v\n%s", err, exitStderr(err))
	}
	return strings.TrimSpace(string(out))
}

// Submitted from a machine without Slurm, over SSH to a login node: the
// run is staged there, a host: value reaches the jobs without being
// written anywhere, and status and cancel find the run by job id from the
// submitting machine's index.
func TestSubmissionOverSSH(t *testing.T) {
	c := startCluster(t)
	sshBin := startSSHD(t, c)
	gym := buildGym(t)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	work, remote := t.TempDir(), filepath.Join(c.dir, "remote-results")
	config := func(name, compute string) {
		// The jobs find the built-in benchmark through GYM_INSTALL_ROOT,
		// which only the submitting shell has.
		if err := os.WriteFile(filepath.Join(work, name), []byte(`services: {}
compute:
  cluster: {type: slurm, account: test, hostname: gym-login`+compute+`}
driver:
  policy_model_type: replay_model
  env: {GYM_INSTALL_ROOT: "host:GYM_INSTALL_ROOT", NEMO_GYM_EXTRA_ROOTS: "lit:", NO_COLOR: "lit:1"}
  benchmarks:
    mcqa: {run: {config_paths: [benchmarks/mcqa_example/config.yaml], split: benchmark}}
job: {output_path: `+remote+`}
`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config("submit.yaml", "")
	config("later.yaml", ", extra_args: {begin: now+1hour}")
	// No Slurm command and no SLURM_CONF here: only ssh.
	env := []string{"PATH=" + sshBin, "HOME=" + work, "XDG_CACHE_HOME=" + filepath.Join(work, "cache"), "GYM_INSTALL_ROOT=" + repo}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gym, args...)
		cmd.Dir, cmd.Env = work, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("gym %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := run("eval", "submit", "-c", "submit.yaml", "--shards", "2", "--json")
	rec := parseSubmission(t, out)
	if rec.Hostname == nil || *rec.Hostname != "gym-login" || !strings.HasPrefix(rec.RunDir, remote+"/gym-job-") {
		t.Fatalf("record %s", out)
	}
	b := rec.Benchmarks[0]
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(jobLogs(b.JobDir))
		}
	})
	// A shard may fail and requeue itself to resume (two shards on this one
	// node can draw the same random port for a server, as NeMo Gym's
	// would); Slurm holds a requeued job back a while, the test need not.
	c.waitFor(t, "the shards and their merge to finish", func() bool {
		c.startRequeued(t, b.JobID+"_0", b.JobID+"_1")
		return c.run(t, "squeue", "-h", "-j", b.JobID+","+b.AggregateJobID) == ""
	}, work)
	if got := pairs(t, filepath.Join(b.JobDir, "artifacts", "rollouts.jsonl")); len(got) != 10 {
		t.Errorf("merged %v", got)
	}
	staged, err := filepath.Glob(filepath.Join(rec.RunDir, "*", "*.sh"))
	if err != nil || len(staged) != 2 {
		t.Fatalf("staged scripts %v %v", staged, err)
	}
	for _, s := range staged {
		if data, _ := os.ReadFile(s); strings.Contains(string(data), repo) {
			t.Errorf("%s holds the host: value:\n%s", s, data)
		}
	}
	if text := run("eval", "status", b.JobID); !strings.Contains(text, "merged into artifacts/rollouts.jsonl") || !strings.Contains(text, "6/6 rollouts") || !strings.Contains(text, "4/4 rollouts") {
		t.Errorf("status:\n%s", text)
	}

	out = run("eval", "submit", "-c", "later.yaml", "--json")
	rec = parseSubmission(t, out)
	indexed, _ := filepath.Glob(filepath.Join(work, "cache", "gym", "jobs", "gym-job-*.json"))
	if len(indexed) != 2 {
		t.Fatalf("index %v", indexed)
	}
	if text := run("eval", "cancel", rec.Benchmarks[0].JobID); !strings.Contains(text, "Cancelled Slurm jobs "+rec.Benchmarks[0].JobID+" of") {
		t.Errorf("cancel:\n%s", text)
	}
	c.waitFor(t, "every job to be gone", func() bool { return c.run(t, "squeue", "-h", "-t", "PD,R") == "" })
}

// Once squeue has forgotten a submission's jobs (here: the controller
// restarted without its state), gym eval status reads their end from
// sacct.
func TestStatusFromSacct(t *testing.T) {
	c := startCluster(t, "1", "accounting")
	gym := buildGym(t)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "submit.yaml"), []byte(`services: {}
compute:
  cluster: {type: slurm, account: test}
driver:
  policy_model_type: replay_model
  benchmarks:
    mcqa: {run: {config_paths: [benchmarks/mcqa_example/config.yaml], split: benchmark}}
job: {output_path: results}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := c.gym(t, gym, work, "eval", "submit", "-c", "submit.yaml", "--shards", "2", "--json")
	rec := parseSubmission(t, out)
	b := rec.Benchmarks[0]
	c.waitFor(t, "the shards and their merge to finish", func() bool {
		return c.run(t, "squeue", "-h", "-j", b.JobID+","+b.AggregateJobID) == ""
	}, work)
	// The controller hands job ends to slurmdbd on its own time; on a
	// loaded machine a restart could come first and lose them.
	c.waitFor(t, "the accounting to record the shards and the merge", func() bool {
		return strings.Count(c.run(t, "sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", b.JobID+","+b.AggregateJobID), "COMPLETED") == 3
	}, work)
	c.restartController(t)
	if out, err := c.command("squeue", "-h", "-j", b.JobID).CombinedOutput(); err == nil {
		t.Fatalf("squeue still knows job %s: %s", b.JobID, out)
	}
	text := c.gym(t, gym, work, "eval", "status")
	if strings.Count(text, "COMPLETED") != 3 || strings.Contains(text, "ENDED") {
		t.Errorf("status:\n%s", text)
	}
}

// restartController restarts slurmctld without its saved state: it
// forgets every job, as it does jobs older than MinJobAge.
func (c *cluster) restartController(t *testing.T) {
	t.Helper()
	pidFile := filepath.Join(c.dir, "slurmctld.pid")
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := os.FindProcess(pid)
	p.Signal(os.Interrupt)
	for deadline := time.Now().Add(10 * time.Second); p.Signal(syscall.Signal(0)) == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
	}
	if out, err := c.command("slurmctld", "-f", c.conf, "-c", "-i").CombinedOutput(); err != nil {
		t.Fatalf("slurmctld: %v\n%s", err, out)
	}
	c.waitFor(t, "the node to be idle again", func() bool { return c.run(t, "sinfo", "-h", "-o", "%t") == "idle" })
}

// A vLLM service is started once per job, health-checked, and serves the
// evaluation through the policy_base_url gym fills in; it ends with the
// job. The vllm here is an OpenAI-compatible stand-in on PATH.
func TestServiceServesTheJob(t *testing.T) {
	c := startCluster(t)
	gym := buildGym(t)
	work := t.TempDir()
	fake, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	if err := os.WriteFile(filepath.Join(work, "submit.yaml"), []byte(`services:
  policy: {type: vllm, model: fake/model-7b, port: `+strconv.Itoa(port)+`}
compute:
  cluster: {type: slurm, account: test}
driver:
  policy_model: policy
  benchmarks:
    mcqa: {run: {config_paths: [benchmarks/mcqa_example/config.yaml], split: benchmark}}
job: {output_path: results}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(work, "vllm.log")
	t.Setenv("PATH", fake+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_VLLM_LOG", calls)
	out := c.gym(t, gym, work, "eval", "submit", "-c", "submit.yaml", "--json")
	rec := parseSubmission(t, out)
	b := rec.Benchmarks[0]
	c.waitFor(t, "the job to finish", func() bool { return c.run(t, "squeue", "-h", "-j", b.JobID) == "" })
	logs := func() string { return jobLogs(b.JobDir) }
	rollouts := filepath.Join(b.JobDir, "artifacts", "rollouts.jsonl")
	if got := pairs(t, rollouts); len(got) != 10 {
		t.Fatalf("rollouts %v\n%s", got, logs())
	}
	data, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if lines[0] != "start fake/model-7b" || strings.Count(string(data), "start ") != 1 || len(lines) != 11 {
		t.Errorf("the service's log:\n%s", data)
	}
	for _, l := range lines[1:] {
		if l != "call /v1/responses fake/model-7b" {
			t.Errorf("a call %q", l)
		}
	}
	if body, _ := os.ReadFile(rollouts); !strings.Contains(string(body), "Answer: A") {
		t.Errorf("the rollouts hold no answer of the service:\n%.500s", body)
	}
	if conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
		conn.Close()
		t.Errorf("the service outlived its job\n%s", logs())
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
