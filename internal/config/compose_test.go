package config

import (
	"context"
	"strings"
	"testing"
)

func TestComposedName(t *testing.T) {
	tests := []struct{ name, agentType, with, want string }{
		{"gpqa_mcqa_simple_agent", "simple_agent", "hermes_agent", "gpqa_mcqa_hermes_agent"},
		{"example_simple_agent", "simple_agent", "simple_agent", "example_simple_agent"},
		{"tool_agent", "simple_agent", "hermes_agent", "tool_hermes_agent"},
		{"custom", "simple_agent", "hermes_agent", "custom_hermes_agent"},
		{"simple_agent", "simple_agent", "hermes_agent", "hermes_agent"},
		{"x__simple_agent", "simple_agent", "hermes_agent", "x_hermes_agent"},
	}
	for _, tt := range tests {
		if got := composedName(agentInstance{name: tt.name, agentType: tt.agentType}, tt.with); got != tt.want {
			t.Errorf("composedName(%s, %s) = %s, want %s", tt.name, tt.with, got, tt.want)
		}
	}
}

// composeConfig is an environment (resources server, its agent, the
// environment server fronting it) and an unbound hermes_agent.
const composeConfig = `
env:
  resources_servers:
    env:
      entrypoint: app.py
      domain: other
env_simple_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      max_steps: 3
      resources_server: {type: resources_servers, name: env}
      model_server: {type: responses_api_models, name: policy_model}
      datasets: [{name: example, type: example, jsonl_fpath: data/example.jsonl}]
env_environment_server:
  environment_servers:
    legacy_agent:
      entrypoint: app.py
      agent_server: {type: responses_api_agents, name: env_simple_agent}
hermes_agent:
  responses_api_agents:
    hermes_agent:
      entrypoint: app.py
      temperature: 0.5
      resources_server: {type: resources_servers, name: '???'}
      model_server: {type: responses_api_models, name: other_model}
policy_model:
  responses_api_models:
    openai_model:
      entrypoint: app.py
`

func TestComposeUnboundAgent(t *testing.T) {
	tests := []struct {
		name      string
		extra     string // YAML merged after composeConfig
		overrides []string
		env       map[string]string
		want      []string // lines of the dumped config, in this order
		absent    []string
		err       []string
	}{
		{
			name: "the unbound agent replaces the environment's agent, keeping its bindings",
			want: []string{
				"env_environment_server:", "      agent_server:", "        name: env_hermes_agent",
				"policy_model:",
				"env_hermes_agent:", "  responses_api_agents:", "    hermes_agent:", "      entrypoint: app.py", "      temperature: 0.5",
				"        name: env", "        name: policy_model", "      datasets:",
				"agent_map:", "  env_simple_agent: env_hermes_agent",
			},
			absent: []string{"\nhermes_agent:", "max_steps", "other_model", "\nenv_simple_agent:"},
		},
		{
			name:      "an override of the composed instance applies after the bindings",
			overrides: []string{"++env_hermes_agent.responses_api_agents.hermes_agent.temperature=0.9"},
			want:      []string{"env_hermes_agent:", "      temperature: 0.9"},
		},
		{
			name:      "an override of a field the composed agent lacks fails",
			overrides: []string{"++env_hermes_agent.responses_api_agents.hermes_agent.max_steps=9"},
			err:       []string{"Could not override 'env_hermes_agent.responses_api_agents.hermes_agent.max_steps': Key 'max_steps' is not in", "cli: ++env_hermes_agent"},
		},
		{
			name:      "a declared route wins",
			overrides: []string{"+agent_map.env_simple_agent=elsewhere", "+agent_map.k=v"},
			want:      []string{"agent_map:", "  env_simple_agent: elsewhere", "  k: v"},
		},
		{
			name:      "routing to the replaced name fails",
			overrides: []string{"+agent_name=env_simple_agent"},
			err:       []string{"Routing names agent instances that no longer exist once the agent is swapped:", "  - agent_name: 'env_simple_agent' is now 'env_hermes_agent'"},
		},
		{
			name:  "a second unbound agent fails",
			extra: "other_agent: {responses_api_agents: {simple_agent: {entrypoint: app.py, resources_server: {type: resources_servers, name: '???'}}}}",
			err:   []string{"2 agent instances leave their 'resources_server' unset", "'hermes_agent', 'other_agent'"},
		},
		{
			name:  "a self-contained agent is not replaced",
			extra: "gym_agent: {responses_api_agents: {gymnasium_agent: {entrypoint: app.py}}}",
			want:  []string{"gym_agent:", "    gymnasium_agent:", "env_hermes_agent:"},
		},
		{
			name:      "an override naming an instance composition does not create fails",
			extra:     "gym_agent: {responses_api_agents: {gymnasium_agent: {entrypoint: app.py}}}",
			overrides: []string{"++gym_hermes_agent.responses_api_agents.hermes_agent.temperature=1"},
			err:       []string{"Command line overrides name agent instances that do not exist:\n  - gym_hermes_agent"},
		},
		{
			name:  "a name taken by another instance fails",
			extra: "env_hermes_agent: {x: 1}",
			err:   []string{"Composing would give two instances the same name: env_simple_agent -> env_hermes_agent."},
		},
		{
			name:  "allowed_agents without the composed type fails",
			extra: "env: {resources_servers: {env: {allowed_agents: [simple_agent, tau2_agent]}}}",
			err: []string{"'hermes_agent' is not declared compatible with 1 of the agent instance(s) it would replace",
				"  - env_simple_agent uses env and accepts simple_agent, tau2_agent (allowed_agents at test.yaml:1)",
				"Select one of: simple_agent, tau2_agent. Or pass --allow-unsupported-pairing"},
		},
		{
			name:  "allowed_agents with it passes",
			extra: "env: {resources_servers: {env: {allowed_agents: hermes_agent}}}",
			want:  []string{"env_hermes_agent:"},
		},
		{
			name:  "NEMO_GYM_ALLOW_UNSUPPORTED_PAIRING waives allowed_agents",
			extra: "env: {resources_servers: {env: {allowed_agents: [simple_agent]}}}",
			env:   map[string]string{"NEMO_GYM_ALLOW_UNSUPPORTED_PAIRING": "true"},
			want:  []string{"env_hermes_agent:"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seed := mustYAML(t, composeConfig)
			if tt.extra != "" {
				var err error
				if seed, err = mergeAll(seed, mustYAML(t, tt.extra)); err != nil {
					t.Fatal(err)
				}
			}
			res, err := Load(context.Background(), testEnv(t, tt.env), Request{Seed: seed, Overrides: tt.overrides, Offline: true})
			if len(tt.err) > 0 {
				if err == nil {
					t.Fatalf("loaded; want an error:\n%s", dump(res.Config))
				}
				for _, s := range tt.err {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error lacks %q:\n%v", s, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := dump(res.Config)
			rest := got
			for _, s := range tt.want {
				i := strings.Index(rest, s+"\n")
				if i < 0 {
					t.Errorf("output lacks %q after the lines before it:\n%s", s, got)
					break
				}
				rest = rest[i+len(s):]
			}
			for _, s := range tt.absent {
				if strings.Contains(got, s) {
					t.Errorf("output has %q:\n%s", s, got)
				}
			}
		})
	}
}
