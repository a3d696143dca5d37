//go:build unix

package capture

import (
	"errors"
	"os"
	"syscall"
)

// appendLine appends line to path under an exclusive flock, in one write.
// It goes straight to the system calls: a model server appends one line
// per call, and os.File's poller registration costs as much again.
func appendLine(path string, line []byte) error {
	fd, err := syscall.Open(path, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := syscall.Flock(fd, syscall.LOCK_EX); err != nil {
		syscall.Close(fd)
		return &os.PathError{Op: "flock", Path: path, Err: err}
	}
	for len(line) > 0 && err == nil {
		var n int
		n, err = syscall.Write(fd, line)
		if errors.Is(err, syscall.EINTR) {
			err = nil
		}
		if n > 0 {
			line = line[n:]
		}
	}
	if err != nil {
		err = &os.PathError{Op: "write", Path: path, Err: err}
	}
	return errors.Join(err, syscall.Close(fd))
}

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
