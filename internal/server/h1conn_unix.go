//go:build unix

package server

import "syscall"

// open reports whether an idle connection can carry another request: the
// peer has not closed it, nor sent anything unasked. It peeks at the socket
// without blocking, as http.Transport's reading goroutine would have seen
// the close while the connection sat idle.
func (c *h1Conn) open() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var one [1]byte
	err = raw.Read(func(fd uintptr) bool {
		// Nothing to read is an open connection; a byte is one sent
		// unasked, and none with no error the peer's close.
		_, _, err := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return open && err == nil
}
