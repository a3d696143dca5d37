//go:build unix

package server

import "syscall"

// peeker looks at an idle connection's socket without taking from it; its
// raw connection and callback are made once per connection.
type peeker struct {
	raw  syscall.RawConn
	read func(fd uintptr) bool
	open bool
	one  [1]byte
}

// open reports whether an idle connection can carry another request: the
// peer has not closed it, nor sent anything unasked. It peeks at the socket
// without blocking, as http.Transport's reading goroutine would have seen
// the close while the connection sat idle.
func (c *h1Conn) open() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	p := &c.peek
	if p.read == nil {
		sc, ok := c.Conn.(syscall.Conn)
		if !ok {
			return true
		}
		raw, err := sc.SyscallConn()
		if err != nil {
			return false
		}
		p.raw = raw
		p.read = func(fd uintptr) bool {
			p.open = nothingToRead(fd, &p.one)
			return true
		}
	}
	p.open = false
	err := p.raw.Read(p.read)
	return p.open && err == nil
}
