package replaymodel

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	ioai "github.com/nemo-gym-go/gym/internal/openai"
	"github.com/nemo-gym-go/gym/internal/server"
	"github.com/nemo-gym-go/gym/internal/server/servertest"

	// The environment the recordings were made in, linked as gym links it.
	_ "github.com/nemo-gym-go/gym/resources_servers/example_single_tool_call"
	_ "github.com/nemo-gym-go/gym/responses_api_agents/simple_agent"
)

// The real simple_agent and example_single_tool_call servers run every
// task row of example.jsonl through /run against the replay model, as
// `gym env start` wires them, and each rollout comes back as recorded: the
// model's items byte for byte, the Go tool's output in between, the
// recorded usage and reward.
func TestWithSimpleAgent(t *testing.T) {
	agentURL := startEnvironment(t, exampleRollouts)
	recorded := map[string]gjson.Result{}
	for _, rec := range readJSONL(t, exampleRollouts) {
		recorded[lastUserText(rec.Get("responses_create_params"))] = rec
	}
	for i, row := range readJSONL(t, exampleRows) {
		rec := recorded[lastUserText(row.Get("responses_create_params"))]
		t.Run(lastUserText(row.Get("responses_create_params")), func(t *testing.T) {
			body := must(sjson.Set(row.Raw, "_ng_task_index", i))
			body = must(sjson.Set(body, "_ng_rollout_index", 0))
			status, out := post(t, agentURL+"/run", body)
			if status != http.StatusOK {
				t.Fatalf("/run: HTTP %d %s", status, out)
			}
			result := gjson.Parse(out)
			if result.Get("reward").Float() != rec.Get("reward").Float() {
				t.Errorf("reward %s, recorded %s", result.Get("reward").Raw, rec.Get("reward").Raw)
			}
			got, want := result.Get("response.output").Array(), rec.Get("response.output").Array()
			if len(got) != len(want) {
				t.Fatalf("%d items, recorded %d: %s", len(got), len(want), result.Get("response.output").Raw)
			}
			for j := range want {
				if toolProduced(want[j]) {
					if got[j].Get("output").Str != `{"city":"San Francisco","weather_description":"The weather in San Francisco is cold."}` {
						t.Errorf("tool output %s", got[j].Raw)
					}
					continue
				}
				if got[j].Raw != want[j].Raw {
					t.Errorf("item %d:\n got %s\nwant %s", j, got[j].Raw, want[j].Raw)
				}
			}
			if g, w := ioai.ParseResponsesUsage([]byte(result.Get("response.usage").Raw)), ioai.ParseResponsesUsage([]byte(rec.Get("response.usage").Raw)); g != w {
				t.Errorf("usage %+v, recorded %+v", g, w)
			}
			if result.Get("response.id").Str != rec.Get("response.id").Str {
				t.Errorf("id %s, recorded %s", result.Get("response.id").Raw, rec.Get("response.id").Raw)
			}
		})
	}
}

// A row no recording answers fails its rollout with the model's 404, kept
// hop by hop so that nothing retries it, and the failure says why.
func TestWithSimpleAgentMiss(t *testing.T) {
	agentURL := startEnvironment(t, exampleRollouts)
	row := readJSONL(t, exampleRows)[0]
	status, out := post(t, agentURL+"/run", must(sjson.Set(row.Raw, "responses_create_params.input.1.content", "what's it like in nyc?")))
	if status != http.StatusNotFound || !strings.Contains(out, "replay_not_found") || !strings.Contains(out, "what's it like in nyc?") {
		t.Errorf("/run: HTTP %d %s", status, out)
	}
}

// startEnvironment serves example_single_tool_call, its simple_agent and
// the replay model of rollouts, each built by its registered factory from
// one config as `gym serve` builds it, and returns the agent's URL.
func startEnvironment(t testing.TB, rollouts string) string {
	t.Helper()
	names := []string{"example_single_tool_call", "agent", "policy_model"}
	listeners := map[string]net.Listener{}
	for _, name := range names {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners[name] = ln
	}
	port := func(name string) int { return listeners[name].Addr().(*net.TCPAddr).Port }
	yaml := fmt.Sprintf(`example_single_tool_call:
  resources_servers:
    example_single_tool_call:
      entrypoint: app.py
      domain: agent
      host: 127.0.0.1
      port: %d
agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      host: 127.0.0.1
      port: %d
      resources_server: {type: resources_servers, name: example_single_tool_call}
      model_server: {type: responses_api_models, name: policy_model}
policy_model:
  responses_api_models:
    replay_model:
      entrypoint: app.py
      host: 127.0.0.1
      port: %d
      %s
`, port("example_single_tool_call"), port("agent"), port("policy_model"), pathLine(rollouts))
	for _, name := range names {
		rt, err := servertest.Runtime(yaml, name)
		if err != nil {
			t.Fatal(err)
		}
		rt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		factory, ok := server.Lookup(rt.Kind())
		if !ok {
			t.Fatalf("%s is not registered", rt.Kind())
		}
		h, err := factory(rt)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewUnstartedServer(server.Wrap(rt, h))
		srv.Listener.Close()
		srv.Listener = listeners[name]
		srv.Start()
		t.Cleanup(srv.Close)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port("agent"))
}
