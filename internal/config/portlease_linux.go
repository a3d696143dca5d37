package config

import (
	"errors"
	"os"
	"syscall"
)

// fOFDSetLk is Linux's F_OFD_SETLK: a lock owned by the open file, so two
// opens in one process conflict as two processes do, and closing another
// descriptor of the file does not drop it.
const fOFDSetLk = 37

var errLeased = errors.New("the port is leased to another gym process")

// lockByte takes a write lock on byte at of f without waiting: errLeased
// when another open file holds it, another error when locks do not work
// here.
func lockByte(f *os.File, at int64) error {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: at, Len: 1}
	err := syscall.FcntlFlock(f.Fd(), fOFDSetLk, &lk)
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
		return errLeased
	}
	return err
}

func unlockByte(f *os.File, at int64) {
	lk := syscall.Flock_t{Type: syscall.F_UNLCK, Whence: 0, Start: at, Len: 1}
	_ = syscall.FcntlFlock(f.Fd(), fOFDSetLk, &lk)
}
