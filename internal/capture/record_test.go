package capture

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/server"
)

// recording starts next behind the recorder and server.Wrap, as a model
// server runs it.
func recording(t *testing.T, next http.HandlerFunc) (*Store, string) {
	t.Helper()
	store, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rt := &server.Runtime{Instance: "policy_model", ServerType: "responses_api_models", Implementation: "t", ClassName: "SimpleModelServer"}
	srv := httptest.NewServer(server.Wrap(rt, (&Recorder{Store: store, Server: "policy_model"}).Wrap(next)))
	t.Cleanup(srv.Close)
	return store, srv.URL
}

func post(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return string(data)
}

// A client that has read an answer to its end can read its record: the
// start of a stream passes at once, its end (the terminal event) waits
// until the record is written.
func TestAnswerEndsAfterItsRecord(t *testing.T) {
	proceed := make(chan struct{})
	store, url := recording(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n")
		http.NewResponseController(w).Flush()
		io.WriteString(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\"}}\n\n")
		http.NewResponseController(w).Flush()
		<-proceed
	})
	resp, err := http.Post(url+"/ng-rollout/7-1/v1/responses", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	if got := string(buf[:n]); !strings.HasPrefix(got, "event: response.created") || strings.Contains(got, "completed") {
		t.Errorf("while the handler runs, the client got %q: the stream's start should arrive, its end wait", got)
	}
	close(proceed)
	rest, _ := io.ReadAll(resp.Body)
	data, err := os.ReadFile(filepath.Join(store.Dir(), "7-1.capture.jsonl"))
	if !strings.Contains(string(rest), "response.completed") {
		t.Errorf("the terminal event never came: %q", rest)
	}
	if err != nil || !strings.Contains(string(data), `"response":{"id":"r","status":"completed"}`) || !strings.Contains(string(data), `"response_raw":"event: response.created`) {
		t.Errorf("once the client has the end, the record is %s, %v", data, err)
	}
}

// Only a rollout's calls to the three model routes are captured; a key
// that cannot name a file captures nothing and answers all the same.
func TestWhatIsCaptured(t *testing.T) {
	store, url := recording(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	for _, path := range []string{"/v1/responses", "/ng-rollout/1-0/v1/models", "/ng-rollout/1-0/health", "/ng-rollout/a+b/v1/responses"} {
		if got := post(t, url+path, `{}`); got != `{"ok":true}` {
			t.Errorf("%s answered %q", path, got)
		}
	}
	post(t, url+"/ng-rollout/1-0/v1/chat/completions", `{"model":"m"}`)
	post(t, url+"/ng-rollout/1-0/v1/messages", `{"model":"m"}`)
	entries, _ := os.ReadDir(store.Dir())
	if len(entries) != 1 || entries[0].Name() != "1-0.capture.jsonl" {
		t.Fatalf("capture dir: %v", entries)
	}
	data, _ := os.ReadFile(filepath.Join(store.Dir(), "1-0.capture.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"dialect":"chat"`) || !strings.Contains(lines[1], `"dialect":"messages"`) {
		t.Errorf("records:\n%s", data)
	}
}

// A handler that aborts half way (a stream the upstream broke off) leaves
// the record of what it sent: a capture never misses a call silently.
func TestAbortedCallIsRecorded(t *testing.T) {
	store, url := recording(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n")
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	})
	resp, err := http.Post(url+"/ng-rollout/3-0/v1/responses", "application/json", strings.NewReader(`{"stream":true}`))
	if err == nil {
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	data, err := os.ReadFile(filepath.Join(store.Dir(), "3-0.capture.jsonl"))
	if err != nil || !strings.Contains(string(data), `"error_category":"exception","request":{"stream":true},"response":null`) || !strings.Contains(string(data), `"response_raw":"event: response.created`) {
		t.Errorf("record %s, %v", data, err)
	}
}

// A client that leaves before the answer is whole leaves a record that
// says so.
func TestCancelledCallIsRecorded(t *testing.T) {
	ended := make(chan struct{})
	store, url := recording(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(ended)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n")
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	})
	resp, err := http.Post(url+"/ng-rollout/5-0/v1/responses", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Read(make([]byte, 512))
	resp.Body.Close()
	<-ended
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		// The record is written after the handler ends, so wait for its
		// whole line, not only for the file.
		if data, err := os.ReadFile(filepath.Join(store.Dir(), "5-0.capture.jsonl")); err == nil && strings.HasSuffix(string(data), "\n") {
			if !strings.Contains(string(data), `"error_category":"cancelled","request":{"stream":true},"response":null`) {
				t.Errorf("record %s", data)
			}
			return
		}
	}
	t.Error("no record of the cancelled call")
}
