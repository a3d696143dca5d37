//go:build unix

package capture

import (
	"os"
	"syscall"
)

// withLock holds flock on f, as NeMo Gym's writers and readers do, for fn.
func withLock(f *os.File, exclusive bool, fn func() error) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		return err
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return fn()
}
