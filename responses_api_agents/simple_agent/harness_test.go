package simpleagent

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/server"
	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

// request is one request a fake server received.
type request struct {
	Path   string // as it arrived, rollout prefix included
	Body   string
	Cookie string // the Cookie header
}

// recorder keeps the requests of one fake server in arrival order.
type recorder struct {
	mu      sync.Mutex
	reqs    []request
	discard bool // keep nothing, for benchmarks
}

func (rc *recorder) add(r *http.Request) request {
	body, _ := io.ReadAll(r.Body)
	req := request{Path: r.URL.Path, Body: string(body), Cookie: r.Header.Get("Cookie")}
	if rc.discard {
		return req
	}
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, req)
	rc.mu.Unlock()
	return req
}

func (rc *recorder) all() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.reqs...)
}

// paths lists the request paths, in order.
func (rc *recorder) paths() []string {
	var out []string
	for _, r := range rc.all() {
		out = append(out, r.Path)
	}
	return out
}

// named returns the requests whose path ends in suffix.
func (rc *recorder) named(suffix string) []request {
	var out []request
	for _, r := range rc.all() {
		if strings.HasSuffix(r.Path, suffix) {
			out = append(out, r)
		}
	}
	return out
}

var rolloutPrefix = regexp.MustCompile(`^/ng-rollout/[^/]+(/training-token-capture)?`)

// fakeResources is a resources server as the agent sees one: a session
// cookie from /seed_session that tools and /verify expect back, tools that
// answer with errors, and a verifier that echoes the request with reward 1.
// A tool call that arrives without the seeded session is answered 409 so a
// lost cookie shows up in the tool output.
func fakeResources(rec *recorder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := rec.add(r)
		route := rolloutPrefix.ReplaceAllString(r.URL.Path, "")
		session, _ := r.Cookie("res_session")
		if route != "/seed_session" && route != "/aggregate_metrics" && (session == nil || !strings.HasPrefix(session.Value, "seeded")) {
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"detail":"no session"}`)
			return
		}
		switch route {
		case "/seed_session":
			if gjson.Get(req.Body, "_test_seed").Str == "fail" {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"detail":"cannot seed"}`)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: "res_session", Value: "seeded", Path: "/", HttpOnly: true})
			io.WriteString(w, `{}`)
		case "/get_weather":
			city := gjson.Get(req.Body, "city").Str
			http.SetCookie(w, &http.Cookie{Name: "res_session", Value: session.Value, Path: "/"})
			fmt.Fprintf(w, `{"city":%q,"weather_description":"The weather in %s is cold."}`, city, city)
		case "/rotate":
			http.SetCookie(w, &http.Cookie{Name: "res_session", Value: "seeded-rotated", Path: "/"})
			io.WriteString(w, `"rotated"`)
		case "/quiet": // answers without re-sending the cookie
			io.WriteString(w, `"quiet"`)
		case "/strict":
			w.WriteHeader(http.StatusUnprocessableEntity)
			io.WriteString(w, `{"detail":[{"type":"missing","loc":["body","city"],"msg":"Field required","input":{}}]}`)
		case "/boom":
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `"ValueError('boom')"`)
		case "/verify":
			switch gjson.Get(req.Body, "_test_verify").Str {
			case "no_reward":
				io.WriteString(w, req.Body)
				return
			case "not_object":
				io.WriteString(w, `[1]`)
				return
			case "no_response":
				io.WriteString(w, `{"responses_create_params":{},"reward":1}`)
				return
			}
			body := strings.TrimSuffix(strings.TrimSpace(req.Body), "}")
			io.WriteString(w, body+`,"reward":1.0}`)
		case "/aggregate_metrics":
			io.WriteString(w, `{"group_level_metrics":[],"agent_metrics":{"mean/reward":1.0},"key_metrics":{"mean/reward":1.0}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"detail":"Not Found"}`)
		}
	})
}

// script answers the model's n-th call (from 1) with a response body; the
// request it got is passed in.
type script func(n int, req gjson.Result) string

// httpError is a script answer that fails with status.
func httpError(status int, body string) string { return "!" + strconv.Itoa(status) + " " + body }

// fakeModel serves a script, setting model_session=m<n> on the n-th answer.
func fakeModel(rec *recorder, s script) http.Handler {
	var mu sync.Mutex
	calls := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := rec.add(r)
		if rolloutPrefix.ReplaceAllString(r.URL.Path, "") != "/v1/responses" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		out := s(n, gjson.Parse(req.Body))
		w.Header().Set("Content-Type", "application/json")
		if status, body, ok := strings.Cut(strings.TrimPrefix(out, "!"), " "); ok && out[0] == '!' {
			code, _ := strconv.Atoi(status)
			w.WriteHeader(code)
			io.WriteString(w, body)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "model_session", Value: "m" + strconv.Itoa(n), Path: "/"})
		io.WriteString(w, out)
	})
}

// Response items and bodies in the Responses API shape.
func fc(callID, name, args string) string {
	return fmt.Sprintf(`{"type":"function_call","call_id":%q,"name":%q,"arguments":%q,"id":"fc_%s","status":"completed"}`, callID, name, args, callID)
}

func msg(text string) string {
	return fmt.Sprintf(`{"type":"message","role":"assistant","status":"completed","id":"msg_1","content":[{"type":"output_text","text":%q,"annotations":[]}]}`, text)
}

func reasoning(text string) string {
	return fmt.Sprintf(`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":%q}],"status":null}`, text)
}

const defaultUsage = `{"input_tokens":10,"input_tokens_details":{"cached_tokens":2},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":15}`

// response is a model response with id resp_<n>, the given output items
// and the default usage.
func response(n int, items ...string) string {
	return responseWith(n, defaultUsage, items...)
}

// responseWith is response with the given usage JSON; "" leaves usage out.
func responseWith(n int, usage string, items ...string) string {
	if usage != "" {
		usage = `,"usage":` + usage
	}
	return fmt.Sprintf(`{"id":"resp_%d","object":"response","created_at":%d.0,"model":"policy","status":"completed","output":[%s],"parallel_tool_calls":true,"tool_choice":"auto","tools":[]%s}`,
		n, n, strings.Join(items, ","), usage)
}

// turns scripts the model call by call; calls past the end repeat the
// last answer.
func turns(answers ...func(n int) string) script {
	return func(n int, _ gjson.Result) string {
		return answers[min(n, len(answers))-1](n)
	}
}

func answer(items ...string) func(n int) string {
	return func(n int) string { return response(n, items...) }
}

// harness is one agent between a fake resources server and a fake model.
type harness struct {
	agentURL string
	resSrv   *httptest.Server
	res      *recorder
	model    *recorder
	logs     *syncBuffer
}

type options struct {
	global  string // top-level config lines
	section string // agent config lines
	script  script
	discard bool // record no requests
}

func startHarness(t testing.TB, o options) *harness {
	t.Helper()
	h := &harness{res: &recorder{discard: o.discard}, model: &recorder{discard: o.discard}, logs: &syncBuffer{}}
	res := httptest.NewServer(fakeResources(h.res))
	t.Cleanup(res.Close)
	h.resSrv = res
	model := httptest.NewServer(fakeModel(h.model, o.script))
	t.Cleanup(model.Close)

	// The agent calls itself, so its port must be in the config before
	// the handler is built.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	yaml := o.global + "\n" + fmt.Sprintf(`res:
  resources_servers:
    fake:
      host: 127.0.0.1
      port: %s
model:
  responses_api_models:
    fake:
      host: 127.0.0.1
      port: %s
agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      host: 127.0.0.1
      port: %d
      resources_server: {type: resources_servers, name: res}
      model_server: {type: responses_api_models, name: model}
`, port(res.URL), port(model.URL), ln.Addr().(*net.TCPAddr).Port)
	for _, line := range strings.Split(o.section, "\n") {
		if line != "" {
			yaml += "      " + line + "\n"
		}
	}
	handler, rt, err := build(yaml, h.logs)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(server.Wrap(rt, handler))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	h.agentURL = srv.URL
	return h
}

// build runs the registered factory as `gym serve` does for the instance
// `agent`, with a client that retries without real waits.
func build(yaml string, logs io.Writer) (http.Handler, *server.Runtime, error) {
	rt, err := servertest.Runtime(yaml, "agent")
	if err != nil {
		return nil, nil, err
	}
	rt.Logger = slog.New(slog.NewTextHandler(logs, nil))
	rt.Client = server.NewClient(server.ClientOptions{Logger: rt.Logger, BaseBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
	factory, ok := server.Lookup(Kind)
	if !ok {
		return nil, nil, fmt.Errorf("%s is not registered", Kind)
	}
	h, err := factory(rt)
	return h, rt, err
}

func port(rawURL string) string { return rawURL[strings.LastIndex(rawURL, ":")+1:] }

// noJar is a client that relays nothing by itself, as Gym's client.
var noJar = &http.Client{Timeout: 30 * time.Second}

// post sends body to the agent and returns the response and its body.
func (h *harness) post(t testing.TB, path, body string) (*http.Response, string) {
	t.Helper()
	resp, err := noJar.Post(h.agentURL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(out)
}

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
