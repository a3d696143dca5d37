package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkMiddleware measures what Wrap adds to every request: the bare
// handler is the baseline; the others pass through the whole middleware.
func BenchmarkMiddleware(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	wrapped := Wrap(testRuntime(io.Discard), ok)

	rec := httptest.NewRecorder()
	wrapped.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/responses", nil))
	cookie := rec.Result().Cookies()[0]

	guardedRT := testRuntime(io.Discard)
	guardedRT.RunToken = "0123456789abcdef0123456789abcdef"
	guarded := Wrap(guardedRT, ok)

	cases := []struct {
		name   string
		h      http.Handler
		target string
		cookie bool
		remote string // default: httptest's 192.0.2.1, another machine
		token  string
	}{
		{name: "bare", h: ok, target: "/v1/responses"},
		{name: "new_session", h: wrapped, target: "/v1/responses"},
		{name: "cookie", h: wrapped, target: "/v1/responses", cookie: true},
		{name: "cookie_rollout_prefix", h: wrapped, target: "/ng-rollout/17-3/training-token-capture/v1/responses", cookie: true},
		{name: "run_token_loopback", h: guarded, target: "/v1/responses", cookie: true, remote: "127.0.0.1:40000"},
		{name: "run_token_remote", h: guarded, target: "/v1/responses", cookie: true, token: guardedRT.RunToken},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("POST", c.target, nil)
			if c.cookie {
				req.AddCookie(cookie)
			}
			if c.remote != "" {
				req.RemoteAddr = c.remote
			}
			if c.token != "" {
				req.Header.Set(RunTokenHeader, c.token)
			}
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				c.h.ServeHTTP(w, req)
			}
		})
	}
}

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
