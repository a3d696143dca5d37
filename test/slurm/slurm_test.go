// Package slurm holds the real Slurm cluster gym's submission is tested
// on (cluster.sh starts one, private to a directory) and the contract gym
// eval submit builds on: array jobs, a requeued task that runs again with
// its restart count, and a dependent job that waits for the requeued task.
package slurm

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cluster is a running test cluster.
type cluster struct {
	dir  string
	conf string // SLURM_CONF for every command
}

// startCluster starts a cluster for the test and stops it at its end;
// it skips, saying why, where none can be started.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "gym-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(script, "start", dir).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		os.RemoveAll(dir)
		t.Skipf("no Slurm can be started here: %s", strings.TrimSpace(string(exit.Stderr)))
	}
	if err != nil {
		t.Fatalf("cluster.sh start: %v\n%s", err, exitStderr(err))
	}
	c := &cluster{dir: dir, conf: strings.TrimPrefix(strings.TrimSpace(string(out)), "SLURM_CONF=")}
	t.Cleanup(func() {
		exec.Command(script, "stop", dir).Run()
		os.RemoveAll(dir)
	})
	return c
}

// run runs a Slurm command against the cluster and returns its output.
func (c *cluster) run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.conf)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, exitStderr(err))
	}
	return strings.TrimSpace(string(out))
}

// waitFor polls the cluster until cond holds, failing after a minute.
func (c *cluster) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s; queue:\n%s", what, c.run(t, "squeue"))
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

	c.waitFor(t, "task 1 to run", func() bool { return c.run(t, "squeue", "-h", "-j", array+"_1", "-o", "%t") == "R" })
	c.run(t, "scontrol", "requeue", array+"_1")
	// A requeued job waits a while before it may start again; the test
	// need not.
	c.waitFor(t, "task 1 to wait again", func() bool {
		return c.run(t, "squeue", "-h", "-j", array+"_1", "-o", "%t %r") == "PD BeginTime"
	})
	c.run(t, "scontrol", "update", "jobid="+array+"_1", "StartTime=now")
	c.waitFor(t, "the dependent job to finish", func() bool {
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
