package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// TestOverrides is the router check of T17/T18/T64: flags become exactly
// NeMo Gym's override tokens, in its order.
func TestOverrides(t *testing.T) {
	root := t.TempDir()
	for _, rel := range []string{"benchmarks/gsm8k/config.yaml", "benchmarks/aime24/config.yaml", "responses_api_models/vllm_model/configs/vllm_model.yaml",
		"responses_api_agents/simple_agent/configs/simple_agent.yaml", "responses_api_agents/simple_agent/configs/fast.yaml"} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x: 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	roots := resolve.NewRoots("", root, root)
	tests := []struct {
		name        string
		flags       configFlags
		verbose     bool
		passthrough []string
		want        []string
	}{
		{
			name:        "T17 configs join into one token",
			flags:       configFlags{configs: []string{"a.yaml", "b.yaml"}},
			passthrough: []string{"+foo=bar"},
			want:        []string{"+config_paths=[a.yaml,b.yaml]", "+foo=bar"},
		},
		{
			name:    "T18 model flags and verbose",
			flags:   configFlags{model: "openai/gpt-oss-120b", modelURL: "http://0.0.0.0:10240/v1", modelAPIKey: "dummy_key"},
			verbose: true,
			want: []string{"+verbose=true", "+policy_model_name='openai/gpt-oss-120b'",
				"+policy_base_url='http://0.0.0.0:10240/v1'", "+policy_api_key='dummy_key'"},
		},
		{
			name:        "T64 selectors after configs, raw config_paths tokens last",
			flags:       configFlags{configs: []string{"extra.yaml"}, benchmarks: []string{"gsm8k"}, modelType: "vllm_model"},
			passthrough: []string{"++x=1", "+config_paths=[c.yaml,,d.yaml]"},
			want: []string{"+config_paths=[extra.yaml," + root + "/benchmarks/gsm8k/config.yaml," +
				root + "/responses_api_models/vllm_model/configs/vllm_model.yaml,c.yaml,d.yaml]", "++x=1"},
		},
		{
			name:  "repeated selectors compose in order, the agent type last; the pairing waiver before the model flags",
			flags: configFlags{benchmarks: []string{"gsm8k", "aime24"}, agentType: "simple_agent/fast", allowUnsupportedPairing: true, model: "m"},
			want: []string{"+config_paths=[" + root + "/benchmarks/gsm8k/config.yaml," + root + "/benchmarks/aime24/config.yaml," +
				root + "/responses_api_agents/simple_agent/configs/fast.yaml]", "+allow_unsupported_pairing=true", "+policy_model_name='m'"},
		},
		{
			name:  "an agent type's default flavor is its own name",
			flags: configFlags{agentType: "simple_agent"},
			want:  []string{"+config_paths=[" + root + "/responses_api_agents/simple_agent/configs/simple_agent.yaml]"},
		},
		{
			name:        "builtin servers after the model flags, before passthrough",
			flags:       configFlags{model: "m", builtinServers: "prefer"},
			passthrough: []string{"+x=1"},
			want:        []string{"+policy_model_name='m'", "++builtin_servers=prefer", "+x=1"},
		},
		{
			name:  "paths Hydra would misread are quoted",
			flags: configFlags{configs: []string{"my dir/a,b.yaml"}},
			want:  []string{"+config_paths=['my dir/a,b.yaml']"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := tt.flags.overrides(roots, tt.verbose, tt.passthrough)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestBuiltinServersFlagRefusesOtherValues(t *testing.T) {
	roots := resolve.NewRoots("", t.TempDir(), "")
	_, _, err := (&configFlags{builtinServers: "always"}).overrides(roots, false, nil)
	if err == nil || err.Error() != `--builtin-servers is "always"; it must be shadow or prefer` {
		t.Errorf("err = %v", err)
	}
}

// TestHydraQuote checks that any flag value reads back as the same string.
func TestHydraQuote(t *testing.T) {
	for _, s := range []string{"plain", "123", "true", "a,b=c", `it's`, `say "hi"`, `back\slash`, `trail\`, `\'`, "${oc.env:X}", "sk-ü", " padded "} {
		ov, err := override.Parse("+k=" + override.Quote(s))
		if err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		if ov.Value.Str != s {
			t.Errorf("%q read back as %#v", s, ov.Value)
		}
	}
}
