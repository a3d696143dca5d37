package server

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"
)

// skipWhenProfiled skips a test that needs the process's CPU profiler
// when `go test -cpuprofile` holds it.
func skipWhenProfiled(t *testing.T) {
	t.Helper()
	if f := flag.Lookup("test.cpuprofile"); f != nil && f.Value.String() != "" {
		t.Skip("the test binary is being profiled itself")
	}
}

// startTestProfiler starts a profiler of the server "srv" in a temporary
// directory, printing to out.
func startTestProfiler(t *testing.T) (p *serverProfiler, dir string, out *bytes.Buffer) {
	t.Helper()
	skipWhenProfiled(t)
	dir, out = t.TempDir(), &bytes.Buffer{}
	p, err := startProfiling(dir, "srv", out)
	if err != nil {
		t.Fatal(err)
	}
	return p, dir, out
}

// profiledServer serves the echo handler profiled under dir until the test
// calls stop, which returns what the server printed and Serve's error.
func profiledServer(t *testing.T, dir string) (base string, stop func() (string, error)) {
	t.Helper()
	skipWhenProfiled(t)
	rt := testRuntime(io.Discard)
	rt.serving = serveSettings{profiling: true, profileDir: dir}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	out := newListenWatcher()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, rt, echoHandler(nil), out) }()
	return out.waitURL(t), func() (string, error) {
		cancel()
		select {
		case err := <-done:
			return out.String(), err
		case <-time.After(5 * time.Second):
			t.Fatal("Serve did not return after cancel")
			return "", nil
		}
	}
}

func call(t *testing.T, method, url string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// A profiled server writes a period's profile and the log of all so far at
// each GET /stats, and the last at shutdown; a relative directory is the
// server's own, said as an absolute path; a previous run's files go.
func TestServeWritesProfiles(t *testing.T) {
	t.Chdir(t.TempDir())
	dir, _ := filepath.Abs(filepath.Join("profiles", "EchoServer___echo_server"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"echo_server-3.pprof", "echo_server.log", "other-1.pprof", "echo_server-x.pprof", "echo_server-01.pprof"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base, stop := profiledServer(t, "profiles")

	for _, stale := range []string{"echo_server-3.pprof", "echo_server.log"} {
		if _, err := os.Stat(filepath.Join(dir, stale)); !os.IsNotExist(err) {
			t.Errorf("a previous run's %s is still there (%v)", stale, err)
		}
	}
	for _, kept := range []string{"other-1.pprof", "echo_server-x.pprof", "echo_server-01.pprof"} {
		if _, err := os.Stat(filepath.Join(dir, kept)); err != nil {
			t.Errorf("%s, not this server's, was removed: %v", kept, err)
		}
	}
	if status, _, body := call(t, http.MethodGet, base+"/quick"); status != 200 || body != "done" {
		t.Fatalf("GET /quick = %d %q: the component's routes must still be served", status, body)
	}
	if status, h, body := call(t, http.MethodGet, base+"/stats"); status != 200 || body != "" || h.Get("Content-Length") != "0" {
		t.Errorf("GET /stats = %d %q (Content-Length %q), want an empty 200", status, body, h.Get("Content-Length"))
	}
	for _, method := range []string{http.MethodPost, http.MethodHead} {
		status, h, _ := call(t, method, base+"/stats")
		if status != 405 || h.Get("Allow") != "GET" {
			t.Errorf("%s /stats = %d (Allow %q), want FastAPI's 405", method, status, h.Get("Allow"))
		}
	}
	assertProfile(t, filepath.Join(dir, "echo_server-1.pprof"))
	assertLog(t, filepath.Join(dir, "echo_server.log"))

	printed, err := stop()
	if err != nil {
		t.Fatalf("Serve = %v", err)
	}
	assertProfile(t, filepath.Join(dir, "echo_server-2.pprof"))
	assertLog(t, filepath.Join(dir, "echo_server.log"))
	for _, want := range []string{"🔍 Enabled profiling for echo_server\n", "🛑 Stopping profiler for echo_server. Check " + dir + " for the metrics!\n"} {
		if !strings.Contains(printed, want) {
			t.Errorf("stdout lacks %q:\n%s", want, printed)
		}
	}
}

// A directory gone mid-run is made again; one that cannot be made fails
// that GET /stats, which says whose profile was lost, and profiling goes on.
func TestProfilingSurvivesItsDirectoryGoing(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "EchoServer___echo_server")
	base, stop := profiledServer(t, root)

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if status, _, body := call(t, http.MethodGet, base+"/stats"); status != 200 {
		t.Fatalf("GET /stats with the directory gone = %d %q, want it made again", status, body)
	}
	assertProfile(t, filepath.Join(dir, "echo_server-1.pprof"))
	assertLog(t, filepath.Join(dir, "echo_server.log"))

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	status, _, body := call(t, http.MethodGet, base+"/stats")
	if status != 500 || !strings.Contains(body, "period 2's profile was not written: profiling_results_dirpath: ") {
		t.Errorf("GET /stats where the directory cannot be = %d %s", status, body)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if status, _, body := call(t, http.MethodGet, base+"/stats"); status != 200 {
		t.Fatalf("GET /stats once the directory can be made = %d %q", status, body)
	}
	if printed, err := stop(); err != nil {
		t.Fatalf("Serve = %v\n%s", err, printed)
	}
	for _, k := range []string{"3", "4"} {
		assertProfile(t, filepath.Join(dir, "echo_server-"+k+".pprof"))
	}
	assertLog(t, filepath.Join(dir, "echo_server.log"))
}

// A period that cannot start (another CPU profile holds the process's
// profiler) is tried again at the next GET /stats, and the gap is said as
// the server stops.
func TestProfilingAPeriodThatCannotStart(t *testing.T) {
	p, dir, out := startTestProfiler(t)
	if err := p.end(); err != nil {
		t.Fatal(err)
	}
	var other bytes.Buffer
	if err := pprof.StartCPUProfile(&other); err != nil {
		t.Fatal(err)
	}
	err := p.dump()
	pprof.StopCPUProfile()
	if err == nil || !strings.Contains(err.Error(), "another CPU profile is already running") || !strings.Contains(err.Error(), "runs unprofiled until the next GET /stats") {
		t.Fatalf("dump with the profiler taken = %v", err)
	}
	if _, err := startProfiling(t.TempDir(), "srv", io.Discard); err != nil {
		t.Fatalf("the profiler was left taken: %v", err)
	}
	pprof.StopCPUProfile()
	if err := p.dump(); err != nil {
		t.Fatalf("the next dump = %v", err)
	}
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Part of the run went unprofiled: profiling srv: another CPU profile is already running") {
		t.Errorf("the gap is not said at the end:\n%s", out.String())
	}
	assertProfile(t, filepath.Join(dir, "srv-2.pprof"))
}

//go:noinline
func burnFirst() uint64 { return burn() }

//go:noinline
func burnSecond() uint64 { return burn() }

// burn spends a fixed amount of CPU (some 100 ms), however busy the
// machine is.
func burn() uint64 {
	x := uint64(1)
	for i := range uint64(1e8) {
		x = x*6364136223846793005 + i
	}
	return x
}

// The log covers every period; after the server stops, GET /stats starts
// no profile that would never end.
func TestProfilerLogCoversTheWholeRun(t *testing.T) {
	p, dir, _ := startTestProfiler(t)
	sink := burnFirst()
	if err := p.dump(); err != nil {
		t.Fatal(err)
	}
	sink += burnSecond()
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.dump(); err == nil || !strings.Contains(err.Error(), "stopping") {
		t.Errorf("GET /stats after the stop = %v", err)
	}
	log, err := os.ReadFile(filepath.Join(dir, "srv.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{"server.burnFirst ", "server.burnSecond "} {
		if !strings.Contains(string(log), fn) {
			t.Errorf("the log lacks %s (sink %d):\n%s", fn, sink, log)
		}
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if want := []string{filepath.Join(dir, "srv-1.pprof"), filepath.Join(dir, "srv-2.pprof"), filepath.Join(dir, "srv.log")}; !slices.Equal(names, want) {
		t.Errorf("files %q, want %q", names, want)
	}
}

func assertProfile(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A pprof profile is gzipped protobuf.
	if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		t.Errorf("%s is not a profile: %q", path, data[:min(len(data), 16)])
	}
}

func assertLog(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "Clock type: CPU") || !strings.Contains(string(data), "\nname ") {
		t.Errorf("%s is not the table of CPU time:\n%s", path, data)
	}
}

func TestServeProfilingDirectoryUnusable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rt := testRuntime(io.Discard)
	rt.serving = serveSettings{profiling: true, profileDir: file}
	err := Serve(context.Background(), rt, echoHandler(nil), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "profiling_results_dirpath") || !strings.Contains(err.Error(), file) {
		t.Fatalf("Serve = %v, want an error naming profiling_results_dirpath and %s", err, file)
	}
}
