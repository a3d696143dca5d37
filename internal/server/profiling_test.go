package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/config"
)

func TestProfilingSettings(t *testing.T) {
	srv := "srv: {t: {i: {host: h, port: 1}}}\n"
	for _, tc := range []struct {
		name    string
		dict    string
		env     map[string]string
		want    string // ProfileDir
		wantErr []string
	}{
		{name: "off when absent", dict: srv},
		{name: "off when false, whatever the directory", dict: "profiling_enabled: false\nprofiling_results_dirpath: p\n" + srv},
		{name: "off when null", dict: "profiling_enabled: null\n" + srv},
		{name: "on, under the server's name", dict: "profiling_enabled: true\nprofiling_results_dirpath: results/profiles\n" + srv, want: "results/profiles/___srv"},
		{name: "pydantic's yes", dict: "profiling_enabled: 'yes'\nprofiling_results_dirpath: p\n" + srv, want: "p/___srv"},
		{name: "an absolute directory", dict: "profiling_enabled: 1\nprofiling_results_dirpath: /tmp/p\n" + srv, want: "/tmp/p/___srv"},
		{name: "an empty directory is the server's own", dict: "profiling_enabled: true\nprofiling_results_dirpath: ''\n" + srv, want: "___srv"},
		{
			name: "resolved in the server's environment",
			dict: "profiling_enabled: ${oc.env:PROF}\nprofiling_results_dirpath: ${oc.env:PROF_DIR}\n" + srv,
			env:  map[string]string{"PROF": "on", "PROF_DIR": "d"},
			want: "d/___srv",
		},
		{name: "no directory", dict: "profiling_enabled: true\n" + srv, wantErr: []string{"profiling_enabled is true but profiling_results_dirpath is not set"}},
		{name: "a null directory", dict: "profiling_enabled: true\nprofiling_results_dirpath: null\n" + srv, wantErr: []string{"profiling_results_dirpath is not set"}},
		{name: "not a bool", dict: "profiling_enabled: maybe\n" + srv, wantErr: []string{"profiling_enabled: Input should be a valid boolean", `"maybe"`}},
		{name: "not a string", dict: "profiling_enabled: true\nprofiling_results_dirpath: 5\n" + srv, wantErr: []string{"profiling_results_dirpath: Input should be a valid string", "5"}},
		{name: "an unset variable", dict: "profiling_enabled: ${oc.env:NOPE}\n" + srv, wantErr: []string{"NOPE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{config.ConfigDictEnv: tc.dict, config.ConfigPathEnv: "srv"}
			for k, v := range tc.env {
				env[k] = v
			}
			rt, err := fromEnv(envMap(env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			err = Serve(context.Background(), &Runtime{Instance: "srv", DryRun: true, profilingErr: rt.profilingErr}, nil, io.Discard)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error; ProfileDir %q", rt.ProfileDir)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("a dry run = %v", err)
			}
			if rt.ProfileDir != tc.want {
				t.Errorf("ProfileDir = %q, want %q", rt.ProfileDir, tc.want)
			}
		})
	}
}

// A profiled server writes a period's profile at each GET /stats and the
// last at shutdown, each a gzipped pprof file that `go tool pprof` reads.
func TestServeWritesProfiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "profiles", "EchoServer___echo_server")
	rt := testRuntime(io.Discard)
	rt.ProfileDir = dir
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := newListenWatcher()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, rt, echoHandler(nil), out) }()
	base := out.waitURL(t)

	get := func(method, path string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
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
	if status, _, body := get(http.MethodGet, "/quick"); status != 200 || body != "done" {
		t.Fatalf("GET /quick = %d %q: the component's routes must still be served", status, body)
	}
	if status, _, body := get(http.MethodGet, "/stats"); status != 200 || body != "" {
		t.Errorf("GET /stats = %d %q, want an empty 200", status, body)
	}
	if status, h, body := get(http.MethodPost, "/stats"); status != 405 || h.Get("Allow") != "GET" || body != `{"detail":"Method Not Allowed"}` {
		t.Errorf("POST /stats = %d (Allow %q) %q, want FastAPI's 405", status, h.Get("Allow"), body)
	}
	assertProfile(t, filepath.Join(dir, "echo_server-1.pprof"))
	if _, err := os.Stat(filepath.Join(dir, "echo_server-2.pprof")); err != nil {
		t.Errorf("the second period is not being written: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	assertProfile(t, filepath.Join(dir, "echo_server-2.pprof"))
	logged := out.String()
	for _, want := range []string{"🔍 Enabled profiling for echo_server\n", "🛑 Stopping profiler for echo_server. Check " + dir + " for the metrics!\n"} {
		if !strings.Contains(logged, want) {
			t.Errorf("stdout lacks %q:\n%s", want, logged)
		}
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

func TestServeProfilingDirectoryUnusable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rt := testRuntime(io.Discard)
	rt.ProfileDir = filepath.Join(file, "EchoServer___echo_server")
	err := Serve(context.Background(), rt, echoHandler(nil), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "profiling_results_dirpath") || !strings.Contains(err.Error(), file) {
		t.Fatalf("Serve = %v, want an error naming profiling_results_dirpath and %s", err, file)
	}
}
