package launcher

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one child started in a process group of its own, so that
// stopping it reaches everything it started. It is reaped by our own loop
// rather than os/exec, because we must also reap grandchildren that are
// re-parented to gym (see becomeSubreaper) to know when the group is empty.
type process struct {
	pid int
	cg  *leafCgroup // nil where the machine gives gym no cgroup

	exited    chan struct{} // closed when the direct child has exited
	exitState syscall.WaitStatus
	empty     chan struct{} // closed when no process of the group is left
}

// startProcess runs the program at path with argv in its own process group,
// and in cg when there is one, stdout and stderr both going to out; should
// gym die, the kernel sends the child deathSignal.
func startProcess(path string, argv []string, dir string, env []string, out *os.File, deathSignal syscall.Signal, cg *leafCgroup) (*process, error) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	start := func(attr *syscall.SysProcAttr) (*os.Process, error) {
		return os.StartProcess(path, argv, &os.ProcAttr{Dir: dir, Env: env, Files: []*os.File{devnull, out, out}, Sys: attr})
	}
	var p *os.Process
	if cg != nil {
		p, err = cg.start(childSysProcAttr(deathSignal), start)
	} else {
		p, err = start(childSysProcAttr(deathSignal))
	}
	if err != nil {
		return nil, err
	}
	proc := &process{pid: p.Pid, cg: cg, exited: make(chan struct{}), empty: make(chan struct{})}
	// The os.Process handle is not used to wait: our reaper does.
	p.Release()
	go proc.reap()
	return proc, nil
}

// reap waits for every process in the group: the child, and any descendant
// re-parented to gym. It closes exited when the child is gone and empty when
// the whole group is.
func (p *process) reap() {
	var once sync.Once
	markExited := func(ws syscall.WaitStatus) {
		once.Do(func() {
			p.exitState = ws
			close(p.exited)
		})
	}
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-p.pid, &ws, 0, nil)
		switch {
		case err == nil && pid == p.pid:
			markExited(ws)
		case err == nil:
			// a re-parented descendant
		case errors.Is(err, syscall.EINTR):
		case errors.Is(err, syscall.ECHILD):
			// None of the group is our child any more. Members may still
			// exist under other parents, and with a cgroup so may those
			// that left the group; wait for them to go.
			if !p.alive() {
				markExited(ws)
				if p.cg != nil {
					p.cg.release()
				}
				close(p.empty)
				return
			}
			time.Sleep(10 * time.Millisecond)
		default:
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func (p *process) alive() bool {
	return groupAlive(p.pid) || (p.cg != nil && p.cg.populated())
}

func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// signal sends sig to the child's whole process group, and to whatever
// left it inside the child's cgroup.
func (p *process) signal(sig syscall.Signal) error {
	if p.cg != nil {
		p.cg.signal(sig)
	}
	err := syscall.Kill(-p.pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// exitDescription says how the child ended, for messages.
func (p *process) exitDescription() string {
	ws := p.exitState
	switch {
	case ws.Exited():
		return fmt.Sprintf("exited with code %d", ws.ExitStatus())
	case ws.Signaled():
		return fmt.Sprintf("was killed by signal %s", ws.Signal())
	}
	return "exited"
}

// stop asks the group to end with SIGTERM, and after grace sends SIGKILL;
// it returns once no process of the group is left, reporting whether
// SIGKILL was needed.
func (p *process) stop(grace time.Duration) (killed bool) {
	select {
	case <-p.empty:
		return false
	default:
	}
	_ = p.signal(syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.empty:
		return false
	case <-timer.C:
	}
	_ = p.signal(syscall.SIGKILL)
	<-p.empty
	return true
}

// eachProcess calls fn with every process's pid and the fields of its
// /proc/<pid>/stat after the parenthesised command (state, ppid, pgrp, ...);
// without /proc it calls nothing.
func eachProcess(fn func(pid int, stat []string)) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			fn(pid, strings.Fields(string(stat[i+1:])))
		}
	}
}
