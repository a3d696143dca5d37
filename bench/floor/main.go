// Command floor is the HTTP floor for bench/rollouts.sh: the same loopback
// exchanges a simple_agent rollout of example_single_tool_call makes, between
// trivial Go servers that do nothing but read each body and answer a fixed
// one. Run it as two backends (resources and model) and one agent
// (listening on -addr; it serves /run):
//
//	floor -backend -addr 127.0.0.1:9001 &
//	floor -backend -addr 127.0.0.1:9002 &
//	floor -agent -addr 127.0.0.1:9000 -resources http://127.0.0.1:9001 -model http://127.0.0.1:9002 &
//	rundriver -url http://127.0.0.1:9000 -rows example.jsonl
//
// -gym-client makes the agent's calls through gym's own plain-http
// transport (server.PlainHTTPTransport), which gym's servers use, instead
// of net/http's http.Transport: the floor of the stack gym is built on.
// -local-socket makes a floor server listen on a local socket beside its
// TCP port, which gym's transport then dials instead of TCP, and read and
// write every connection with raw system calls, as gym's servers do
// (server.ServeListener).
//
// Per rollout, as the real agent: /run, then seed_session, one model call
// (two when the row calls a tool: three rows in five of the example do),
// the tool call, and verify — 5.2 exchanges. gym's agent makes NeMo Gym's
// /run → /v1/responses self-call in process, and so does this one.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nemo-gym-go/gym/internal/server"
	"github.com/tidwall/gjson"
)

// answer stands for a server's reply: about the size of a recorded model
// response.
var answer = []byte(`{"id":"resp_floor","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"` +
	strings.Repeat("floor ", 200) + `"}]}],"usage":{"input_tokens":107,"output_tokens":54},"reward":1.0}`)

func main() {
	backend := flag.Bool("backend", false, "answer every POST with a fixed body")
	agent := flag.Bool("agent", false, "serve /run, calling -resources and -model")
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	resources := flag.String("resources", "", "the resources backend's base URL")
	model := flag.String("model", "", "the model backend's base URL")
	gymClient := flag.Bool("gym-client", false, "call the backends through gym's plain-http transport")
	localSocket := flag.Bool("local-socket", false, "listen on a local socket beside the TCP port too, and read and write with raw system calls, as gym's servers do")
	flag.Parse()
	var h http.Handler
	switch {
	case *backend:
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Write(answer)
		})
	case *agent && *resources != "" && *model != "":
		var transport http.RoundTripper = &http.Transport{MaxIdleConnsPerHost: 1024}
		if *gymClient {
			var dialer net.Dialer
			transport = server.PlainHTTPTransport(dialer.DialContext, 1024, 15*time.Second, transport)
		}
		a := &floorAgent{resources: *resources, model: *model, client: &http.Client{Transport: transport}}
		mux := http.NewServeMux()
		mux.HandleFunc("POST /run", a.run)
		h = mux
	default:
		fmt.Fprintln(os.Stderr, "floor: give -backend, or -agent with -resources and -model")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	fmt.Println("listening on", ln.Addr())
	if *localSocket {
		ln = server.ServeListener(ln, nil)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: h}
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

type floorAgent struct {
	resources, model string
	client           *http.Client
}

func (a *floorAgent) post(ctx context.Context, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

func (a *floorAgent) run(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	calls := []string{a.resources + "/seed_session", a.model + "/v1/responses"}
	if gjson.GetBytes(body, "_ng_task_index").Int()%5 < 3 {
		calls = append(calls, a.resources+"/get_weather", a.model+"/v1/responses")
	}
	calls = append(calls, a.resources+"/verify")
	for _, url := range calls {
		if err := a.post(r.Context(), url, body); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(answer)
}
