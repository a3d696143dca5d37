package config

import (
	"context"
	"strings"
	"testing"
)

// pairingConfig is a resources server that accepts only vLLM adapters, an
// agent on it and an openai_model policy model.
const pairingConfig = `
asr:
  resources_servers:
    asr_with_pc:
      entrypoint: app.py
      domain: other
      allowed_model_types: [vllm_model, local_vllm_model]
asr_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: asr}
      model_server: {type: responses_api_models, name: policy_model}
policy_model:
  responses_api_models:
    openai_model:
      entrypoint: app.py
`

func TestModelPairing(t *testing.T) {
	tests := []struct {
		name      string
		replace   [2]string // an edit of pairingConfig: old, new
		overrides []string
		env       map[string]string
		err       []string // texts the error contains; none: it loads
	}{
		{
			name: "an excluded model type fails, naming agent, servers and the declaration",
			err: []string{
				"The selected Gym model-server adapter is not compatible with this workload:",
				"  - agent 'asr_agent' uses model server 'policy_model' (type 'openai_model'), but resources server 'asr' accepts only: vllm_model, local_vllm_model (allowed_model_types at test.yaml:7)",
				"Select a compatible model adapter (for example, --model-type vllm_model). Supported model types: vllm_model, local_vllm_model.",
				"--allow-unsupported-pairing (or set NEMO_GYM_ALLOW_UNSUPPORTED_PAIRING=1)",
			},
		},
		{
			name:      "allow_unsupported_pairing waives it",
			overrides: []string{"+allow_unsupported_pairing=true"},
		},
		{
			name:      "a false allow_unsupported_pairing does not",
			overrides: []string{"+allow_unsupported_pairing=false"},
			err:       []string{"model-server adapter is not compatible"},
		},
		{
			name: "NEMO_GYM_ALLOW_UNSUPPORTED_PAIRING=1 waives it",
			env:  map[string]string{"NEMO_GYM_ALLOW_UNSUPPORTED_PAIRING": "1"},
		},
		{
			name: "NEMO_GYM_ALLOW_UNSUPPORTED_PAIRING=False does not",
			env:  map[string]string{"NEMO_GYM_ALLOW_UNSUPPORTED_PAIRING": "False"},
			err:  []string{"model-server adapter is not compatible"},
		},
		{
			name:    "an allowed model type passes",
			replace: [2]string{"openai_model:", "vllm_model:"},
		},
		{
			name:      "a single string declares one type",
			overrides: []string{"++asr.resources_servers.asr_with_pc.allowed_model_types=openai_model"},
		},
		{
			name:      "an empty list restricts nothing",
			overrides: []string{"++asr.resources_servers.asr_with_pc.allowed_model_types=[]"},
		},
		{
			name:    "a map is not a list of model types",
			replace: [2]string{"[vllm_model, local_vllm_model]", "{a: 1}"},
			err:     []string{"'asr.resources_servers.asr_with_pc.allowed_model_types' must be a list of model types, got map."},
		},
		{
			name:    "the placeholder dummy model is not checked",
			replace: [2]string{"openai_model:", "dummy_model:"},
		},
		{
			name: "disjoint restrictions have no common remedy",
			overrides: []string{
				"+asr2.resources_servers.asr_with_pc.entrypoint=app.py", "+asr2.resources_servers.asr_with_pc.domain=other",
				"+asr2.resources_servers.asr_with_pc.allowed_model_types=[azure_openai_model]",
				"+asr2_agent.responses_api_agents.simple_agent.entrypoint=app.py",
				"+asr2_agent.responses_api_agents.simple_agent.resources_server={type: resources_servers, name: asr2}",
				"+asr2_agent.responses_api_agents.simple_agent.model_server={type: responses_api_models, name: policy_model}",
			},
			err: []string{"agent 'asr_agent'", "agent 'asr2_agent'", "No single model type satisfies all of these resources servers."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := pairingConfig
			if tt.replace[0] != "" {
				cfg = strings.Replace(cfg, tt.replace[0], tt.replace[1], 1)
			}
			req := Request{Seed: mustYAML(t, cfg), Overrides: tt.overrides, Offline: true}
			_, err := Load(context.Background(), testEnv(t, tt.env), req)
			if len(tt.err) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("loaded; want an error")
			}
			for _, s := range tt.err {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error lacks %q:\n%v", s, err)
				}
			}
		})
	}
}
