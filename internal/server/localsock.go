package server

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// gym's servers on one machine talk to each other over a Unix socket
// instead of TCP over loopback: a server that takes 127.0.0.1:port (or
// every address) also listens on an abstract Unix socket named after that
// address, and gym's plain-http transport, dialling 127.0.0.1:port, tries
// that socket first. The bytes are the same HTTP/1.1 either way; the
// kernel's Unix path skips TCP's segments, acknowledgements and timers (a
// ping-pong of 1,000-byte messages: 40% less CPU per exchange, both ends
// counted). Anyone else (NeMo Gym's servers, curl) still reaches the TCP
// port.
//
// An abstract socket belongs to the network namespace, as 127.0.0.1 does,
// and goes away with the process that holds it, so nothing is left on disk.
// Any process of the namespace can bind or connect to one, so both ends
// check that the other runs as the same user (SO_PEERCRED); a server takes
// the name only after it holds the TCP port, and lets it go first.
// GYM_LOCAL_SOCKETS=0 turns this off on both ends (to watch the traffic on
// lo with tcpdump, say).
const localSocketsEnv = "GYM_LOCAL_SOCKETS"

// localSocketsOff is whether this process neither takes nor dials local
// sockets: off Linux, when GYM_LOCAL_SOCKETS=0, or when it runs as the
// overflow uid, which proves nothing about who is at either end.
var localSocketsOff = sync.OnceValue(func() bool {
	return !abstractSockets || os.Getenv(localSocketsEnv) == "0" || os.Getuid() == overflowUID
})

// overflowUID is the kernel's default uid for one a user namespace does not
// map: processes of different users can all show as it.
const overflowUID = 65534

// localSocketName is the abstract socket beside 127.0.0.1:port.
func localSocketName(port int) string {
	return "@gym-http/127.0.0.1:" + strconv.Itoa(port)
}

// reachesLoopback reports whether a TCP listener on addr takes connections
// to 127.0.0.1 at its port.
func reachesLoopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && (ta.IP.IsUnspecified() || ta.IP.Equal(net.IPv4(127, 0, 0, 1)))
}

// loopbackPeer is the client's end of a local-socket connection, as the
// handler and the client itself see it: a loopback client of this user,
// which is what it is.
var loopbackPeer = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}

// localConn is a local-socket connection dressed as the TCP one it stands
// for, between 127.0.0.1 at the server's port and the loopback peer, at
// either end: handlers, logs and the trust rule see a loopback peer, and
// its errors (which reach logs and a failed rollout's _ng_failure_error)
// name those TCP addresses, as they did before the socket.
type localConn struct {
	net.Conn
	local, remote net.Addr
}

// newLocalConn dresses uc, reading and writing it with withSysIO.
func newLocalConn(uc *net.UnixConn, local, remote net.Addr) *localConn {
	return &localConn{Conn: withSysIO(uc, "unix"), local: local, remote: remote}
}

func (c *localConn) LocalAddr() net.Addr  { return c.local }
func (c *localConn) RemoteAddr() net.Addr { return c.remote }

func (c *localConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	return n, c.dress(err)
}

func (c *localConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	return n, c.dress(err)
}

func (c *localConn) Close() error { return c.dress(c.Conn.Close()) }

func (c *localConn) SetDeadline(t time.Time) error { return c.dress(c.Conn.SetDeadline(t)) }

func (c *localConn) SetReadDeadline(t time.Time) error { return c.dress(c.Conn.SetReadDeadline(t)) }

func (c *localConn) SetWriteDeadline(t time.Time) error { return c.dress(c.Conn.SetWriteDeadline(t)) }

// SyscallConn and CloseWrite are the socket's own: gym's transport peeks
// at an idle connection, and servers half-close before closing.
func (c *localConn) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

func (c *localConn) CloseWrite() error {
	return c.dress(c.Conn.(interface{ CloseWrite() error }).CloseWrite())
}

// dress gives a failure of the socket the TCP connection's network and
// addresses; what failed, and how, stays as it was.
func (c *localConn) dress(err error) error {
	oe, ok := err.(*net.OpError)
	if !ok {
		return err
	}
	dressed := *oe
	dressed.Net, dressed.Source, dressed.Addr = "tcp", c.local, c.remote
	return &dressed
}

// WithLocalSocket returns tcp with the local socket beside it when tcp
// takes 127.0.0.1 and the socket can be made; otherwise tcp itself. A
// failure to make it (the name taken) only costs the speed, and is logged
// to logger (nil: not logged).
func WithLocalSocket(tcp net.Listener, logger *slog.Logger) net.Listener {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if localSocketsOff() || !reachesLoopback(tcp.Addr()) {
		return tcp
	}
	port := tcp.Addr().(*net.TCPAddr).Port
	name := localSocketName(port)
	local, err := listenLocal(name)
	if err != nil {
		logger.Warn("gym's clients reach this server over TCP: its local socket could not be made", "socket", name, "error", err)
		return tcp
	}
	l := newDualListener(tcp, local, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}, logger)
	l.running.Go(func() { l.acceptFrom(tcp, nil) })
	l.running.Go(func() { l.acceptFrom(local, l.refuseOtherUsers) })
	return l
}

// refuseOtherUsers passes a local-socket connection on dressed as the TCP
// one it stands for, or closes it and returns nil: anyone on the machine
// may connect, and only a process of this user is the loopback client of
// this user that trusting it assumes (a rule that keeps another user from
// TCP, a firewall on lo or Landlock, would not see this socket).
func (l *dualListener) refuseOtherUsers(c net.Conn) net.Conn {
	uc := c.(*net.UnixConn)
	if !sameUser(uc) {
		l.logger.Debug("refused a connection to the local socket from another user", "address", l.reached)
		uc.Close()
		return nil
	}
	return newLocalConn(uc, l.reached, loopbackPeer)
}

// dualListener accepts from the TCP listener and the local socket as one
// listener at the TCP address.
type dualListener struct {
	tcp, local net.Listener
	accepted   chan accepted
	done       chan struct{}
	closeOnce  sync.Once
	logger     *slog.Logger
	reached    net.Addr       // 127.0.0.1 at the TCP port: what a local-socket client stands for
	running    sync.WaitGroup // the accepting goroutines
}

func newDualListener(tcp, local net.Listener, reached net.Addr, logger *slog.Logger) *dualListener {
	return &dualListener{tcp: tcp, local: local, reached: reached, accepted: make(chan accepted), done: make(chan struct{}), logger: logger}
}

type accepted struct {
	c   net.Conn
	err error
}

// acceptFrom hands ln's connections to Accept. The TCP listener's errors
// go too, for the server's loop to judge as it always has. The local
// socket's are its own: one the loop would wait out (out of descriptors)
// is waited out here the same way, and any other closes the socket, so
// clients go to TCP instead of waiting in its backlog. wrap may refuse a
// connection (nil), which it has closed.
func (l *dualListener) acceptFrom(ln net.Listener, wrap func(net.Conn) net.Conn) {
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil && wrap != nil {
			if !retryableAccept(err) {
				ln.Close()
				select {
				case <-l.done:
				default:
					l.logger.Warn("gym's clients reach this server over TCP from now on: its local socket failed", "error", err)
				}
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(delay):
				continue
			case <-l.done:
				return
			}
		}
		delay = 0
		if c != nil && wrap != nil {
			if c = wrap(c); c == nil {
				continue
			}
		}
		select {
		case l.accepted <- accepted{c, err}:
		case <-l.done:
			if c != nil {
				c.Close()
			}
			return
		}
	}
}

func (l *dualListener) Accept() (net.Conn, error) {
	select {
	case <-l.done:
		return nil, net.ErrClosed
	default:
	}
	select {
	case a := <-l.accepted:
		return a.c, a.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close lets the socket's name go before the port, so a name is never
// held by a process that no longer holds its port, and returns once both
// have stopped accepting. done closes first: what the accepting sees after
// it is the closing, not a failure.
func (l *dualListener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		l.local.Close()
		err = l.tcp.Close()
		l.running.Wait()
	})
	return err
}

func (l *dualListener) Addr() net.Addr { return l.tcp.Addr() }

// preferLocal dials 127.0.0.1:port over the local socket of a gym server
// of this user that listens there, and everything else (or when there is
// none) with dial.
func preferLocal(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !localSocketsOff() && network == "tcp" {
			if host, port, err := net.SplitHostPort(addr); err == nil && host == "127.0.0.1" {
				if p, err := strconv.Atoi(port); err == nil {
					if c := dialLocalUnlessAbsent(ctx, localSocketName(p)); c != nil {
						return newLocalConn(c, loopbackPeer, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p}), nil
					}
				}
			}
		}
		return dial(ctx, network, addr)
	}
}

// absentLocal holds when a dial of each local socket last found nobody
// there (or another user): a failed dial costs 14-22 µs, which a server
// without one (NeMo Gym's) closing every connection would otherwise cost
// each request. A dial that failed otherwise (cancelled, the backlog full)
// is not remembered.
var absentLocal sync.Map // name → time.Time

// localRetryAfter is how long after finding no local socket TCP is used
// without looking again.
var localRetryAfter = time.Second

func dialLocalUnlessAbsent(ctx context.Context, name string) *net.UnixConn {
	if found, ok := absentLocal.Load(name); ok && time.Since(found.(time.Time)) < localRetryAfter {
		return nil
	}
	c, absent := dialLocal(ctx, name)
	if absent {
		absentLocal.Store(name, time.Now())
	}
	return c
}
