package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The kind the end-to-end tests serve, registered as a component would.
const (
	echoKind  = "test_servers/echo"
	echoClass = "EchoServer"
)

func init() {
	Register(echoKind, echoClass, func(rt *Runtime) (http.Handler, error) {
		if rt.Config.Get("refuse") != nil {
			return nil, errors.New("refusing to start: the config says refuse")
		}
		return echoHandler(nil), nil
	})
	// Registered out of order, for Kinds to sort.
	notFound := func(*Runtime) (http.Handler, error) { return http.NotFoundHandler(), nil }
	Register("test_registry/b", "B", notFound)
	Register("test_registry/a", "A", notFound, "grading_mode", "judge_model_server")
}

// echoReply is what the echo component answers: what the middleware told it.
type echoReply struct {
	Path      string          `json:"path"`
	RawPath   string          `json:"raw_path,omitempty"`
	SessionID string          `json:"session_id"`
	RolloutID string          `json:"rollout_id"`
	Capture   bool            `json:"capture"`
	Body      json.RawMessage `json:"body,omitempty"`
}

// echoHandler serves the routes the tests exercise. entered, when not nil,
// receives a value when /slow starts.
func echoHandler(entered chan<- struct{}) http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, r *http.Request, body json.RawMessage) error {
		b, err := json.Marshal(echoReply{Path: r.URL.Path, RawPath: r.URL.RawPath, SessionID: SessionID(r), RolloutID: RolloutID(r), Capture: TokenCapture(r), Body: body})
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		_, err = w.Write(b)
		return err
	}
	mux.Handle("GET /whoami", Handle(func(w http.ResponseWriter, r *http.Request) error { return reply(w, r, nil) }))
	mux.Handle("GET /v1/{rest...}", Handle(func(w http.ResponseWriter, r *http.Request) error { return reply(w, r, nil) }))
	mux.Handle("POST /echo", Handle(func(w http.ResponseWriter, r *http.Request) error {
		var body json.RawMessage
		if err := DecodeJSON(r, &body); err != nil {
			return err
		}
		return reply(w, r, body)
	}))
	mux.Handle("POST /typed", Handle(func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			Params struct {
				Temperature float64 `json:"temperature"`
			} `json:"params"`
		}
		if err := DecodeJSON(r, &body); err != nil {
			return err
		}
		return reply(w, r, nil)
	}))
	mux.Handle("GET /fail/upstream", Handle(func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("X-Prepared", "yes")
		return fmt.Errorf("calling the model: %w", &UpstreamError{Status: 401, Body: []byte(`{"error":{"message":"bad key <x>"}}`), URL: "http://127.0.0.1:1/v1/responses"})
	}))
	mux.Handle("GET /fail/upstream/{code}", Handle(func(w http.ResponseWriter, r *http.Request) error {
		code, err := strconv.Atoi(r.PathValue("code"))
		if err != nil {
			return err
		}
		return fmt.Errorf("calling the model: %w", &UpstreamError{Status: code, Body: []byte(`{"error":"upstream said no"}`), URL: "http://127.0.0.1:1/v1/responses"})
	}))
	mux.Handle("GET /fail/plain", Handle(func(w http.ResponseWriter, r *http.Request) error {
		return errors.New(`tool "x" failed: <boom>`)
	}))
	mux.HandleFunc("GET /fail/panic", func(w http.ResponseWriter, r *http.Request) { panic("kaboom") })
	mux.Handle("GET /fail/late", Handle(func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("event: response.created\n\n"))
		w.(http.Flusher).Flush()
		return errors.New("the stream broke")
	}))
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		if entered != nil {
			entered <- struct{}{}
		}
		<-r.Context().Done()
	})
	mux.HandleFunc("GET /quick", func(w http.ResponseWriter, r *http.Request) {
		if entered != nil {
			entered <- struct{}{}
		}
		time.Sleep(100 * time.Millisecond)
		io.WriteString(w, "done")
	})
	return mux
}

// syncBuffer is a bytes.Buffer that server goroutines and the test share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// listenWatcher is a stdout that hands over the URL of the listening line.
type listenWatcher struct {
	syncBuffer
	url chan string
}

func newListenWatcher() *listenWatcher { return &listenWatcher{url: make(chan string, 1)} }

func (w *listenWatcher) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if _, after, ok := strings.Cut(string(p), " listening on "); ok {
		w.url <- strings.TrimSpace(after)
	}
	return n, err
}

func (w *listenWatcher) waitURL(t *testing.T) string {
	t.Helper()
	select {
	case u := <-w.url:
		return u
	case <-time.After(5 * time.Second):
		t.Fatalf("no listening line; output so far:\n%s", w.String())
		return ""
	}
}

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func testRuntime(logs io.Writer) *Runtime {
	return &Runtime{
		Instance:       "echo_server",
		ServerType:     "test_servers",
		Implementation: "echo",
		ClassName:      echoClass,
		Host:           "127.0.0.1",
		Logger:         slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// dialAccepted dials ln with dial and accepts the connection: both ends,
// closed when the test ends.
func dialAccepted(t testing.TB, ln net.Listener, dial func() (net.Conn, error)) (client, server net.Conn) {
	t.Helper()
	client, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	if server, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}
