package modelserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock stands in for the wall clock of an Upstream: waits advance it
// at once, and an upstream step can advance it to play a slow try.
type fakeClock struct{ ns, slept atomic.Int64 }

func (c *fakeClock) now() time.Time { return time.Unix(0, c.ns.Load()) }

func (c *fakeClock) sleep(_ context.Context, d time.Duration) error {
	c.ns.Add(int64(d))
	c.slept.Add(int64(d))
	return nil
}

// onFakeClock makes u wait on c, with the largest jitter, so that every wait
// is known: the backoff ceiling, or Retry-After plus BaseBackoff.
func onFakeClock(u *Upstream, c *fakeClock) {
	u.now, u.sleep = c.now, c.sleep
	u.jitter = func(n int64) int64 { return n - 1 }
}

// slow is a try that takes d of the fake clock before answering.
func slow(c *fakeClock, d time.Duration, then http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c.ns.Add(int64(d))
		then(w, r)
	}
}

// With backoff 1 s doubling to 4 s, the waits are 1, 2, 4, 4, ... s.
func TestUpstreamRetryDeadline(t *testing.T) {
	tests := []struct {
		name       string
		deadline   time.Duration
		maxRetries int
		steps      func(*fakeClock) []http.HandlerFunc
		wantCalls  int
		wantStatus int // 0: success
		wantSlept  time.Duration
	}{
		{"503 forever: no wait ends past the deadline", 10 * time.Second, 10,
			func(*fakeClock) []http.HandlerFunc { return []http.HandlerFunc{reply(503, `busy`)} }, 4, 503, 7 * time.Second},
		{"no deadline: the tries bound it", 0, 10,
			func(*fakeClock) []http.HandlerFunc { return []http.HandlerFunc{reply(503, `busy`)} }, 11, 503, 35 * time.Second},
		{"the tries bound it before the deadline", time.Hour, 2,
			func(*fakeClock) []http.HandlerFunc { return []http.HandlerFunc{reply(503, `busy`)} }, 3, 503, 3 * time.Second},
		{"a Retry-After past the deadline returns the answer at once", 10 * time.Second, 10,
			func(*fakeClock) []http.HandlerFunc {
				return []http.HandlerFunc{reply(429, `slow down`, "Retry-After", "30")}
			}, 1, 429, 0},
		{"a Retry-After within the deadline is waited for", 10 * time.Second, 10,
			func(*fakeClock) []http.HandlerFunc {
				return []http.HandlerFunc{reply(429, `slow down`, "Retry-After", "5"), reply(200, `{}`)}
			}, 2, 0, 6 * time.Second},
		{"the tries' own time counts", 10 * time.Second, 10,
			func(c *fakeClock) []http.HandlerFunc {
				return []http.HandlerFunc{slow(c, 8*time.Second, reply(503, `busy`))}
			}, 2, 503, time.Second},
		{"a try in flight is not cut", 10 * time.Second, 10,
			func(c *fakeClock) []http.HandlerFunc {
				return []http.HandlerFunc{slow(c, 20*time.Second, reply(200, `{}`))}
			}, 1, 0, 0},
		{"408 is retried", 10 * time.Second, 10,
			func(*fakeClock) []http.HandlerFunc { return []http.HandlerFunc{reply(408, ``), reply(200, `{}`)} }, 2, 0, time.Second},
	}
	for _, code := range []int{400, 401, 403, 404, 409, 413, 422} {
		tests = append(tests, struct {
			name       string
			deadline   time.Duration
			maxRetries int
			steps      func(*fakeClock) []http.HandlerFunc
			wantCalls  int
			wantStatus int
			wantSlept  time.Duration
		}{strconv.Itoa(code) + " is final", 10 * time.Second, 10,
			func(*fakeClock) []http.HandlerFunc { return []http.HandlerFunc{reply(code, `{"error":{}}`)} }, 1, code, 0})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{}
			s, base := startUpstream(t, tt.steps(clock)...)
			o := testOptions(base)
			o.BaseBackoff, o.MaxBackoff, o.MaxRetries, o.RetryDeadline = time.Second, 4*time.Second, tt.maxRetries, tt.deadline
			u := newTestUpstream(t, o)
			onFakeClock(u, clock)
			res, err := u.Post(context.Background(), "/responses", []byte(`{}`), CallInfo{})
			if got := s.calls(); got != tt.wantCalls {
				t.Errorf("upstream saw %d calls, want %d", got, tt.wantCalls)
			}
			if got := time.Duration(clock.slept.Load()); got != tt.wantSlept {
				t.Errorf("waited %v in all, want %v", got, tt.wantSlept)
			}
			if tt.wantStatus == 0 {
				if err != nil || res.Status != 200 {
					t.Errorf("Post = %v, %v; want success", res, err)
				}
				return
			}
			var se *StatusError
			if !errors.As(err, &se) || se.Status != tt.wantStatus || se.Tries != tt.wantCalls {
				t.Errorf("Post error %v, want the last answer, HTTP %d after %d tries", err, tt.wantStatus, tt.wantCalls)
			}
		})
	}
}

func TestUpstreamRetryDeadlineUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	clock := &fakeClock{}
	o := testOptions("http://" + addr + "/v1")
	o.BaseBackoff, o.MaxBackoff, o.RetryDeadline = time.Second, 4*time.Second, 10*time.Second
	u := newTestUpstream(t, o)
	onFakeClock(u, clock)
	_, err = u.Post(context.Background(), "/responses", []byte(`{}`), CallInfo{})
	var te *TransportError
	if !errors.As(err, &te) || te.Tries != 4 || time.Duration(clock.slept.Load()) != 7*time.Second {
		t.Errorf("Post error %v after waiting %v, want a *TransportError after 4 tries and 7s", err, time.Duration(clock.slept.Load()))
	}
}

// The handler relays an upstream's final status as it is: a deterministic
// 4xx stays that 4xx, and a gateway error cut short by the deadline stays
// a gateway error, with the upstream's body.
func TestHandlerKeepsUpstreamStatus(t *testing.T) {
	for _, tt := range []struct {
		status int
		header []string
		calls  int
	}{
		{400, nil, 1}, {401, nil, 1}, {404, nil, 1}, {422, nil, 1},
		{503, []string{"Retry-After", "1"}, 1},
	} {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			body := `{"error":{"message":"upstream says ` + strconv.Itoa(tt.status) + `"}}`
			s, base := startUpstream(t, reply(tt.status, body, append([]string{"Content-Type", "application/json"}, tt.header...)...))
			o := testOptions(base)
			o.RetryDeadline = 500 * time.Millisecond
			url, _ := serveThrough(t, o)
			for _, path := range []string{"/v1/responses", "/v1/chat/completions"} {
				resp, got := post(t, url+path, `{}`)
				if resp.StatusCode != tt.status || got != body {
					t.Errorf("%s: got %d %s, want the upstream's %d %s", path, resp.StatusCode, got, tt.status, body)
				}
			}
			if c := s.calls(); c != 2*tt.calls {
				t.Errorf("upstream saw %d calls for 2 requests, want %d", c, 2*tt.calls)
			}
		})
	}
}
