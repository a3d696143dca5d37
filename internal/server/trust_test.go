package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/config"
)

// ownAddress is a non-loopback address of one of this machine's
// interfaces, or "" when it has none.
func ownAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

func requestFrom(remote string, header ...string) *http.Request {
	r := httptest.NewRequest("GET", "/v1/responses", nil)
	r.RemoteAddr = remote
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	return r
}

func TestLocalClient(t *testing.T) {
	tests := []struct {
		remote string
		want   bool
	}{
		{"127.0.0.1:5000", true},
		{"127.8.9.10:5000", true},
		{"[::1]:5000", true},
		{"[::ffff:127.0.0.1]:5000", true},
		{"192.0.2.1:5000", false},
		{"[2001:db8::1]:5000", false},
		{"[::ffff:192.0.2.1]:5000", false},
		{"", false},
		{"@", false},
		{"not an address", false},
	}
	if own := ownAddress(t); own != "" {
		tests = append(tests, struct {
			remote string
			want   bool
		}{net.JoinHostPort(own, "5000"), true})
	}
	for _, tt := range tests {
		if got := LocalClient(requestFrom(tt.remote)); got != tt.want {
			t.Errorf("LocalClient(%q) = %v, want %v", tt.remote, got, tt.want)
		}
	}
}

func ipNet(s string) net.Addr {
	ip := net.ParseIP(s)
	return &net.IPNet{IP: ip, Mask: net.CIDRMask(24, 8*len(ip))}
}

func TestInterfaceAddrsCache(t *testing.T) {
	var (
		mu    sync.Mutex
		list  = []net.Addr{ipNet("10.1.2.3"), &net.IPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth0"}}
		calls int
		fail  bool
		now   = time.Unix(1000, 0)
	)
	cache := &interfaceAddrs{
		list: func() ([]net.Addr, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if fail {
				return nil, errors.New("netlink said no")
			}
			return slices.Clone(list), nil
		},
		now: func() time.Time { return now },
	}
	ip := netip.MustParseAddr
	steps := []struct {
		name      string
		advance   time.Duration
		change    func()
		ip        string
		want      bool
		wantCalls int
	}{
		{name: "first lookup reads the interfaces", ip: "10.1.2.3", want: true, wantCalls: 1},
		{name: "a hit is served from the cache", ip: "10.1.2.3", want: true, wantCalls: 1},
		{name: "an IPv6 interface address counts", ip: "fe80::1", want: true, wantCalls: 1},
		{name: "a miss right after a refresh does not refresh", ip: "10.9.9.9", want: false, wantCalls: 1},
		{
			name: "a miss a few seconds later refreshes", advance: 6 * time.Second,
			change: func() { list = append(list, ipNet("10.9.9.9")) },
			ip:     "10.9.9.9", want: true, wantCalls: 2,
		},
		{name: "a flood of misses refreshes at most once per interval", ip: "192.0.2.1", want: false, wantCalls: 2},
		{name: "still within the interval", advance: time.Second, ip: "192.0.2.2", want: false, wantCalls: 2},
		{
			name: "an address removed from the machine stops counting once the cache is old", advance: 2 * time.Minute,
			change: func() { list = list[1:] },
			ip:     "10.1.2.3", want: false, wantCalls: 3,
		},
		{
			name: "a failed refresh keeps what was known", advance: 2 * time.Minute,
			change: func() { fail = true },
			ip:     "10.9.9.9", want: true, wantCalls: 4,
		},
		{name: "and is not retried at once", ip: "192.0.2.3", want: false, wantCalls: 4},
	}
	for _, s := range steps {
		mu.Lock()
		now = now.Add(s.advance)
		if s.change != nil {
			s.change()
		}
		mu.Unlock()
		got := cache.has(ip(s.ip))
		mu.Lock()
		c := calls
		mu.Unlock()
		if got != s.want || c != s.wantCalls {
			t.Errorf("%s: has(%s) = %v after %d interface reads, want %v after %d", s.name, s.ip, got, c, s.want, s.wantCalls)
		}
	}
}

func TestTokenValid(t *testing.T) {
	const token = "3f1c9a0e7b2d4c6e8f0a1b3c5d7e9f10"
	tests := []struct {
		name   string
		header map[string][]string
		token  string
		want   bool
	}{
		{"right token", map[string][]string{RunTokenHeader: {token}}, token, true},
		{"wrong token", map[string][]string{RunTokenHeader: {"3f1c9a0e7b2d4c6e8f0a1b3c5d7e9f11"}}, token, false},
		{"prefix of the token", map[string][]string{RunTokenHeader: {token[:10]}}, token, false},
		{"token with more after it", map[string][]string{RunTokenHeader: {token + "x"}}, token, false},
		{"no header", nil, token, false},
		{"empty header", map[string][]string{RunTokenHeader: {""}}, token, false},
		{"no run token never validates", map[string][]string{RunTokenHeader: {""}}, "", false},
		{"no run token, no header", nil, "", false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		for k, v := range tt.header {
			r.Header[k] = v
		}
		if got := TokenValid(r, tt.token); got != tt.want {
			t.Errorf("%s: TokenValid = %v, want %v", tt.name, got, tt.want)
		}
	}
	// Header lookups are canonical: a client sending the header in lower
	// case on the wire is read as X-Gym-Run-Token.
	raw := "GET / HTTP/1.1\r\nHost: x\r\nx-gym-run-token: " + token + "\r\n\r\n"
	r, err := http.ReadRequest(bufioReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if !TokenValid(r, token) {
		t.Error("a lower-case header on the wire was not read")
	}
}

func TestRunTokenGate(t *testing.T) {
	const token = "tok-0123456789abcdef"
	own := ownAddress(t)
	tests := []struct {
		name       string
		runToken   string
		method     string
		path       string
		remote     string
		header     string
		wantStatus int
	}{
		{name: "no run token: the network is served as before", remote: "192.0.2.1:1", method: "GET", path: "/whoami", wantStatus: 200},
		{name: "loopback needs no token", runToken: token, remote: "127.0.0.1:1", method: "GET", path: "/whoami", wantStatus: 200},
		{name: "IPv6 loopback needs no token", runToken: token, remote: "[::1]:1", method: "GET", path: "/whoami", wantStatus: 200},
		{name: "another machine without the token", runToken: token, remote: "192.0.2.1:1", method: "GET", path: "/whoami", wantStatus: 401},
		{name: "another machine with a wrong token", runToken: token, remote: "192.0.2.1:1", method: "GET", path: "/whoami", header: "nope", wantStatus: 401},
		{name: "another machine with the token", runToken: token, remote: "192.0.2.1:1", method: "GET", path: "/whoami", header: token, wantStatus: 200},
		{name: "model calls are guarded under the rollout prefix too", runToken: token, remote: "192.0.2.1:1", method: "POST", path: "/ng-rollout/7-0/echo", wantStatus: 401},
		{name: "a bad rollout path is refused before it is parsed", runToken: token, remote: "192.0.2.1:1", method: "GET", path: "/ng-rollout//x", wantStatus: 401},
		{name: "liveness stays open", runToken: token, remote: "192.0.2.1:1", method: "GET", path: "/", wantStatus: 200},
		{name: "liveness HEAD stays open", runToken: token, remote: "192.0.2.1:1", method: "HEAD", path: "/", wantStatus: 200},
		{name: "POST / is not liveness", runToken: token, remote: "192.0.2.1:1", method: "POST", path: "/", wantStatus: 401},
		{name: "prefixed liveness is not exempt", runToken: token, remote: "192.0.2.1:1", method: "GET", path: "/ng-rollout/x/", wantStatus: 401},
	}
	if own != "" {
		tests = append(tests, struct {
			name       string
			runToken   string
			method     string
			path       string
			remote     string
			header     string
			wantStatus int
		}{name: "this machine's own address is local", runToken: token, remote: net.JoinHostPort(own, "1"), method: "GET", path: "/whoami", wantStatus: 200})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &syncBuffer{}
			rt := testRuntime(logs)
			rt.RunToken = tt.runToken
			for _, h := range []struct {
				name string
				h    http.Handler
			}{
				{"Wrap", Wrap(rt, echoHandler(nil))},
				{"RequireRunToken", RequireRunToken(tt.runToken, Wrap(testRuntime(io.Discard), echoHandler(nil)))},
			} {
				r := httptest.NewRequest(tt.method, tt.path, strings.NewReader(`{}`))
				r.RemoteAddr = tt.remote
				if tt.header != "" {
					r.Header.Set(RunTokenHeader, tt.header)
				}
				rec := httptest.NewRecorder()
				h.h.ServeHTTP(rec, r)
				if rec.Code != tt.wantStatus {
					t.Errorf("%s: status %d, want %d: %s", h.name, rec.Code, tt.wantStatus, rec.Body)
				}
				if tt.wantStatus != 401 {
					continue
				}
				var body struct{ Detail string }
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || !strings.Contains(body.Detail, RunTokenHeader) {
					t.Errorf("%s: 401 body %s, want {\"detail\": ...} naming %s", h.name, rec.Body, RunTokenHeader)
				}
				if strings.Contains(rec.Body.String(), token) {
					t.Errorf("%s: the refusal shows the token", h.name)
				}
				if rec.Header().Get("Set-Cookie") != "" {
					t.Errorf("%s: a refused request got a session", h.name)
				}
			}
			if tt.wantStatus == 401 && !strings.Contains(logs.String(), "192.0.2.1") {
				t.Errorf("the refusal is not logged with the peer:\n%s", logs)
			}
			if strings.Contains(logs.String(), token) {
				t.Errorf("the token reached the log:\n%s", logs)
			}
		})
	}
}

func TestFromEnvRunToken(t *testing.T) {
	dict := `head_server: {host: 127.0.0.1, port: 11000}
echo_server: {test_servers: {echo: {host: 127.0.0.1, port: 0}}}
model: {responses_api_models: {openai_model: {host: 10.0.0.7, port: 8000}}}
`
	rt, err := fromEnv(envMap(map[string]string{config.ConfigDictEnv: dict, config.ConfigPathEnv: "echo_server", RunTokenEnv: "tok"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rt.RunToken != "tok" {
		t.Errorf("RunToken %q", rt.RunToken)
	}
	if got := *rt.Client.runServers.Load(); len(got) != 2 || !got["10.0.0.7:8000"] || !got["127.0.0.1:11000"] {
		t.Errorf("the client's run servers %v, want the model and the head server", got)
	}
	rt, err = fromEnv(envMap(map[string]string{config.ConfigDictEnv: dict, config.ConfigPathEnv: "echo_server"}), io.Discard)
	if err != nil || rt.RunToken != "" || rt.Client.runToken != "" {
		t.Errorf("without %s: RunToken %q, err %v", RunTokenEnv, rt.RunToken, err)
	}
}

func TestRunServers(t *testing.T) {
	global, err := config.ParseChildConfig(`head_host: 10.0.0.5
head_server:
  host: ${head_host}
  port: 11000
policy_model:
  responses_api_models:
    openai_model:
      host: ${head_host}
      port: ${oc.env:RUN_SERVERS_TEST_PORT}
      openai_base_url: https://api.openai.com/v1
      openai_api_key: ${oc.env:RUN_SERVERS_TEST_SURELY_UNSET}
v6_env:
  resources_servers:
    x:
      host: "0:0:0:0:0:0:0:1"
      port: 9000
Agent:
  responses_api_agents:
    simple_agent:
      host: Node-7.Cluster
      port: "9100"
unassigned:
  resources_servers:
    x: {host: 127.0.0.1, port: 0}
unresolvable:
  resources_servers:
    x: {host: "${oc.env:RUN_SERVERS_TEST_SURELY_UNSET}", port: 1}
policy_base_url: https://api.openai.com/v1
dry_run: false
`)
	if err != nil {
		t.Fatal(err)
	}
	got := RunServers(global, envMap(map[string]string{"RUN_SERVERS_TEST_PORT": "18080"}))
	want := []string{"10.0.0.5:11000", "10.0.0.5:18080", "[::1]:9000", "node-7.cluster:9100"}
	if !slices.Equal(got, want) {
		t.Errorf("RunServers = %v, want %v", got, want)
	}
}

func TestIsRunServer(t *testing.T) {
	c := NewClient(ClientOptions{RunServers: []string{"10.0.0.5:11000", "Node-7.Cluster:9100", "[0:0:0:0:0:0:0:1]:9000", "[::ffff:10.0.0.9]:80", "bare:", "h:080"}})
	for raw, want := range map[string]bool{
		"http://10.0.0.5:11000/x":         true,
		"http://10.0.0.5:11001/x":         false,
		"http://node-7.cluster:9100/x":    true,
		"http://NODE-7.cluster:9100/x":    true,
		"http://[::1]:9000/x":             true,
		"http://[0::1]:9000/x":            true,
		"http://10.0.0.9/x":               true,
		"http://10.0.0.9:80/x":            true,
		"https://10.0.0.9/x":              false,
		"http://bare:/x":                  false,
		"http://bare/x":                   false,
		"http://h:080/x":                  true,
		"http://h:80/x":                   false,
		"http://user:pw@10.0.0.5:11000/x": true,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.isRunServer(u); got != want {
			t.Errorf("isRunServer(%s) = %v, want %v", raw, got, want)
		}
		if got, slow := c.isRunServer(u), (*c.runServers.Load())[urlHostPort(u)]; got != slow {
			t.Errorf("isRunServer(%s) = %v, but its canonical form says %v", raw, got, slow)
		}
	}
}

// seen records the run token each server received.
type seen struct {
	mu     sync.Mutex
	tokens []string
}

func (s *seen) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.tokens = append(s.tokens, r.Header.Get(RunTokenHeader))
		s.mu.Unlock()
		if next != nil {
			next.ServeHTTP(w, r)
		}
	})
}

func (s *seen) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokens)
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func TestClientSendsRunTokenOnlyToRunServers(t *testing.T) {
	const token = "run-secret"
	var gym, other seen
	gymSrv := httptest.NewServer(gym.handler(nil))
	defer gymSrv.Close()
	otherSrv := httptest.NewServer(other.handler(nil))
	defer otherSrv.Close()
	gymHost := hostOf(t, gymSrv.URL)
	_, gymPort, _ := net.SplitHostPort(gymHost)

	tests := []struct {
		name       string
		runToken   string
		runServers []string
		url        string
		callerSets string
		wantGym    string
		wantOther  string
	}{
		{name: "a server of the run gets the token", runToken: token, runServers: []string{gymHost}, url: gymSrv.URL + "/v1/responses", wantGym: token},
		{name: "any other host never does", runToken: token, runServers: []string{gymHost}, url: otherSrv.URL + "/v1/responses"},
		{name: "not even one the caller gave it to", runToken: token, runServers: []string{gymHost}, url: otherSrv.URL + "/v1/responses", callerSets: token},
		{name: "the run's token replaces a caller's", runToken: token, runServers: []string{gymHost}, url: gymSrv.URL + "/", callerSets: "stale", wantGym: token},
		{name: "a host name is not its address", runToken: token, runServers: []string{"localhost:" + gymPort}, url: gymSrv.URL + "/"},
		{name: "same host, another port is another server", runToken: token, runServers: []string{"127.0.0.1:1"}, url: gymSrv.URL + "/"},
		{name: "no run token sends none", runServers: []string{gymHost}, url: gymSrv.URL + "/"},
		{name: "no run servers sends none", runToken: token, url: gymSrv.URL + "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gym.tokens, other.tokens = nil, nil
			c := NewClient(ClientOptions{RunToken: tt.runToken, RunServers: tt.runServers})
			req, _ := http.NewRequest("POST", tt.url, strings.NewReader(`{}`))
			if tt.callerSets != "" {
				req.Header.Set(RunTokenHeader, tt.callerSets)
			}
			before := req.Header.Clone()
			resp, err := c.Do(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			var got string
			if strings.HasPrefix(tt.url, gymSrv.URL) {
				got = gym.got()[0]
				if got != tt.wantGym {
					t.Errorf("the run's server got token %q, want %q", got, tt.wantGym)
				}
			} else if got = other.got()[0]; got != tt.wantOther {
				t.Errorf("the other host got token %q, want %q", got, tt.wantOther)
			}
			if !equalHeader(req.Header, before) {
				t.Errorf("the caller's header changed: %v, was %v", req.Header, before)
			}
		})
	}
}

func equalHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func TestClientRunTokenAcrossRedirects(t *testing.T) {
	const token = "run-secret"
	var gym, outside seen
	outsideSrv := httptest.NewServer(outside.handler(nil))
	defer outsideSrv.Close()
	var gymSrv *httptest.Server
	gymSrv = httptest.NewServer(gym.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, outsideSrv.URL+"/landed", http.StatusFound)
		case "/stay":
			http.Redirect(w, r, "/landed", http.StatusTemporaryRedirect)
		}
	})))
	defer gymSrv.Close()
	bounce := httptest.NewServer(outside.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, gymSrv.URL+"/landed", http.StatusFound)
	})))
	defer bounce.Close()
	c := NewClient(ClientOptions{RunToken: token, RunServers: []string{hostOf(t, gymSrv.URL)}})

	for _, tt := range []struct {
		name               string
		url                string
		wantGym, wantOther []string
	}{
		{"a run server redirecting away does not pass the token on", gymSrv.URL + "/away", []string{token}, []string{""}},
		{"a redirect within the run server keeps it", gymSrv.URL + "/stay", []string{token, token}, nil},
		{"an outside host redirecting to a run server does not get it sent", bounce.URL + "/", []string{""}, []string{""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gym.tokens, outside.tokens = nil, nil
			resp, err := c.Do(context.Background(), mustRequest(t, "GET", tt.url))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if g, o := gym.got(), outside.got(); !slices.Equal(g, tt.wantGym) || !slices.Equal(o, tt.wantOther) {
				t.Errorf("tokens seen: run server %q, outside %q; want %q, %q", g, o, tt.wantGym, tt.wantOther)
			}
		})
	}

	loop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/again", http.StatusFound) }))
	defer loop.Close()
	// A redirect loop is not retried: no second try ends differently.
	logs := &syncBuffer{}
	lc, waits := testClient(ClientOptions{RunToken: token}, logs)
	if _, err := lc.Do(context.Background(), mustRequest(t, "GET", loop.URL)); err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Errorf("a redirect loop: %v", err)
	}
	if len(waits.waits) != 0 {
		t.Errorf("a redirect loop was retried: waits %v", waits.waits)
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }

// Servers learned after the client is made (from a head server's config)
// get the token too; others still do not.
func TestClientTrustServersLater(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get(RunTokenHeader))
	}))
	defer srv.Close()
	c := NewClient(ClientOptions{RunToken: "tok", MaxRetries: -1})
	if _, _, err := c.PostJSON(context.Background(), srv.URL, []byte(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	c.TrustServers([]string{strings.TrimPrefix(srv.URL, "http://")})
	if _, _, err := c.PostJSON(context.Background(), srv.URL, []byte(`{}`), nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "" || got[1] != "tok" {
		t.Errorf("tokens sent %q, want none and then the run's", got)
	}
}

// A request handed to a handler in process counts as local: an agent's
// self-call must not need the token it would need from another machine.
func TestInProcessRequestIsLocal(t *testing.T) {
	req, err := InProcessRequest(context.Background(), http.MethodPost, "/v1/responses", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !LocalClient(req) {
		t.Errorf("an in-process request from %q is not local", req.RemoteAddr)
	}
}
