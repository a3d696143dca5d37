package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeWaits records the client's waits instead of sleeping; onSleep, when
// set, runs at each wait (to bring a server up, say).
type fakeWaits struct {
	mu      sync.Mutex
	waits   []time.Duration
	onSleep func(n int)
}

func (f *fakeWaits) sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	f.waits = append(f.waits, d)
	n := len(f.waits)
	f.mu.Unlock()
	if f.onSleep != nil {
		f.onSleep(n)
	}
	return ctx.Err()
}

func testClient(opts ClientOptions, logs io.Writer) (*Client, *fakeWaits) {
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	c := NewClient(opts)
	f := &fakeWaits{}
	c.sleep = f.sleep
	return c, f
}

// scripted serves the given statuses in turn (the last one repeats),
// recording each request body.
type scripted struct {
	mu       sync.Mutex
	steps    []func(w http.ResponseWriter)
	bodies   []string
	requests int
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(b))
	step := s.steps[min(s.requests, len(s.steps)-1)]
	s.requests++
	s.mu.Unlock()
	step(w)
}

func status(code int, body string, header ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func TestClientRetries(t *testing.T) {
	const base = 100 * time.Millisecond
	tests := []struct {
		name       string
		opts       ClientOptions
		steps      []func(http.ResponseWriter)
		wantCalls  int
		wantStatus int    // final *UpstreamError status; 0 means success
		wantBody   string // response body or UpstreamError body
		checkWaits func(t *testing.T, waits []time.Duration)
	}{
		{
			name:      "429 with Retry-After seconds",
			steps:     []func(http.ResponseWriter){status(429, "slow down", "Retry-After", "2"), status(200, "ok")},
			wantCalls: 2, wantBody: "ok",
			checkWaits: func(t *testing.T, waits []time.Duration) {
				if len(waits) != 1 || waits[0] < 2*time.Second || waits[0] > 2*time.Second+base {
					t.Errorf("waits %v, want one of 2 s plus at most %v jitter", waits, base)
				}
			},
		},
		{
			name:      "503 then 200",
			steps:     []func(http.ResponseWriter){status(503, "busy"), status(200, "ok")},
			wantCalls: 2, wantBody: "ok",
			checkWaits: func(t *testing.T, waits []time.Duration) {
				if len(waits) != 1 || waits[0] < 0 || waits[0] > base {
					t.Errorf("waits %v, want one within [0, %v]", waits, base)
				}
			},
		},
		{
			name:      "every rate-limit status retries",
			steps:     []func(http.ResponseWriter){status(429, ""), status(502, ""), status(503, ""), status(504, ""), status(520, ""), status(201, "made")},
			wantCalls: 6, wantBody: "made",
		},
		{
			name:      "cap reached returns the last body",
			opts:      ClientOptions{MaxRetries: 3},
			steps:     []func(http.ResponseWriter){status(503, `{"error":"still busy"}`)},
			wantCalls: 4, wantStatus: 503, wantBody: `{"error":"still busy"}`,
			checkWaits: func(t *testing.T, waits []time.Duration) {
				for i, w := range waits {
					if ceiling := base << i; w < 0 || w > ceiling {
						t.Errorf("wait %d = %v, outside [0, %v]", i, w, ceiling)
					}
				}
			},
		},
		{
			name:      "500 gets three tries in all",
			steps:     []func(http.ResponseWriter){status(500, "oops")},
			wantCalls: 3, wantStatus: 500, wantBody: "oops",
		},
		{
			name:      "408 is retried",
			steps:     []func(http.ResponseWriter){status(408, "too slow"), status(200, "ok")},
			wantCalls: 2, wantBody: "ok",
		},
		{
			name:      "400 is not retried",
			steps:     []func(http.ResponseWriter){status(400, `{"detail":"bad"}`)},
			wantCalls: 1, wantStatus: 400, wantBody: `{"detail":"bad"}`,
		},
		{
			name:      "a Retry-After beyond 10 minutes is not waited for",
			steps:     []func(http.ResponseWriter){status(429, "quota", "Retry-After", "86400")},
			wantCalls: 1, wantStatus: 429, wantBody: "quota",
		},
		{
			name:      "negative MaxRetries never retries",
			opts:      ClientOptions{MaxRetries: -1},
			steps:     []func(http.ResponseWriter){status(503, "busy")},
			wantCalls: 1, wantStatus: 503, wantBody: "busy",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &scripted{steps: tt.steps}
			srv := httptest.NewServer(s)
			defer srv.Close()
			opts := tt.opts
			opts.BaseBackoff = base
			c, waits := testClient(opts, io.Discard)

			// No GetBody: the client must buffer the body to replay it.
			req, _ := http.NewRequest("POST", srv.URL+"/v1/responses", io.NopCloser(strings.NewReader(`{"input":"hi"}`)))
			resp, err := c.Do(context.Background(), req)
			if tt.wantStatus == 0 {
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != tt.wantBody {
					t.Errorf("body %q, want %q", b, tt.wantBody)
				}
			} else {
				var ue *UpstreamError
				if !errors.As(err, &ue) {
					t.Fatalf("err = %v, want *UpstreamError", err)
				}
				if ue.Status != tt.wantStatus || string(ue.Body) != tt.wantBody || ue.URL != srv.URL+"/v1/responses" {
					t.Errorf("UpstreamError %+v", ue)
				}
			}
			if s.requests != tt.wantCalls {
				t.Errorf("%d requests, want %d", s.requests, tt.wantCalls)
			}
			for i, b := range s.bodies {
				if b != `{"input":"hi"}` {
					t.Errorf("request %d body %q: not replayed", i, b)
				}
			}
			if len(waits.waits) != tt.wantCalls-1 {
				t.Errorf("%d waits for %d calls", len(waits.waits), tt.wantCalls)
			}
			if tt.checkWaits != nil {
				tt.checkWaits(t, waits.waits)
			}
		})
	}
}

func TestClientNeverRetriesOtherClientErrors(t *testing.T) {
	for _, code := range []int{400, 401, 403, 404, 405, 409, 410, 413, 415, 422, 451} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			s := &scripted{steps: []func(http.ResponseWriter){status(code, "no", "Retry-After", "1"), status(200, "ok")}}
			srv := httptest.NewServer(s)
			defer srv.Close()
			c, waits := testClient(ClientOptions{}, io.Discard)
			_, err := c.Do(context.Background(), mustRequest(t, "GET", srv.URL))
			var ue *UpstreamError
			if !errors.As(err, &ue) || ue.Status != code || s.requests != 1 || len(waits.waits) != 0 {
				t.Errorf("err %v after %d requests and waits %v, want HTTP %d at once", err, s.requests, waits.waits, code)
			}
		})
	}
}

// Forward hands back whatever status the upstream answered, after one
// try, where Do would have retried it.
func TestClientForwardPassesEveryStatus(t *testing.T) {
	for _, code := range []int{200, 404, 429, 500, 503} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			s := &scripted{steps: []func(http.ResponseWriter){status(code, "answer", "X-Upstream", "yes"), status(200, "second")}}
			srv := httptest.NewServer(s)
			defer srv.Close()
			c, waits := testClient(ClientOptions{}, io.Discard)
			resp, err := c.Forward(context.Background(), mustRequest(t, "POST", srv.URL))
			if err != nil {
				t.Fatalf("Forward: %v", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != code || string(body) != "answer" || resp.Header.Get("X-Upstream") != "yes" || s.requests != 1 || len(waits.waits) != 0 {
				t.Errorf("HTTP %d %q (X-Upstream %q) after %d requests and waits %v, want HTTP %d \"answer\" at once", resp.StatusCode, body, resp.Header.Get("X-Upstream"), s.requests, waits.waits, code)
			}
		})
	}
}

// A wait the caller's context would not outlive is not begun: the call
// ends with the answer it has instead of a context error later.
func TestClientRetryAfterPastContextDeadline(t *testing.T) {
	s := &scripted{steps: []func(http.ResponseWriter){status(429, "quota", "Retry-After", "300"), status(200, "ok")}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c, waits := testClient(ClientOptions{}, io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Do(ctx, mustRequest(t, "GET", srv.URL))
	var ue *UpstreamError
	if !errors.As(err, &ue) || ue.Status != 429 || string(ue.Body) != "quota" {
		t.Errorf("err = %v, want the 429 itself", err)
	}
	if s.requests != 1 || len(waits.waits) != 0 {
		t.Errorf("%d requests, waits %v; want one request and no wait", s.requests, waits.waits)
	}
}

func TestClientRetryAfterDate(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &scripted{steps: []func(http.ResponseWriter){
		status(503, "", "Retry-After", now.Add(7*time.Second).Format(http.TimeFormat)),
		status(200, "ok"),
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c, waits := testClient(ClientOptions{BaseBackoff: time.Millisecond}, io.Discard)
	c.now = func() time.Time { return now }
	resp, err := c.Do(context.Background(), mustRequest(t, "GET", srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(waits.waits) != 1 || waits.waits[0] < 7*time.Second || waits.waits[0] > 7*time.Second+time.Millisecond {
		t.Errorf("waits %v, want 7 s", waits.waits)
	}
}

func TestClientConnectionRefusedThenUp(t *testing.T) {
	// Find a port nothing listens on, then bring a server up on it while
	// the client waits to retry.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "up") })}
	defer srv.Close()
	logs := &syncBuffer{}
	c, waits := testClient(ClientOptions{BaseBackoff: time.Millisecond}, logs)
	waits.onSleep = func(n int) {
		if n == 2 {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("re-listening on %s: %v", addr, err)
				return
			}
			go srv.Serve(ln)
		}
	}
	body, _, err := c.PostJSON(context.Background(), "http://"+addr+"/verify", []byte(`{}`), nil)
	if err != nil || string(body) != "up" {
		t.Fatalf("PostJSON = %q, %v", body, err)
	}
	if len(waits.waits) != 2 {
		t.Errorf("%d waits, want 2 refused tries before the server came up", len(waits.waits))
	}
	if !strings.Contains(logs.String(), "kind=connection") {
		t.Errorf("retries not logged:\n%s", logs.String())
	}
}

func TestClientConnectionRefusedGivesUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, waits := testClient(ClientOptions{MaxRetries: 2, BaseBackoff: time.Millisecond}, io.Discard)
	_, err = c.Do(context.Background(), mustRequest(t, "GET", "http://"+addr+"/"))
	if err == nil || !strings.Contains(err.Error(), "gave up after 3 tries") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("err = %v", err)
	}
	if len(waits.waits) != 2 {
		t.Errorf("waits %v", waits.waits)
	}
}

func TestClientContextCancelledWhileWaiting(t *testing.T) {
	srv := httptest.NewServer(&scripted{steps: []func(http.ResponseWriter){status(503, "")}})
	defer srv.Close()
	c := NewClient(ClientOptions{BaseBackoff: time.Hour, MaxBackoff: time.Hour, RetryDeadline: -1, Logger: slog.New(slog.DiscardHandler)})
	c.jitter = func(n int64) int64 { return n - 1 }
	// Cancelled, not timed out: a wait past a deadline is never begun.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Do(ctx, mustRequest(t, "GET", srv.URL))
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Errorf("err = %v after %v", err, time.Since(start))
	}
}

func TestClientRejectsNonHTTP(t *testing.T) {
	c := NewClient(ClientOptions{})
	for _, u := range []string{"ftp://x/y", "http:///nohost", "/relative"} {
		if _, err := c.Do(context.Background(), mustRequest(t, "GET", u)); err == nil || !strings.Contains(err.Error(), "not an http(s) URL") {
			t.Errorf("%s: err = %v", u, err)
		}
	}
}

func TestBackoffJitterBounded(t *testing.T) {
	c := NewClient(ClientOptions{BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	ceilings := []time.Duration{100, 200, 400, 800, 1000, 1000, 1000}
	for i, ms := range ceilings {
		ceiling := ms * time.Millisecond
		var lo, hi time.Duration = ceiling, 0
		for range 2000 {
			d := c.backoff(i + 1)
			if d < 0 || d > ceiling {
				t.Fatalf("try %d: backoff %v outside [0, %v]", i+1, d, ceiling)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		// Full jitter spreads over the whole range.
		if lo > ceiling/10 || hi < ceiling*9/10 {
			t.Errorf("try %d: backoff spread [%v, %v] of [0, %v]", i+1, lo, hi, ceiling)
		}
	}
	c.jitter = func(n int64) int64 { return n - 1 }
	if d := c.backoff(100); d != time.Second {
		t.Errorf("backoff(100) = %v, want the 1 s cap without overflow", d)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		v      string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"3", 3 * time.Second, true},
		{" 0 ", 0, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{"99999999999999", MaxRetryAfter + time.Second, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
	}
	for _, tt := range tests {
		got, ok := RetryAfter(http.Header{"Retry-After": {tt.v}}, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.wantOK)
		}
	}
	// OpenAI's millisecond header wins over Retry-After when both are sent.
	h := http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"9"}}
	if got, ok := RetryAfter(h, now); got != 1500*time.Millisecond || !ok {
		t.Errorf("RetryAfter(retry-after-ms 1500) = %v, %v", got, ok)
	}
}

func TestPostJSONCookies(t *testing.T) {
	var gotCookie, gotType string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotCookie, gotType = r.Header.Get("Cookie"), r.Header.Get("Content-Type")
		http.SetCookie(w, &http.Cookie{Name: "SimpleAgent___agent", Value: "eyJzZXNzaW9uX2lkIjogIngifQ==.Zx.sig", Path: "/"})
		io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	c := NewClient(ClientOptions{})
	cookies := []*http.Cookie{
		{Name: "SimpleResourcesServer___env", Value: "eyJhIjogMX0=.Zx.sig"},
		{Name: "Quoted", Value: "a b", Quoted: true},
	}
	body, set, err := c.PostJSON(context.Background(), srv.URL+"/run", []byte(`{"x":1}`), cookies)
	if err != nil || string(body) != `{"ok":true}` {
		t.Fatalf("PostJSON = %s, %v", body, err)
	}
	if want := `SimpleResourcesServer___env=eyJhIjogMX0=.Zx.sig; Quoted="a b"`; gotCookie != want {
		t.Errorf("Cookie %q, want %q", gotCookie, want)
	}
	if gotType != "application/json" {
		t.Errorf("Content-Type %q", gotType)
	}
	if cookies := set.Cookies(); len(cookies) != 1 || cookies[0].Name != "SimpleAgent___agent" || cookies[0].Value != "eyJzZXNzaW9uX2lkIjogIngifQ==.Zx.sig" {
		t.Errorf("set cookies %v", cookies)
	}
	// No cookie jar: a second call without cookies sends none.
	if _, _, err := c.PostJSON(context.Background(), srv.URL+"/run", nil, nil); err != nil || gotCookie != "" {
		t.Errorf("second call sent Cookie %q (err %v)", gotCookie, err)
	}
}

func TestPostJSONUpstreamError(t *testing.T) {
	srv := httptest.NewServer(&scripted{steps: []func(http.ResponseWriter){status(401, `{"error":"bad key"}`)}})
	defer srv.Close()
	_, _, err := NewClient(ClientOptions{}).PostJSON(context.Background(), srv.URL+"/v1/responses", []byte(`{}`), nil)
	var ue *UpstreamError
	if !errors.As(err, &ue) || ue.Status != 401 || string(ue.Body) != `{"error":"bad key"}` {
		t.Fatalf("err = %v", err)
	}
	if msg := ue.Error(); !strings.Contains(msg, "HTTP 401") || !strings.Contains(msg, "bad key") {
		t.Errorf("Error() = %q", msg)
	}
	long := &UpstreamError{Status: 500, Body: bytes.Repeat([]byte("x"), 5000), URL: "u"}
	if n := len(long.Error()); n > 2100 {
		t.Errorf("Error() of a 5000-byte body is %d bytes", n)
	}
}

func TestNewClientDefaults(t *testing.T) {
	c := NewClient(ClientOptions{})
	h1 := c.http.Transport.(*h1Transport)
	if h1.maxConns != 1024 || h1.idleTimeout != 15*time.Second {
		t.Errorf("plain-http transport %+v", h1)
	}
	tr := h1.fallback.(*http.Transport)
	if tr.MaxConnsPerHost != 1024 || tr.MaxIdleConnsPerHost != 1024 || tr.MaxIdleConns != 0 || tr.IdleConnTimeout != 15*time.Second || !tr.ForceAttemptHTTP2 || tr.Proxy != nil {
		t.Errorf("transport %+v", tr)
	}
	if tr.HTTP2 == nil || tr.HTTP2.SendPingTimeout == 0 {
		t.Error("no HTTP/2 PING keep-alive")
	}
	if c.http.Timeout != 0 || c.timeout != 0 || c.http.Jar != nil || c.maxRetries != 10 || c.baseBackoff != 500*time.Millisecond || c.maxBackoff != time.Minute {
		t.Errorf("client %+v", c)
	}
}

func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// fakeClock is the client's clock in deadline tests: waits and slow
// attempts move it, so nothing really waits.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestClientRetryDeadline(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	// slow is an attempt that takes d before answering code.
	slow := func(d time.Duration, code int, body string) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			clock.advance(d)
			status(code, body)(w)
		}
	}
	tests := []struct {
		name       string
		opts       ClientOptions
		steps      []func(http.ResponseWriter)
		wantCalls  int
		wantStatus int // 0: success
		wantBody   string
	}{
		{
			name: "a Retry-After that would pass the deadline ends the retries with the last answer",
			opts: ClientOptions{RetryDeadline: 10 * time.Second},
			steps: []func(http.ResponseWriter){
				status(503, "first", "Retry-After", "5"), status(503, "second", "Retry-After", "8"), status(200, "ok"),
			},
			wantCalls: 2, wantStatus: 503, wantBody: "second",
		},
		{
			name:      "a wait that ends on the deadline is still taken",
			opts:      ClientOptions{RetryDeadline: 10 * time.Second},
			steps:     []func(http.ResponseWriter){status(429, "", "Retry-After", "10"), status(200, "ok")},
			wantCalls: 2, wantBody: "ok",
		},
		{
			name: "by default ten minutes of retrying",
			steps: []func(http.ResponseWriter){
				status(429, "a", "Retry-After", "400"), status(429, "b", "Retry-After", "400"), status(200, "ok"),
			},
			wantCalls: 2, wantStatus: 429, wantBody: "b",
		},
		{
			name:      "the deadline counts the tries too",
			steps:     []func(http.ResponseWriter){slow(11*time.Minute, 503, "late"), status(200, "ok")},
			wantCalls: 1, wantStatus: 503, wantBody: "late",
		},
		{
			name:      "a try under way is not cut off by it",
			opts:      ClientOptions{RetryDeadline: time.Minute},
			steps:     []func(http.ResponseWriter){slow(time.Hour, 200, "finally")},
			wantCalls: 1, wantBody: "finally",
		},
		{
			name:      "the default leaves room for one try at its Timeout",
			opts:      ClientOptions{Timeout: time.Hour},
			steps:     []func(http.ResponseWriter){slow(50*time.Minute, 503, "busy"), status(200, "ok")},
			wantCalls: 2, wantBody: "ok",
		},
		{
			name: "a negative deadline never ends the retries",
			opts: ClientOptions{RetryDeadline: -1},
			steps: []func(http.ResponseWriter){
				status(429, "", "Retry-After", "500"), status(429, "", "Retry-After", "500"), status(429, "", "Retry-After", "500"), status(200, "ok"),
			},
			wantCalls: 4, wantBody: "ok",
		},
		{
			name:      "the 500 cap still applies within the deadline",
			opts:      ClientOptions{RetryDeadline: time.Hour},
			steps:     []func(http.ResponseWriter){status(500, "oops")},
			wantCalls: 3, wantStatus: 500, wantBody: "oops",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &scripted{steps: tt.steps}
			srv := httptest.NewServer(s)
			defer srv.Close()
			c, waits := testClient(tt.opts, io.Discard)
			c.now = clock.now
			c.jitter = func(int64) int64 { return 0 }
			c.sleep = func(ctx context.Context, d time.Duration) error {
				clock.advance(d)
				return waits.sleep(ctx, d)
			}
			resp, err := c.Do(context.Background(), mustRequest(t, "GET", srv.URL))
			if tt.wantStatus == 0 {
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != tt.wantBody {
					t.Errorf("body %q, want %q", b, tt.wantBody)
				}
			} else {
				var ue *UpstreamError
				if !errors.As(err, &ue) || ue.Status != tt.wantStatus || string(ue.Body) != tt.wantBody {
					t.Fatalf("err = %v, want HTTP %d %q", err, tt.wantStatus, tt.wantBody)
				}
			}
			if s.requests != tt.wantCalls || len(waits.waits) != tt.wantCalls-1 {
				t.Errorf("%d requests and waits %v, want %d requests", s.requests, waits.waits, tt.wantCalls)
			}
		})
	}
}

func TestClientRetryDeadlineConnectionErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	clock := &fakeClock{t: time.Unix(0, 0)}
	c, waits := testClient(ClientOptions{BaseBackoff: time.Minute, MaxBackoff: time.Minute, RetryDeadline: 90 * time.Second}, io.Discard)
	c.now = clock.now
	c.jitter = func(n int64) int64 { return n - 1 }
	c.sleep = func(ctx context.Context, d time.Duration) error {
		clock.advance(d)
		return waits.sleep(ctx, d)
	}
	_, err = c.Do(context.Background(), mustRequest(t, "GET", "http://"+addr+"/"))
	if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "gave up after 2 tries") || !strings.Contains(err.Error(), "retry deadline") {
		t.Errorf("err = %v", err)
	}
	if len(waits.waits) != 1 {
		t.Errorf("waits %v, want one wait of a minute", waits.waits)
	}
}

// Timeout bounds each attempt, the answer's head and its body alike, and
// leaves a body read in time whole.
func TestClientTimeoutBoundsAnAttempt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow-head":
			time.Sleep(300 * time.Millisecond)
		case "/slow-body":
			w.Write([]byte("first"))
			w.(http.Flusher).Flush()
			time.Sleep(300 * time.Millisecond)
		case "/body-in-time":
			w.Write([]byte("first "))
			w.(http.Flusher).Flush()
			time.Sleep(30 * time.Millisecond)
		}
		w.Write([]byte("done"))
	}))
	defer srv.Close()
	c := NewClient(ClientOptions{Timeout: 100 * time.Millisecond, MaxRetries: -1})
	if _, err := c.Do(context.Background(), mustRequest(t, http.MethodGet, srv.URL+"/slow-head")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a head later than Timeout: %v, want the deadline", err)
	}
	resp, err := c.Do(context.Background(), mustRequest(t, http.MethodGet, srv.URL+"/slow-body"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a body later than Timeout: %v, want the deadline", err)
	}
	resp.Body.Close()
	// The attempt's context outlives Do: the rest of the body comes after.
	resp, err = c.Do(context.Background(), mustRequest(t, http.MethodGet, srv.URL+"/body-in-time"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "first done" {
		t.Errorf("a body within Timeout: %q, %v", body, err)
	}
}

func TestReadBody(t *testing.T) {
	for _, c := range []struct {
		name   string
		length int64
		body   io.Reader
		want   string
		err    error
	}{
		{"known length", 5, strings.NewReader("hello"), "hello", nil},
		{"unknown length", -1, strings.NewReader("hello"), "hello", nil},
		{"empty", 0, strings.NewReader(""), "", nil},
		{"longer than said", 2, strings.NewReader("hello"), "hello", nil},
		{"cut short", 10, strings.NewReader("hello"), "", io.ErrUnexpectedEOF},
		{"nothing when some was said", 3, strings.NewReader(""), "", io.ErrUnexpectedEOF},
	} {
		got, err := readBody(c.body, c.length)
		if string(got) != c.want || !errors.Is(err, c.err) {
			t.Errorf("%s: %q, %v; want %q, %v", c.name, got, err, c.want, c.err)
		}
	}
}

// A body of the length it said takes one allocation.
func TestReadBodyAllocatesOnce(t *testing.T) {
	body := strings.NewReader(strings.Repeat("x", 3000))
	allocs := testing.AllocsPerRun(100, func() {
		body.Seek(0, io.SeekStart)
		if _, err := readBody(body, 3000); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Errorf("readBody made %v allocations, want 1", allocs)
	}
}

// ReadAll reads what io.ReadAll reads, a body shorter or longer than it
// said included, and allocates up front for no more than presizeLimit.
func TestReadAllIsReadAll(t *testing.T) {
	for _, c := range []struct {
		body   string
		length int64
	}{
		{"{}", 10}, {"", 5}, {"hello", 2}, {"hello", 5}, {"hello", -1}, {"", 0}, {"x", 1 << 40},
	} {
		got, err := ReadAll(strings.NewReader(c.body), c.length)
		want, wantErr := io.ReadAll(strings.NewReader(c.body))
		if string(got) != string(want) || err != wantErr {
			t.Errorf("%q said %d: %q, %v; io.ReadAll %q, %v", c.body, c.length, got, err, want, wantErr)
		}
		if cap(got) > presizeLimit+1 {
			t.Errorf("%q said %d: allocated %d bytes", c.body, c.length, cap(got))
		}
	}
}
