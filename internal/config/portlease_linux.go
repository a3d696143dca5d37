package config

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// fOFDSetLk is Linux's F_OFD_SETLK: a lock owned by the open file, so two
// opens in one process conflict as two processes do, and closing another
// descriptor of the file does not drop it.
const fOFDSetLk = 37

// openLeaseFile opens (creating) the lease file at path, which must be a
// file of this user's: in a shared /tmp another user could otherwise
// plant it (or a link in its place) and hold the ports in it.
func openLeaseFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	// One link and no permission for others, too: a hard link to a file
	// of ours that others may write would let them hold the ports.
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Uid != uint32(os.Getuid()) || st.Mode&syscall.S_IFMT != syscall.S_IFREG ||
		st.Nlink != 1 || st.Mode&0o077 != 0 {
		f.Close()
		return nil, fmt.Errorf("%s is not a file of this user's alone", path)
	}
	return f, nil
}

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
