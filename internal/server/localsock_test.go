//go:build linux

package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// serveRemoteAddr serves ln with a handler that answers each request with
// the peer it saw, or at /local with the address the client reached.
func serveRemoteAddr(t *testing.T, ln net.Listener) {
	t.Helper()
	h1 := newH1Server(&http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/local" {
			io.WriteString(w, r.Context().Value(http.LocalAddrContextKey).(net.Addr).String())
			return
		}
		io.WriteString(w, r.RemoteAddr)
	})})
	go h1.Serve(ln)
	t.Cleanup(func() { h1.Close() })
}

// countingTransport is gym's plain-http transport whose TCP dials are
// counted.
func countingTransport(dials *atomic.Int32) *h1Transport {
	var d net.Dialer
	return newH1Transport(func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}, 0, time.Minute, nil)
}

func getVia(t *testing.T, rt http.RoundTripper, url string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// listenLoopback listens on 127.0.0.1 at a free port until the test ends.
func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tcp.Close() })
	return tcp
}

// nameBeside is the local socket's name beside tcp's port.
func nameBeside(tcp net.Listener) string { return localSocketName(tcp.Addr().(*net.TCPAddr).Port) }

// setLocalSockets turns local sockets on or off for a test, whatever
// GYM_LOCAL_SOCKETS the tests run with.
func setLocalSockets(t *testing.T, on bool) {
	t.Helper()
	off := localSocketsOff
	localSocketsOff = func() bool { return !on }
	t.Cleanup(func() { localSocketsOff = off })
}

// listenBoth listens on 127.0.0.1 with the local socket beside it.
func listenBoth(t *testing.T) (tcp, both net.Listener) {
	t.Helper()
	setLocalSockets(t, true)
	tcp = listenLoopback(t)
	both = WithLocalSocket(tcp, nil)
	if _, ok := both.(*dualListener); !ok {
		t.Fatalf("WithLocalSocket(%s) = %T, want the local socket beside it", tcp.Addr(), both)
	}
	// The name goes with the port, or a later test given the port finds
	// it taken.
	t.Cleanup(func() { both.Close() })
	return tcp, both
}

func TestLocalSocketCarriesGymCallsToLoopback(t *testing.T) {
	tcp, ln := listenBoth(t)
	serveRemoteAddr(t, ln)
	url := "http://" + tcp.Addr().String() + "/"
	absentLocal.Clear() // an earlier test's server may have had this port

	var dials atomic.Int32
	if peer := getVia(t, countingTransport(&dials), url); peer != "127.0.0.1:0" {
		t.Errorf("the handler saw the local socket's client as %q, want the loopback peer 127.0.0.1:0", peer)
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("gym's transport dialled TCP %d times, want the local socket only", n)
	}
	if local := getVia(t, countingTransport(&dials), url+"local"); local != tcp.Addr().String() {
		t.Errorf("the handler saw the address reached as %q, want %s", local, tcp.Addr())
	}
	// Anyone else reaches the TCP port as before.
	if peer := getVia(t, http.DefaultTransport, url); !strings.HasPrefix(peer, "127.0.0.1:") || peer == "127.0.0.1:0" {
		t.Errorf("a TCP client was seen as %q, want its own loopback address and port", peer)
	}
}

func TestLocalSocketOff(t *testing.T) {
	setLocalSockets(t, false)
	tcp := listenLoopback(t)
	ln := WithLocalSocket(tcp, nil)
	if ln != tcp {
		t.Fatalf("with %s=0, WithLocalSocket gave %T, want the TCP listener alone", localSocketsEnv, ln)
	}
	serveRemoteAddr(t, ln)
	var dials atomic.Int32
	getVia(t, countingTransport(&dials), "http://"+tcp.Addr().String()+"/")
	if n := dials.Load(); n != 1 {
		t.Errorf("with %s=0, gym's transport dialled TCP %d times, want 1", localSocketsEnv, n)
	}
}

func TestReachesLoopback(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want bool
	}{
		{"127.0.0.1", true},
		{"0.0.0.0", true},
		{"::", true},
		{"127.0.0.2", false},
		{"::1", false},
		{"10.1.2.3", false},
	} {
		if got := reachesLoopback(&net.TCPAddr{IP: net.ParseIP(tc.ip), Port: 8000}); got != tc.want {
			t.Errorf("reachesLoopback(%s) = %v, want %v", tc.ip, got, tc.want)
		}
	}
}

// The name goes with the listener, so a server started again on the port
// takes it again.
func TestLocalSocketNameFreedOnClose(t *testing.T) {
	tcp, ln := listenBoth(t)
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := listenLocal(nameBeside(tcp))
	if err != nil {
		t.Fatalf("the name is still held after Close: %v", err)
	}
	again.Close()
}

// A server whose name someone else holds serves on TCP alone.
func TestLocalSocketNameTaken(t *testing.T) {
	setLocalSockets(t, true)
	tcp := listenLoopback(t)
	holder, err := listenLocal(nameBeside(tcp))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if ln := WithLocalSocket(tcp, nil); ln != tcp {
		t.Errorf("WithLocalSocket with its name taken gave %T, want the TCP listener alone", ln)
	}
}

// Tests below run this test binary again as nobody, which needs root.
const (
	nobodyRoleEnv = "GYM_TEST_LOCAL_SOCKET_ROLE" // squat, connect or off
	nobodyNameEnv = "GYM_TEST_LOCAL_SOCKET_NAME"
)

// asNobody starts this test binary as uid 65534 in role, on the local
// socket name, and returns what it prints. The binary is copied where
// nobody may run it; where that cannot be done the test is skipped.
func asNobody(t *testing.T, role, name string) *bufio.Reader {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("starting a process as another user needs root")
	}
	dir, err := os.MkdirTemp("", "gym-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "nobody")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestLocalSocketAsNobody$")
	cmd.Env = append(os.Environ(), nobodyRoleEnv+"="+role, nobodyNameEnv+"="+name)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot run a copy of the test binary as nobody from %s: %v", dir, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return bufio.NewReader(out)
}

// A name bound by another user is not trusted: the request goes to the
// TCP port instead.
func TestLocalSocketOfAnotherUserIsNotUsed(t *testing.T) {
	setLocalSockets(t, true)
	tcp := listenLoopback(t)
	serveRemoteAddr(t, tcp)
	squatter := asNobody(t, "squat", nameBeside(tcp))
	if ready, err := squatter.ReadString('\n'); err != nil || ready != "ready\n" {
		t.Fatalf("the squatter did not start: %q, %v", ready, err)
	}
	absentLocal.Clear()

	var dials atomic.Int32
	if got := getVia(t, countingTransport(&dials), "http://"+tcp.Addr().String()+"/"); got == "squatted" {
		t.Fatal("gym's transport sent the request to another user's socket")
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("gym's transport dialled TCP %d times, want 1", n)
	}
}

// A server answers on its local socket only processes of its own user,
// which trusting them as loopback clients assumes: another user's is cut
// off unanswered (it can use TCP, where a firewall on lo sees it).
func TestLocalSocketRefusesAnotherUser(t *testing.T) {
	tcp, ln := listenBoth(t)
	serveRemoteAddr(t, ln)
	client := asNobody(t, "connect", nameBeside(tcp))
	got, err := client.ReadString('\n')
	if err != nil {
		t.Fatalf("the client as nobody said nothing: %v", err)
	}
	if got != "answer: \"\"\n" {
		t.Errorf("another user's request on the local socket got %q, want the connection closed unanswered", got)
	}
}

// A process running as nobody, the overflow uid, neither takes nor dials
// a local socket: its uid says nothing about who it is.
func TestLocalSocketsOffForNobody(t *testing.T) {
	if got, err := asNobody(t, "off", "").ReadString('\n'); err != nil || got != "off: true\n" {
		t.Errorf("as nobody, local sockets: %q, %v; want them off", got, err)
	}
}

// TestLocalSocketAsNobody is the other side of the tests above, and does
// nothing unless one of them started it: it holds the name and answers
// anyone ("squat"), sends a request there and prints the answer
// ("connect"), or says whether local sockets are off ("off").
func TestLocalSocketAsNobody(t *testing.T) {
	name := os.Getenv(nobodyNameEnv)
	switch os.Getenv(nobodyRoleEnv) {
	case "squat":
		ln, err := net.Listen("unix", name)
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("ready\n")
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsquatted")
		}
	case "connect":
		c, err := net.Dial("unix", name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		answer, _ := io.ReadAll(c)
		fmt.Printf("answer: %q\n", answer)
	case "off":
		fmt.Printf("off: %v\n", localSocketsOff())
	default:
		t.Skip("run by the tests that run a process as another user")
	}
}

// A server found without a local socket is dialled over TCP for a while
// without asking again; after that its socket is found.
func TestLocalSocketAbsenceRemembered(t *testing.T) {
	setLocalSockets(t, true)
	defer func(d time.Duration) { localRetryAfter = d }(localRetryAfter)
	localRetryAfter = time.Hour
	tcp := listenLoopback(t)
	serveRemoteAddr(t, tcp)
	url := "http://" + tcp.Addr().String() + "/"
	name := nameBeside(tcp)
	absentLocal.Clear()
	var dials atomic.Int32
	getVia(t, countingTransport(&dials), url)

	local, err := listenLocal(name)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	ln := newDualListener(tcp, local, tcp.Addr(), slog.New(slog.DiscardHandler))
	go ln.acceptFrom(local, func(c net.Conn) net.Conn { return newLocalConn(c.(*net.UnixConn), tcp.Addr(), loopbackPeer) })
	serveRemoteAddr(t, ln)

	getVia(t, countingTransport(&dials), url)
	if n := dials.Load(); n != 2 {
		t.Errorf("within the retry window gym's transport dialled TCP %d times, want 2", n)
	}
	localRetryAfter = 0
	if peer := getVia(t, countingTransport(&dials), url); peer != "127.0.0.1:0" {
		t.Errorf("after the retry window the request went to %q, want the local socket", peer)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("after the retry window gym's transport dialled TCP %d times in all, want 2", n)
	}
}

// scriptedListener answers Accept from a script, then blocks until closed.
type scriptedListener struct {
	net.Listener // never called: Addr is not asked
	script       []accepted
	closed       chan struct{}
	closeOnce    sync.Once
}

func (s *scriptedListener) Accept() (net.Conn, error) {
	if len(s.script) > 0 {
		a := s.script[0]
		s.script = s.script[1:]
		return a.c, a.err
	}
	<-s.closed
	return nil, net.ErrClosed
}

func (s *scriptedListener) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

// The local socket waits out running out of descriptors, as the server's
// loop does, and closes on any other failure, so that clients dial TCP
// instead of waiting in its backlog.
func TestLocalSocketAcceptErrors(t *testing.T) {
	client, served := net.Pipe()
	defer client.Close()
	local := &scriptedListener{closed: make(chan struct{}), script: []accepted{
		{err: syscall.EMFILE},
		{c: served},
		{err: syscall.EINVAL},
	}}
	l := newDualListener(nil, local, nil, slog.New(slog.DiscardHandler))
	defer close(l.done)
	go l.acceptFrom(local, func(c net.Conn) net.Conn { return c })
	got := make(chan accepted, 1)
	go func() {
		c, err := l.Accept()
		got <- accepted{c, err}
	}()
	select {
	case a := <-got:
		if a.err != nil || a.c != served {
			t.Fatalf("Accept after running out of descriptors = %v, %v; want the next connection", a.c, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the local socket stopped accepting after running out of descriptors")
	}
	select {
	case <-local.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the local socket stayed open after an accept error that does not pass")
	}
}

// closeRecorder is a listener that notes when it is closed.
type closeRecorder struct {
	net.Listener
	name   string
	closed *[]string
}

func (c closeRecorder) Close() error {
	*c.closed = append(*c.closed, c.name)
	return c.Listener.Close()
}

// The name is let go before the port, so it is never held by a process
// that has given up the port to another.
func TestLocalSocketClosesNameFirst(t *testing.T) {
	tcp, both := listenBoth(t)
	l := both.(*dualListener)
	var closed []string
	l.tcp = closeRecorder{tcp, "tcp", &closed}
	l.local = closeRecorder{l.local, "local", &closed}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(closed, " ") != "local tcp" {
		t.Errorf("closed %v, want the local socket, then the TCP port", closed)
	}
}

// A server shut down before it began serving lets its port and name go:
// the listener it was given is closed.
func TestServeAfterShutdownClosesListener(t *testing.T) {
	tcp, ln := listenBoth(t)
	h1 := newH1Server(&http.Server{Handler: http.NotFoundHandler()})
	if err := h1.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h1.Serve(ln); err != http.ErrServerClosed {
		t.Fatalf("Serve after Shutdown = %v, want http.ErrServerClosed", err)
	}
	again, err := net.Listen("tcp", tcp.Addr().String())
	if err != nil {
		t.Fatalf("the port is still held: %v", err)
	}
	again.Close()
}

// Serve listens on both: gym's transport reaches it over the local socket,
// anyone else over TCP, and with local sockets off gym's transport too.
func TestServeListensOnBoth(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("local sockets on: %v", on), func(t *testing.T) {
			setLocalSockets(t, on)
			absentLocal.Clear()
			ctx, cancel := context.WithCancel(context.Background())
			out := newListenWatcher()
			done := make(chan error, 1)
			go func() {
				done <- Serve(ctx, testRuntime(io.Discard), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.WriteString(w, r.RemoteAddr)
				}), out)
			}()
			defer func() {
				cancel()
				<-done
			}()
			base := out.waitURL(t)

			var dials atomic.Int32
			peer := getVia(t, countingTransport(&dials), base+"/peer")
			if on && (peer != "127.0.0.1:0" || dials.Load() != 0) {
				t.Errorf("gym's transport reached Serve as %q with %d TCP dials, want the local socket", peer, dials.Load())
			}
			if !on && (peer == "127.0.0.1:0" || dials.Load() != 1) {
				t.Errorf("with local sockets off gym's transport reached Serve as %q with %d TCP dials, want TCP", peer, dials.Load())
			}
			if peer := getVia(t, http.DefaultTransport, base+"/peer"); peer == "127.0.0.1:0" {
				t.Errorf("a TCP client reached Serve as %q, want its own address", peer)
			}
		})
	}
}

// Closing, as every shutdown does, is not a failure of the local socket.
func TestLocalSocketClosesQuietly(t *testing.T) {
	setLocalSockets(t, true)
	for range 20 {
		tcp := listenLoopback(t)
		var logs bytes.Buffer
		ln := WithLocalSocket(tcp, slog.New(slog.NewTextHandler(&logs, nil)))
		if _, ok := ln.(*dualListener); !ok {
			t.Fatalf("no local socket beside %s", tcp.Addr())
		}
		if err := ln.Close(); err != nil {
			t.Fatal(err)
		}
		if logs.Len() > 0 {
			t.Fatalf("closing logged:\n%s", logs.String())
		}
	}
}

// A local-socket connection's errors, at both ends, name the TCP
// addresses it stands for, as they did over TCP: they reach logs and the
// failures file (a rollout's _ng_failure_error).
func TestLocalSocketErrorsNameTCPAddresses(t *testing.T) {
	tcp, ln := listenBoth(t)
	absentLocal.Clear()
	port := tcp.Addr().(*net.TCPAddr).Port
	dial := preferLocal(func(context.Context, string, string) (net.Conn, error) {
		t.Fatal("dialled TCP, want the local socket")
		return nil, nil
	})
	client, server := dialAccepted(t, ln, func() (net.Conn, error) { return dial(context.Background(), "tcp", tcp.Addr().String()) })

	self := fmt.Sprintf("127.0.0.1:%d", port)
	for _, end := range []struct {
		name          string
		c             net.Conn
		local, remote string
	}{{"client", client, "127.0.0.1:0", self}, {"server", server, self, "127.0.0.1:0"}} {
		if l, r := end.c.LocalAddr().String(), end.c.RemoteAddr().String(); l != end.local || r != end.remote {
			t.Errorf("the %s's addresses are %s -> %s, want %s -> %s", end.name, l, r, end.local, end.remote)
		}
		end.c.SetDeadline(time.Now().Add(-time.Second))
		_, readErr := end.c.Read(make([]byte, 1))
		_, writeErr := end.c.Write([]byte("x"))
		for op, err := range map[string]error{"read": readErr, "write": writeErr} {
			want := fmt.Sprintf("%s tcp %s->%s: i/o timeout", op, end.local, end.remote)
			if err == nil || err.Error() != want || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("the %s's %s failed with %v, want %q (a deadline error)", end.name, op, err, want)
			}
		}
	}
}
