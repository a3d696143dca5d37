//go:build unix && !(linux && !386 && !s390x)

package server

import "syscall"

// nothingToRead peeks at a socket without waiting or taking from it: true
// when there is nothing to read yet, as on an open idle connection; a
// byte is one sent unasked, and none with no error the peer's close.
func nothingToRead(fd uintptr, one *[1]byte) bool {
	_, _, err := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
}
