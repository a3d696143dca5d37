package server

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func testH1Transport(maxConns int, idle time.Duration) *h1Transport {
	var d net.Dialer
	return newH1Transport(d.DialContext, maxConns, idle, http.DefaultTransport)
}

// connCounter counts the connections a test server accepts.
func connCounter(srv *httptest.Server) *atomic.Int32 {
	var n atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	return &n
}

// A server sees the same request from h1Transport as from http.Transport,
// and the caller the same answer, in every way a body can come: sized,
// chunked, empty, gzipped (undone, as http.Transport undoes it), and a HEAD.
func TestH1TransportIsHTTPTransport(t *testing.T) {
	var seen []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var hdr []string
		for k, v := range r.Header {
			hdr = append(hdr, k+"="+strings.Join(v, ","))
		}
		slices.Sort(hdr)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.String()+" "+r.Proto+" "+strings.Join(hdr, ";")+" "+string(body)+" "+strings.Join(r.TransferEncoding, ","))
		mu.Unlock()
		switch r.URL.Path {
		case "/chunked":
			w.Write([]byte("part one "))
			w.(http.Flusher).Flush()
			w.Write([]byte("part two"))
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/gzip":
			if r.Header.Get("Accept-Encoding") == "gzip" {
				w.Header().Set("Content-Encoding", "gzip")
				zw := gzip.NewWriter(w)
				zw.Write([]byte("unzipped"))
				zw.Close()
				return
			}
			w.Write([]byte("plain"))
		default:
			w.Header().Set("Content-Length", "5")
			w.Write([]byte("sized"))
		}
	}))
	defer srv.Close()
	requests := func() []*http.Request {
		var out []*http.Request
		for _, path := range []string{"/sized", "/chunked", "/empty", "/gzip"} {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+path+"?q=1", strings.NewReader(`{"a":1}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Cookie", "session=abc")
			out = append(out, req)
		}
		req, _ := http.NewRequest(http.MethodHead, srv.URL+"/sized", nil)
		out = append(out, req)
		req, _ = http.NewRequest(http.MethodGet, srv.URL+"/gzip", nil)
		req.Header.Set("Accept-Encoding", "identity")
		out = append(out, req)
		// A body of unknown length goes chunked.
		req, _ = http.NewRequest(http.MethodPost, srv.URL+"/sized", io.MultiReader(strings.NewReader("un"), strings.NewReader("known")))
		return append(out, req)
	}
	answers := func(rt http.RoundTripper) []string {
		var out []string
		for _, req := range requests() {
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			out = append(out, resp.Status+" "+resp.Proto+" "+resp.Header.Get("Content-Length")+" "+resp.Header.Get("Content-Encoding")+" "+
				string(body)+" "+strings.Join(resp.TransferEncoding, ",")+" "+boolString(resp.Uncompressed)+" "+boolString(resp.Close)+" "+
				strconv.FormatInt(resp.ContentLength, 10)+" "+errString(err))
		}
		return out
	}
	want := answers(&http.Transport{})
	wantSeen := seen
	seen = nil
	got := answers(testH1Transport(4, time.Minute))
	if !slices.Equal(got, want) {
		t.Errorf("answers\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(seen, wantSeen) {
		t.Errorf("requests\n got %q\nwant %q", seen, wantSeen)
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A connection read to the end is used again; one abandoned midway, or
// that either side asked to close, is not.
func TestH1TransportReusesConnections(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		w.Write(bytes.Repeat([]byte("x"), 100_000))
	}))
	conns := connCounter(srv)
	srv.Start()
	defer srv.Close()
	rt := testH1Transport(4, time.Minute)
	get := func(path string, readAll bool) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if readAll {
			io.Copy(io.Discard, resp.Body)
		} else {
			resp.Body.Read(make([]byte, 10))
		}
		resp.Body.Close()
	}
	for range 5 {
		get("/", true)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("5 sequential requests read whole used %d connections, want 1", n)
	}
	get("/", false)
	get("/", true)
	if n := conns.Load(); n != 2 {
		t.Errorf("after an abandoned body: %d connections, want 2", n)
	}
	get("/close", true)
	get("/", true)
	if n := conns.Load(); n != 3 {
		t.Errorf("after Connection: close: %d connections, want 3", n)
	}
}

// A connection the server closed while it sat idle is not used: the next
// request goes out on a new one and succeeds. With one connection allowed,
// the closed one must also give its slot back.
func TestH1TransportSkipsConnectionsClosedWhileIdle(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	conns := connCounter(srv)
	srv.Config.IdleTimeout = 50 * time.Millisecond
	srv.Start()
	defer srv.Close()
	rt := testH1Transport(1, time.Minute)
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("body"))
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatalf("request %d after the server closed the idle connection: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		time.Sleep(200 * time.Millisecond)
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3 (one per request)", n)
	}
}

// An idle connection is taken again unprobed only within probeIdleAfter of
// its answer, and never with bytes the server sent unasked or past the idle
// timeout; after that the probe sees the server's close.
func TestH1TransportUsable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pair := func(t *testing.T) (client *h1Conn, server net.Conn) {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		server, err = ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close(); server.Close() })
		return &h1Conn{Conn: nc, br: bufio.NewReader(nc)}, server
	}
	// waitForClose lets the server's FIN reach the client's socket.
	waitForClose := func(t *testing.T, c *h1Conn) {
		for deadline := time.Now().Add(5 * time.Second); c.open(); {
			if time.Now().After(deadline) {
				t.Fatal("the server's close never reached the client")
			}
			time.Sleep(time.Millisecond)
		}
	}
	tr := testH1Transport(4, time.Minute)
	for _, tc := range []struct {
		name string
		idle time.Duration
		// serverCloses closes the connection from the server's side;
		// buffered puts bytes sent unasked in the client's reader.
		serverCloses, buffered bool
		want                   bool
	}{
		{name: "fresh and open", idle: time.Millisecond, want: true},
		{name: "fresh, closed since: trusted as a handed-over one is", idle: time.Millisecond, serverCloses: true, want: true},
		{name: "fresh, bytes sent unasked", idle: time.Millisecond, buffered: true, want: false},
		{name: "idle and open", idle: probeIdleAfter, want: true},
		{name: "idle and closed", idle: probeIdleAfter, serverCloses: true, want: false},
		{name: "idle, bytes sent unasked", idle: time.Second, buffered: true, want: false},
		{name: "past the idle timeout", idle: time.Minute, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, server := pair(t)
			if tc.buffered {
				server.Write([]byte("HTTP/1.1 200 OK\r\n"))
				if _, err := c.br.Peek(1); err != nil {
					t.Fatal(err)
				}
			}
			if tc.serverCloses {
				server.Close()
				waitForClose(t, c)
			}
			if got := tr.usable(c, tc.idle); got != tc.want {
				t.Errorf("usable after %v idle = %v, want %v", tc.idle, got, tc.want)
			}
		})
	}
}

// No more than maxConns connections go to a host: a request past them
// waits for one to come free, or for its context.
func TestH1TransportLimitsConnections(t *testing.T) {
	release := make(chan struct{})
	var active, peak atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := active.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-release
		active.Add(-1)
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	rt := testH1Transport(2, time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 5 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			resp, err := rt.RoundTrip(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errs <- err
		})
	}
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request waiting for a connection past its deadline: %v", err)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if p := peak.Load(); p != 2 {
		t.Errorf("%d requests at once, want 2", p)
	}

	// No limit: all at once.
	release = make(chan struct{})
	peak.Store(0)
	unlimited := testH1Transport(0, time.Minute)
	for range 5 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			if resp, err := unlimited.RoundTrip(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	for deadline := time.Now().Add(5 * time.Second); peak.Load() < 5 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	wg.Wait()
	if p := peak.Load(); p != 5 {
		t.Errorf("no limit: %d requests at once, want 5", p)
	}
}

// Cancelling a request's context closes its connection at once, in the
// middle of the answer too, and the error is the context's.
func TestH1TransportCancel(t *testing.T) {
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("first"))
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
	}))
	defer srv.Close()
	rt := testH1Transport(4, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	time.AfterFunc(20*time.Millisecond, cancel)
	done := make(chan error)
	go func() { _, err := io.ReadAll(resp.Body); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("reading the body of a cancelled request: %v, want the context's error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling did not stop the body's reading")
	}
	resp.Body.Close()

	// Cancelled while waiting for the answer's head.
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	// The body read, the server notices the connection closing.
	block := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	defer block.Close()
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, block.URL, strings.NewReader("x"))
	if _, err := rt.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("RoundTrip = %v, want the context's deadline", err)
	}
}

// Connections idle past the idle timeout are closed, by the janitor or when
// next looked at, and CloseIdleConnections closes them all.
func TestH1TransportIdleTimeout(t *testing.T) {
	var closed atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	rt := testH1Transport(4, 50*time.Millisecond)
	get := func(rt *h1Transport) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	get(rt)
	deadline := time.Now().Add(5 * time.Second)
	for closed.Load() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if closed.Load() != 1 {
		t.Fatal("an idle connection outlived the idle timeout")
	}
	rt = testH1Transport(4, time.Minute)
	get(rt)
	rt.CloseIdleConnections()
	for closed.Load() != 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if closed.Load() != 2 {
		t.Error("CloseIdleConnections left a connection open")
	}
}

// An idle timeout of 0 keeps idle connections, as http.Transport's
// IdleConnTimeout of 0 does.
func TestH1TransportNoIdleTimeout(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	conns := connCounter(srv)
	srv.Start()
	defer srv.Close()
	rt := testH1Transport(4, 0)
	for range 3 {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		time.Sleep(20 * time.Millisecond)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// An interim 100 Continue is skipped for the answer that follows it.
func TestH1TransportSkipsInterimAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone")
	}()
	req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String(), strings.NewReader("x"))
	resp, err := testH1Transport(4, time.Minute).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "done" {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
}

// https is not h1Transport's: it goes to the fallback.
func TestH1TransportLeavesHTTPSToFallback(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(r.Proto)) }))
	defer srv.Close()
	fallback := srv.Client().Transport.(*http.Transport)
	fallback.ForceAttemptHTTP2 = true
	srv.EnableHTTP2 = true
	var d net.Dialer
	rt := newH1Transport(d.DialContext, 4, time.Minute, fallback)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.TLS == nil {
		t.Errorf("an https request did not go over TLS (%s)", body)
	}
}

// BenchmarkPlainHTTP: a loopback POST answered with 1 KiB, through
// h1Transport and through http.Transport, at 64 at a time.
func BenchmarkPlainHTTP(b *testing.B) {
	answer := bytes.Repeat([]byte("a"), 1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Length", "1024")
		w.Write(answer)
	}))
	defer srv.Close()
	body := []byte(`{"input":"hello","model":"m"}`)
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
	}{{"h1Transport", testH1Transport(1024, time.Minute)}, {"http.Transport", &http.Transport{MaxIdleConnsPerHost: 1024}}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/responses", bytes.NewReader(body))
					resp, err := tc.rt.RoundTrip(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
	}
}
