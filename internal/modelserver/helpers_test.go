package modelserver

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/nemo-gym-go/gym/internal/server"
)

// passthrough is the backend shape of openai_model: each route is posted
// upstream unchanged, so a test sees what the plumbing does on its own.
type passthrough struct{ up *Upstream }

func (p passthrough) Responses(ctx context.Context, body []byte, call CallInfo) (*Result, error) {
	return p.up.Post(ctx, "/responses", body, call)
}

func (p passthrough) ChatCompletions(ctx context.Context, body []byte, call CallInfo) (*Result, error) {
	return p.up.Post(ctx, "/chat/completions", body, call)
}

// logBuffer collects slog text output from the handler and the upstream,
// which write from different goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// serveThrough starts a model server whose backend posts to the upstream o
// describes, with every log line of both in the returned buffer.
func serveThrough(t *testing.T, o UpstreamOptions) (string, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o.Logger = logger
	up := newTestUpstream(t, o)
	rt := &server.Runtime{Instance: "policy_model", ServerType: "responses_api_models", Implementation: "passthrough", ClassName: "SimpleModelServer", Logger: logger}
	srv := httptest.NewServer(server.Wrap(rt, Handler(passthrough{up}, logger)))
	t.Cleanup(srv.Close)
	return srv.URL, logs
}

// leaked names the secrets found in s.
func leaked(s string, secrets ...string) []string {
	var found []string
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			found = append(found, sec)
		}
	}
	return found
}
