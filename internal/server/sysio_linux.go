//go:build linux && !386 && !s390x

package server

import (
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"unsafe"
)

// withSysIO returns c reading and writing its socket with raw system calls
// when it is a TCP or Unix connection (network is what it was dialled or
// listened on, which its errors name); any other connection as it is, and
// every connection in a race-detector build, which cannot see what a raw
// call reads and writes (nor the order a socket gives two goroutines).
//
// net.Conn makes each read and write a system call with the scheduler's
// bookkeeping around it, and that bookkeeping wakes the runtime's monitor
// thread whenever it sleeps deeply, as it does while a process is idle:
// gym's servers are idle between most requests, and in their profiles the
// monitor's wake-ups were 7% of the CPU of the three servers at 256
// clients. A raw call is made with MSG_DONTWAIT, so it never waits in the
// kernel whatever the descriptor's flags (a call that blocked would hold
// up the whole process); the waiting is the poller's, deadlines included.
// What Read and Write return, errors included, is held to net.Conn's
// (TestSysConnActsAsNetConn).
func withSysIO(c net.Conn, network string) net.Conn {
	if raceBuild {
		return c
	}
	return newSysConn(c, network)
}

func newSysConn(c net.Conn, network string) net.Conn {
	tcp, isTCP := c.(*net.TCPConn)
	if _, isUnix := c.(*net.UnixConn); !isTCP && !isUnix {
		return c
	}
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return c
	}
	s := &sysConn{Conn: c, raw: raw, network: network}
	s.read.do = s.read.receive
	s.write.do = s.write.sendAll
	if isTCP {
		return &sysTCPConn{sysConn: s, tcp: tcp}
	}
	return s
}

// sysConn is a socket whose Read and Write are raw system calls, waited
// for by the poller through its syscall.RawConn; the rest is the
// connection's own.
type sysConn struct {
	net.Conn
	raw         syscall.RawConn
	network     string
	read, write sysOp
}

// sysTCPConn is a TCP sysConn, which keeps TCPConn's ReadFrom and WriteTo,
// so that a copy to or from it (a request body past a bufio.Writer's first
// 4 KiB, say) is what it was with net.Conn: it makes net.Conn's calls, in
// 32 KiB steps or spliced, not raw ones.
type sysTCPConn struct {
	*sysConn
	tcp *net.TCPConn
}

func (c *sysTCPConn) ReadFrom(r io.Reader) (int64, error) { return c.tcp.ReadFrom(r) }
func (c *sysTCPConn) WriteTo(w io.Writer) (int64, error)  { return c.tcp.WriteTo(w) }

// maxSysIO bounds one raw call, which holds its thread's place in the
// scheduler for as long as the kernel copies: a stop for garbage
// collection waits for it.
const maxSysIO = 256 << 10

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

func (o *sysOp) receive(fd uintptr) bool {
	p := o.p[:min(len(o.p), maxSysIO)]
	for {
		n, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), syscall.MSG_DONTWAIT, 0, 0)
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

func (o *sysOp) sendAll(fd uintptr) bool {
	for o.n < len(o.p) {
		chunk := o.p[o.n:][:min(len(o.p)-o.n, maxSysIO)]
		n, _, errno := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(unsafe.SliceData(chunk))), uintptr(len(chunk)), syscall.MSG_DONTWAIT|syscall.MSG_NOSIGNAL, 0, 0)
		switch {
		case errno == syscall.EINTR:
		case errno == syscall.EAGAIN:
			return false
		case errno != 0:
			o.err = os.NewSyscallError("write", errno)
			return true
		case int(n) > len(chunk):
			// As internal/poll does for a kernel that answers wrong.
			panic("invalid return from write: got " + strconv.Itoa(int(n)) + " from a write of " + strconv.Itoa(len(chunk)))
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
		// net.Conn's answer (an error only when closed), which a raw read
		// cannot give: it checks the deadline first.
		return c.Conn.Read(p)
	}
	return c.call(&c.read, p)
}

func (c *sysConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		// net.Conn makes the call even so, and reports a broken
		// connection: a raw write of nothing would not be made.
		return c.Conn.Write(p)
	}
	return c.call(&c.write, p)
}

// call makes o's system calls on p, waiting for the socket through the
// poller, and returns what they did; an error is net.Conn's, but io.EOF.
func (c *sysConn) call(o *sysOp, p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.p, o.n, o.err = p, 0, nil
	var err error
	op := "read"
	if o == &c.read {
		err = c.raw.Read(o.do)
	} else {
		op = "write"
		err = c.raw.Write(o.do)
	}
	n := o.n
	if err == nil {
		err = o.err
	}
	o.p = nil
	if err != nil && err != io.EOF {
		err = c.opError(op, err)
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
	return &net.OpError{Op: op, Net: c.network, Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

func (c *sysConn) SyscallConn() (syscall.RawConn, error) { return c.raw, nil }

// CloseWrite half-closes the socket (a TCPConn or UnixConn, which both
// can), as net/http's server does before a close.
func (c *sysConn) CloseWrite() error {
	return c.Conn.(interface{ CloseWrite() error }).CloseWrite()
}

// nothingToRead peeks at a socket without waiting or taking from it: true
// when there is nothing to read yet, as on an open idle connection; a
// byte is one sent unasked, and none with no error the peer's close.
func nothingToRead(fd uintptr, one *[1]byte) bool {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(one)), 1, syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	return errno == syscall.EAGAIN
}
