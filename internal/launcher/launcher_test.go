package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/python"
	"github.com/nemo-gym-go/gym/internal/resolve"
	"github.com/nemo-gym-go/gym/internal/server"
)

// pyStub is a Python server (stdlib only) that finds its own port in
// NEMO_GYM_CONFIG_DICT, answers GET / with {"status":"ok"}, and exits after
// EXIT_AFTER seconds when that is set.
const pyStub = `import os, re, sys, threading, http.server
name = os.environ["NEMO_GYM_CONFIG_PATH"]
text = os.environ["NEMO_GYM_CONFIG_DICT"]
block = re.search(r"^%s:\n((?:[ ].*\n)*)" % re.escape(name), text, re.M).group(1)
port = int(re.search(r"^      port: (\d+)$", block, re.M).group(1))
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'{"status":"ok"}')
    def log_message(self, *a): pass
srv = http.server.HTTPServer(("127.0.0.1", port), H)
print("stub listening on", port, flush=True)
if os.environ.get("EXIT_AFTER"):
    threading.Timer(float(os.environ["EXIT_AFTER"]), lambda: (print("stub crashing now", flush=True), os._exit(3))).start()
srv.serve_forever()
`

// forkingScript is an executable server that leaves a grandchild running
// (a stand-in for workers a real server spawns) and then becomes the
// Python stub.
const forkingScript = `#!/bin/sh
sleep 300 &
echo "group $$ grandchild $!"
exec python3 app_impl.py
`

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func writeFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

// lockedBuffer collects output written from many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type fixture struct {
	dir     string
	out     *lockedBuffer
	environ []string
}

func newFixture(t *testing.T) *fixture {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "resources_servers/pystub/app.py"), pyStub, 0o644)
	writeFile(t, filepath.Join(dir, "resources_servers/forking/app.sh"), forkingScript, 0o755)
	writeFile(t, filepath.Join(dir, "resources_servers/forking/app_impl.py"), pyStub, 0o644)
	return &fixture{dir: dir, out: &lockedBuffer{}, environ: os.Environ()}
}

// options loads yaml (plus overrides) as `gym env start` would.
func (f *fixture) options(t *testing.T, yaml string, overrides ...string) Options {
	t.Helper()
	writeFile(t, filepath.Join(f.dir, "servers.yaml"), yaml, 0o644)
	roots := resolve.NewRoots("", f.dir, f.dir)
	head := freePort(t)
	env := config.Env{Cwd: f.dir, Roots: roots, LookupEnv: os.LookupEnv}
	res, err := config.Load(context.Background(), env, config.Request{Overrides: append([]string{
		"+config_paths=[servers.yaml]", "++head_server.port=" + strconv.Itoa(head), "++model_endpoint_readiness_timeout_seconds=0",
	}, overrides...)})
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Result: res, Roots: roots, Environ: f.environ, LookPath: lookPathNoUV, Self: "/nonexistent/gym",
		Builtin: noBuiltins, Cwd: f.dir, Out: f.out, Grace: 2 * time.Second,
	}
}

// lookPathNoUV hides uv so Python servers run with python3 directly.
func lookPathNoUV(name string) (string, error) {
	if name == "uv" {
		return "", exec.ErrNotFound
	}
	return exec.LookPath(name)
}

func serverYAML(name, impl, entrypoint string, extra ...string) string {
	s := fmt.Sprintf("%s:\n  resources_servers:\n    %s:\n      entrypoint: %s\n      domain: other\n", name, impl, entrypoint)
	for _, e := range extra {
		s += "      " + e + "\n"
	}
	return s
}

// groupMembers lists the pids whose process group is pgid, from /proc.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	var pids []int
	eachProcess(func(pid int, stat []string) {
		if len(stat) > 2 && stat[2] == strconv.Itoa(pgid) {
			pids = append(pids, pid)
		}
	})
	return pids
}

func TestStartReadyHeadServerAndCleanStop(t *testing.T) {
	needPython(t)
	f := newFixture(t)
	opts := f.options(t, serverYAML("py", "pystub", "app.py")+serverYAML("forker", "forking", "app.sh"))
	l, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("start: %v\noutput:\n%s", err, f.out)
	}
	out := f.out.String()
	for _, want := range []string{"All 2 / 2 servers ready", "(py) stub listening on", "(forker) group ", "resources_servers/forking (executable)", "resources_servers/pystub (python)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	host, port := HeadAddress(opts.Result)
	base := "http://" + host + ":" + strconv.Itoa(port)
	var yamlText string
	getJSON(t, base+"/global_config_dict_yaml", &yamlText)
	if !strings.Contains(yamlText, "forker:\n  resources_servers:") {
		t.Errorf("head config YAML:\n%s", yamlText)
	}
	var infos []InstanceInfo
	getJSON(t, base+"/server_instances", &infos)
	if len(infos) != 2 || infos[0].ProcessName != "py" || infos[1].Name != "forking" || infos[0].PID == 0 {
		t.Errorf("server_instances = %+v", infos)
	}

	statuses, err := Status(context.Background(), NewHeadClient(opts.Result), time.Now())
	if err != nil || len(statuses) != 2 || *statuses[0].Status != healthSuccess {
		t.Errorf("status = %+v, %v", statuses, err)
	}

	pgids := []int{l.children[0].proc.pid, l.children[1].proc.pid}
	if members := groupMembers(t, pgids[1]); len(members) < 2 {
		t.Errorf("the forking server's group should hold it and its grandchild, has %v", members)
	}
	l.Stop()
	for _, pgid := range pgids {
		if left := groupMembers(t, pgid); len(left) > 0 {
			t.Errorf("process group %d still has %v after Stop", pgid, left)
		}
	}
	if _, err := http.Get(base + "/"); err == nil {
		t.Error("head server still answers after Stop")
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("%s: %v: %s", url, err, body)
	}
}

func TestCrashMidRunStopsTheRest(t *testing.T) {
	needPython(t)
	f := newFixture(t)
	// Late enough that both servers are ready first, even on a loaded machine.
	f.environ = append(f.environ, "EXIT_AFTER=2")
	opts := f.options(t, serverYAML("py", "pystub", "app.py")+serverYAML("forker", "forking", "app.sh"))
	l, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("start: %v\n%s", err, f.out)
	}
	werr := l.Wait(context.Background())
	l.Stop()
	var crash *CrashError
	if !errors.As(werr, &crash) {
		t.Fatalf("Wait = %v, want a CrashError", werr)
	}
	if crash.How != "exited with code 3" || !strings.Contains(strings.Join(crash.Tail, "\n"), "stub crashing now") {
		t.Errorf("crash = %+v", crash)
	}
	for _, c := range l.children {
		if left := groupMembers(t, c.proc.pid); len(left) > 0 {
			t.Errorf("%s's group still has %v", c.spec.Instance, left)
		}
	}
}

func TestPortTakenFailsStartAndStopsStarted(t *testing.T) {
	needPython(t)
	f := newFixture(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	opts := f.options(t, serverYAML("forker", "forking", "app.sh")+serverYAML("py", "pystub", "app.py", "port: "+strconv.Itoa(port)))
	l, err := Start(context.Background(), opts)
	var crash *CrashError
	if !errors.As(err, &crash) || crash.Instance != "py" {
		t.Fatalf("Start = %v, %v; want py's crash", l, err)
	}
	if !strings.Contains(strings.Join(crash.Tail, "\n"), "Address already in use") {
		t.Errorf("tail = %q", crash.Tail)
	}
	pid := pidOf(t, f.out.String(), "forker")
	if left := groupMembers(t, pid); len(left) > 0 {
		t.Errorf("the server started before the failure is still running: %v", left)
	}
}

// pidOf finds the forking script's pid, which leads its process group, in
// the line the script prints.
func pidOf(t *testing.T, out, instance string) int {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "("+instance+") group "); ok {
			pid, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatalf("no group line for %s in:\n%s", instance, out)
	return 0
}

func TestMissingEntrypointListsWhatWasTried(t *testing.T) {
	f := newFixture(t)
	opts := f.options(t, serverYAML("ghost", "no_such_impl", "app.py"))
	opts.RegisteredKinds = []string{"resources_servers/example_single_tool_call"}
	_, err := Start(context.Background(), opts)
	var pe *PlanError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a PlanError", err)
	}
	for _, want := range []string{"cannot start server 'ghost'", f.dir + "/resources_servers/no_such_impl/app.py", "no Go implementation is registered as resources_servers/no_such_impl", "resources_servers/example_single_tool_call"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%v", want, err)
		}
	}
}

func TestUnreachableModelEndpoint(t *testing.T) {
	needPython(t)
	f := newFixture(t)
	writeFile(t, filepath.Join(f.dir, "responses_api_models/pymodel/app.py"), pyStub, 0o644)
	closed := freePort(t)
	// The URL's credentials stay out of what gym prints.
	yaml := fmt.Sprintf("policy_model:\n  responses_api_models:\n    pymodel:\n      entrypoint: app.py\n      base_url: http://proxy:hunter2@127.0.0.1:%d/v1?key=sk-in-query\n", closed)
	opts := f.options(t, yaml, "++model_endpoint_readiness_timeout_seconds=1")
	start := time.Now()
	_, err := Start(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("@127.0.0.1:%d/v1?key=xxxxx (from `policy_model.responses_api_models.pymodel.base_url`)", closed)) {
		t.Fatalf("err = %v", err)
	}
	if shown := err.Error() + f.out.String(); strings.Contains(shown, "hunter2") || strings.Contains(shown, "sk-in-query") {
		t.Errorf("a secret of the URL was printed:\n%s", shown)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("gave up after %s", time.Since(start))
	}
	if !strings.Contains(f.out.String(), "Waiting for 1 model endpoint(s)") {
		t.Errorf("output:\n%s", f.out)
	}
}

func TestDryRunRunsEachServerToCompletion(t *testing.T) {
	f := newFixture(t)
	writeFile(t, filepath.Join(f.dir, "resources_servers/setup_ok/app.sh"), "#!/bin/sh\necho set up\n", 0o755)
	writeFile(t, filepath.Join(f.dir, "resources_servers/setup_bad/app.sh"), "#!/bin/sh\necho broken >&2\nexit 4\n", 0o755)
	opts := f.options(t, serverYAML("ok", "setup_ok", "app.sh")+serverYAML("bad", "setup_bad", "app.sh"), "++dry_run=true")
	l, err := Start(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "Dry run failed to set up 1 server(s)") || !strings.Contains(err.Error(), "`bad` exited with code 4") {
		t.Fatalf("err = %v", err)
	}
	if l == nil || !l.DryRun {
		t.Fatal("no dry-run launch returned")
	}
	if out := f.out.String(); !strings.Contains(out, "(ok) set up") || !strings.Contains(out, "(bad) broken") {
		t.Errorf("output:\n%s", out)
	}
}

func TestChildEnvironment(t *testing.T) {
	f := newFixture(t)
	writeFile(t, filepath.Join(f.dir, "resources_servers/envdump/app.sh"), "#!/bin/sh\necho \"path=$NEMO_GYM_CONFIG_PATH pythonpath=$PYTHONPATH cwd=$(pwd) extra=$NEMO_GYM_EXTRA_ROOTS\"\necho \"$NEMO_GYM_CONFIG_DICT\" | grep -c 'secret: hunter2'\n", 0o755)
	f.environ = []string{"PATH=" + os.Getenv("PATH"), "PYTHONPATH=/prev", "NEMO_GYM_EXTRA_ROOTS=/extra"}
	logDir := filepath.Join(f.dir, "logs")
	opts := f.options(t, serverYAML("envdump", "envdump", "app.sh", "secret: hunter2", "key_ref: ${policy_api_key}"),
		"++dry_run=true", "+policy_api_key=sk-real", "+nemo_gym_log_dir="+logDir)
	if _, err := Start(context.Background(), opts); err != nil {
		t.Fatalf("start: %v\n%s", err, f.out)
	}
	dir := filepath.Join(f.dir, "resources_servers/envdump")
	want := fmt.Sprintf("(envdump) path=envdump pythonpath=%s:/prev cwd=%s extra=/extra\n(envdump) 1\n", dir, dir)
	if !strings.Contains(f.out.String(), want) {
		t.Errorf("output:\n%s\nwant:\n%s", f.out, want)
	}
	logged, err := os.ReadFile(filepath.Join(logDir, "envdump.log"))
	if err != nil || !strings.HasPrefix(string(logged), "path=envdump ") {
		t.Errorf("log file: %q, %v", logged, err)
	}
}

// T71: children get the config unresolved and unmasked.
func TestChildConfigIsUnresolvedAndUnmasked(t *testing.T) {
	f := newFixture(t)
	writeFile(t, filepath.Join(f.dir, "resources_servers/cfgdump/app.sh"), "#!/bin/sh\necho \"$NEMO_GYM_CONFIG_DICT\" | grep -E 'policy_api_key|key_ref'\n", 0o755)
	opts := f.options(t, serverYAML("cfgdump", "cfgdump", "app.sh", "key_ref: ${policy_api_key}"), "++dry_run=true", "+policy_api_key=sk-real")
	if _, err := Start(context.Background(), opts); err != nil {
		t.Fatalf("start: %v\n%s", err, f.out)
	}
	for _, want := range []string{"(cfgdump)       key_ref: ${policy_api_key}", "(cfgdump) policy_api_key: sk-real"} {
		if !strings.Contains(f.out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, f.out)
		}
	}
}

func TestPrefixColourIsStablePerInstance(t *testing.T) {
	var a, b strings.Builder
	pumpLines(strings.NewReader("x\n"), "policy_model", true, &syncWriter{w: &a}, &tail{max: 1}, nil, nil)
	pumpLines(strings.NewReader("x\n"), "policy_model", true, &syncWriter{w: &b}, &tail{max: 1}, nil, nil)
	if a.String() != b.String() || !strings.Contains(a.String(), "\x1b[") || !strings.HasSuffix(a.String(), " x\n") {
		t.Errorf("coloured lines %q and %q", a.String(), b.String())
	}
	var plain strings.Builder
	pumpLines(strings.NewReader("a\nno newline"), "m", false, &syncWriter{w: &plain}, &tail{max: 1}, nil, nil)
	if plain.String() != "(m) a\n(m) no newline\n" {
		t.Errorf("plain = %q", plain.String())
	}
}

func TestStopEscalatesToSIGKILL(t *testing.T) {
	f := newFixture(t)
	writeFile(t, filepath.Join(f.dir, "resources_servers/stubborn/app.sh"), "#!/bin/sh\ntrap '' TERM\necho started\nwhile true; do sleep 0.05; done\n", 0o755)
	opts := f.options(t, serverYAML("stubborn", "stubborn", "app.sh"))
	opts.Grace = 200 * time.Millisecond
	l := &Launch{opts: opts, out: &syncWriter{w: f.out}, crashed: make(chan *child, 1), stopping: make(chan struct{})}
	specs, err := plan(opts.Result, opts.Roots, os.LookupEnv, opts.Builtin, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.startChild(specs[0], config.Dump(opts.Result.Config), nil)
	if err != nil {
		t.Fatal(err)
	}
	l.children = append(l.children, c)
	for !strings.Contains(f.out.String(), "started") {
		time.Sleep(10 * time.Millisecond)
	}
	l.Stop()
	if !strings.Contains(f.out.String(), "Killed after 200ms without stopping: stubborn") {
		t.Errorf("output:\n%s", f.out)
	}
	if left := groupMembers(t, c.proc.pid); len(left) > 0 {
		t.Errorf("group still has %v", left)
	}
	if c.proc.exitState.Signal() != syscall.SIGKILL {
		t.Errorf("exit = %v", c.proc.exitDescription())
	}
}

// A descendant that leaves the group (a daemon) still holds the output
// pipe; stopping must not wait for it.
func TestStopDoesNotWaitForADaemonHoldingOutput(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	f := newFixture(t)
	writeFile(t, filepath.Join(f.dir, "resources_servers/daemonizing/app.sh"),
		"#!/bin/sh\nsetsid sleep 30 &\necho \"daemon $!\"\nexec sleep 30\n", 0o755)
	opts := f.options(t, serverYAML("d", "daemonizing", "app.sh"))
	l := &Launch{opts: opts, out: &syncWriter{w: f.out}, crashed: make(chan *child, 1), stopping: make(chan struct{})}
	specs, err := plan(opts.Result, opts.Roots, os.LookupEnv, opts.Builtin, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.startChild(specs[0], config.Dump(opts.Result.Config), nil)
	if err != nil {
		t.Fatal(err)
	}
	l.children = append(l.children, c)
	for !strings.Contains(f.out.String(), "daemon ") {
		time.Sleep(10 * time.Millisecond)
	}
	rest := f.out.String()[strings.Index(f.out.String(), "daemon ")+len("daemon "):]
	daemon, _ := strconv.Atoi(strings.Fields(rest)[0])
	t.Cleanup(func() { syscall.Kill(daemon, syscall.SIGKILL) })
	start := time.Now()
	l.Stop()
	if d := time.Since(start); d > opts.Grace+drainGrace+time.Second {
		t.Errorf("Stop took %s", d)
	}
}

// The head server answers as NeMo Gym's does byte for byte where it
// matters: no HTML escaping in either endpoint, and a dir_path for every
// server ("." for one with no directory).
func TestHeadServerBytes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	h, err := startHead(ln, "prompt: <a & b>\n", "run-token")
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	l := &Launch{children: []*child{{spec: ChildSpec{Instance: "m", ServerType: "responses_api_models", Implementation: "replay_model", Entrypoint: "app.py", Host: "127.0.0.1", Port: 1}, proc: &process{pid: 7}}}}
	h.setInstances(l.infos())
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	if resp, err := http.Get(base + "/readyz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz before ready: %v %v", resp, err)
	}
	h.ready.Store(true)
	for path, want := range map[string]string{
		"/global_config_dict_yaml": `"prompt: <a & b>\n"`,
		"/server_instances":        `"dir_path":"."`,
		"/livez":                   `{"status":"ok"}`,
		"/readyz":                  `{"status":"ok"}`,
		"/healthz":                 `{"status":"ok"}`,
		"/health":                  `{"status":"ok"}`,
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), want) {
			t.Errorf("%s = %s, want it to hold %s", path, body, want)
		}
	}
}

// The config carries the run's secrets: a client on this machine reads it
// as NeMo Gym's do, one from another machine only with the run's token.
func TestHeadServerConfigNeedsTheTokenFromAnotherMachine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h, err := startHead(ln, "policy_api_key: sk-secret\n", "run-token")
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	tests := []struct {
		name, peer, token string
		want              int
	}{
		{"loopback", "127.0.0.1:5000", "", http.StatusOK},
		{"remote with the token", "203.0.113.7:5000", "run-token", http.StatusOK},
		{"remote without a token", "203.0.113.7:5000", "", http.StatusUnauthorized},
		{"remote with another token", "203.0.113.7:5000", "guess", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/global_config_dict_yaml", nil)
			req.RemoteAddr = tt.peer
			if tt.token != "" {
				req.Header.Set(server.RunTokenHeader, tt.token)
			}
			rec := httptest.NewRecorder()
			h.srv.Handler.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
			if leaked := strings.Contains(rec.Body.String(), "sk-secret"); leaked != (tt.want == http.StatusOK) {
				t.Errorf("body %s", rec.Body)
			}
		})
	}
}

// Every child gets the run's token, never a second one inherited.
func TestChildEnvCarriesTheRunToken(t *testing.T) {
	l := &Launch{opts: Options{Environ: []string{server.RunTokenEnv + "=parent"}}, token: "this-run"}
	env := l.childEnv(ChildSpec{Instance: "m"}, "")
	var got []string
	for _, kv := range env {
		if strings.HasPrefix(kv, server.RunTokenEnv+"=") {
			got = append(got, kv)
		}
	}
	if len(got) != 1 || got[0] != server.RunTokenEnv+"=this-run" {
		t.Errorf("token entries %v", got)
	}
}

// A token given by the environment is the run's, so that the steps of one
// job on several machines share it; without one each run makes its own.
func TestRunTokenFromTheEnvironment(t *testing.T) {
	if tok, err := runToken([]string{"A=1", server.RunTokenEnv + "=shared"}); err != nil || tok != "shared" {
		t.Errorf("runToken = %q, %v", tok, err)
	}
	a, _ := runToken(nil)
	b, _ := runToken([]string{server.RunTokenEnv + "="})
	if len(a) != 64 || len(b) != 64 || a == b {
		t.Errorf("made tokens %q and %q", a, b)
	}
}

func TestSelfPrefixedLinesAreNotPrefixedTwice(t *testing.T) {
	var out strings.Builder
	tl := &tail{max: 2}
	pumpLines(strings.NewReader("(srv) INFO: started\nplain\n"), "srv", false, &syncWriter{w: &out}, tl, nil, nil)
	if want := "(srv) INFO: started\n(srv) plain\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	if got := tl.get(); got[0] != "INFO: started" {
		t.Errorf("tail = %q", got)
	}
}

func TestSpinupTimeout(t *testing.T) {
	f := newFixture(t)
	writeFile(t, filepath.Join(f.dir, "resources_servers/silent/app.sh"), "#!/bin/sh\nexec sleep 30\n", 0o755)
	opts := f.options(t, "server_spinup_timeout_seconds: 0.3\n"+serverYAML("quiet", "silent", "app.sh"))
	_, err := Start(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "timed out after 0.3s waiting for servers to become ready: quiet") || !strings.Contains(err.Error(), "++server_spinup_timeout_seconds") {
		t.Fatalf("err = %v", err)
	}
	opts = f.options(t, "server_spinup_timeout_seconds: soon\n"+serverYAML("quiet", "silent", "app.sh"))
	if _, err := Start(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "server_spinup_timeout_seconds must be a number of seconds (0 waits without a limit), got soon") {
		t.Fatalf("err = %v", err)
	}
}

func TestSweepRayTempDirsRemovesOnlyDeadOnes(t *testing.T) {
	tmp := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for name, pid := range map[string]int{"gym-ray-dead": dead.Process.Pid, "gym-ray-live": os.Getpid()} {
		writeFile(t, filepath.Join(tmp, name, rayOwnerFile), strconv.Itoa(pid), 0o644)
	}
	writeFile(t, filepath.Join(tmp, "gym-ray-foreign", "x"), "", 0o644)
	sweepRayTempDirs(tmp)
	for name, want := range map[string]bool{"gym-ray-dead": false, "gym-ray-live": true, "gym-ray-foreign": true} {
		if _, err := os.Stat(filepath.Join(tmp, name)); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", name, err == nil, want)
		}
	}
}

// A log file that cannot be written (a full disk, say) is said once, and
// the server's lines keep coming on the terminal.
func TestUnwritableLogFileWarnsOnce(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "srv.log"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	var out strings.Builder
	pumpLines(strings.NewReader("one\ntwo\n"), "srv", false, &syncWriter{w: &out}, &tail{max: 2}, f, nil)
	got := out.String()
	if strings.Count(got, "cannot write its log file") != 1 || !strings.Contains(got, "(srv) one\n") || !strings.Contains(got, "(srv) two\n") {
		t.Errorf("output:\n%s", got)
	}
}

// Children get uv's cache and lock timeout as NeMo Gym exports them; a
// null uv_lock_timeout_seconds exports nothing, so the inherited value stays.
func TestChildEnvCarriesUVSettings(t *testing.T) {
	f := newFixture(t)
	f.environ = append(f.environ, "UV_LOCK_TIMEOUT=77", "UV_CACHE_DIR=/inherited")
	for _, tc := range []struct {
		override string
		want     []string
	}{
		{"++uv_lock_timeout_seconds=900", []string{"UV_LOCK_TIMEOUT=900", "UV_CACHE_DIR=/c"}},
		{"++uv_lock_timeout_seconds=null", []string{"UV_LOCK_TIMEOUT=77", "UV_CACHE_DIR=/c"}},
	} {
		opts := f.options(t, serverYAML("quiet", "forking", "app.sh"), tc.override, "++uv_cache_dir=/c")
		settings, err := python.FromConfig(opts.Result.Value, opts.Cwd, opts.Environ, opts.LookPath)
		if err != nil {
			t.Fatal(err)
		}
		l := &Launch{opts: opts, python: settings}
		got := map[string]int{}
		for _, kv := range l.childEnv(ChildSpec{Instance: "quiet"}, "") {
			if strings.HasPrefix(kv, "UV_") {
				got[kv]++
			}
		}
		for _, w := range tc.want {
			if got[w] != 1 || len(got) != len(tc.want) {
				t.Errorf("%s: uv env %v, want exactly %v", tc.override, got, tc.want)
			}
		}
	}
}

// With skip_venv_if_present and every venv there, the venvs' own Python is
// the run's: no need to ask uv for one at each start.
func TestReusedPython(t *testing.T) {
	root := t.TempDir()
	settings := python.Defaults(root, nil, exec.LookPath)
	specs := []ChildSpec{{Dir: filepath.Join(root, "resources_servers/a")}, {Dir: filepath.Join(root, "resources_servers/b")}}
	venv := func(dir, version string) {
		v := settings.VenvFor(dir)
		writeFile(t, v.Python(), "", 0o755)
		writeFile(t, filepath.Join(v.Dir, "bin/activate"), "", 0o644)
		writeFile(t, filepath.Join(v.Dir, "pyvenv.cfg"), "version_info = "+version+"\n", 0o644)
	}
	venv(specs[0].Dir, "3.13.18")
	if got := reusedPython(&settings, specs); got != "" {
		t.Errorf("one venv missing: %q", got)
	}
	venv(specs[1].Dir, "3.14.1")
	if got := reusedPython(&settings, specs); got != "" {
		t.Errorf("two Pythons: %q", got)
	}
	venv(specs[1].Dir, "3.13.18")
	if got := reusedPython(&settings, specs); got != "3.13.18" {
		t.Errorf("got %q, want 3.13.18", got)
	}
}

// noBuiltins is a binary with no Go implementation registered.
func noBuiltins(string, *tree.Node) ([]string, bool) { return nil, false }
