package config

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// TestLegacyAgentAliases: legacy reasoning-gym agent names route to the
// canonical instances through a top-level agent_map, as nemo-gym 0.7.0
// writes it.
func TestLegacyAgentAliases(t *testing.T) {
	tests := []struct {
		name      string
		overrides []string
		want      string // agent_map (and agent_name, fan_out when set) as YAML; "" for none
		warning   string
	}{
		{
			name:      "the canonical instance gets a route from its legacy name",
			overrides: []string{"+hermes_reasoning_gym_agent.x=1", "+other=2"},
			want:      "agent_map:\n  reasoning_gym_hermes_agent: hermes_reasoning_gym_agent\n",
		},
		{
			name:      "no canonical instance, no agent_map",
			overrides: []string{"+other=2"},
		},
		{
			name:      "a legacy instance of its own keeps its name",
			overrides: []string{"+hermes_reasoning_gym_agent.x=1", "+reasoning_gym_hermes_agent.x=1"},
		},
		{
			name: "routes follow agent_map, declared routes win, and uses of a legacy name are rewritten",
			overrides: []string{"+mine.x=1", "+agent_map.hermes_reasoning_gym_agent=mine", "+agent_map.old=reasoning_gym_hermes_agent",
				"+agent_map.reasoning_gym_rewoo_agent=keep", "+langgraph_rewoo_reasoning_gym_agent.x=1",
				"+agent_name=reasoning_gym_hermes_agent", "+fan_out.k=[reasoning_gym_hermes_agent,b]"},
			want: "agent_map:\n  hermes_reasoning_gym_agent: mine\n  old: mine\n  reasoning_gym_rewoo_agent: keep\n" +
				"  reasoning_gym_hermes_agent: mine\nagent_name: mine\nfan_out:\n  k:\n  - mine\n  - b\n",
			warning: "Warning: Legacy agent names are deprecated; use `reasoning_gym_hermes_agent` -> `mine`.\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var warnings bytes.Buffer
			env := testEnv(t, nil)
			env.Warnings = &warnings
			res, err := Load(context.Background(), env, Request{Overrides: tt.overrides, Offline: true})
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			for _, k := range []string{agentMapKey, agentNameKey, fanOutKey} {
				if n := res.Config.Get(k); n != nil {
					one := tree.NewMap()
					one.Set(k, n)
					got.WriteString(dump(one))
				}
			}
			if got.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got.String(), tt.want)
			}
			if w := warnings.String(); w != tt.warning {
				t.Errorf("warnings %q, want %q", w, tt.warning)
			}
		})
	}
}
