package launcher

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// runCgroupPrefix names a run's cgroup, beside gym's own: gym-<pid>.
const runCgroupPrefix = "gym-"

// runCgroup is the cgroup v2 directory that holds every process of one
// run, with a leaf per child. A process group only holds what does not
// call setsid; a cgroup holds every descendant however it forks, and the
// kernel can kill it whole. A watchdog outside it kills it should gym die
// without stopping it (SIGKILL, OOM), which Pdeathsig alone cannot do for
// grandchildren.
type runCgroup struct {
	dir      string
	watchdog *exec.Cmd
	alive    *os.File // the watchdog reads EOF once this closes, however gym ends
	leaves   int
}

// leafCgroup is one child's cgroup inside the run's.
type leafCgroup struct {
	dir string
}

// newRunCgroup makes the run's cgroup under gym's own and starts its
// watchdog (this binary, self, as `gym watchdog`). It fails when the
// machine has no cgroup v2 gym may write to; the watchdog failing to start
// is reported by watchdogErr while the cgroup still serves shutdown.
func newRunCgroup(self string) (g *runCgroup, watchdogErr error, err error) {
	own, err := ownCgroupDir()
	if err != nil {
		return nil, nil, err
	}
	sweepRunCgroups(own)
	dir := filepath.Join(own, runCgroupPrefix+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, nil, fmt.Errorf("cannot make a cgroup for the run: %w", err)
	}
	g = &runCgroup{dir: dir}
	return g, g.startWatchdog(self), nil
}

func (g *runCgroup) startWatchdog(self string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(self, "watchdog", g.dir)
	cmd.Args[0] = "gym"
	cmd.ExtraFiles = []*os.File{r}
	// Its own process group: a Ctrl-C or a kill of gym's group must leave
	// it to see gym go.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("cannot start the watchdog that ends the run should gym be killed: %w", err)
	}
	g.watchdog, g.alive = cmd, w
	return nil
}

// leaf makes the cgroup a child starts in.
func (g *runCgroup) leaf(instance string) (*leafCgroup, error) {
	g.leaves++
	name := fmt.Sprintf("%02d-%s", g.leaves, strings.Map(func(r rune) rune {
		if r == '/' || r == 0 {
			return '_'
		}
		return r
	}, instance))
	dir := filepath.Join(g.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot make a cgroup for server '%s': %w", instance, err)
	}
	return &leafCgroup{dir: dir}, nil
}

// close removes the run's cgroup, once every child is stopped, and lets
// the watchdog go.
func (g *runCgroup) close() {
	killCgroup(g.dir)
	removeCgroupTree(g.dir)
	if g.alive != nil {
		g.alive.Close()
		g.watchdog.Wait()
	}
}

// start runs a child straight inside the leaf (CLONE_INTO_CGROUP), so
// nothing it forks can start outside it. Where that clone is not to be had
// the child is moved in just after it starts.
func (c *leafCgroup) start(attr *syscall.SysProcAttr, start func(*syscall.SysProcAttr) (*os.Process, error)) (*os.Process, error) {
	fd, err := syscall.Open(c.dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	into := *attr
	into.UseCgroupFD, into.CgroupFD = true, fd
	p, err := start(&into)
	syscall.Close(fd)
	if err == nil {
		return p, nil
	}
	// clone3 is missing (ENOSYS), older than Go's struct (E2BIG, Linux
	// 5.3-5.6) or refused by a seccomp profile (EPERM): start the child as
	// before and move it in.
	if p, err = start(attr); err != nil {
		return nil, err
	}
	os.WriteFile(filepath.Join(c.dir, "cgroup.procs"), []byte(strconv.Itoa(p.Pid)), 0)
	return p, nil
}

// signal sends sig to every process in the leaf, those that left the
// child's process group included.
func (c *leafCgroup) signal(sig syscall.Signal) {
	if sig == syscall.SIGKILL && killCgroup(c.dir) {
		return
	}
	for _, pid := range cgroupProcs(c.dir) {
		syscall.Kill(pid, sig)
	}
}

// populated reports whether any process is left in the leaf; one that
// cannot be read counts as empty, as then nothing more can be done.
func (c *leafCgroup) populated() bool { return populated(c.dir) }

// release reaps the leaf's processes that were re-parented to gym (gym
// is their subreaper) and removes the leaf.
func (c *leafCgroup) release() {
	reapZombiesOf(c.dir)
	os.Remove(c.dir)
}

// WatchRun is the watchdog's body: it waits until alive reaches EOF, which
// happens when gym's end of the pipe closes, however gym ends, then kills
// whatever is left in the run's cgroup and removes it.
func WatchRun(dir string, alive io.Reader) error {
	io.Copy(io.Discard, alive)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	killCgroup(dir)
	deadline := time.Now().Add(10 * time.Second)
	for populated(dir) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	removeCgroupTree(dir)
	return nil
}

// killCgroup SIGKILLs every process in dir and below, with cgroup.kill
// (Linux 5.14) or, before it, one by one until none is left.
func killCgroup(dir string) bool {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err == nil {
		return true
	}
	for range 100 {
		if !populated(dir) {
			return true
		}
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				for _, pid := range cgroupProcs(path) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			return nil
		})
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// removeCgroupTree removes dir and its sub-cgroups, deepest first; a
// cgroup directory is removed with rmdir though it lists files.
func removeCgroupTree(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeCgroupTree(filepath.Join(dir, e.Name()))
		}
	}
	reapZombiesOf(dir)
	for range 50 {
		if err := syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sweepRunCgroups removes the empty cgroups of earlier runs whose gym and
// watchdog were both killed. A run's cgroup is empty until its first
// server starts, so only those of a gym that is gone are touched.
func sweepRunCgroups(own string) {
	entries, _ := os.ReadDir(own)
	for _, e := range entries {
		pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), runCgroupPrefix))
		if !e.IsDir() || !strings.HasPrefix(e.Name(), runCgroupPrefix) || err != nil || pid == os.Getpid() {
			continue
		}
		dir := filepath.Join(own, e.Name())
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) && !populated(dir) {
			removeCgroupTree(dir)
		}
	}
}

func populated(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return false
	}
	return bytes.Contains(data, []byte("populated 1"))
}

func cgroupProcs(dir string) []int {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// reapZombiesOf waits for gym's own zombie children that died in the
// cgroup at dir: descendants re-parented to gym, which no process-group
// wait reaches. A zombie keeps naming its cgroup, so nothing else of gym's
// (an os/exec child elsewhere) is reaped by mistake.
func reapZombiesOf(dir string) {
	own, err := ownCgroupRoot()
	if err != nil {
		return
	}
	rel := "/" + strings.TrimPrefix(strings.TrimPrefix(dir, own), "/")
	self := strconv.Itoa(os.Getpid())
	eachProcess(func(pid int, stat []string) {
		if len(stat) < 2 || stat[0] != "Z" || stat[1] != self {
			return
		}
		cg, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
		if err != nil || !strings.Contains(string(cg), "0::"+rel+"\n") {
			return
		}
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	})
}

// ownCgroupDir is the directory of gym's own cgroup v2.
func ownCgroupDir() (string, error) {
	root, err := ownCgroupRoot()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(root, path), nil
		}
	}
	return "", errors.New("this process is in no cgroup v2")
}

// ownCgroupRoot is where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup
// on a unified machine, /sys/fs/cgroup/unified on a hybrid one. It is read
// once: every leaf's release asks for it.
var ownCgroupRoot = sync.OnceValues(readCgroupRoot)

func readCgroupRoot() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, field := range fields {
			if field == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return unescapeMountPath(fields[4]), nil
			}
		}
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted")
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
