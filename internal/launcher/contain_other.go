//go:build !linux

package launcher

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// Cgroups are Linux's; elsewhere a run is held by process groups alone.
type runCgroup struct{}

type leafCgroup struct{}

func newRunCgroup(string) (*runCgroup, error, error) {
	return nil, nil, errors.New("cgroups are Linux-only")
}

func (*runCgroup) leaf(string) (*leafCgroup, error) { return nil, nil }
func (*runCgroup) close()                           {}
func (*leafCgroup) start(attr *syscall.SysProcAttr, start func(*syscall.SysProcAttr) (*os.Process, error)) (*os.Process, error) {
	return start(attr)
}
func (*leafCgroup) signal(syscall.Signal) {}
func (*leafCgroup) populated() bool       { return false }
func (*leafCgroup) release()              {}

// WatchRun has no cgroup to watch off Linux.
func WatchRun(_ string, alive io.Reader) error {
	_, err := io.Copy(io.Discard, alive)
	return err
}
