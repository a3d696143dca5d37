// Package resourcestest runs a Go resources server for tests the way `gym
// serve` runs it — its config section read from a whole config, its handler
// behind internal/server's middleware — on a loopback listener, and talks
// to it as an agent would.
package resourcestest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Server is a running server under test.
type Server struct {
	URL     string
	Runtime *server.Runtime
	// Client keeps cookies, so consecutive calls share a session.
	Client *http.Client
	t      testing.TB
}

// Start serves instance of configYAML (a whole config, as
// NEMO_GYM_CONFIG_DICT holds it) with factory, registered under className.
// The server stops when the test ends.
func Start(t testing.TB, configYAML, instance, className string, factory server.Factory) *Server {
	t.Helper()
	rt := Runtime(t, configYAML, instance, className)
	h, err := factory(rt)
	if err != nil {
		t.Fatalf("building %s: %v", instance, err)
	}
	hs := httptest.NewServer(server.Wrap(rt, h))
	t.Cleanup(hs.Close)
	return &Server{URL: hs.URL, Runtime: rt, Client: NewClient(t), t: t}
}

// Runtime is the runtime `gym serve` would give instance of configYAML.
// Its client does not retry, so a failing upstream fails at once.
func Runtime(t testing.TB, configYAML, instance, className string) *server.Runtime {
	t.Helper()
	global, err := config.ParseChildConfig(configYAML)
	if err != nil {
		t.Fatalf("parsing the test config: %v", err)
	}
	section, typ, impl, err := config.InstanceSection(global, instance, os.LookupEnv)
	if err != nil {
		t.Fatalf("reading instance %s: %v", instance, err)
	}
	return &server.Runtime{
		Instance: instance, ServerType: typ, Implementation: impl, ClassName: className,
		Global: global, Config: section,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Client: server.NewClient(server.ClientOptions{MaxRetries: -1}),
	}
}

// NewClient is an HTTP client with its own cookie jar: one session.
func NewClient(t testing.TB) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

// Post sends body (a string, []byte or json.RawMessage as is; anything
// else JSON-encoded) to path with the server's session client, and returns
// the status and body of the reply.
func (s *Server) Post(path string, body any) (int, []byte) {
	s.t.Helper()
	return s.PostWith(s.Client, path, body)
}

// PostWith is Post with another client (another session).
func (s *Server) PostWith(c *http.Client, path string, body any) (int, []byte) {
	s.t.Helper()
	var raw []byte
	switch b := body.(type) {
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	case json.RawMessage:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			s.t.Fatalf("encoding the request: %v", err)
		}
	}
	resp, err := c.Post(s.URL+path, "application/json", bytes.NewReader(raw))
	if err != nil {
		s.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("POST %s: reading the reply: %v", path, err)
	}
	return resp.StatusCode, reply
}

// ReadJSONL reads the JSON objects of a JSONL file, one a line.
func ReadJSONL(t testing.TB, path string) []map[string]json.RawMessage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []map[string]json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var row map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// InputText is a row's responses_create_params.input as one string (the
// contents of its messages), for matching recorded rollouts to their
// dataset rows.
func InputText(t testing.TB, row map[string]json.RawMessage) string {
	t.Helper()
	var params struct {
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(row["responses_create_params"], &params); err != nil {
		t.Fatalf("reading responses_create_params: %v", err)
	}
	var text string
	if json.Unmarshal(params.Input, &text) == nil {
		return text
	}
	var msgs []struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(params.Input, &msgs); err != nil {
		t.Fatalf("reading responses_create_params.input: %v", err)
	}
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = string(m.Content)
	}
	return strings.Join(parts, "\n")
}

// Merge returns a copy of row with the fields of over set.
func Merge(row map[string]json.RawMessage, over map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(row)+len(over))
	for k, v := range row {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// JSONEqual reports whether a and b hold the same JSON value.
func JSONEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
