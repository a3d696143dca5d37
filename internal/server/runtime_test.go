package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

const echoConfig = `head_host: 127.0.0.1
echo_server:
  test_servers:
    echo:
      entrypoint: app.py
      host: ${head_host}
      port: 0
      api_key: ${oc.env:ECHO_KEY}
      greeting: hello ${oc.env:ECHO_NAME,world}
other_model:
  responses_api_models:
    openai_model:
      host: 127.0.0.2
      port: 12345
`

func TestFromEnv(t *testing.T) {
	env := func(dict, path string, extra ...string) map[string]string {
		m := map[string]string{config.ConfigDictEnv: dict, config.ConfigPathEnv: path}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantErr []string // substrings; empty means success
		check   func(t *testing.T, rt *Runtime)
	}{
		{
			name: "section resolved in the child's env, global left as given",
			env:  env(echoConfig, "echo_server", "ECHO_KEY", "sk-123"),
			check: func(t *testing.T, rt *Runtime) {
				if rt.Instance != "echo_server" || rt.ServerType != "test_servers" || rt.Implementation != "echo" || rt.Kind() != echoKind {
					t.Errorf("identity = %q %q %q", rt.Instance, rt.ServerType, rt.Implementation)
				}
				if rt.ClassName != echoClass || rt.ServerName() != "EchoServer___echo_server" {
					t.Errorf("ClassName %q ServerName %q", rt.ClassName, rt.ServerName())
				}
				if rt.Host != "127.0.0.1" || rt.Port != 0 {
					t.Errorf("address = %s:%d", rt.Host, rt.Port)
				}
				for key, want := range map[string]string{"api_key": "sk-123", "greeting": "hello world", "name": "echo_server", "host": "127.0.0.1"} {
					if got := rt.Config.Get(key); got == nil || got.Str != want {
						t.Errorf("Config.%s = %#v, want %q", key, got, want)
					}
				}
				raw := rt.Global.Get("echo_server").Get("test_servers").Get("echo").Get("api_key")
				if raw.Str != "${oc.env:ECHO_KEY}" {
					t.Errorf("Global was resolved: api_key = %q", raw.Str)
				}
				if rt.DryRun || rt.Verbose || rt.Logger.Enabled(context.Background(), slog.LevelDebug) {
					t.Errorf("DryRun %v Verbose %v debug %v", rt.DryRun, rt.Verbose, rt.Logger.Enabled(context.Background(), slog.LevelDebug))
				}
				if rt.Client == nil {
					t.Error("no Client")
				}
			},
		},
		{
			name: "T69 the config is taken exactly as given",
			env:  env("a: 2\nsrv:\n  t:\n    i: {host: h, port: 1}\n", "srv"),
			check: func(t *testing.T, rt *Runtime) {
				want, err := config.ParseChildConfig("a: 2\nsrv:\n  t:\n    i: {host: h, port: 1}\n")
				if err != nil {
					t.Fatal(err)
				}
				if !tree.Equal(rt.Global, want) {
					t.Errorf("Global = %#v, want %#v (no defaults, no validation)", rt.Global, want)
				}
				if a := rt.Global.Get("a"); a.Kind != tree.Int || a.Int != 2 {
					t.Errorf("a = %#v", a)
				}
				if rt.ClassName != "" {
					t.Errorf("unregistered kind got class %q", rt.ClassName)
				}
			},
		},
		{
			name: "T70 truthy verbose turns on debug logging",
			env:  env("verbose: true\nsrv: {t: {i: {host: h, port: 1}}}\n", "srv"),
			check: func(t *testing.T, rt *Runtime) {
				if !rt.Verbose || !rt.Logger.Enabled(context.Background(), slog.LevelDebug) {
					t.Errorf("Verbose %v, debug enabled %v", rt.Verbose, rt.Logger.Enabled(context.Background(), slog.LevelDebug))
				}
			},
		},
		{
			name: "verbose by Python truthiness",
			env:  env("verbose: 1\nsrv: {t: {i: {host: h, port: 1}}}\n", "srv"),
			check: func(t *testing.T, rt *Runtime) {
				if !rt.Verbose {
					t.Error("verbose: 1 is truthy")
				}
			},
		},
		{
			name: "falsy verbose leaves the level",
			env:  env("verbose: ''\nsrv: {t: {i: {host: h, port: 1}}}\n", "srv"),
			check: func(t *testing.T, rt *Runtime) {
				if rt.Verbose || rt.Logger.Enabled(context.Background(), slog.LevelDebug) {
					t.Error("empty string is falsy")
				}
			},
		},
		{
			name: "dry_run from the top level",
			env:  env("dry_run: yes\nsrv: {t: {i: {host: h, port: 1}}}\n", "srv"),
			check: func(t *testing.T, rt *Runtime) {
				if !rt.DryRun {
					t.Error("dry_run: yes (YAML 1.1 true) not seen")
				}
			},
		},
		{
			name: "connector limit from the config",
			env:  env("global_aiohttp_connector_limit_per_host: 7\nsrv: {t: {i: {host: h, port: 1}}}\n", "srv"),
			check: func(t *testing.T, rt *Runtime) {
				h1 := rt.Client.http.Transport.(*h1Transport)
				if got := h1.fallback.(*http.Transport).MaxConnsPerHost; got != 7 || h1.maxConns != 7 {
					t.Errorf("MaxConnsPerHost = %d, plain http's %d", got, h1.maxConns)
				}
			},
		},
		{name: "missing config dict", env: map[string]string{config.ConfigPathEnv: "srv"}, wantErr: []string{"NEMO_GYM_CONFIG_DICT is not set"}},
		{name: "empty config dict", env: env("", "srv"), wantErr: []string{"NEMO_GYM_CONFIG_DICT is not set"}},
		{name: "missing instance name", env: map[string]string{config.ConfigDictEnv: echoConfig}, wantErr: []string{"NEMO_GYM_CONFIG_PATH is not set"}},
		{name: "bad YAML", env: env("a: [1, 2\nb: 3\n", "srv"), wantErr: []string{"NEMO_GYM_CONFIG_DICT", "line"}},
		{name: "not a mapping", env: env("- 1\n", "srv"), wantErr: []string{"NEMO_GYM_CONFIG_DICT must hold a YAML mapping"}},
		{name: "unknown instance", env: env(echoConfig, "nope"), wantErr: []string{"no server instance 'nope'", "NEMO_GYM_CONFIG_PATH=nope"}},
		{name: "T69 a: 2 has no server section", env: env("a: 2", "a"), wantErr: []string{"no server instance 'a'"}},
		{name: "unresolvable interpolation", env: env(echoConfig, "echo_server"), wantErr: []string{"ECHO_KEY"}},
		{name: "no host", env: env("srv: {t: {i: {port: 1}}}\n", "srv"), wantErr: []string{"'srv' has no host", "srv.host"}},
		{name: "port out of range", env: env("srv: {t: {i: {host: h, port: 70000}}}\n", "srv"), wantErr: []string{"no usable port", "70000"}},
		{name: "port not a number", env: env("srv: {t: {i: {host: h, port: abc}}}\n", "srv"), wantErr: []string{"no usable port", `"abc"`}},
		{
			name: "port from an env var string",
			env:  env("srv: {t: {i: {host: h, port: '${oc.env:P}'}}}\n", "srv", "P", "8123"),
			check: func(t *testing.T, rt *Runtime) {
				if rt.Port != 8123 {
					t.Errorf("Port = %d", rt.Port)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, err := fromEnv(envMap(tt.env), io.Discard)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, want one containing %q", tt.wantErr)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, rt)
		})
	}
}

func TestFromEnvLogsToStdout(t *testing.T) {
	rt, err := FromEnv(envMap(map[string]string{config.ConfigDictEnv: "srv: {t: {i: {host: h, port: 1}}}", config.ConfigPathEnv: "srv"}))
	if err != nil {
		t.Fatal(err)
	}
	if rt.Logger == nil || !rt.Logger.Enabled(context.Background(), slog.LevelInfo) {
		t.Error("FromEnv gave no info-level logger")
	}
}

// startMain runs Main on a free port and returns its base URL and a stop
// function that cancels it and returns Main's result.
func startMain(t *testing.T, env map[string]string) (string, *listenWatcher, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := newListenWatcher()
	done := make(chan error, 1)
	go func() { done <- Main(ctx, envMap(env), out) }()
	select {
	case u := <-out.url:
		return u, out, func() error {
			cancel()
			select {
			case err := <-done:
				return err
			case <-time.After(5 * time.Second):
				t.Fatal("Main did not return after cancel")
				return nil
			}
		}
	case err := <-done:
		cancel()
		t.Fatalf("Main returned before listening: %v\n%s", err, out.String())
	case <-time.After(5 * time.Second):
		cancel()
		t.Fatalf("no listening line:\n%s", out.String())
	}
	return "", nil, nil
}

func TestMainEndToEnd(t *testing.T) {
	base, out, stop := startMain(t, map[string]string{
		config.ConfigDictEnv: echoConfig, config.ConfigPathEnv: "echo_server", "ECHO_KEY": "k",
	})
	if !strings.Contains(out.String(), "\ntest_servers/echo 'echo_server' listening on "+base+"\n") && !strings.HasPrefix(out.String(), "test_servers/echo 'echo_server' listening on "+base+"\n") {
		t.Errorf("listening line = %q", out.String())
	}
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(path string, cookies ...*http.Cookie) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		for _, c := range cookies {
			req.AddCookie(c)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	sessionOf := func(body []byte) string {
		t.Helper()
		var r echoReply
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return r.SessionID
	}

	resp, body := get("/")
	if resp.StatusCode != 200 || string(body) != `{"status":"ok"}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("GET / = %d %q %q", resp.StatusCode, body, resp.Header.Get("Content-Type"))
	}
	cookie := sessionCookieOf(t, resp)
	if cookie.Name != "EchoServer___echo_server" || cookie.Path != "/" || cookie.MaxAge != 14*24*3600 || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode {
		t.Errorf("cookie = %+v", cookie)
	}

	_, body = get("/whoami", cookie)
	first := sessionOf(body)
	if len(first) != 36 || first[14] != '4' {
		t.Errorf("session id %q is not a UUIDv4", first)
	}
	for range 3 {
		resp, body = get("/whoami", cookie)
		if got := sessionOf(body); got != first {
			t.Errorf("session id changed across requests carrying the cookie: %q then %q", first, got)
		}
		if c := sessionCookieOf(t, resp); c.Value != cookie.Value {
			t.Errorf("refreshed cookie changed value: %q then %q", cookie.Value, c.Value)
		}
	}

	tampered := *cookie
	tampered.Value = strings.Replace(cookie.Value, first[:8], "00000000", 1)
	_, body = get("/whoami", &tampered)
	if got := sessionOf(body); got == first || got == "" {
		t.Errorf("tampered cookie kept session %q", got)
	}
	_, body = get("/whoami")
	if got := sessionOf(body); got == first {
		t.Error("a request without the cookie joined the existing session")
	}

	// A cookie jar client, as a browser or Python client would hold it.
	jar, _ := cookiejar.New(nil)
	jc := &http.Client{Jar: jar, Timeout: 5 * time.Second}
	var ids []string
	for range 2 {
		resp, err := jc.Get(base + "/whoami")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ids = append(ids, sessionOf(b))
	}
	if ids[0] != ids[1] {
		t.Errorf("cookie jar client got two sessions %v", ids)
	}

	if err := stop(); err != nil {
		t.Errorf("Main after cancel = %v, want nil", err)
	}
	if _, err := client.Get(base + "/"); err == nil {
		t.Error("server still answers after Main returned")
	}
}

func sessionCookieOf(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	cs := resp.Cookies()
	if len(cs) != 1 {
		t.Fatalf("want exactly one Set-Cookie, got %v", resp.Header.Values("Set-Cookie"))
	}
	return cs[0]
}

func TestMainErrors(t *testing.T) {
	tests := []struct {
		name    string
		dict    string
		path    string
		wantErr []string
	}{
		{"unregistered kind lists the registered ones", "srv: {nope_servers: {nope: {host: 127.0.0.1, port: 0}}}", "srv", []string{"'srv' is nope_servers/nope", "no Go implementation", echoKind}},
		{"factory error names the server", "srv: {test_servers: {echo: {host: 127.0.0.1, port: 0, refuse: true}}}", "srv", []string{"test_servers/echo 'srv'", "refusing to start"}},
		{"listen error names the address", "srv: {test_servers: {echo: {host: 203.0.113.77, port: 1}}}", "srv", []string{"listening on 203.0.113.77:1"}},
		{"config error", "srv: 1", "srv", []string{"no server instance 'srv'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Main(context.Background(), envMap(map[string]string{config.ConfigDictEnv: tt.dict, config.ConfigPathEnv: tt.path}), io.Discard)
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestMainDryRun(t *testing.T) {
	// Hold a port: a server that tried to listen on it would fail.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	dict := "dry_run: true\nsrv: {test_servers: {echo: {host: 127.0.0.1, port: " + strconv.Itoa(port) + "}}}\n"
	out := &syncBuffer{}
	start := time.Now()
	if err := Main(context.Background(), envMap(map[string]string{config.ConfigDictEnv: dict, config.ConfigPathEnv: "srv"}), out); err != nil {
		t.Fatalf("dry run = %v", err)
	}
	if strings.Contains(out.String(), "listening") || time.Since(start) > 2*time.Second {
		t.Errorf("dry run listened or lingered: %q", out.String())
	}
	// The factory still runs, so a dry run validates construction.
	dict = "dry_run: true\nsrv: {test_servers: {echo: {host: 127.0.0.1, port: 0, refuse: 1}}}\n"
	if err := Main(context.Background(), envMap(map[string]string{config.ConfigDictEnv: dict, config.ConfigPathEnv: "srv"}), out); err == nil {
		t.Error("dry run skipped the factory")
	}
}

func TestServeGracefulShutdown(t *testing.T) {
	entered := make(chan struct{}, 2)
	logs := &syncBuffer{}
	rt := testRuntime(logs)
	ctx, cancel := context.WithCancel(context.Background())
	out := newListenWatcher()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, rt, echoHandler(entered), out) }()
	base := out.waitURL(t)

	type result struct {
		status int
		body   string
		err    error
	}
	call := func(path string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			resp, err := http.Get(base + path)
			if err != nil {
				ch <- result{err: err}
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			ch <- result{resp.StatusCode, string(b), err}
		}()
		return ch
	}
	slow, quick := call("/slow"), call("/quick")
	<-entered
	<-entered
	start := time.Now()
	cancel()

	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if took := time.Since(start); took < 400*time.Millisecond || took > 2*time.Second {
		t.Errorf("shutdown took %v, want about the 0.5 s grace", took)
	}
	if r := <-quick; r.err != nil || r.status != 200 || r.body != "done" {
		t.Errorf("a request that finishes within the grace = %+v", r)
	}
	if r := <-slow; r.err == nil && r.status == 200 {
		t.Errorf("the slow request was not cut off: %+v", r)
	}
	if !strings.Contains(logs.String(), "grace period") {
		t.Errorf("no log of the cut-off:\n%s", logs.String())
	}
}

func TestServeCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := Serve(ctx, testRuntime(io.Discard), http.NotFoundHandler(), io.Discard); err != nil || time.Since(start) > 2*time.Second {
		t.Errorf("Serve with a cancelled context = %v after %v, want a quick nil", err, time.Since(start))
	}
}

func TestServeRejectsBadCookieName(t *testing.T) {
	rt := testRuntime(io.Discard)
	rt.Instance = "bad name"
	err := Serve(context.Background(), rt, http.NotFoundHandler(), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "not a valid cookie name") {
		t.Errorf("Serve = %v", err)
	}
}

func TestServeDryRun(t *testing.T) {
	rt := testRuntime(io.Discard)
	rt.DryRun = true
	rt.Host = "203.0.113.77" // not ours: listening would fail
	out := &syncBuffer{}
	if err := Serve(context.Background(), rt, http.NotFoundHandler(), out); err != nil || out.String() != "" {
		t.Errorf("Serve dry run = %v, output %q", err, out.String())
	}
}

func TestServerURL(t *testing.T) {
	t.Setenv("SERVER_URL_TEST_PORT", "18080")
	global, err := config.ParseChildConfig(`head_host: 10.0.0.5
model:
  responses_api_models:
    openai_model:
      host: ${head_host}
      port: ${oc.env:SERVER_URL_TEST_PORT}
      openai_api_key: ${oc.env:SERVER_URL_TEST_SURELY_UNSET}
v6:
  resources_servers:
    x:
      host: "::1"
      port: 9000
noport:
  resources_servers:
    x:
      host: h
notserver: 3
`)
	if err != nil {
		t.Fatal(err)
	}
	before := global.Clone()
	tests := []struct {
		instance string
		want     string
		wantErr  string
	}{
		{"model", "http://10.0.0.5:18080", ""},
		{"v6", "http://[::1]:9000", ""},
		{"noport", "", "no usable port"},
		{"notserver", "", "no server instance 'notserver'"},
		{"missing", "", "no server instance 'missing'"},
	}
	for _, tt := range tests {
		t.Run(tt.instance, func(t *testing.T) {
			got, err := ServerURL(global, tt.instance)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ServerURL = %q, %v; want error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ServerURL = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if !tree.Equal(global, before) {
		t.Error("ServerURL changed the global config")
	}
}

func TestRegister(t *testing.T) {
	ok := func(*Runtime) (http.Handler, error) { return http.NotFoundHandler(), nil }
	panics := []struct {
		name, kind, class string
		f                 Factory
	}{
		{"duplicate", "test_registry/a", "A", ok},
		{"no implementation", "test_registry", "A", ok},
		{"empty type", "/x", "A", ok},
		{"too deep", "a/b/c", "A", ok},
		{"empty class", "test_registry/c", "", ok},
		{"class not a cookie token", "test_registry/c", "My Class", ok},
		{"nil factory", "test_registry/c", "C", nil},
	}
	for _, p := range panics {
		t.Run(p.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q, %q) did not panic", p.kind, p.class)
				}
			}()
			Register(p.kind, p.class, p.f)
		})
	}
	if _, found := Lookup("test_registry/c"); found {
		t.Error("a failed registration was kept")
	}
	if f, found := Lookup("test_registry/a"); !found || f == nil {
		t.Error("Lookup missed a registered kind")
	}
	kinds := Kinds()
	ia, ib := indexOf(kinds, "test_registry/a"), indexOf(kinds, "test_registry/b")
	if ia < 0 || ib < 0 || ia > ib || indexOf(kinds, echoKind) < 0 {
		t.Errorf("Kinds() = %v, want sorted with the registered kinds", kinds)
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// Serve puts its server behind Harden: a request head far beyond what
// NeMo Gym's uvicorn accepts is refused instead of buffered.
func TestServeBoundsRequestHeaders(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := newListenWatcher()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, testRuntime(io.Discard), echoHandler(nil), out) }()
	defer func() { cancel(); <-done }()
	base := out.waitURL(t)
	req, _ := http.NewRequest("GET", base+"/whoami", nil)
	req.Header.Set("X-Padding", strings.Repeat("a", 100<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 100 KiB header got %d, want 431", resp.StatusCode)
	}
}

func TestUnknownConfigKeys(t *testing.T) {
	section := func(keys ...string) *tree.Node {
		n := tree.NewMap()
		for _, k := range keys {
			n.Set(k, tree.NewNull())
		}
		return n
	}
	tests := []struct {
		name       string
		kind       string
		section    *tree.Node
		unknown    []string
		registered bool
	}{
		{"not registered", "test_registry/none", section("grading_mode"), nil, false},
		{"base keys only", "test_registry/a", section("entrypoint", "host", "port", "name", "domain", "verified", "description", "value", "datasets"), nil, true},
		{"registered keys", "test_registry/a", section("judge_model_server", "grading_mode"), nil, true},
		{"others in section order", "test_registry/a", section("zeta", "grading_mode", "alpha"), []string{"zeta", "alpha"}, true},
		{"a kind without keys", "test_registry/b", section("grading_mode"), []string{"grading_mode"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			unknown, registered := UnknownConfigKeys(tt.kind, tt.section)
			if registered != tt.registered || !slices.Equal(unknown, tt.unknown) {
				t.Errorf("UnknownConfigKeys = %q, %v; want %q, %v", unknown, registered, tt.unknown, tt.registered)
			}
		})
	}
	if got := ConfigKeys("test_registry/a"); !slices.Equal(got, []string{"grading_mode", "judge_model_server"}) {
		t.Errorf("ConfigKeys = %q, want both, sorted", got)
	}
}

// gym tunes the collector unless GOGC says otherwise; a budget's tuning
// ends with the GOGC the process had.
func TestGCBudget(t *testing.T) {
	for env, want := range map[string]bool{"": true, "100": false, "off": false} {
		lookup := func(k string) (string, bool) { return env, k == "GOGC" && env != "" }
		if got := TunesGC(lookup); got != want {
			t.Errorf("GOGC=%q: TunesGC %v, want %v", env, got, want)
		}
	}
	// The process's GC percent, as a fake the other tests' tuners cannot
	// touch.
	current := 150
	var set []int
	setGCPercent := func(p int) int {
		old := current
		current = p
		set = append(set, p)
		return old
	}
	stop := startGCBudget(1<<40, setGCPercent) // far above this test's live heap
	if current < 1000 {
		t.Errorf("GOGC %d under the budget, want thousands", current)
	}
	stop()
	if current != 150 {
		t.Errorf("GOGC %d after stop (set %v), want the process's 150", current, set)
	}
}

// ServeBare answers with the handler alone, and returns nil once its
// context ends.
func TestServeBare(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- ServeBare(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("bare " + r.URL.Path))
		}))
	}()
	resp, err := http.Get("http://" + ln.Addr().String() + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "bare /x" || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("answer %q, Set-Cookie %q: want the handler's alone", body, resp.Header.Get("Set-Cookie"))
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeBare: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeBare did not return after its context ended")
	}
}
