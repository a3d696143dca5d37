package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// hangGuard bounds a read that the server must end, so a regression fails
// the test instead of hanging it; it is not a timing assertion.
const hangGuard = 10 * time.Second

// hardenedServer serves ok behind Harden with the given header timeout and
// connection cap, and returns its address and its error log.
func hardenedServer(t *testing.T, headerTimeout time.Duration, maxConns int) (string, *syncBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") }),
		ReadHeaderTimeout: headerTimeout,
		ErrorLog:          log.New(logs, "", 0),
	}
	hl := Harden(srv, ln, maxConns)
	go srv.Serve(hl)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), logs
}

// openUnfinished opens a connection that starts a request head and never
// ends it, as a slowloris client does.
func openUnfinished(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitClosed reads c until the server closes it and returns what it sent.
func waitClosed(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(hangGuard))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server never closed the connection (read %q)", b)
	}
	return string(b)
}

func get(t *testing.T, addr string) (*http.Response, string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: hangGuard}
	resp, err := client.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestHardenCapsConnections(t *testing.T) {
	const maxConns = 3
	addr, logs := hardenedServer(t, 300*time.Millisecond, maxConns)
	idle := make([]net.Conn, maxConns)
	for i := range idle {
		idle[i] = openUnfinished(t, addr)
	}

	// Over the cap: answered at once, not queued behind the idle ones.
	resp, body := get(t, addr)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("over the cap: status %d %q, want 503", resp.StatusCode, body)
	}
	if resp.Header.Get("Retry-After") != "1" || !resp.Close || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("503 headers %v (close %v), want Retry-After: 1, Connection: close, JSON", resp.Header, resp.Close)
	}
	var detail struct{ Detail string }
	if err := json.Unmarshal([]byte(body), &detail); err != nil || !strings.Contains(detail.Detail, "too many open connections") {
		t.Errorf("503 body %q, want {\"detail\": ...}", body)
	}
	if resp.Header.Get("Content-Length") != "" && resp.ContentLength != int64(len(body)) {
		t.Errorf("Content-Length %d for a %d-byte body", resp.ContentLength, len(body))
	}

	if !strings.Contains(logs.String(), "turned a connection away with 503 (1 so far): the cap of 3 open connections is reached") {
		t.Errorf("the rejection is not logged:\n%s", logs)
	}

	// The idle ones time out, which frees their slots for a real client.
	for _, c := range idle {
		if got := waitClosed(t, c); strings.Contains(got, "200") {
			t.Errorf("an unfinished request head was answered: %q", got)
		}
	}
	if resp, body := get(t, addr); resp.StatusCode != 200 || body != "served" {
		t.Errorf("after the idle connections timed out: %d %q, want 200", resp.StatusCode, body)
	}
}

// A connection that closes itself gives its slot back: the cap counts open
// connections, not connections ever accepted.
func TestHardenCountsOnlyOpenConnections(t *testing.T) {
	addr, _ := hardenedServer(t, time.Minute, 2)
	for range 5 {
		if resp, body := get(t, addr); resp.StatusCode != 200 || body != "served" {
			t.Fatalf("sequential clients under a cap of 2: %d %q", resp.StatusCode, body)
		}
	}
}

func TestHardenClosesSlowHeaders(t *testing.T) {
	const headerTimeout = 200 * time.Millisecond
	addr, _ := hardenedServer(t, headerTimeout, 10)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Each byte on time, the whole head too late: the deadline is for the
	// head, not per read, so trickling does not keep the connection.
	head := "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 20) + "\r\n\r\n"
	step := 2 * headerTimeout / time.Duration(len(head))
	for i := range len(head) {
		if _, err := c.Write([]byte{head[i]}); err != nil {
			break // closed under us, as it should be
		}
		time.Sleep(step)
	}
	if got := waitClosed(t, c); strings.Contains(got, "200 OK") {
		t.Errorf("a head sent over %v was served: %q", 2*headerTimeout, got)
	}
}

func TestHardenDefaults(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tests := []struct {
		name                 string
		srv                  *http.Server
		wantHeader, wantIdle time.Duration
		wantMaxHeader        int
	}{
		{
			name:       "zero server gets every bound",
			srv:        &http.Server{},
			wantHeader: 10 * time.Second, wantIdle: 30 * time.Second, wantMaxHeader: 64 << 10,
		},
		{
			name:       "the caller's own choices stay",
			srv:        &http.Server{ReadHeaderTimeout: time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 8 << 10},
			wantHeader: time.Second, wantIdle: time.Minute, wantMaxHeader: 8 << 10,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := tt.srv
			if Harden(srv, ln, 5) == nil {
				t.Fatal("no listener")
			}
			if srv.ReadHeaderTimeout != tt.wantHeader || srv.IdleTimeout != tt.wantIdle || srv.MaxHeaderBytes != tt.wantMaxHeader {
				t.Errorf("ReadHeaderTimeout %v IdleTimeout %v MaxHeaderBytes %d", srv.ReadHeaderTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
			}
			// Bodies and responses stay unbounded: a /run may take hours.
			if srv.ReadTimeout != 0 || srv.WriteTimeout != 0 {
				t.Errorf("ReadTimeout %v WriteTimeout %v, want none", srv.ReadTimeout, srv.WriteTimeout)
			}
		})
	}
}

func TestConnLimit(t *testing.T) {
	tests := []struct {
		files uint64
		want  int
	}{
		{65535, 49152},
		{1024, 768},
		{1 << 20, 786432},
		{256, 192},
		{40, 30},
		{0, 768},               // unknown: as for the usual 1024
		{^uint64(0), 12582912}, // unlimited: bounded, no overflow
	}
	for _, tt := range tests {
		if got := connLimit(tt.files); got != tt.want {
			t.Errorf("connLimit(%d) = %d, want %d", tt.files, got, tt.want)
		}
	}
}

// Harden with no cap of its own takes the one the open-file limit allows.
func TestHardenDerivesCapFromFileLimit(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	files, err := openFileLimit()
	if err != nil {
		t.Skip(err)
	}
	hl := Harden(&http.Server{}, ln, 0).(*limitListener)
	if want := connLimit(files); hl.max != int64(want) {
		t.Errorf("cap %d, want %d for a limit of %d files", hl.max, want, files)
	}
}

// The 503 goes out even when the client has already sent its request, which
// an abrupt close would turn into a connection reset.
func TestHardenRejectionSurvivesUnreadRequest(t *testing.T) {
	addr, _ := hardenedServer(t, time.Minute, 1)
	openUnfinished(t, addr)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n"+strings.Repeat("x", 5000))
	c.SetReadDeadline(time.Now().Add(hangGuard))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the rejection: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", resp.StatusCode)
	}
}

func TestHardenLogsRejectionsSparingly(t *testing.T) {
	var lines []string
	now := time.Unix(1000, 0)
	l := &limitListener{
		max:       1,
		rejecting: make(chan struct{}), // full: rejections close at once
		logf:      func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) },
		now:       func() time.Time { return now },
	}
	for _, advance := range []time.Duration{0, time.Second, 8 * time.Second, time.Second, time.Second} {
		now = now.Add(advance)
		a, b := net.Pipe()
		l.reject(a)
		b.Close()
	}
	want := []string{
		"turned a connection away with 503 (1 so far): the cap of 1 open connections is reached",
		"turned a connection away with 503 (4 so far): the cap of 1 open connections is reached",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("logged\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
