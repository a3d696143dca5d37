package server

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// withSysIO returns c reading and writing its socket with raw system calls
// when it is a TCP or Unix connection (network is what it was dialled or
// listened on, which its errors name); any other connection as it is.
//
// A socket's descriptor is non-blocking, so a read or write never waits in
// the kernel: the waiting is the poller's, as it is for net.Conn. What
// net.Conn adds around the call is the scheduler's system-call bookkeeping,
// which also wakes the runtime's monitor thread each time a process that
// was idle makes one: gym's servers are idle between most requests, and in
// their profiles the monitor's wake-ups were 7% of the CPU of the three
// servers at 256 clients and 8% of `gym eval run`'s. What the connection
// does and the errors it returns are net.Conn's.
func withSysIO(c net.Conn, network string) net.Conn {
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return c
	}
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return c
	}
	s := &sysConn{Conn: c, raw: raw, network: network, local: c.LocalAddr(), remote: c.RemoteAddr()}
	s.read.do = s.read.readOnce
	s.write.do = s.write.writeAll
	return s
}

// sysConn is a socket whose Read and Write are raw system calls, waited
// for by the poller through its syscall.RawConn; the rest is the
// connection's own.
type sysConn struct {
	net.Conn
	raw           syscall.RawConn
	network       string
	local, remote net.Addr
	read, write   sysOp
}

// sysOp is one direction's call, kept with the connection so that a read
// or write allocates nothing; mu makes concurrent callers take turns, as
// the descriptor's own lock would.
type sysOp struct {
	mu  sync.Mutex
	p   []byte
	n   int
	err error
	do  func(fd uintptr) bool // false: wait until the socket is ready
}

func (o *sysOp) readOnce(fd uintptr) bool {
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(o.p))), uintptr(len(o.p)))
		switch errno {
		case 0:
			o.n = int(n)
			if n == 0 {
				o.err = io.EOF
			}
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		o.err = os.NewSyscallError("read", errno)
		return true
	}
}

func (o *sysOp) writeAll(fd uintptr) bool {
	for o.n < len(o.p) {
		rest := o.p[o.n:]
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(rest))), uintptr(len(rest)))
		switch {
		case errno == syscall.EINTR:
		case errno == syscall.EAGAIN:
			return false
		case errno != 0:
			o.err = os.NewSyscallError("write", errno)
			return true
		case n == 0:
			o.err = io.ErrUnexpectedEOF
			return true
		default:
			o.n += int(n)
		}
	}
	return true
}

func (c *sysConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	o := &c.read
	o.mu.Lock()
	defer o.mu.Unlock()
	o.p, o.n, o.err = p, 0, nil
	err := c.raw.Read(o.do)
	n := o.n
	if err == nil {
		err = o.err
	}
	o.p = nil
	if err != nil && err != io.EOF {
		err = c.opError("read", err)
	}
	return n, err
}

func (c *sysConn) Write(p []byte) (int, error) {
	o := &c.write
	o.mu.Lock()
	defer o.mu.Unlock()
	o.p, o.n, o.err = p, 0, nil
	err := c.raw.Write(o.do)
	n := o.n
	if err == nil {
		err = o.err
	}
	o.p = nil
	if err != nil {
		err = c.opError("write", err)
	}
	return n, err
}

// opError is net.Conn's error for a failed op: the poller's (closed, past
// the deadline) or the system call's, with the connection's network and
// addresses.
func (c *sysConn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: c.network, Source: c.local, Addr: c.remote, Err: err}
}

func (c *sysConn) SyscallConn() (syscall.RawConn, error) { return c.raw, nil }

// CloseWrite half-closes the socket, as net/http's server does before a
// close.
func (c *sysConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// nothingToRead peeks at a socket without waiting or taking from it: true
// when there is nothing to read yet, as on an open idle connection; a
// byte is one sent unasked, and none with no error the peer's close.
func nothingToRead(fd uintptr, one *[1]byte) bool {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(one)), 1, syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	return errno == syscall.EAGAIN
}
