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

	cases := []struct {
		name   string
		h      http.Handler
		target string
		cookie bool
	}{
		{"bare", ok, "/v1/responses", false},
		{"new_session", wrapped, "/v1/responses", false},
		{"cookie", wrapped, "/v1/responses", true},
		{"cookie_rollout_prefix", wrapped, "/ng-rollout/17-3/training-token-capture/v1/responses", true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("POST", c.target, nil)
			if c.cookie {
				req.AddCookie(cookie)
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
