package modelserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// scripted is a fake upstream: it records each request and answers the
// n-th with steps[n] (the last step repeats).
type scripted struct {
	mu       sync.Mutex
	steps    []http.HandlerFunc
	requests []recorded
}

type recorded struct {
	path   string
	query  string
	header http.Header
	body   string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, recorded{path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: string(body)})
	step := s.steps[min(len(s.requests)-1, len(s.steps)-1)]
	s.mu.Unlock()
	step(w, r)
}

func (s *scripted) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func reply(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func startUpstream(t *testing.T, steps ...http.HandlerFunc) (*scripted, string) {
	t.Helper()
	s := &scripted{steps: steps}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL + "/v1"
}

// testOptions retry fast, so that only Retry-After makes a test wait.
func testOptions(base string) UpstreamOptions {
	o := DefaultUpstreamOptions()
	o.BaseURL, o.APIKey = base, "sk-test"
	o.BaseBackoff, o.MaxBackoff = time.Millisecond, 5*time.Millisecond
	o.Logger = slog.New(slog.DiscardHandler)
	return o
}

func newTestUpstream(t *testing.T, o UpstreamOptions) *Upstream {
	t.Helper()
	u, err := NewUpstream(o)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestUpstreamHeaders(t *testing.T) {
	s, base := startUpstream(t, reply(200, `{}`))
	o := testOptions(base)
	o.Headers = [][2]string{{"X-Team", "rl"}, {"Authorization", "Bearer overwritten"}, {"X-Session", "static"}}
	o.SessionKeyHeaders = []string{"X-Session", "x-routing-key"}
	u := newTestUpstream(t, o)
	ctx := context.Background()
	for _, call := range []CallInfo{{RolloutID: "17-3-a1"}, {}} {
		if _, err := u.Post(ctx, "/responses", []byte(`{"a":1}`), call); err != nil {
			t.Fatal(err)
		}
	}
	with, without := s.requests[0], s.requests[1]
	for _, r := range s.requests {
		if r.path != "/v1/responses" || r.body != `{"a":1}` {
			t.Errorf("upstream got %s %s", r.path, r.body)
		}
		if got := r.header.Get("Authorization"); got != "Bearer sk-test" {
			t.Errorf("Authorization = %q, want the API key", got)
		}
		if got := r.header.Get("X-Team"); got != "rl" {
			t.Errorf("default header X-Team = %q", got)
		}
		if got := r.header.Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type = %q", got)
		}
	}
	if got := with.header.Values("X-Session"); len(got) != 1 || got[0] != "17-3-a1" {
		t.Errorf("with a rollout id, X-Session = %q, want the session key alone", got)
	}
	if got := with.header.Get("X-Routing-Key"); got != "17-3-a1" {
		t.Errorf("with a rollout id, X-Routing-Key = %q", got)
	}
	if got := without.header.Get("X-Session"); got != "static" {
		t.Errorf("without a rollout id, X-Session = %q, want the static default", got)
	}
	if _, ok := without.header["X-Routing-Key"]; ok {
		t.Errorf("without a rollout id a session header was generated: %v", without.header)
	}
}

func TestNewUpstreamRejects(t *testing.T) {
	for name, mutate := range map[string]func(*UpstreamOptions){
		"base url":              func(o *UpstreamOptions) { o.BaseURL = "localhost:8000/v1" },
		"default header name":   func(o *UpstreamOptions) { o.Headers = [][2]string{{"Bad Header", "x"}} },
		"session header name":   func(o *UpstreamOptions) { o.SessionKeyHeaders = []string{"x:y"} },
		"session Authorization": func(o *UpstreamOptions) { o.SessionKeyHeaders = []string{"authorization"} },
		"default header value":  func(o *UpstreamOptions) { o.Headers = [][2]string{{"X-A", "a\nb"}} },
		"api key":               func(o *UpstreamOptions) { o.APIKey = "sk-\r\n" },
	} {
		o := testOptions("http://127.0.0.1:1/v1")
		mutate(&o)
		if _, err := NewUpstream(o); err == nil {
			t.Errorf("%s: NewUpstream accepted %+v", name, o)
		}
	}
}

func TestUpstreamRetries(t *testing.T) {
	tests := []struct {
		name       string
		maxRetries int
		steps      []http.HandlerFunc
		wantCalls  int
		wantStatus int // 0: success
		minWait    time.Duration
	}{
		{"429 with Retry-After, then 200", 10, []http.HandlerFunc{reply(429, `{"error":"slow down"}`, "Retry-After", "1"), reply(200, `{"ok":true}`)}, 2, 0, time.Second},
		{"429 with retry-after-ms, then 200", 10, []http.HandlerFunc{reply(429, `{}`, "Retry-After-Ms", "150"), reply(200, `{}`)}, 2, 0, 150 * time.Millisecond},
		{"502, 503, 504, 520, then 200", 10, []http.HandlerFunc{reply(502, ``), reply(503, ``), reply(504, ``), reply(520, ``), reply(200, `{}`)}, 5, 0, 0},
		{"503 until the cap", 3, []http.HandlerFunc{reply(503, `{"error":"overloaded"}`, "Content-Type", "application/json")}, 4, 503, 0},
		{"500 gets 3 tries", 10, []http.HandlerFunc{reply(500, `{"error":"boom"}`)}, 3, 500, 0},
		{"no retries", 0, []http.HandlerFunc{reply(429, `{}`)}, 1, 429, 0},
		{"400 is final", 10, []http.HandlerFunc{reply(400, `{"error":{"message":"bad"}}`, "Content-Type", "application/json")}, 1, 400, 0},
		{"Retry-After beyond 10 minutes is not waited for", 10, []http.HandlerFunc{reply(429, `{}`, "Retry-After", "3600")}, 1, 429, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, base := startUpstream(t, tt.steps...)
			o := testOptions(base)
			o.MaxRetries = tt.maxRetries
			start := time.Now()
			res, err := newTestUpstream(t, o).Post(context.Background(), "/responses", []byte(`{}`), CallInfo{})
			if elapsed := time.Since(start); elapsed < tt.minWait {
				t.Errorf("returned after %v, before the %v the upstream asked for", elapsed, tt.minWait)
			}
			if got := s.calls(); got != tt.wantCalls {
				t.Errorf("upstream saw %d calls, want %d", got, tt.wantCalls)
			}
			if tt.wantStatus == 0 {
				if err != nil || res.Status != 200 {
					t.Fatalf("Post = %v, %v; want success", res, err)
				}
				return
			}
			var se *StatusError
			if !errors.As(err, &se) {
				t.Fatalf("Post error = %v, want a *StatusError", err)
			}
			if se.Status != tt.wantStatus || se.Tries != tt.wantCalls {
				t.Errorf("StatusError = %d after %d tries, want %d after %d", se.Status, se.Tries, tt.wantStatus, tt.wantCalls)
			}
			rec := httptest.NewRecorder()
			tt.steps[len(tt.steps)-1](rec, nil)
			if string(se.Body) != rec.Body.String() {
				t.Errorf("StatusError carries %q, want the upstream's %q", se.Body, rec.Body)
			}
			if want := rec.Header().Get("Content-Type"); want != "" && se.Header.Get("Content-Type") != want {
				t.Errorf("StatusError Content-Type %q, want the upstream's %q", se.Header.Get("Content-Type"), want)
			}
		})
	}
}

func TestUpstreamTransportErrors(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		for _, scheme := range []string{"http", "https"} { // https fails in the protocol probe
			o := testOptions(scheme + "://" + addr + "/v1")
			o.MaxRetries = 2
			_, err = newTestUpstream(t, o).Post(context.Background(), "/responses", []byte(`{}`), CallInfo{})
			var te *TransportError
			if !errors.As(err, &te) || te.Tries != 3 || te.Timeout || !strings.Contains(err.Error(), "refused") {
				t.Errorf("%s: Post error = %v, want a non-timeout *TransportError after 3 tries", scheme, err)
			}
		}
	})
	t.Run("request timeout", func(t *testing.T) {
		s, base := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		})
		o := testOptions(base)
		o.RequestTimeout, o.MaxRetries = 100*time.Millisecond, 1
		start := time.Now()
		_, err := newTestUpstream(t, o).Post(context.Background(), "/responses", []byte(`{}`), CallInfo{})
		var te *TransportError
		if !errors.As(err, &te) || !te.Timeout || te.Tries != 2 {
			t.Fatalf("Post error = %v, want a timeout *TransportError after 2 tries", err)
		}
		if elapsed := time.Since(start); elapsed > 2*time.Second {
			t.Errorf("two 100 ms attempts took %v", elapsed)
		}
		if s.calls() != 2 {
			t.Errorf("upstream saw %d calls, want 2", s.calls())
		}
	})
	t.Run("request timeout covers a stream", func(t *testing.T) {
		_, base := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		o := testOptions(base)
		o.RequestTimeout = 200 * time.Millisecond
		res, err := newTestUpstream(t, o).Post(context.Background(), "/responses", []byte(`{}`), CallInfo{Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Stream.Close()
		data, err := io.ReadAll(res.Stream)
		if string(data) != "data: {}\n\n" || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("stream gave %q, %v; want the first event, then the deadline", data, err)
		}
	})
	t.Run("caller cancels while waiting to retry", func(t *testing.T) {
		_, base := startUpstream(t, reply(429, `{}`, "Retry-After", "30"))
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := newTestUpstream(t, testOptions(base)).Post(ctx, "/responses", []byte(`{}`), CallInfo{})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
			t.Errorf("Post = %v after %v, want the caller's deadline at once", err, time.Since(start))
		}
	})
}

func TestUpstreamMaxConcurrentRequests(t *testing.T) {
	var cur, peak atomic.Int32
	_, base := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(60 * time.Millisecond)
		cur.Add(-1)
		io.WriteString(w, `{}`)
	})
	o := testOptions(base)
	o.MaxConcurrentRequests = 3
	u := newTestUpstream(t, o)
	var wg sync.WaitGroup
	for range 15 {
		wg.Go(func() {
			if _, err := u.Post(context.Background(), "/chat/completions", []byte(`{}`), CallInfo{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := peak.Load(); got != 3 {
		t.Errorf("peak concurrent upstream calls = %d, want 3", got)
	}

	// A stream holds its slot until it is closed.
	o.MaxConcurrentRequests = 1
	u = newTestUpstream(t, o)
	res, err := u.Post(context.Background(), "/responses", []byte(`{}`), CallInfo{Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := u.Post(ctx, "/responses", []byte(`{}`), CallInfo{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second call with the only slot held by an open stream: %v, want it to wait", err)
	}
	res.Stream.Close()
	if _, err := u.Post(context.Background(), "/responses", []byte(`{}`), CallInfo{}); err != nil {
		t.Errorf("after the stream closed: %v", err)
	}
}

// TestUpstreamHTTP2Ping scales the NVCF case (a middlebox cuts connections
// idle for 340 s while the model has yet to produce its first byte) down
// to a proxy that cuts connections idle for 1 s and an upstream that takes
// 3 s to answer: pings every 300 ms keep the connection, and so the
// request, alive; without pings the proxy cuts it.
func TestUpstreamHTTP2Ping(t *testing.T) {
	const idleCut, firstByte = time.Second, 3 * time.Second
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(firstByte):
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, `{"proto":"`+r.Proto+`"}`)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	for _, tt := range []struct {
		name string
		ping time.Duration
		ok   bool
	}{{"pings every 300ms", 300 * time.Millisecond, true}, {"no pings", 0, false}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			proxy := idleCuttingProxy(t, srv.Listener.Addr().String(), idleCut)
			o := testOptions("https://" + proxy + "/v1")
			o.TLSConfig = &tls.Config{RootCAs: roots}
			o.PingInterval, o.PingTimeout, o.MaxRetries = tt.ping, time.Second, 0
			res, err := newTestUpstream(t, o).Post(context.Background(), "/responses", []byte(`{}`), CallInfo{})
			switch {
			case tt.ok && err != nil:
				t.Fatalf("with pings the request failed: %v", err)
			case tt.ok && string(res.Body) != `{"proto":"HTTP/2.0"}`:
				t.Fatalf("answer %s, want one over HTTP/2", res.Body)
			case !tt.ok && err == nil:
				t.Fatalf("without pings the request survived the idle cut; the test proves nothing")
			}
		})
	}
}

// idleCuttingProxy forwards TCP to target and closes any connection that
// carries no byte in either direction for idle, as NAT gateways and load
// balancers do.
func idleCuttingProxy(t *testing.T, target string, idle time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			var last atomic.Int64
			last.Store(time.Now().UnixNano())
			pipe := func(dst, src net.Conn) {
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					if n > 0 {
						last.Store(time.Now().UnixNano())
						if _, err := dst.Write(buf[:n]); err != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				in.Close()
				out.Close()
			}
			go pipe(out, in)
			go pipe(in, out)
			go func() {
				tick := time.NewTicker(idle / 20)
				defer tick.Stop()
				for range tick.C {
					if time.Since(time.Unix(0, last.Load())) > idle {
						in.Close()
						out.Close()
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// The body is sent as given, and retried tries send it again in full.
func TestUpstreamReplaysBody(t *testing.T) {
	s, base := startUpstream(t, reply(503, ``), reply(200, `{}`))
	body := []byte(`{"k":"` + strings.Repeat("v", 1000) + `"}`)
	if _, err := newTestUpstream(t, testOptions(base)).Post(context.Background(), "/responses", body, CallInfo{}); err != nil {
		t.Fatal(err)
	}
	for i, r := range s.requests {
		if r.body != string(body) {
			t.Errorf("try %d sent %d bytes, want the %d-byte body", i+1, len(r.body), len(body))
		}
		if got := r.header.Get("Content-Length"); got != "" && got != strconv.Itoa(len(body)) {
			t.Errorf("try %d Content-Length %s", i+1, got)
		}
	}
}

// An https upstream is served over the protocol it negotiates, and neither
// protocol caps concurrency: HTTP/1.1 gets a connection per request,
// HTTP/2 multiplexes.
func TestUpstreamProtocolChoice(t *testing.T) {
	const n = 40
	for _, h2 := range []bool{false, true} {
		t.Run("http2="+strconv.FormatBool(h2), func(t *testing.T) {
			// Every request waits for all n to arrive: a cap would hold the
			// rest back, and the wait would time out.
			var arrived atomic.Int32
			all := make(chan struct{})
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if arrived.Add(1) == n {
					close(all)
				}
				select {
				case <-all:
					io.WriteString(w, r.Proto)
				case <-time.After(5 * time.Second):
					w.WriteHeader(http.StatusGatewayTimeout)
				}
			}))
			srv.EnableHTTP2 = h2
			srv.StartTLS()
			t.Cleanup(srv.Close)
			roots := x509.NewCertPool()
			roots.AddCert(srv.Certificate())
			o := testOptions(srv.URL + "/v1")
			o.TLSConfig = &tls.Config{RootCAs: roots}
			o.MaxRetries = 0
			u := newTestUpstream(t, o)
			want := map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[h2]
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					res, err := u.Post(context.Background(), "/responses", []byte(`{}`), CallInfo{})
					if err != nil {
						t.Errorf("not all %d requests were in flight at once: %v", n, err)
					} else if string(res.Body) != want {
						t.Errorf("served over %s, want %s", res.Body, want)
					}
				})
			}
			wg.Wait()
		})
	}
}

// A burst of requests to an HTTP/2 upstream opens a few connections, not
// one per request that found the others at their stream limit.
func TestUpstreamHTTP2Burst(t *testing.T) {
	const n = 1000
	var arrived atomic.Int32
	all := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == n {
			close(all)
		}
		<-all
	}))
	var conns atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	o := testOptions(srv.URL + "/v1")
	o.TLSConfig = &tls.Config{RootCAs: roots}
	u := newTestUpstream(t, o)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := u.Post(context.Background(), "/responses", []byte(`{}`), CallInfo{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// The server allows 250 streams a connection, so 4 would do; a few
	// more are dialled while others fill up, more rounds of them when the
	// CPUs are busy (33 once, with another package's tests beside it).
	// Without the dial limit this burst opened 1,443-2,251 connections.
	if got := conns.Load(); got > 8*maxHTTP2Dials {
		t.Errorf("%d requests opened %d connections", n, got)
	}
}

// TestRedirectsAreNotFollowed pins what a 3xx from the upstream becomes: a
// redirect would turn the POST into a GET (or resend it elsewhere), so the
// caller gets the 3xx itself, as net/http's client with
// http.ErrUseLastResponse gives it, and a Location that cannot be parsed is
// an upstream that gave no usable answer (retried), as that client reports it.
func TestRedirectsAreNotFollowed(t *testing.T) {
	for _, status := range []int{301, 302, 303, 307, 308} {
		for _, loc := range []string{"", "/v2/responses", "http://elsewhere.example/v1", "http://[::1"} {
			t.Run(strconv.Itoa(status)+"/"+loc, func(t *testing.T) {
				var header []string
				if loc != "" {
					header = []string{"Location", loc}
				}
				s, base := startUpstream(t, reply(status, `{"moved":true}`, header...))
				u := newTestUpstream(t, testOptions(base))
				res, err := u.Post(t.Context(), "/responses", []byte(`{"input":"hi"}`), CallInfo{})
				// An unparseable Location is retried like any answerless try.
				wantCalls := 1
				if loc == "http://[::1" {
					wantCalls = 11
				}
				if n := s.calls(); n != wantCalls {
					t.Errorf("the upstream got %d requests, want %d", n, wantCalls)
				}
				if res != nil {
					t.Fatalf("got an answer %+v, want an error", res)
				}
				if loc == "http://[::1" {
					var te *TransportError
					want := `POST ` + base + `/responses: no answer after 11 tries: failed to parse Location header "http://[::1": parse "http://[::1": missing ']' in host`
					if !errors.As(err, &te) || err.Error() != want {
						t.Fatalf("got %T %v, want a *TransportError %q", err, err, want)
					}
					return
				}
				var se *StatusError
				if !errors.As(err, &se) || se.Status != status || string(se.Body) != `{"moved":true}` || se.Header.Get("Location") != loc || se.Tries != 1 {
					t.Fatalf("got %T %v, want the %d relayed as a *StatusError", err, err, status)
				}
			})
		}
	}
}
