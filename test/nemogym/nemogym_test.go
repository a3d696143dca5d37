package nemogym

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startTimeout covers building two venvs from a warm uv cache, Ray, and
// the servers' own start.
const startTimeout = 6 * time.Minute

// nemoGymServers names NeMo Gym's Python example_single_tool_call resources
// server and its Python simple_agent, with gym's Go model server as the
// policy (--model-type replay_model answers from the recordings NeMo Gym
// ships with the server).
const nemoGymServers = `example_single_tool_call:
  resources_servers:
    example_single_tool_call:
      entrypoint: app.py
      domain: agent
      verified: false
example_single_tool_call_simple_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server:
        type: resources_servers
        name: example_single_tool_call
      model_server:
        type: responses_api_models
        name: policy_model
`

func firstRow(t *testing.T, h *harness) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.work, "resources_servers/example_single_tool_call/data/example.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitN(string(data), "\n", 2)[0]
}

// (1) NeMo Gym's Python servers under `gym env start`, beside a Go model
// server: venvs built as NeMo Gym builds them (nemo-gym from the index, as
// this is not a checkout), one Ray head, a full /run scored.
func TestNeMoGymPythonServersUnderGym(t *testing.T) {
	h := newHarness(t)
	h.copyShipped("resources_servers/example_single_tool_call")
	h.copyShipped("responses_api_agents/simple_agent")
	h.write("servers.yaml", nemoGymServers, 0o644)
	head := freePort(t)
	start := h.start(context.Background(), h.gym+" env start --config servers.yaml --model-type replay_model ++uv_cache_dir=/var/cache/uv ++head_server.port="+strconv.Itoa(head))
	start.waitFor(t, "All 3 / 3 servers ready", startTimeout)
	out := start.output()

	for _, want := range []string{
		"(example_single_tool_call) Using CPython 3.13",
		"(ray_head) ",
		"(example_single_tool_call) INFO:     Uvicorn running on",
		"responses_api_agents/simple_agent (python)",
		"responses_api_models/replay_model (go)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if regexp.MustCompile(`\((\w+)\) \(\w+\) `).MatchString(out) {
		t.Errorf("a line is prefixed twice:\n%s", out)
	}
	for _, rel := range []string{"resources_servers/example_single_tool_call", "responses_api_agents/simple_agent"} {
		venv := filepath.Join(h.work, rel, ".venv")
		if _, err := os.Stat(filepath.Join(venv, ".nemo-gym-setup-complete")); err != nil {
			t.Errorf("%s was not made (or not finished) as NeMo Gym makes it: %v", venv, err)
		}
		pins, _ := filepath.Glob(filepath.Join(venv, "lib/python3.13/site-packages/nemo_gym-0.7.0.dist-info"))
		rays, _ := filepath.Glob(filepath.Join(venv, "lib/python3.13/site-packages/ray-2.60.0.dist-info"))
		if len(pins) != 1 || len(rays) != 1 {
			t.Errorf("%s lacks nemo-gym 0.7.0 from the index or the pinned ray 2.60.0", venv)
		}
	}

	instances := serverInstances(t, head)
	for _, in := range instances {
		if in.DirPath == "" {
			t.Errorf("/server_instances gives %s no dir_path", in.ProcessName)
		}
	}
	if reward := postRun(t, urlOf(t, instances, "example_single_tool_call_simple_agent"), firstRow(t, h)); reward != 1 {
		t.Errorf("reward = %v, want 1 (NeMo Gym's verifier rewards the get_weather call)", reward)
	}
	if code := start.stop(t, syscall.SIGINT); code != 0 {
		t.Errorf("env start exited %d after SIGINT:\n%s", code, start.output())
	}
	h.assertNothingLeft(t, 10*time.Second)
}
