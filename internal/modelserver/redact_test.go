package modelserver

import (
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The secrets of secretBase: a userinfo password and a key in the query.
const (
	urlPassword = "hunter2pass"
	queryKey    = "qsecret42"
)

// secretBase puts credentials into an upstream base URL the way users do:
// a proxy's basic auth in the userinfo, a provider key in the query.
func secretBase(hostPort string) string {
	return "http://gymuser:" + urlPassword + "@" + hostPort + "/v1?api-key=" + queryKey + "&api-version=2024-10-21"
}

func hostOf(base string) string {
	return strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/v1")
}

// Redacting the URL for people must not strip it for the upstream: the
// userinfo becomes Basic auth, as curl, httpx and requests send it, and the
// query stays on the request, after the path.
func TestUpstreamSendsURLCredentials(t *testing.T) {
	s, base := startUpstream(t, reply(200, `{}`))
	o := testOptions(secretBase(hostOf(base)))
	if _, err := newTestUpstream(t, o).Post(context.Background(), "/responses", []byte(`{}`), CallInfo{}); err != nil {
		t.Fatal(err)
	}
	r := s.requests[0]
	if r.path != "/v1/responses" || r.query != "api-key="+queryKey+"&api-version=2024-10-21" {
		t.Errorf("upstream got path %q query %q, want /v1/responses with the base's query", r.path, r.query)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("gymuser:"+urlPassword))
	if got := r.header.Get("Authorization"); got != want {
		t.Errorf("Authorization = %q, want the URL's credentials %q", got, want)
	}
}

// No secret of the base URL reaches a log line or an answer's body, on any
// way a call can fail, streamed or not; the redacted URL is there instead.
func TestURLSecretsStayOutOfLogsAndBodies(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

	tests := []struct {
		name       string
		steps      []http.HandlerFunc // nil: nothing listens
		tune       func(*UpstreamOptions)
		wantStatus int
		bodyHasURL bool
	}{
		{"status error after a retry", []http.HandlerFunc{reply(503, `busy`), reply(401, `{"error":{"message":"bad key"}}`, "Content-Type", "application/json")},
			func(o *UpstreamOptions) {}, 401, false},
		{"unreachable", nil, func(o *UpstreamOptions) { o.MaxRetries = 1 }, 502, true},
		{"timeout", []http.HandlerFunc{hang}, func(o *UpstreamOptions) { o.RequestTimeout, o.MaxRetries = 50*time.Millisecond, 0 }, 504, true},
	}
	for _, tt := range tests {
		for _, body := range []string{`{}`, `{"stream":true}`} {
			t.Run(tt.name+" "+body, func(t *testing.T) {
				host := closed
				if tt.steps != nil {
					_, base := startUpstream(t, tt.steps...)
					host = hostOf(base)
				}
				o := testOptions(secretBase(host))
				tt.tune(&o)
				url, logs := serveThrough(t, o)
				resp, got := post(t, url+"/v1/responses", body)
				if resp.StatusCode != tt.wantStatus {
					t.Errorf("status %d, want %d (body %s)", resp.StatusCode, tt.wantStatus, got)
				}
				if s := leaked(got, urlPassword, queryKey); s != nil {
					t.Errorf("the answer's body holds %q: %s", s, got)
				}
				if s := leaked(logs.String(), urlPassword, queryKey); s != nil {
					t.Errorf("the logs hold %q:\n%s", s, logs)
				}
				for _, want := range []string{"gymuser:xxxxx@", "api-key=xxxxx", "/v1/responses"} {
					if !strings.Contains(logs.String(), want) {
						t.Errorf("the logs do not name the redacted URL (%s):\n%s", want, logs)
					}
					if tt.bodyHasURL && !strings.Contains(got, want) {
						t.Errorf("the body does not name the redacted URL (%s): %s", want, got)
					}
				}
			})
		}
	}
}

// A base URL NewUpstream refuses is named, redacted, in its error.
func TestNewUpstreamErrorRedacts(t *testing.T) {
	for _, base := range []string{"ftp://gymuser:" + urlPassword + "@host/v1", "http://gymuser:" + urlPassword + "@host:port/v1?key=" + queryKey} {
		o := testOptions(base)
		_, err := NewUpstream(o)
		if err == nil || leaked(err.Error(), urlPassword, queryKey) != nil || !strings.Contains(err.Error(), "gymuser:xxxxx@") {
			t.Errorf("NewUpstream(%q) error %v, want one naming the redacted URL", base, err)
		}
	}
}
