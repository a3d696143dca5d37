package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// h1Cases are handler behaviours whose bytes on the wire must be the same
// from gym's loop as from net/http's server.
var h1Cases = map[string]http.HandlerFunc{
	"/json": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	},
	"/sniff":   func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html><body>hi</body></html>") },
	"/empty":   func(w http.ResponseWriter, r *http.Request) {},
	"/big":     func(w http.ResponseWriter, r *http.Request) { w.Write(bytes.Repeat([]byte("x"), 5000)) },
	"/exact2k": func(w http.ResponseWriter, r *http.Request) { w.Write(bytes.Repeat([]byte("y"), 2048)) },
	"/pieces": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for i := range 300 {
			fmt.Fprintf(w, "line %d\n", i)
		}
	},
	"/stream": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
		}
	},
	"/flush-first": func(w http.ResponseWriter, r *http.Request) {
		http.NewResponseController(w).Flush()
		io.WriteString(w, "after")
	},
	"/204": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5")
		w.WriteHeader(http.StatusNoContent)
		io.WriteString(w, "nope!")
	},
	"/304": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Etag", `"x"`)
		w.WriteHeader(http.StatusNotModified)
	},
	"/declared": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "4000")
		w.Write(bytes.Repeat([]byte("z"), 4000))
	},
	"/short": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10")
		io.WriteString(w, "abc")
	},
	"/bad-length": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "ten")
		io.WriteString(w, "abc")
	},
	"/twice": func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "made")
	},
	"/late-header": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Before", "1")
		w.WriteHeader(http.StatusTeapot)
		w.Header().Set("X-After", "2")
		io.WriteString(w, "tea")
	},
	"/odd-header": func(w http.ResponseWriter, r *http.Request) {
		w.Header()["X-Broken"] = []string{" two\nlines\r ", "b"}
		w.Header()["Bad Key"] = []string{"v"}
		w.Header()["lower-case"] = []string{"v"}
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		io.WriteString(w, "odd")
	},
	"/trailers": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum, Content-Length")
		io.WriteString(w, "body")
		w.Header().Set("X-Sum", "42")
		w.Header().Set(http.TrailerPrefix+"X-Late", "late")
	},
	"/identity": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Transfer-Encoding", "identity")
		io.WriteString(w, "until close")
	},
	"/te-chunked": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Transfer-Encoding", "chunked")
		io.WriteString(w, "chunked")
	},
	"/te-gzip-length": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Transfer-Encoding", "gzip")
		w.Header().Set("Content-Length", "3")
		io.WriteString(w, "abc")
	},
	"/close": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	},
	"/close-token": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "keep-alive close")
		io.WriteString(w, "bye")
	},
	"/early-hints": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.Header().Set("Content-Length", "99")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Content-Length")
		io.WriteString(w, "final")
	},
	"/date": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", "Thu, 01 Jan 1970 00:00:00 GMT")
		io.WriteString(w, "dated")
	},
	"/encoded": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		io.WriteString(w, "not really gzip")
	},
	"/999": func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(999)
		io.WriteString(w, "odd status")
	},
	"/echo": func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"body": string(body), "err": fmt.Sprint(err), "request": requestView(r)})
	},
	"/ignore-body": func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ignored") },
	"/close-body": func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 3)
		r.Body.Read(buf)
		r.Body.Close()
		_, err := r.Body.Read(buf)
		fmt.Fprintf(w, "read %q then %v", buf, err)
	},
	"/if-trailer": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "If-Match, X-Kept")
		io.WriteString(w, "body")
		w.Header().Set("If-Match", `"e"`)
		w.Header().Set("X-Kept", "k")
	},
	"/panic": func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "partial")
		panic(http.ErrAbortHandler)
	},
}

// requestView is what a handler can see of a request, but its context.
func requestView(r *http.Request) map[string]any {
	return map[string]any{
		"method": r.Method, "uri": r.RequestURI, "url": r.URL.String(), "path": r.URL.Path, "raw_path": r.URL.RawPath,
		"query": r.URL.RawQuery, "proto": r.Proto, "major": r.ProtoMajor, "minor": r.ProtoMinor, "host": r.Host,
		"header": r.Header, "length": r.ContentLength, "te": r.TransferEncoding, "close": r.Close,
		"remote_is_set": r.RemoteAddr != "", "trailer": r.Trailer, "body_is_nobody": r.Body == http.NoBody,
		"server_in_ctx": r.Context().Value(http.ServerContextKey) != nil, "local_addr_in_ctx": r.Context().Value(http.LocalAddrContextKey) != nil,
	}
}

func h1Mux() *http.ServeMux {
	mux := http.NewServeMux()
	for p, h := range h1Cases {
		mux.Handle(p, h)
	}
	mux.HandleFunc("POST /only-post", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "posted") })
	return mux
}

// startBoth serves h from net/http's server and from gym's loop, both
// hardened as gym's servers are, and returns their addresses.
func startBoth(t *testing.T, h http.Handler) (std, gym string) {
	t.Helper()
	quiet := log.New(io.Discard, "", 0)
	stdSrv := &http.Server{Handler: h, ErrorLog: quiet}
	stdLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stdLimited := Harden(stdSrv, stdLn, 100)
	go stdSrv.Serve(stdLimited)
	gymSrv := &http.Server{Handler: h, ErrorLog: quiet}
	gymLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h1 := newH1Server(gymSrv)
	gymLimited := Harden(gymSrv, gymLn, 100)
	go h1.Serve(gymLimited)
	t.Cleanup(func() {
		stdSrv.Close()
		h1.Close()
	})
	return stdLn.Addr().String(), gymLn.Addr().String()
}

// exchange sends raw, half-closes and reads everything the server sends
// until it closes.
func exchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	out, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("reading the answer to %q: %v", raw, err)
	}
	return dateLine.ReplaceAllString(string(out), "Date: <now>\r\n")
}

var dateLine = regexp.MustCompile(`Date: [A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT\r\n`)

func TestH1ServerMatchesNetHTTP(t *testing.T) {
	std, gym := startBoth(t, h1Mux())
	get := func(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: example.test\r\n\r\n" }
	post := func(path, body string) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: example.test\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
	}
	var requests = map[string]string{
		"pipelined":        get("/json") + get("/sniff") + post("/echo", `{"a":1}`),
		"post then 404":    post("/echo", "hello") + get("/missing"),
		"crlf after post":  post("/echo", "hi") + "\r\n" + get("/json"),
		"crlf after get":   get("/json") + "\r\n" + get("/json"),
		"405":              get("/only-post"),
		"unread body":      post("/ignore-body", strings.Repeat("b", 1000)) + get("/json"),
		"unread big body":  post("/ignore-body", strings.Repeat("b", 300<<10)) + get("/json"),
		"closed body":      post("/close-body", strings.Repeat("c", 100)) + get("/json"),
		"closed big body":  post("/close-body", strings.Repeat("c", 300<<10)) + get("/json"),
		"short body":       "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc",
		"headers":          "GET /echo?x=1&y=%20 HTTP/1.1\r\nHost: example.test:8080\r\nuser-agent: test\r\nX-Multi: a\r\nx-multi: b\r\nCookie: a=1\r\nCookie: b=2\r\nAccept:  spaced \t\r\nX-Empty:\r\nX-Obs: caf\xc3\xa9\r\n\r\n",
		"escaped path":     get("/echo/a%2Fb") + get("/ech%6F"),
		"http/1.0":         "GET /json HTTP/1.0\r\n\r\n",
		"http/1.0 alive":   "GET /json HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + get("/sniff"),
		"head":             "HEAD /json HTTP/1.1\r\nHost: h\r\n\r\n" + get("/sniff"),
		"chunked request":  "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"expect":           "POST /echo HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi",
		"connection close": "GET /json HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n" + get("/sniff"),
		"keep-alive":       "GET /echo HTTP/1.1\r\nHost: h\r\nConnection: Keep-Alive\r\n\r\n" + get("/sniff"),
		"keep-alive close": "GET /echo HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, close\r\n\r\n" + get("/sniff"),
		"no host":          "GET /json HTTP/1.1\r\n\r\n",
		"two hosts":        "GET /json HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"bad header":       "GET /json HTTP/1.1\r\nHost: h\r\nBad Header: x\r\n\r\n",
		"bad value":        "GET /json HTTP/1.1\r\nHost: h\r\nX: a\x01b\r\n\r\n",
		"bad length":       "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n",
		"two lengths":      "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nhi",
		"bad request line": "GET  /json HTTP/1.1\r\nHost: h\r\n\r\n",
		"bare lf":          "GET /json HTTP/1.1\nHost: h\n\n",
		"folded":           "GET /echo HTTP/1.1\r\nHost: h\r\nX-A: one\r\n two\r\n\r\n",
		"absolute uri":     "GET http://other.test/echo HTTP/1.1\r\nHost: h\r\n\r\n",
		"huge head":        "GET /echo HTTP/1.1\r\nHost: h\r\nX-Big: " + strings.Repeat("v", 6000) + "\r\n\r\n",
		"pragma":           "GET /echo HTTP/1.1\r\nHost: h\r\nPragma: no-cache\r\n\r\n",
		"garbage":          "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
	}
	for path := range h1Cases {
		requests["handler "+path] = get(path) + get("/json")
	}
	names := make([]string, 0, len(requests))
	for name := range requests {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			raw := requests[name]
			want, got := exchange(t, std, raw), exchange(t, gym, raw)
			if got != want {
				t.Errorf("gym's loop answered\n%q\nnet/http's server\n%q", got, want)
			}
		})
	}
}

// The usual requests are served by gym's loop, the rest by net/http's.
func TestH1ServerServesUsualRequests(t *testing.T) {
	writers := make(chan string, 1)
	_, gym := startBoth(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		writers <- fmt.Sprintf("%T", w)
	}))
	for _, c := range []struct{ request, writer string }{
		{"GET /x HTTP/1.1\r\nHost: h\r\n\r\n", "*server.h1Response"},
		{"GET /x HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\n", "*server.h1Response"},
		{"GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", "*http.response"},
		{"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Type: application/json\r\nCookie: a=b\r\n\r\n{}", "*server.h1Response"},
		{"HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n", "*http.response"},
		{"GET /x HTTP/1.0\r\n\r\n", "*http.response"},
		{"POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "*http.response"},
	} {
		exchange(t, gym, c.request)
		if got := <-writers; got != c.writer {
			t.Errorf("%q was answered through %s, want %s", c.request, got, c.writer)
		}
	}
}

// A client that goes away cancels the request's context, as with net/http:
// after its request (with a body or without), and with a reset while the
// handler still reads the body.
func TestH1ServerCancelsOnDisconnect(t *testing.T) {
	for _, tc := range []struct {
		name, request string
		reset         bool
	}{
		{"no body", "POST /wait HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", false},
		{"a body", "POST /wait HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}", false},
		{"a reset under the body", "POST /wait HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n0123456789", true},
	} {
		cancelled := make(chan error, 1)
		_, gym := startBoth(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
				cancelled <- r.Context().Err()
			case <-time.After(10 * time.Second):
				cancelled <- errors.New("not cancelled within 10 s")
			}
		}))
		c, err := net.Dial("tcp", gym)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, tc.request)
		time.Sleep(2 * disconnectWatchDelay)
		if tc.reset {
			c.(*net.TCPConn).SetLinger(0)
		}
		c.Close()
		if err := <-cancelled; !errors.Is(err, context.Canceled) {
			t.Errorf("%s: the handler's context ended with %v, want context.Canceled", tc.name, err)
		}
	}
}

// A request that ends within the watch delay is never watched, and the
// connection carries the next one.
func TestH1ServerQuickRequestsKeepTheConnection(t *testing.T) {
	_, gym := startBoth(t, h1Mux())
	c, err := net.Dial("tcp", gym)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i := range 50 {
		fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\n%d", i%10)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), fmt.Sprintf(`"body":"%d"`, i%10)) {
			t.Fatalf("request %d answered %s", i, body)
		}
	}
}

// Shutdown closes idle connections at once, lets a request under way
// finish with Connection: close, and returns when it has.
func TestH1ServerShutdown(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(started)
			<-release
		}
		io.WriteString(w, "done")
	}), ErrorLog: log.New(io.Discard, "", 0)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h1 := newH1Server(srv)
	served := make(chan error, 1)
	go func() { served <- h1.Serve(Harden(srv, ln, 100)) }()

	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, "GET /quick HTTP/1.1\r\nHost: h\r\n\r\n")
	idleReader := bufio.NewReader(idle)
	first, err := http.ReadResponse(idleReader, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, first.Body)
	busy, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
	<-started

	shut := make(chan error, 1)
	go func() { shut <- h1.Shutdown(context.Background()) }()
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idleReader.ReadByte(); err != io.EOF {
		t.Errorf("the idle connection read %v during shutdown, want EOF", err)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request under way", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Close {
		t.Error("the answer given during shutdown did not close the connection")
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
	}
}

// A head that trickles in is cut off after ReadHeaderTimeout, and an idle
// connection after IdleTimeout.
func TestH1ServerTimeouts(t *testing.T) {
	srv := &http.Server{Handler: h1Mux(), ReadHeaderTimeout: 100 * time.Millisecond, IdleTimeout: 200 * time.Millisecond, ErrorLog: log.New(io.Discard, "", 0)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h1 := newH1Server(srv)
	go h1.Serve(ln)
	defer h1.Close()
	for _, c := range []struct {
		name, first string
		within      time.Duration
	}{
		{"trickled head", "GET /json HTTP/1.1\r\nHost: h\r\n", 2 * time.Second},
		{"idle after a request", "GET /json HTTP/1.1\r\nHost: h\r\n\r\n", 2 * time.Second},
	} {
		// The server's timeout runs from when it starts reading the
		// connection, which can be before Dial returns here.
		start := time.Now()
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, c.first)
		conn.SetReadDeadline(time.Now().Add(c.within))
		_, err = io.ReadAll(conn)
		if err != nil {
			t.Errorf("%s: the connection was not closed within %v: %v", c.name, c.within, err)
		}
		if took := time.Since(start); took < 100*time.Millisecond {
			t.Errorf("%s: closed after %v, before the timeout", c.name, took)
		}
		conn.Close()
	}
}

// FuzzParseHead holds parseHead to http.ReadRequest: whatever head it
// accepts, net/http reads as the same request.
func FuzzParseHead(f *testing.F) {
	for _, seed := range []string{
		"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\nContent-Length: 12\r\nCookie: a=b; c=d\r\nX-Gym-Run-Token: t\r\nAccept-Encoding: gzip\r\nUser-Agent: Go-http-client/1.1\r\n\r\n",
		"GET /a%2Fb?x=%zz&y HTTP/1.1\r\nhost: h\r\nx-a: 1\r\nX-A: 2\r\nX-B:\t v \t\r\nconnection: keep-alive\r\n\r\n",
		"DELETE /x HTTP/1.1\r\nHost: [::1]:80\r\nContent-Length: 0\r\n\r\n",
		"PUT /%%% HTTP/1.1\r\nHost: h\r\nX-Obs: \xff\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		end := bytes.Index(data, headEnd)
		if end < 0 {
			return
		}
		head := data[:end+len(headEnd)]
		var got http.Request
		contentLength, ok := parseHead(head, &got)
		if !ok {
			return
		}
		want, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			t.Fatalf("parseHead took %q, which http.ReadRequest refuses: %v", head, err)
		}
		delete(want.Header, "Host") // as net/http's server does
		switch {
		case want.Host != got.Host:
			t.Fatalf("%q: host %q, net/http %q", head, got.Host, want.Host)
		case got.Method != want.Method, got.RequestURI != want.RequestURI, got.URL.String() != want.URL.String(),
			got.URL.Path != want.URL.Path, got.URL.RawPath != want.URL.RawPath, got.URL.RawQuery != want.URL.RawQuery:
			t.Fatalf("%q: %s %s (%#v), net/http %s %s (%#v)", head, got.Method, got.RequestURI, got.URL, want.Method, want.RequestURI, want.URL)
		case got.Proto != want.Proto || got.ProtoMajor != want.ProtoMajor || got.ProtoMinor != want.ProtoMinor:
			t.Fatalf("%q: %s, net/http %s", head, got.Proto, want.Proto)
		case contentLength != want.ContentLength || got.ContentLength != want.ContentLength:
			t.Fatalf("%q: length %d, net/http %d", head, contentLength, want.ContentLength)
		case want.Close || want.TransferEncoding != nil:
			t.Fatalf("%q: net/http reads Close %v, Transfer-Encoding %q", head, want.Close, want.TransferEncoding)
		case fmt.Sprint(got.Header) != fmt.Sprint(want.Header):
			t.Fatalf("%q: header %q, net/http %q", head, got.Header, want.Header)
		}
	})
}

// BenchmarkServe is a request and its answer, through gym's transport, to
// net/http's server and to gym's loop: a JSON body read, a JSON answer
// written, 64 at a time.
func BenchmarkServe(b *testing.B) {
	answer := bytes.Repeat([]byte("a"), 1024)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})
	body := bytes.Repeat([]byte("b"), 1024)
	for _, name := range []string{"net/http", "gym"} {
		b.Run(name, func(b *testing.B) {
			srv := &http.Server{Handler: handler}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			if name == "gym" {
				h1 := newH1Server(srv)
				go h1.Serve(ln)
				defer h1.Close()
			} else {
				go srv.Serve(ln)
				defer srv.Close()
			}
			rt := testH1Transport(1024, time.Minute)
			url := "http://" + ln.Addr().String() + "/v1/responses"
			b.SetParallelism(32)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
					resp, err := rt.RoundTrip(req)
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

func TestHTTPDate(t *testing.T) {
	start := time.Date(2026, 12, 6, 23, 59, 58, 900_000_000, time.FixedZone("X", 3600))
	for _, step := range []time.Duration{0, 50 * time.Millisecond, 200 * time.Millisecond, time.Second, 3 * time.Second, -time.Hour} {
		now := start.Add(step)
		if got, want := string(httpDate(now)), now.UTC().Format(http.TimeFormat); got != want {
			t.Errorf("httpDate(%v) = %q, want %q", now, got, want)
		}
	}
}

// A connection handed over after Shutdown is closed, even when the
// *http.Server had not yet begun serving the hand-over listener.
func TestH1ServerShutdownClosesHandoff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newH1Server(&http.Server{})
	s.listener = ln
	s.handoff = &handoffListener{addr: ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{})}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ours, theirs := net.Pipe()
	handed := make(chan struct{})
	go func() {
		s.handoff.push(ours)
		close(handed)
	}()
	select {
	case <-handed:
	case <-time.After(5 * time.Second):
		t.Fatal("a connection handed over after Shutdown waits for ever")
	}
	if _, err := theirs.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the handed-over connection read %v, want EOF", err)
	}
}

// A watch that took the first byte of the next request keeps it, however
// often the handler reads its body to the end again.
func TestH1ServerWatchKeepsPipelinedByte(t *testing.T) {
	_, gym := startBoth(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			time.Sleep(2 * disconnectWatchDelay) // the watch is due before the body is read
			io.ReadAll(r.Body)                   // and starts at its end
			time.Sleep(4 * disconnectWatchDelay) // taking a byte of the next request
			r.Body.Read(make([]byte, 1))         // the end again
			time.Sleep(disconnectWatchDelay)
		}
		io.WriteString(w, r.Method+" "+r.URL.Path)
	}))
	c, err := net.Dial("tcp", gym)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi")
	time.Sleep(4 * disconnectWatchDelay)
	io.WriteString(c, "GET /b HTTP/1.1\r\nHost: h\r\n\r\n")
	c.(*net.TCPConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	out, _ := io.ReadAll(c)
	if !strings.HasSuffix(string(out), "GET /b") {
		t.Errorf("the second answer is not GET /b's: %q", out)
	}
}

// A goroutine a panicking handler left cannot write into the buffers the
// next connection is given.
func TestH1ServerPanicLeavesNoWriter(t *testing.T) {
	wrote := make(chan error, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/panic", func(w http.ResponseWriter, r *http.Request) {
		go func() {
			time.Sleep(150 * time.Millisecond)
			_, err := w.Write([]byte("LEAKED"))
			w.(http.Flusher).Flush()
			wrote <- err
		}()
		panic(http.ErrAbortHandler)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "B")
	})
	_, gym := startBoth(t, mux)
	exchange(t, gym, "GET /panic HTTP/1.1\r\nHost: h\r\n\r\n")
	if got := exchange(t, gym, "GET /slow HTTP/1.1\r\nHost: h\r\n\r\n"); !strings.HasSuffix(got, "\r\n\r\nB") || strings.Contains(got, "LEAKED") {
		t.Errorf("the next connection read %q", got)
	}
	if err := <-wrote; err == nil {
		t.Error("a write after the handler panicked succeeded")
	}
}

// A handler reading its body in a goroutine while the answer's header is
// decided does not race with it (go test -race).
func TestH1ServerBodyReadBesideAnswer(t *testing.T) {
	_, gym := startBoth(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		done := make(chan struct{})
		go func() { io.Copy(io.Discard, r.Body); close(done) }()
		time.Sleep(30 * time.Millisecond)
		w.Write([]byte(strings.Repeat("x", 3000)))
		<-done
	}))
	c, err := net.Dial("tcp", gym)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		io.WriteString(c, "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 102400\r\n\r\n")
		for range 100 {
			io.WriteString(c, strings.Repeat("b", 1024))
			time.Sleep(time.Millisecond)
		}
	}()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
}

// A connection handed to net/http keeps its half-close, which net/http
// uses to let a client whose body it refused read the answer before the
// connection ends.
func TestPrefixConnHalfCloses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, server := dialAccepted(t, ln, func() (net.Conn, error) { return net.Dial("tcp", ln.Addr().String()) })
	var handed net.Conn = &prefixConn{Conn: server, prefix: []byte("GET")}
	cw, ok := handed.(interface{ CloseWrite() error })
	if !ok {
		t.Fatal("a handed-over connection cannot half-close")
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := client.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("after the half-close the client read %v, want EOF", err)
	}
}
