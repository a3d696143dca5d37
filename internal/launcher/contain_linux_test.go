package launcher

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/config"
)

// Descendants that leave the server's process group (setsid, a double
// fork into a new session) are stopped with it: the run's cgroup holds
// them.
func TestStopEndsDescendantsThatLeftTheGroup(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	f := newFixture(t)
	writeFile(t, filepath.Join(f.dir, "resources_servers/escaping/app.sh"), `#!/bin/sh
setsid sleep 300 &
echo "escapee $!"
( setsid sh -c 'sleep 301 & echo "escapee $!"' & )
sleep 0.2
echo started
exec sleep 300
`, 0o755)
	opts := f.options(t, serverYAML("e", "escaping", "app.sh"))
	// As Start does, so that gym reaps what it kills.
	if err := becomeSubreaper(); err != nil {
		t.Fatal(err)
	}
	l := &Launch{opts: opts, out: &syncWriter{w: f.out}, crashed: make(chan *child, 1), stopping: make(chan struct{})}
	l.contain()
	if l.cgroup == nil {
		t.Skipf("no cgroup v2 gym may write to here: %s", f.out)
	}
	specs, err := plan(opts.Result, opts.Roots, os.LookupEnv, opts.Builtin, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.startChild(specs[0], config.Dump(opts.Result.Config), nil)
	if err != nil {
		l.Stop()
		t.Fatal(err)
	}
	l.children = append(l.children, c)
	for !strings.Contains(f.out.String(), "started") {
		time.Sleep(10 * time.Millisecond)
	}
	var escapees []int
	for _, line := range strings.Split(f.out.String(), "\n") {
		if _, rest, ok := strings.Cut(line, "escapee "); ok {
			pid, _ := strconv.Atoi(strings.TrimSpace(rest))
			escapees = append(escapees, pid)
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		}
	}
	if len(escapees) != 2 {
		t.Fatalf("want 2 escapees in the output:\n%s", f.out)
	}
	dir := l.cgroup.dir
	l.Stop()
	for _, pid := range escapees {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			t.Errorf("process %d outlived the stop: %s", pid, st)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the run's cgroup %s is still there", dir)
	}
}

// A run's cgroup is empty until its first server starts: another gym's
// sweep must leave it alone while that gym lives, and remove it once it
// is gone.
func TestSweepLeavesLiveRunsAlone(t *testing.T) {
	own, err := ownCgroupDir()
	if err != nil {
		t.Skipf("no cgroup v2: %v", err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer live.Process.Kill()
	dir := filepath.Join(own, runCgroupPrefix+strconv.Itoa(live.Process.Pid))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup here: %v", err)
	}
	defer syscall.Rmdir(dir)
	sweepRunCgroups(own)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the cgroup of a live gym was swept: %v", err)
	}
	live.Process.Kill()
	live.Wait()
	sweepRunCgroups(own)
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the cgroup of a gym that is gone was left")
	}
}
