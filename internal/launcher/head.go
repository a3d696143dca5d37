package launcher

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nemo-gym-go/gym/internal/server"
)

// InstanceInfo is one entry of the head server's /server_instances, in
// NeMo Gym's field names so Python tools read it unchanged.
type InstanceInfo struct {
	ConfigPath    string   `json:"config_path"`
	DirPath       string   `json:"dir_path"`
	Entrypoint    string   `json:"entrypoint"`
	Host          string   `json:"host"`
	Name          string   `json:"name"`
	PID           int      `json:"pid"`
	Port          int      `json:"port"`
	ProcessName   string   `json:"process_name"`
	ServerType    string   `json:"server_type"`
	StartTime     float64  `json:"start_time"`
	Status        *string  `json:"status"`
	UptimeSeconds *float64 `json:"uptime_seconds"`
	URL           string   `json:"url"`
}

// headServer is NeMo Gym's head server: it tells other processes (Python
// servers, `gym eval run --no-serve`, `gym env status`) the whole config and
// which servers run where.
type headServer struct {
	srv       *http.Server
	listener  net.Listener
	mu        sync.Mutex
	instances []InstanceInfo
	ready     atomic.Bool
}

// listenHead binds the head server's address, first thing, so a taken port
// fails the start before any venv is built.
func listenHead(host string, port int) (net.Listener, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot start the head server on %s: %w; stop whatever uses that port or set ++head_server.port=<free port>", addr, err)
	}
	return l, nil
}

// startHead serves the head server on l in the background. Its config
// carries the run's secrets, so a client from another machine must present
// token; those on this one (NeMo Gym's servers among them) need not.
func startHead(l net.Listener, configYAML, token string) (*headServer, error) {
	configJSON, err := marshalPlain(configYAML)
	if err != nil {
		l.Close()
		return nil, err
	}
	h := &headServer{listener: l, instances: []InstanceInfo{}}
	mux := http.NewServeMux()
	live := func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, []byte(`{"status":"ok"}`)) }
	mux.HandleFunc("GET /{$}", live)
	mux.HandleFunc("GET /livez", live)
	// Ready once every server and model endpoint answers, as nemo-gym 0.7.0's.
	ready := func(w http.ResponseWriter, _ *http.Request) {
		if !h.ready.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"status":"starting"}`))
			return
		}
		live(w, nil)
	}
	for _, path := range []string{"GET /readyz", "GET /healthz", "GET /health"} {
		mux.HandleFunc(path, ready)
	}
	mux.HandleFunc("GET /global_config_dict_yaml", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, configJSON)
	})
	mux.HandleFunc("GET /server_instances", func(w http.ResponseWriter, _ *http.Request) {
		h.mu.Lock()
		body, err := marshalPlain(h.instances)
		h.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, body)
	})
	h.srv = &http.Server{Handler: server.RequireRunToken(token, mux)}
	limited := server.Harden(h.srv, l, 0)
	go func() {
		if err := h.srv.Serve(limited); err != nil && !errors.Is(err, http.ErrServerClosed) {
			limited.Close()
		}
	}()
	return h, nil
}

// marshalPlain is JSON as NeMo Gym's FastAPI head server writes it: <, > and & stay
// as they are, where Go's json.Marshal would escape them for HTML.
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func writeJSON(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func (h *headServer) setInstances(infos []InstanceInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.instances = infos
}

func (h *headServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		h.srv.Close()
	}
}
