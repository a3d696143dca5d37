//go:build linux && !386 && !s390x

package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// connPair is a connected pair of sockets over network ("tcp" or "unix"),
// closed when the test ends.
func connPair(t testing.TB, network string) (near, far net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = fmt.Sprintf("@gym-sysio-test/%d/%s", os.Getpid(), t.Name())
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return dialAccepted(t, ln, func() (net.Conn, error) { return net.Dial(network, ln.Addr().String()) })
}

// outcome is what a scenario saw, addresses written as L and R so that two
// connections compare.
type outcome struct {
	n        int
	err      string
	timeout  bool
	deadline bool
	closed   bool
	eof      bool
	errno    syscall.Errno
}

func outcomeOf(c net.Conn, n int, err error) outcome {
	o := outcome{n: n}
	if err == nil {
		return o
	}
	o.err = err.Error()
	for _, a := range []struct {
		addr net.Addr
		as   string
	}{{c.LocalAddr(), "L"}, {c.RemoteAddr(), "R"}} {
		if s := a.addr.String(); s != "" && s != "@" {
			o.err = strings.ReplaceAll(o.err, s, a.as)
		}
	}
	var ne net.Error
	o.timeout = errors.As(err, &ne) && ne.Timeout()
	o.deadline = errors.Is(err, os.ErrDeadlineExceeded)
	o.closed = errors.Is(err, net.ErrClosed)
	o.eof = err == io.EOF
	errors.As(err, &o.errno)
	return o
}

// TestSysConnActsAsNetConn runs each scenario on a plain connection and on
// the same kind of connection with withSysIO: what Read and Write return,
// errors included, is the same.
func TestSysConnActsAsNetConn(t *testing.T) {
	past := time.Now().Add(-time.Second)
	scenarios := []struct {
		name string
		run  func(t *testing.T, c, far net.Conn) (int, error)
	}{
		{"empty read", func(t *testing.T, c, far net.Conn) (int, error) { return c.Read(nil) }},
		{"empty write", func(t *testing.T, c, far net.Conn) (int, error) { return c.Write(nil) }},
		{"read past the deadline", func(t *testing.T, c, far net.Conn) (int, error) {
			c.SetReadDeadline(past)
			return c.Read(make([]byte, 8))
		}},
		{"write past the deadline", func(t *testing.T, c, far net.Conn) (int, error) {
			c.SetWriteDeadline(past)
			return c.Write([]byte("x"))
		}},
		{"read waits out its deadline", func(t *testing.T, c, far net.Conn) (int, error) {
			c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			return c.Read(make([]byte, 8))
		}},
		{"write waits out its deadline", func(t *testing.T, c, far net.Conn) (int, error) {
			// Once the write has begun, nothing more is read: the
			// socket's buffers fill, and the write waits until the
			// deadline, having written part.
			go func() {
				far.Read(make([]byte, 1))
				c.SetWriteDeadline(time.Now())
			}()
			n, err := c.Write(make([]byte, 64<<20))
			if n <= 0 || n >= 64<<20 {
				t.Errorf("wrote %d bytes, want part of them", n)
			}
			return 0, err
		}},
		{"empty read after close", func(t *testing.T, c, far net.Conn) (int, error) {
			c.Close()
			return c.Read(nil)
		}},
		{"empty read past the deadline", func(t *testing.T, c, far net.Conn) (int, error) {
			c.SetReadDeadline(past)
			return c.Read(nil)
		}},
		{"empty write to a closed peer", func(t *testing.T, c, far net.Conn) (int, error) {
			far.Close()
			time.Sleep(20 * time.Millisecond)
			c.Write([]byte("x"))
			time.Sleep(20 * time.Millisecond)
			return c.Write(nil)
		}},
		{"read after close", func(t *testing.T, c, far net.Conn) (int, error) {
			c.Close()
			return c.Read(make([]byte, 8))
		}},
		{"write after close", func(t *testing.T, c, far net.Conn) (int, error) {
			c.Close()
			return c.Write([]byte("x"))
		}},
		{"close while reading", func(t *testing.T, c, far net.Conn) (int, error) {
			time.AfterFunc(20*time.Millisecond, func() { c.Close() })
			return c.Read(make([]byte, 8))
		}},
		{"the peer closes", func(t *testing.T, c, far net.Conn) (int, error) {
			far.Close()
			return c.Read(make([]byte, 8))
		}},
		{"the peer resets", func(t *testing.T, c, far net.Conn) (int, error) {
			c.Write([]byte("unread"))
			time.Sleep(20 * time.Millisecond)
			if tc, ok := far.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
			far.Close()
			time.Sleep(20 * time.Millisecond)
			return c.Read(make([]byte, 8))
		}},
		{"write to a closed peer", func(t *testing.T, c, far net.Conn) (int, error) {
			far.Close()
			time.Sleep(20 * time.Millisecond)
			for range 100 {
				if n, err := c.Write([]byte("x")); err != nil {
					return n, err
				}
				time.Sleep(time.Millisecond)
			}
			return 0, errors.New("every write succeeded")
		}},
	}
	for _, network := range []string{"tcp", "unix"} {
		for _, sc := range scenarios {
			t.Run(network+"/"+sc.name, func(t *testing.T) {
				c, far := connPair(t, network)
				n, err := sc.run(t, c, far)
				want := outcomeOf(c, n, err)

				c, far = connPair(t, network)
				sys := newSysConn(c, network)
				if sys == c {
					t.Fatalf("newSysConn(%T) returned it as it is", c)
				}
				n, err = sc.run(t, sys, far)
				if got := outcomeOf(sys, n, err); got != want {
					t.Errorf("with raw system calls: %+v\nnet.Conn:               %+v", got, want)
				}
			})
		}
	}
}

// Data crosses whole both ways, through full socket buffers, with reads
// and writes at once from different goroutines.
func TestSysConnCarriesData(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			near, far := connPair(t, network)
			a, b := newSysConn(near, network), newSysConn(far, network)
			for _, c := range []net.Conn{a, b} {
				c.SetDeadline(time.Now().Add(time.Minute))
			}
			payload := make([]byte, 8<<20)
			for i := range payload {
				payload[i] = byte(i * 7)
			}
			var wg sync.WaitGroup
			for _, dir := range []struct{ from, to net.Conn }{{a, b}, {b, a}} {
				wg.Go(func() {
					if n, err := dir.from.Write(payload); n != len(payload) || err != nil {
						t.Errorf("write: %d, %v", n, err)
					}
				})
				wg.Go(func() {
					got := make([]byte, len(payload))
					if _, err := io.ReadFull(dir.to, got); err != nil || !bytes.Equal(got, payload) {
						t.Errorf("read: %v; the same bytes: %v", err, bytes.Equal(got, payload))
					}
				})
			}
			wg.Wait()
		})
	}
}

// Only sockets get raw system calls: another connection is returned as it
// is.
func TestSysConnOnlyForSockets(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := newSysConn(a, "pipe"); got != a {
		t.Errorf("newSysConn(net.Pipe) = %T, want the pipe itself", got)
	}
}

// A connection with raw calls offers what the socket's net.Conn offers
// beyond Read and Write: a TCP one copies with TCPConn's ReadFrom and
// WriteTo (a large body in big steps), a Unix one has neither.
func TestSysConnKeepsCopying(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		c, _ := connPair(t, network)
		sys := newSysConn(c, network)
		_, wantFrom := c.(io.ReaderFrom)
		_, wantTo := c.(io.WriterTo)
		_, from := sys.(io.ReaderFrom)
		_, to := sys.(io.WriterTo)
		_, canClose := sys.(interface{ CloseWrite() error })
		_, raw := sys.(syscall.Conn)
		if from != wantFrom || to != wantTo || !canClose || !raw {
			t.Errorf("%s: ReaderFrom %v, WriterTo %v, CloseWrite %v, SyscallConn %v; want %v, %v, true, true", network, from, to, canClose, raw, wantFrom, wantTo)
		}
	}
}

// A raw call never waits in the kernel, even on a descriptor someone put
// in blocking mode (File does): the poller waits, and the deadline ends it,
// where a system call that blocked would hold up the whole process (as it
// then holds up this test, until go test's timeout ends it).
func TestSysConnNeverBlocksInTheKernel(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		for _, op := range []string{"read", "write"} {
			c, far := connPair(t, network)
			sys := newSysConn(c, network)
			raw, err := c.(syscall.Conn).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			raw.Control(func(fd uintptr) { syscall.SetNonblock(int(fd), false) })
			sys.SetDeadline(time.Now().Add(50 * time.Millisecond))
			done := make(chan error, 1)
			go func() {
				var err error
				if op == "read" {
					_, err = sys.Read(make([]byte, 8))
				} else {
					// Nothing reads at the far end: the buffers fill.
					_, err = sys.Write(make([]byte, 64<<20))
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Errorf("%s %s: ended with %v, want its deadline", network, op, err)
				}
			case <-time.After(10 * time.Second):
				far.Close() // ends the blocked call, if the process is not held up whole
				t.Fatalf("%s %s: blocked in the kernel", network, op)
			}
		}
	}
}

// The connections gym's servers accept and gym's transport dials, over TCP
// and over local sockets, all read and write with raw system calls.
func TestGymConnsUseSysIO(t *testing.T) {
	if raceBuild {
		t.Skip("a race-detector build keeps net.Conn's calls")
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	for _, local := range []bool{true, false} {
		t.Run(fmt.Sprintf("local sockets on: %v", local), func(t *testing.T) {
			setLocalSockets(t, local)
			absentLocal.Clear()
			tcp := listenLoopback(t)
			ln := ServeListener(tcp, nil)
			defer ln.Close()
			var dialled *h1Conn
			_, accepted := dialAccepted(t, ln, func() (net.Conn, error) {
				c, err := newH1Transport(dial, 0, time.Minute, nil).conn(context.Background(), tcp.Addr().String())
				dialled = c
				return c, err
			})
			for _, end := range []struct {
				name string
				c    net.Conn
			}{{"dialled", dialled.Conn}, {"accepted", accepted}} {
				inner := end.c
				lc, isLocal := inner.(*localConn)
				if isLocal {
					inner = lc.Conn
				}
				_, isSys := inner.(*sysConn)
				_, isSysTCP := inner.(*sysTCPConn)
				if !(isSys || isSysTCP) || isLocal != local {
					t.Errorf("the %s connection is a %T (over a local socket: %v), want raw system calls over %s",
						end.name, end.c, isLocal, map[bool]string{true: "the local socket", false: "TCP"}[local])
				}
			}
		})
	}
}

// BenchmarkSysConnPingPong sends 1,000 bytes and reads them back over a
// Unix socket whose far end echoes, with net.Conn's calls and with raw
// ones; the CPU it saves shows in the servers' benchmarks (bench/ab.sh)
// more than here, where the process is never idle.
func BenchmarkSysConnPingPong(b *testing.B) {
	for _, raw := range []bool{false, true} {
		b.Run(map[bool]string{false: "net.Conn", true: "raw"}[raw], func(b *testing.B) {
			near, far := connPair(b, "unix")
			if raw {
				near, far = newSysConn(near, "unix"), newSysConn(far, "unix")
			}
			go io.Copy(far, far)
			msg, got := make([]byte, 1000), make([]byte, 1000)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := near.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(near, got); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
