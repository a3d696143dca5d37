package gymserver

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/server"
)

func testRuntime(t *testing.T, global string) *Runtime {
	t.Helper()
	g, err := pyyaml.Load([]byte(global), "global.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return &Runtime{rt: &server.Runtime{
		Instance: "my_agent", ServerType: "responses_api_agents", Implementation: "my_agent", ClassName: "MyAgent",
		Global: g, Config: tree.NewMap(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}}
}

const models = `
policy_model:
  responses_api_models:
    openai_model: {host: 127.0.0.1, port: 9001}
`

// Seed 001's helpers: with correlation on, a run's calls go under its
// rollout prefix; with it off, nothing changes.
func TestAgentCorrelation(t *testing.T) {
	run := []byte(`{"_ng_task_index": 3, "_ng_rollout_index": 1, "_ng_attempt_index": 2}`)
	for _, tc := range []struct {
		name, global                          string
		id, path, base, model, modelNoRollout string
	}{
		{"on", "rollout_correlation: true\n" + models, "3-1-a2", "/ng-rollout/3-1-a2/v1/responses",
			"http://host:1/ng-rollout/3-1-a2", "http://127.0.0.1:9001/ng-rollout/3-1-a2/v1", "http://127.0.0.1:9001/v1"},
		{"off", models, "", "/v1/responses", "http://host:1/", "http://127.0.0.1:9001/ng-rollout/3-1-a2/v1", "http://127.0.0.1:9001/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := NewAgent(testRuntime(t, tc.global))
			if err != nil {
				t.Fatal(err)
			}
			if id, err := a.RolloutIDFromRun(run); err != nil || id != tc.id {
				t.Errorf("RolloutIDFromRun = %q, %v; want %q", id, err, tc.id)
			}
			if p, err := a.URLPathForRun("/v1/responses", run); err != nil || p != tc.path {
				t.Errorf("URLPathForRun = %q, %v; want %q", p, err, tc.path)
			}
			if b, err := a.BaseURLForRun("http://host:1/", run); err != nil || b != tc.base {
				t.Errorf("BaseURLForRun = %q, %v; want %q", b, err, tc.base)
			}
			// An explicit rollout id is used whether correlation is on or not.
			if u, err := a.ResolveModelBaseURL("policy_model", "3-1-a2"); err != nil || u != tc.model {
				t.Errorf("ResolveModelBaseURL = %q, %v; want %q", u, err, tc.model)
			}
			if u, err := a.ResolveModelBaseURL("policy_model", ""); err != nil || u != tc.modelNoRollout {
				t.Errorf("ResolveModelBaseURL without a rollout = %q, %v; want %q", u, err, tc.modelNoRollout)
			}
		})
	}
	a, _ := NewAgent(testRuntime(t, "rollout_correlation: true\n"+models))
	if _, err := a.RolloutIDFromRun([]byte(`{"_ng_rollout_id": "a/b"}`)); err == nil {
		t.Error("a rollout id that cannot name a path was accepted")
	}
	if _, err := a.ResolveModelBaseURL("nope", ""); err == nil {
		t.Error("an unknown model server resolved")
	}
}

// URLPathForRequest carries the prefix a self-call arrived under onto the
// model call made while serving it.
func TestURLPathForRequest(t *testing.T) {
	rt := testRuntime(t, models)
	var got []string
	h := server.Wrap(rt.rt, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, URLPathForRequest("/v1/responses", r))
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, p := range []string{"/ng-rollout/7-0/v1/responses", "/v1/responses"} {
		resp, err := http.Post(srv.URL+p, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(got) != 2 || got[0] != "/ng-rollout/7-0/v1/responses" || got[1] != "/v1/responses" {
		t.Errorf("got %q", got)
	}
}

func TestRuntimeConfig(t *testing.T) {
	rt := testRuntime(t, models)
	rt.rt.Config, _ = pyyaml.Load([]byte("name: my_agent\nthreshold: 0.5\nretries: 3\nstrict: true\nmode: fast\n"), "c.yaml")
	c := rt.Config()
	if f, err := c.Float("threshold", 0); err != nil || f != 0.5 {
		t.Errorf("Float = %v, %v", f, err)
	}
	if n, err := c.Int("retries", 1, 0); err != nil || n != 3 {
		t.Errorf("Int = %v, %v", n, err)
	}
	if b, err := c.Bool("strict", false); err != nil || !b {
		t.Errorf("Bool = %v, %v", b, err)
	}
	if s, err := c.String("mode"); err != nil || s != "fast" {
		t.Errorf("String = %v, %v", s, err)
	}
	if _, err := c.Int("mode", 0, 0); err == nil {
		t.Error("a string read as an int")
	}
	if u, err := rt.ServerURL("policy_model"); err != nil || u != "http://127.0.0.1:9001" {
		t.Errorf("ServerURL = %q, %v", u, err)
	}
	if rt.Instance() != "my_agent" || rt.Implementation() != "my_agent" {
		t.Errorf("%s %s", rt.Instance(), rt.Implementation())
	}
}

func TestServeNeedsGymsEnvironment(t *testing.T) {
	t.Setenv("NEMO_GYM_CONFIG_DICT", "")
	err := Serve(t.Context(), "X", func(*Runtime) (http.Handler, error) { return http.NotFoundHandler(), nil })
	if err == nil || !strings.Contains(err.Error(), "start servers with `gym env start`") {
		t.Errorf("err = %v", err)
	}
}

func TestSessions(t *testing.T) {
	var s Sessions[int]
	if _, ok := s.Get("a"); ok {
		t.Error("an empty store has a session")
	}
	s.Set("a", 1)
	if v := s.Update("a", func(v int, ok bool) int { return v + 1 }); v != 2 {
		t.Errorf("Update = %d", v)
	}
	s.Delete("a")
	if _, ok := s.Get("a"); ok {
		t.Error("a deleted session remains")
	}
}

// A component outside gym's registry names its profile's directory with
// the class it gives Serve, as NeMo Gym's <Class>___<instance>.
func TestServeProfilesUnderItsClassName(t *testing.T) {
	if f := flag.Lookup("test.cpuprofile"); f != nil && f.Value.String() != "" {
		t.Skip("the test binary is being profiled itself")
	}
	dir := t.TempDir()
	t.Setenv("NEMO_GYM_CONFIG_DICT", "profiling_enabled: true\nprofiling_results_dirpath: "+dir+"\nmy_rs: {resources_servers: {my_rs: {host: 127.0.0.1, port: 0}}}\n")
	t.Setenv("NEMO_GYM_CONFIG_PATH", "my_rs")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, "MyResourcesServer", func(*Runtime) (http.Handler, error) { return http.NotFoundHandler(), nil })
	}()
	// The directory is made as the server starts, the profile as it ends.
	profiles := filepath.Join(dir, "MyResourcesServer___my_rs")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(profiles); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no %s after 5 s (Serve: %v)", profiles, <-done)
		}
	}
	profile := filepath.Join(profiles, "my_rs-1.pprof")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(profile); err != nil || len(data) == 0 {
		t.Errorf("the profile was not written: %d bytes, %v", len(data), err)
	}
}
