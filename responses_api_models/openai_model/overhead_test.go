package openaimodel

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/server"
)

var (
	overheadGym      = flag.String("overhead.gym", "", "TestOverhead: the gym binary to measure (bench/model_overhead.sh builds one)")
	overheadBaseGym  = flag.String("overhead.base-gym", "", "TestOverhead: a second gym binary (an older commit) measured beside it, as gym-base")
	overheadNginx    = flag.String("overhead.nginx", "", "TestOverhead: an nginx binary run as a plain reverse proxy beside gym")
	overheadDuration = flag.Duration("overhead.duration", 3*time.Second, "TestOverhead: how long each target takes the 256 clients, per round")
	overheadRounds   = flag.Int("overhead.rounds", 3, "TestOverhead: rounds over all targets, in turn")
	overheadLatN     = flag.Int("overhead.latency-n", 3000, "TestOverhead: requests per target one at a time")
	overheadClients  = flag.Int("overhead.clients", 256, "TestOverhead: concurrent clients of the throughput rounds")
	overheadGymEnv   = flag.String("overhead.gym-env", "", "TestOverhead: space-separated NAME=value settings for the gym processes only (GOGC=400, say)")
	overheadProfile  = flag.String("overhead.cpuprofile", "", "TestOverhead: run this package's own openai_model server (the code of `gym serve`) in place of -overhead.gym's, writing its CPU profile here")
)

// roleEnv makes the test binary, re-executed, serve one part of
// TestOverhead in a process of its own instead of running tests.
const roleEnv = "GYM_OVERHEAD_ROLE"

// overheadTarget is one way to the upstream, and the processes whose CPU
// time it costs (none for direct).
type overheadTarget struct {
	name   string
	url    string // POST here
	pids   func() []int
	client *http.Client
}

// TestOverhead measures what a proxy in front of an instant upstream costs,
// each proxy a process of its own as in a deployment: the upstream, gym's
// openai_model (`gym serve`), the floor of gym's own HTTP stack under it
// (floorProxy), the floor of any net/http hop (a bare
// httputil.ReverseProxy) and, when given, nginx as a plain keep-alive
// reverse proxy. It reports, per target, p50 and p99 latency one request at
// a time (in turn across targets) and what each adds over direct; then
// throughput at -overhead.clients concurrent clients, in rounds with the
// targets in turn, as req/s, the ratio to direct in the same round, and
// the proxy process's CPU time (utime+stime from /proc, every thread, and
// every nginx worker) per request, and how much of it was the kernel's
// (stime): the system calls and, on loopback, the network stack they run.
// The clients run in this process, so on a small machine they compete
// with the proxy as a real agent would.
func TestOverhead(t *testing.T) {
	if *overheadGym == "" && *overheadProfile == "" {
		t.Skip("run by bench/model_overhead.sh (set -overhead.gym to a gym binary)")
	}
	dir := t.TempDir()
	upAddr, _ := startRole(t, "upstream", nil)
	upstream := "http://" + upAddr
	targets := []*overheadTarget{{name: "direct", url: upstream + "/v1/responses"}}
	gymPath := "/ng-rollout/1-0/v1/responses" // as an agent calls it
	if *overheadBaseGym != "" {
		addr, pid := startGymProcess(t, *overheadBaseGym, upstream, "")
		targets = append(targets, &overheadTarget{name: "gym-base", url: "http://" + addr + gymPath, pids: fixed(pid)})
	}
	if *overheadProfile != "" {
		addr, pid := startGymProcess(t, "", upstream, *overheadProfile)
		targets = append(targets, &overheadTarget{name: "gym(test binary)", url: "http://" + addr + gymPath, pids: fixed(pid)})
	} else {
		addr, pid := startGymProcess(t, *overheadGym, upstream, "")
		targets = append(targets, &overheadTarget{name: "gym", url: "http://" + addr + gymPath, pids: fixed(pid)})
	}
	floorAddr, floorPid := startRole(t, "gym-floor", []string{"GYM_OVERHEAD_UPSTREAM=" + upstream})
	targets = append(targets, &overheadTarget{name: "gym-floor", url: "http://" + floorAddr + "/v1/responses", pids: fixed(floorPid)})
	bareAddr, barePid := startRole(t, "bare", []string{"GYM_OVERHEAD_UPSTREAM=" + upstream})
	targets = append(targets, &overheadTarget{name: "bare-proxy", url: "http://" + bareAddr + "/v1/responses", pids: fixed(barePid)})
	if *overheadNginx != "" {
		addr, pids := startNginx(t, *overheadNginx, dir, upAddr)
		targets = append(targets, &overheadTarget{name: "nginx", url: "http://" + addr + "/v1/responses", pids: pids})
	}
	for _, tg := range targets {
		tg.client = benchClient(*overheadClients)
		if err := call(tg.client, tg.url); err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
	}

	// One request at a time, the targets in turn, so drift in the
	// machine's load spreads over all of them alike.
	lat := make([][]time.Duration, len(targets))
	cpu0 := make([]cpuTimes, len(targets))
	for i, tg := range targets {
		cpu0[i] = cpuOf(tg.pids)
	}
	for range *overheadLatN {
		for i, tg := range targets {
			t0 := time.Now()
			if err := call(tg.client, tg.url); err != nil {
				t.Fatalf("%s: %v", tg.name, err)
			}
			lat[i] = append(lat[i], time.Since(t0))
		}
	}
	fmt.Println("CPU µs/req: the proxy process's user+system time (/proc/<pid>/stat, every thread; nginx's master and workers) over the requests it served; sys: the system time alone")
	fmt.Printf("one client, %d requests per target, in turn:\n", *overheadLatN)
	fmt.Printf("  %-18s %9s %9s %11s %11s %12s %12s\n", "target", "p50 µs", "p99 µs", "+p50 µs", "+p99 µs", "CPU µs/req", "sys µs/req")
	dp50, dp99 := percentiles(lat[0])
	for i, tg := range targets {
		p50, p99 := percentiles(lat[i])
		cpu, sys := "-", "-"
		if tg.pids != nil {
			used := cpuOf(tg.pids).since(cpu0[i])
			cpu = fmt.Sprintf("%.1f", us(used.total())/float64(*overheadLatN))
			sys = fmt.Sprintf("%.1f", us(used.system)/float64(*overheadLatN))
		}
		fmt.Printf("  %-18s %9.1f %9.1f %+11.1f %+11.1f %12s %12s\n", tg.name, us(p50), us(p99), us(p50-dp50), us(p99-dp99), cpu, sys)
	}

	if *overheadRounds <= 0 {
		return
	}
	// Throughput: rounds over the targets in turn, the order rotating so
	// that none always follows the same one.
	type sample struct{ rps, ratio, cpu, sys float64 }
	samples := make([][]sample, len(targets))
	for round := range *overheadRounds {
		rps := make([]float64, len(targets))
		cpu, sys := make([]float64, len(targets)), make([]float64, len(targets))
		for k := range targets {
			i := (k + round) % len(targets)
			n, d, c, err := load(targets[i], *overheadClients, *overheadDuration)
			if err != nil {
				t.Fatalf("%s: %v", targets[i].name, err)
			}
			rps[i] = float64(n) / d.Seconds()
			cpu[i], sys[i] = us(c.total())/float64(n), us(c.system)/float64(n)
		}
		for i := range targets {
			samples[i] = append(samples[i], sample{rps[i], rps[i] / rps[0], cpu[i], sys[i]})
		}
	}
	fmt.Printf("%d clients, %d rounds of %v per target (median [min-max]):\n", *overheadClients, *overheadRounds, *overheadDuration)
	fmt.Printf("  %-18s %22s %22s %22s %22s\n", "target", "req/s", "of direct", "CPU µs/req", "sys µs/req")
	for i, tg := range targets {
		pick := func(f func(sample) float64) string {
			v := make([]float64, len(samples[i]))
			for j, s := range samples[i] {
				v[j] = f(s)
			}
			slices.Sort(v)
			return fmt.Sprintf("%.4g [%.4g-%.4g]", v[len(v)/2], v[0], v[len(v)-1])
		}
		cpu, sys := "-", "-"
		if tg.pids != nil {
			cpu, sys = pick(func(s sample) float64 { return s.cpu }), pick(func(s sample) float64 { return s.sys })
		}
		fmt.Printf("  %-18s %22s %22s %22s %22s\n", tg.name, pick(func(s sample) float64 { return s.rps }), pick(func(s sample) float64 { return s.ratio }), cpu, sys)
	}
}

// load runs clients against tg for d and returns the requests completed,
// the time taken and the CPU time tg's processes spent meanwhile.
func load(tg *overheadTarget, clients int, d time.Duration) (int64, time.Duration, cpuTimes, error) {
	var n atomic.Int64
	var stop atomic.Bool
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	cpu0 := cpuOf(tg.pids)
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for !stop.Load() {
				if err := call(tg.client, tg.url); err != nil {
					once.Do(func() { firstErr = err })
					stop.Store(true)
					return
				}
				n.Add(1)
			}
		})
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	return n.Load(), time.Since(start), cpuOf(tg.pids).since(cpu0), firstErr
}

// clockTick is USER_HZ, which Linux fixes at 100 for /proc's tick counts.
const clockTick = 10 * time.Millisecond

// cpuTimes is CPU time spent in user space and in the kernel.
type cpuTimes struct{ user, system time.Duration }

func (c cpuTimes) total() time.Duration { return c.user + c.system }

func (c cpuTimes) since(before cpuTimes) cpuTimes {
	return cpuTimes{c.user - before.user, c.system - before.system}
}

// cpuOf is the CPU time (all threads) the processes have used so far.
func cpuOf(pids func() []int) cpuTimes {
	var total cpuTimes
	if pids == nil {
		return total
	}
	for _, pid := range pids() {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command name, which is in parentheses and may
		// hold spaces: state is the first, utime the 12th, stime the 13th.
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		total.user += time.Duration(utime) * clockTick
		total.system += time.Duration(stime) * clockTick
	}
	return total
}

func fixed(pid int) func() []int { return func() []int { return []int{pid} } }

// startRole re-executes the test binary as one of TestOverheadRole's
// servers and returns its address and pid.
func startRole(t *testing.T, role string, env []string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOverheadRole$")
	cmd.Env = append(append(os.Environ(), roleEnv+"="+role), env...)
	return startServer(t, cmd, "listening on ")
}

// startGymProcess starts a gym binary's `gym serve` of openai_model in
// front of upstream (or, with gym "", this test binary serving the same
// code with a CPU profile written to profile).
func startGymProcess(t *testing.T, gym, upstream, profile string) (string, int) {
	t.Helper()
	port := freePort(t)
	config := fmt.Sprintf("policy_model:\n  responses_api_models:\n    openai_model:\n      entrypoint: app.py\n      host: 127.0.0.1\n      port: %d\n"+
		"      openai_base_url: %s/v1\n      openai_api_key: sk-bench\n      openai_model: served-model\n", port, upstream)
	env := append([]string{"NEMO_GYM_CONFIG_DICT=" + config, "NEMO_GYM_CONFIG_PATH=policy_model"}, strings.Fields(*overheadGymEnv)...)
	var cmd *exec.Cmd
	if gym != "" {
		cmd = exec.Command(gym, "serve")
		cmd.Env = append(os.Environ(), env...)
	} else {
		cmd = exec.Command(os.Args[0], "-test.run=^TestOverheadRole$")
		cmd.Env = append(append(os.Environ(), roleEnv+"=gym", "GYM_OVERHEAD_CPUPROFILE="+profile), env...)
	}
	_, pid := startServer(t, cmd, "listening on ")
	return "127.0.0.1:" + strconv.Itoa(port), pid
}

// startServer starts cmd, waits for the line that says it listens, and
// returns what follows ready on it; the process is interrupted and waited
// for at cleanup.
func startServer(t *testing.T, cmd *exec.Cmd, ready string) (string, int) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), ready); ok {
			go io.Copy(io.Discard, out)
			return strings.TrimPrefix(strings.Fields(rest)[0], "http://"), cmd.Process.Pid
		}
	}
	t.Fatalf("%s exited before listening", cmd.Path)
	return "", 0
}

// startNginx runs nginx as a plain reverse proxy in front of upstream:
// keep-alive connections both ways, no access log, its own defaults
// otherwise (a worker per CPU, buffering on).
func startNginx(t *testing.T, nginx, dir, upstream string) (string, func() []int) {
	t.Helper()
	port := freePort(t)
	prefix := filepath.Join(dir, "nginx")
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`worker_processes auto;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  keepalive_requests 1000000;
  upstream model { server %[2]s; keepalive 1024; keepalive_requests 1000000; }
  server {
    listen 127.0.0.1:%[3]d;
    location / {
      proxy_pass http://model;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`, prefix, upstream, port)
	confFile := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginx, "-p", prefix, "-e", prefix+"/error.log", "-c", confFile, "-g", "daemon off;")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(prefix + "/error.log")
			t.Fatalf("nginx is not listening on %s after 10 s: %s", addr, log)
		}
	}
	master := cmd.Process.Pid
	return addr, func() []int { return append(childrenOf(master), master) }
}

// childrenOf lists the processes whose parent is pid (nginx's workers).
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, p)
		}
	}
	return kids
}

// TestOverheadRole is not a test: TestOverhead runs the test binary with
// roleEnv set to serve one of its processes — the instant upstream, the
// floor proxy on gym's stack, the bare reverse proxy, or (with a CPU
// profile) gym's openai_model server exactly as `gym serve` runs it —
// until interrupted.
func TestOverheadRole(t *testing.T) {
	role := os.Getenv(roleEnv)
	if role == "" {
		t.Skip("a server process of TestOverhead")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if role == "gym" {
		if path := os.Getenv("GYM_OVERHEAD_CPUPROFILE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
		if err := server.Main(ctx, os.LookupEnv, os.Stdout); err != nil {
			t.Fatal(err)
		}
		return
	}
	if role == "gym-floor" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%s listening on http://%s\n", role, ln.Addr())
		if err := server.ServeBare(ctx, ln, floorProxy(os.Getenv("GYM_OVERHEAD_UPSTREAM")+"/v1/responses")); err != nil {
			t.Fatal(err)
		}
		return
	}
	var h http.Handler
	switch role {
	case "upstream":
		answer := []byte(responsesAnswer)
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Write(answer)
		})
	case "bare":
		target, err := url.Parse(os.Getenv("GYM_OVERHEAD_UPSTREAM"))
		if err != nil {
			t.Fatal(err)
		}
		rp := httputil.NewSingleHostReverseProxy(target)
		rp.Transport = &http.Transport{MaxIdleConnsPerHost: 1024}
		h = rp
	default:
		t.Fatalf("unknown %s %q", roleEnv, role)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	fmt.Printf("%s listening on http://%s\n", role, ln.Addr())
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	srv.Serve(ln)
}

// floorProxy is the least a Go proxy on gym's own HTTP stack does: each
// request's body read whole and posted to upstream over gym's plain-http
// transport, the answer read whole and sent back. Served by
// server.ServeBare, it is the floor under openai_model: the same loopback
// exchanges without the model server's work (the body's checks and
// edits, sessions, timeouts and retries, the reasoning fix).
func floorProxy(upstream string) http.Handler {
	var d net.Dialer
	transport := server.PlainHTTPTransport(d.DialContext, 0, 0, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := server.ReadAll(r.Body, r.ContentLength)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, upstream, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := transport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		answer, err := server.ReadAll(resp.Body, resp.ContentLength)
		resp.Body.Close()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		w.WriteHeader(resp.StatusCode)
		w.Write(answer)
	})
}
