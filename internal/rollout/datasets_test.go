package rollout

import (
	"strconv"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
)

func TestAgentDatasets(t *testing.T) {
	const agents = `
a1:
  responses_api_agents:
    simple_agent:
      resources_server: {type: resources_servers, name: rs}
a2:
  responses_api_agents:
    simple_agent:
      resources_server: {type: resources_servers, name: other}
      datasets:
      - {name: own, type: example, jsonl_fpath: own.jsonl, num_repeats: 2}
`
	for _, tc := range []struct {
		name, config, want, wantErr string
	}{
		{name: "on the agent and on the resources server, in config order", config: `
rs:
  resources_servers:
    v:
      datasets:
      - {name: ex, type: example, jsonl_fpath: ex.jsonl}
` + agents, want: "a1:ex:example:ex.jsonl:1 a2:own:example:own.jsonl:2"},
		{name: "a pin among the referencing agents", config: `
rs:
  resources_servers:
    v:
      datasets:
      - {name: ex, type: example, jsonl_fpath: ex.jsonl, agent: a1}
` + agents + `
a3:
  responses_api_agents:
    simple_agent:
      resources_server: {type: resources_servers, name: rs}
`, want: "a1:ex:example:ex.jsonl:1 a2:own:example:own.jsonl:2"},
		{name: "a pin elsewhere", config: `
rs:
  resources_servers:
    v:
      datasets:
      - {name: ex, type: example, jsonl_fpath: ex.jsonl, agent: a2}
` + agents, wantErr: `rs.resources_servers.v.datasets[0].agent is "a2", which is not an agent referencing resources server rs (agents that do: a1)`},
		{name: "two agents, no pin", config: `
rs:
  resources_servers:
    v:
      datasets:
      - {name: ex, type: example, jsonl_fpath: ex.jsonl}
` + agents + `
a3:
  responses_api_agents:
    simple_agent:
      resources_server: {type: resources_servers, name: rs}
`, wantErr: "agents a1, a3 all reference resources server rs; say which runs this dataset with agent: <name> in it"},
		{name: "no agent", config: `
lonely:
  resources_servers:
    v:
      datasets:
      - {name: ex, type: example, jsonl_fpath: ex.jsonl}
`, wantErr: "lonely.resources_servers.v.datasets[0]: no agent references resources server lonely"},
		{name: "a bad entry", config: `
rs:
  resources_servers:
    v:
      datasets:
      - {name: ex, type: example}
` + agents, wantErr: "rs.resources_servers.v.datasets[0].jsonl_fpath is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := pyyaml.Load([]byte(tc.config), "c.yaml")
			if err != nil {
				t.Fatal(err)
			}
			ds, err := AgentDatasets(n)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range ds {
				got = append(got, strings.Join([]string{d.Agent, d.Name, d.Type, d.JSONLPath, strconv.Itoa(d.NumRepeats)}, ":"))
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("got %s\nwant %s", strings.Join(got, " "), tc.want)
			}
		})
	}
}
