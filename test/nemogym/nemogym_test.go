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
	if twice := regexp.MustCompile(`(?m)^\((\w+)\) \((\w+)\) `).FindAllStringSubmatch(out, -1); slicesContainSame(twice) {
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

// rayProbe is a NeMo Gym resources server that declares it uses Ray: at
// start it joins the cluster named in its config (NeMo Gym's
// initialize_ray) and runs one Ray task.
const rayProbe = `import ray
from nemo_gym.base_resources_server import BaseResourcesServerConfig, BaseVerifyRequest, BaseVerifyResponse, SimpleResourcesServer


@ray.remote
def square(x):
    return x * x


class RayProbeConfig(BaseResourcesServerConfig):
    pass


class RayProbe(SimpleResourcesServer):
    ray_enabled = True
    config: RayProbeConfig

    def setup_webserver(self):
        app = super().setup_webserver()
        print("ray task gave", ray.get(square.remote(7)), "on", ray.get_runtime_context().gcs_address, flush=True)
        return app

    async def verify(self, body: BaseVerifyRequest) -> BaseVerifyResponse:
        return BaseVerifyResponse(**body.model_dump(), reward=1.0)


if __name__ == "__main__":
    RayProbe.run_webserver()
`

const rayProbes = `probe_a:
  resources_servers:
    ray_probe: {entrypoint: app.py, domain: other}
probe_b:
  resources_servers:
    ray_probe: {entrypoint: app.py, domain: other}
`

// (4) One Ray head shared by two Python servers, and nothing of Ray left
// after SIGINT and after SIGKILL of gym.
func TestOneRayHeadSharedAndNothingLeft(t *testing.T) {
	h := newHarness(t)
	h.write("resources_servers/ray_probe/app.py", rayProbe, 0o644)
	h.write("resources_servers/ray_probe/requirements.txt", "-e nemo-gym[dev] @ ../../\n", 0o644)
	h.write("servers.yaml", rayProbes, 0o644)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			head := freePort(t)
			start := h.start(context.Background(), h.gym+" env start --config servers.yaml ++uv_cache_dir=/var/cache/uv ++skip_venv_if_present=true ++head_server.port="+strconv.Itoa(head))
			start.waitFor(t, "All 2 / 2 servers ready", startTimeout)
			out := start.output()
			gave := regexp.MustCompile(`\((probe_[ab])\) ray task gave 49 on (\S+)`).FindAllStringSubmatch(out, -1)
			if len(gave) != 2 || gave[0][2] != gave[1][2] {
				t.Fatalf("want both probes to run a Ray task on one cluster, got %q:\n%s", gave, out)
			}
			if !strings.Contains(out, "Connecting to Ray cluster at specified address: "+gave[0][2]) {
				t.Errorf("the probes did not join the cluster named in their config:\n%s", out)
			}
			if strings.Contains(out, "Token authentication is disabled") {
				t.Errorf("the run's Ray cluster is open to anyone who reaches it:\n%s", out)
			}
			if heads := rootProcesses(h.root, "gcs_server"); len(heads) != 1 {
				t.Errorf("want one GCS, found %q", heads)
			}
			code := start.stop(t, sig)
			if sig == syscall.SIGINT && code != 0 {
				t.Errorf("exit %d after SIGINT", code)
			}
			h.assertNothingLeft(t, 20*time.Second)
		})
	}
}

// legacyFront is NeMo Gym 0.7.0's relay environment server in front of an
// agent: its rollout collection reaches agents only through one.
const legacyFront = `example_single_tool_call_environment_server:
  environment_servers:
    legacy_agent:
      entrypoint: app.py
      agent_server:
        type: responses_api_agents
        name: example_single_tool_call_simple_agent
      max_concurrent_episodes: null
      queue_timeout_seconds: null
      default_episode_timeout_seconds: 21600
      cleanup_timeout_seconds: 180
`

// profileReads checks that a tool's eval profile reads the other tool's
// rollouts: it must succeed and find the run's mean reward of 0.6 (the 3 of
// 5 replayed answers that call get_weather).
func profileReads(t *testing.T, h *harness, command, stem string) {
	t.Helper()
	out, err := h.run(context.Background(), command+" eval profile --inputs "+stem+"_materialized_inputs.jsonl --rollouts "+stem+".jsonl")
	if err != nil {
		t.Fatalf("%s eval profile on %s: %v\n%s", command, stem, err, out)
	}
	metrics, err := os.ReadFile(filepath.Join(h.work, stem+"_agent_metrics.json"))
	if err != nil || !regexp.MustCompile(`"mean/reward":\s*0\.6\b`).Match(metrics) {
		t.Errorf("%s eval profile on %s wrote %s (%v)", command, stem, metrics, err)
	}
}

// (2) gym's Go servers collected by NeMo Gym's own CLI (through NeMo Gym's
// Python relay environment server, which gym starts beside them), and (the
// files) each tool's profile reads the other's rollouts.
func TestNeMoGymCollectsFromGymServers(t *testing.T) {
	h := newHarness(t)
	h.copyShipped("environment_servers/legacy_agent")
	h.copyShipped("resources_servers/example_single_tool_call/data")
	h.write("front.yaml", legacyFront, 0o644)
	head := strconv.Itoa(freePort(t))
	start := h.start(context.Background(), h.gym+" env start --resources-server example_single_tool_call --model-type replay_model --config front.yaml ++uv_cache_dir=/var/cache/uv ++head_server.port="+head)
	start.waitFor(t, "All 4 / 4 servers ready", startTimeout)
	data := "resources_servers/example_single_tool_call/data/example.jsonl"

	out, err := h.run(context.Background(), "ng eval run --no-serve -a example_single_tool_call_simple_agent -i "+data+" -o ng.jsonl ++head_server.port="+head)
	if err != nil {
		t.Fatalf("NeMo Gym's eval run --no-serve: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`"mean/reward": 0\.6\b`).MatchString(out) {
		t.Errorf("NeMo Gym's collection did not score 0.6 (3 of 5 answers call get_weather):\n%s", out)
	}
	out, err = h.run(context.Background(), h.gym+" eval run --no-serve -a example_single_tool_call_simple_agent -i "+data+" -o gym.jsonl ++head_server.port="+head)
	if err != nil {
		t.Fatalf("gym eval run --no-serve: %v\n%s", err, out)
	}
	if code := start.stop(t, syscall.SIGINT); code != 0 {
		t.Errorf("env start exited %d", code)
	}
	profileReads(t, h, h.gym, "ng")
	profileReads(t, h, "ng", "gym")
	h.assertNothingLeft(t, 10*time.Second)
}

// (3) Servers started by NeMo Gym's own `env start` (its Python resources
// server, agent and openai_model, the model pointed at gym's Go replay
// model as its upstream) collected by `gym eval run --no-serve`.
func TestGymCollectsFromNeMoGymServers(t *testing.T) {
	h := newHarness(t)
	model, ng, head := h.startNeMoGymServers(t, "")

	h.copyShipped("resources_servers/example_single_tool_call/data")
	data := "resources_servers/example_single_tool_call/data/example.jsonl"
	out, err := h.run(context.Background(), h.gym+" eval run --no-serve -a example_single_tool_call_simple_agent -i "+data+" -o gym.jsonl ++head_server.port="+head)
	if err != nil {
		t.Fatalf("gym eval run --no-serve against NeMo Gym's servers: %v\n%s\nNeMo Gym's env start:\n%s", err, out, ng.output())
	}
	gymReward := meanReward(t, out)
	if gymReward == "0.0" {
		t.Errorf("gym's collection scored nothing:\n%s", out)
	}
	// NeMo Gym's own collection from the same servers is the reference:
	// whatever its openai_model makes of the replayed answers, gym must
	// score the same.
	out, err = h.run(context.Background(), "ng eval run --no-serve -a example_single_tool_call_simple_agent -i "+data+" -o ng.jsonl ++head_server.port="+head)
	if err != nil {
		t.Fatalf("NeMo Gym's eval run --no-serve: %v\n%s", err, out)
	}
	if ngReward := meanReward(t, out); gymReward != ngReward {
		t.Errorf("gym's collection scored %s, NeMo Gym's own %s, from the same servers", gymReward, ngReward)
	}
	for _, stem := range []string{"gym", "ng"} {
		if data, err := os.ReadFile(filepath.Join(h.work, stem+".jsonl")); err != nil || strings.Count(string(data), "\n") != 5 {
			t.Errorf("%s.jsonl should hold the 5 rollouts: %v", stem, err)
		}
	}
	if code := ng.stop(t, syscall.SIGINT); code != 0 {
		t.Errorf("NeMo Gym's env start exited %d after SIGINT", code)
	}
	if code := model.stop(t, syscall.SIGINT); code != 0 {
		t.Errorf("gym env start exited %d after SIGINT", code)
	}
	h.assertNothingLeft(t, 20*time.Second)
	for _, pair := range [][2]string{{h.gym, "ng"}, {"ng", "gym"}} {
		if out, err := h.run(context.Background(), pair[0]+" eval profile --inputs "+pair[1]+"_materialized_inputs.jsonl --rollouts "+pair[1]+".jsonl"); err != nil {
			t.Errorf("%s eval profile on %s's files: %v\n%s", pair[0], pair[1], err, out)
		}
	}
}

// startNeMoGymServers starts gym's replay model, and NeMo Gym's own
// example_single_tool_call servers (its Python openai_model in front of
// that model) with the overrides extra; it returns both and the port of
// NeMo Gym's head server.
func (h *harness) startNeMoGymServers(t *testing.T, extra string) (model, ng *background, head string) {
	t.Helper()
	upstreamHead := strconv.Itoa(freePort(t))
	model = h.start(context.Background(), h.gym+" env start --model-type replay_model ++head_server.port="+upstreamHead)
	model.waitFor(t, "All 1 / 1 servers ready", time.Minute)
	modelURL := urlOf(t, serverInstances(t, mustAtoi(upstreamHead)), "policy_model")
	head = strconv.Itoa(freePort(t))
	configs := sitePackages + "/resources_servers/example_single_tool_call/configs/example_single_tool_call.yaml," +
		sitePackages + "/responses_api_models/openai_model/configs/openai_model.yaml"
	ng = h.start(context.Background(), "ng env start +config_paths=["+configs+"] ++uv_cache_dir=/var/cache/uv ++head_server.port="+head+
		" +policy_base_url="+modelURL+"/v1 +policy_api_key=unused +policy_model_name=replay"+extra)
	ng.waitFor(t, "4 / 4 servers ready", startTimeout)
	return model, ng, head
}

// meanReward is the "mean/reward" an eval run printed.
func meanReward(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`"mean/reward": ([0-9.]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no mean/reward in:\n%s", out)
	}
	return m[1]
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

// slicesContainSame reports whether a match has one name twice, as in
// "(srv) (srv) line" (Ray's own "(ray_head) (raylet) ..." is fine).
func slicesContainSame(matches [][]string) bool {
	for _, m := range matches {
		if m[1] == m[2] {
			return true
		}
	}
	return false
}
