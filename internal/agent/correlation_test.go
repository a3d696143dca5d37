package agent

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/server"
)

var (
	off      = Correlation{}
	on       = Correlation{On: true}
	capture  = Correlation{On: true, TokenCapture: true}
	observed = Correlation{On: true, Observability: true}
)

func TestRolloutIDFromRun(t *testing.T) {
	long := strings.Repeat("x", maxRolloutIDLen)
	tests := []struct {
		name    string
		c       Correlation
		body    string
		want    string
		wantErr string // substring; "" means no error
	}{
		{name: "indices", c: on, body: `{"_ng_task_index":0,"_ng_rollout_index":0}`, want: "0-0"},
		{name: "indices among other keys", c: on, body: `{"responses_create_params":{"input":"hi"},"_ng_rollout_index":3,"agent_ref":{"name":"a"},"_ng_task_index":17}`, want: "17-3"},
		{name: "attempt 0 keeps the bare id", c: on, body: `{"_ng_task_index":17,"_ng_rollout_index":3,"_ng_attempt_index":0}`, want: "17-3"},
		{name: "attempt suffix", c: on, body: `{"_ng_task_index":17,"_ng_rollout_index":3,"_ng_attempt_index":1}`, want: "17-3-a1"},
		{name: "attempt as a string", c: on, body: `{"_ng_task_index":17,"_ng_rollout_index":3,"_ng_attempt_index":"2"}`, want: "17-3-a2"},
		{name: "attempt as a float truncates", c: on, body: `{"_ng_task_index":1,"_ng_rollout_index":2,"_ng_attempt_index":3.0}`, want: "1-2-a3"},
		{name: "negative attempt adds nothing", c: on, body: `{"_ng_task_index":1,"_ng_rollout_index":2,"_ng_attempt_index":-1}`, want: "1-2"},
		{name: "null attempt adds nothing", c: on, body: `{"_ng_task_index":1,"_ng_rollout_index":2,"_ng_attempt_index":null}`, want: "1-2"},
		{name: "explicit id wins over indices", c: on, body: `{"_ng_rollout_id":"my.run_7","_ng_task_index":1,"_ng_rollout_index":2}`, want: "my.run_7"},
		{name: "explicit id takes the attempt suffix", c: on, body: `{"_ng_rollout_id":"my.run_7","_ng_attempt_index":2}`, want: "my.run_7-a2"},
		{name: "explicit id alone", c: on, body: `{"_ng_rollout_id":"A-b_c.9"}`, want: "A-b_c.9"},
		{name: "explicit id at the length limit", c: on, body: `{"_ng_rollout_id":"` + long + `"}`, want: long},
		{name: "null explicit id falls back to indices", c: on, body: `{"_ng_rollout_id":null,"_ng_task_index":4,"_ng_rollout_index":5}`, want: "4-5"},
		{name: "string indices", c: on, body: `{"_ng_task_index":"t1","_ng_rollout_index":"0"}`, want: "t1-0"},
		{name: "no task index", c: on, body: `{"_ng_rollout_index":0}`, want: ""},
		{name: "no rollout index", c: on, body: `{"_ng_task_index":0,"_ng_attempt_index":1}`, want: ""},
		{name: "null index", c: on, body: `{"_ng_task_index":null,"_ng_rollout_index":0}`, want: ""},
		{name: "no identity at all", c: on, body: `{"responses_create_params":{}}`, want: ""},
		{name: "not an object", c: on, body: `[1,2]`, want: ""},
		{name: "token capture does not change the id", c: capture, body: `{"_ng_task_index":0,"_ng_rollout_index":1}`, want: "0-1"},

		{name: "invalid explicit id: leading dot", c: on, body: `{"_ng_rollout_id":".hidden"}`, wantErr: `_ng_rollout_id must be a string`},
		{name: "invalid explicit id: slash", c: on, body: `{"_ng_rollout_id":"a/b"}`, wantErr: `got 'a/b'`},
		{name: "invalid explicit id: empty", c: on, body: `{"_ng_rollout_id":""}`, wantErr: `_ng_rollout_id`},
		{name: "invalid explicit id: space", c: on, body: `{"_ng_rollout_id":"a b"}`, wantErr: `_ng_rollout_id`},
		{name: "invalid explicit id: a number", c: on, body: `{"_ng_rollout_id":5}`, wantErr: `got 5`},
		{name: "invalid explicit id: too long", c: on, body: `{"_ng_rollout_id":"` + long + `x"}`, wantErr: `at most 200 characters`},
		{name: "invalid attempt", c: on, body: `{"_ng_task_index":1,"_ng_rollout_index":2,"_ng_attempt_index":"x"}`, wantErr: `_ng_attempt_index must be an integer`},
		{name: "index that is an object", c: on, body: `{"_ng_task_index":{"a":1},"_ng_rollout_index":2}`, wantErr: `_ng_task_index must be a number or a string`},
		{name: "index that cannot name a path", c: on, body: `{"_ng_task_index":"a/b","_ng_rollout_index":2}`, wantErr: `cannot name a request path`},

		// Errata L2: with correlation off the row is not read, so a
		// malformed id is no error.
		{name: "off: indices give nothing", c: off, body: `{"_ng_task_index":0,"_ng_rollout_index":0}`, want: ""},
		{name: "off: invalid explicit id ignored", c: off, body: `{"_ng_rollout_id":"a/b"}`, want: ""},
		{name: "off: invalid attempt ignored", c: off, body: `{"_ng_task_index":1,"_ng_rollout_index":2,"_ng_attempt_index":"x"}`, want: ""},
		{name: "token capture without On is off", c: Correlation{TokenCapture: true}, body: `{"_ng_task_index":0,"_ng_rollout_index":0}`, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.c.RolloutIDFromRun([]byte(tt.body))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q (id %q)", err, tt.wantErr, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("= %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestPathHelpersForRun(t *testing.T) {
	row := []byte(`{"_ng_task_index":17,"_ng_rollout_index":3,"_ng_attempt_index":1}`)
	noID := []byte(`{"responses_create_params":{}}`)
	bad := []byte(`{"_ng_rollout_id":"../x"}`)
	tests := []struct {
		name     string
		c        Correlation
		body     []byte
		wantPath string
		wantBase string
		wantErr  bool
	}{
		{"on", on, row, "/ng-rollout/17-3-a1/v1/responses", "http://m:1/ng-rollout/17-3-a1", false},
		{"token capture", capture, row, "/ng-rollout/17-3-a1/training-token-capture/v1/responses", "http://m:1/ng-rollout/17-3-a1/training-token-capture", false},
		{"off", off, row, "/v1/responses", "http://m:1//", false},
		{"on without identity", on, noID, "/v1/responses", "http://m:1//", false},
		{"capture without identity", capture, noID, "/v1/responses", "http://m:1//", false},
		{"invalid id", on, bad, "", "", true},
		{"invalid id while off", off, bad, "/v1/responses", "http://m:1//", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, err := tt.c.URLPathForRun("/v1/responses", tt.body)
			if (err != nil) != tt.wantErr || path != tt.wantPath {
				t.Errorf("URLPathForRun = %q, %v; want %q (error %v)", path, err, tt.wantPath, tt.wantErr)
			}
			// The base URL loses its trailing slashes only when a prefix
			// is appended; otherwise it comes back as given.
			base, err := tt.c.BaseURLForRun("http://m:1//", tt.body)
			if (err != nil) != tt.wantErr || (!tt.wantErr && base != tt.wantBase) {
				t.Errorf("BaseURLForRun = %q, %v; want %q (error %v)", base, err, tt.wantBase, tt.wantErr)
			}
		})
	}
}

func TestRolloutPath(t *testing.T) {
	tests := []struct {
		id      string
		capture bool
		want    string
	}{
		{"", false, "/seed_session"},
		{"", true, "/seed_session"},
		{"0-0", false, "/ng-rollout/0-0/seed_session"},
		{"0-0", true, "/ng-rollout/0-0/training-token-capture/seed_session"},
		// An id forwarded from elsewhere is escaped into one segment.
		{"a?b#c%d", false, "/ng-rollout/a%3Fb%23c%25d/seed_session"},
	}
	for _, tt := range tests {
		if got := RolloutPath(tt.id, tt.capture, "/seed_session"); got != tt.want {
			t.Errorf("RolloutPath(%q, %v) = %q, want %q", tt.id, tt.capture, got, tt.want)
		}
	}
}

// URLPathForRequest sees what server.Wrap made of the inbound path.
func TestURLPathForRequest(t *testing.T) {
	rt := &server.Runtime{Instance: "agent", ServerType: "responses_api_agents", Implementation: "test", ClassName: "TestAgent",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	h := server.Wrap(rt, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, URLPathForRequest("/v1/responses", r))
	}))
	tests := []struct{ inbound, want string }{
		{"/v1/responses", "/v1/responses"},
		{"/ng-rollout/0-0/v1/responses", "/ng-rollout/0-0/v1/responses"},
		{"/ng-rollout/17-3-a1/training-token-capture/v1/responses", "/ng-rollout/17-3-a1/training-token-capture/v1/responses"},
		{"/ng-rollout/my.run_7/v1/responses", "/ng-rollout/my.run_7/v1/responses"},
		// A segment that merely starts like the capture one is a route.
		{"/ng-rollout/0-0/training-token-captured/v1/responses", "/ng-rollout/0-0/v1/responses"},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, tt.inbound, nil))
		if got := rec.Body.String(); got != tt.want {
			t.Errorf("inbound %s: %q, want %q", tt.inbound, got, tt.want)
		}
	}
	// Outside server.Wrap nothing is known, so nothing is carried.
	if got := URLPathForRequest("/v1/responses", httptest.NewRequest(http.MethodPost, "/ng-rollout/0-0/v1/responses", nil)); got != "/v1/responses" {
		t.Errorf("unwrapped request: %q", got)
	}
}
