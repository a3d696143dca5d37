package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Routing keys: agent_name selects the agent of a run, agent_map routes a
// row's agent name to an instance, fan_out sends a row to several.
const (
	agentNameKey = "agent_name"
	agentMapKey  = "agent_map"
	fanOutKey    = "fan_out"
)

// legacyAgentAliases are the agent instance names of the reasoning-gym
// environments before nemo-gym 0.7.0 renamed them, in its order, each with
// the canonical name.
var legacyAgentAliases = [][2]string{
	{"reasoning_gym_claude_code_agent", "claude_code_reasoning_gym_agent"},
	{"reasoning_gym_hermes_agent", "hermes_reasoning_gym_agent"},
	{"reasoning_gym_orchestrator_agent", "langgraph_orchestrator_reasoning_gym_agent"},
	{"reasoning_gym_parallel_thinking_agent", "langgraph_parallel_thinking_reasoning_gym_agent"},
	{"reasoning_gym_reflection_agent", "langgraph_reflection_reasoning_gym_agent"},
	{"reasoning_gym_rewoo_agent", "langgraph_rewoo_reasoning_gym_agent"},
}

// applyLegacyAgentAliases routes each legacy agent name whose canonical
// instance (or where agent_map sends it) exists, and which no instance
// holds itself, to that instance: agent_name and the agent_map and fan_out
// destinations naming it are rewritten, and agent_map gains a route from
// each such legacy name, the routes a config declares winning. A rewritten
// use is deprecated, with a warning.
func applyLegacyAgentAliases(cfg *tree.Node, env Env) error {
	rv := newResolver(cfg, env)
	routes := tree.NewMap()
	routes.SetOrigin(tree.Origin{Kind: tree.FromDefault})
	declared := cfg.Get(agentMapKey)
	if declared != nil {
		v, err := rv.value(declared, Path{{Key: agentMapKey}})
		if err != nil {
			return err
		}
		if v.Kind == tree.Map {
			routes.Origin = declared.Origin
			for _, e := range v.Entries {
				r, err := rv.full(e.Value, Path{{Key: agentMapKey}, {Key: e.Key}})
				if err != nil {
					return err
				}
				routes.SetEntry(tree.Entry{Key: e.Key, KeyKind: e.KeyKind, Value: r})
			}
		}
	}
	active := map[string]string{}
	var order []string
	for _, a := range legacyAgentAliases {
		legacy, dest := a[0], a[1]
		if r := routes.Get(dest); r != nil {
			if r.Kind != tree.String {
				continue
			}
			dest = r.Str
		}
		if !cfg.Has(legacy) && cfg.Has(dest) {
			active[legacy] = dest
			order = append(order, legacy)
		}
	}
	if len(order) == 0 {
		return nil
	}
	deprecated := map[string]bool{}
	// rename returns the canonical instance for a destination that is an
	// active legacy name.
	rename := func(n *tree.Node) (*tree.Node, bool) {
		if n == nil || n.Kind != tree.String {
			return n, false
		}
		to, ok := active[n.Str]
		if !ok {
			return n, false
		}
		deprecated[n.Str] = true
		out := tree.NewString(to)
		out.Origin = n.Origin
		return out, true
	}
	if n := cfg.Get(agentNameKey); n != nil {
		v, err := rv.value(n, Path{{Key: agentNameKey}})
		if err != nil {
			return err
		}
		if to, ok := rename(v); ok {
			cfg.Set(agentNameKey, to)
		}
	}
	for i, e := range routes.Entries {
		routes.Entries[i].Value, _ = rename(e.Value)
	}
	for _, legacy := range order {
		if !routes.Has(legacy) {
			to := tree.NewString(active[legacy])
			to.Origin = tree.Origin{Kind: tree.FromDefault}
			routes.Set(legacy, to)
		}
	}
	if fanOut := cfg.Get(fanOutKey); fanOut != nil {
		v, err := rv.full(fanOut, Path{{Key: fanOutKey}})
		if err != nil {
			return err
		}
		if v.Kind == tree.Map {
			for _, e := range v.Entries {
				if e.Value.Kind != tree.List {
					continue
				}
				for j, it := range e.Value.Items {
					e.Value.Items[j], _ = rename(it)
				}
			}
			cfg.Set(fanOutKey, v)
		}
	}
	cfg.Set(agentMapKey, routes)
	if len(deprecated) > 0 {
		legacies := make([]string, 0, len(deprecated))
		for legacy := range deprecated {
			legacies = append(legacies, legacy)
		}
		sort.Strings(legacies)
		uses := make([]string, len(legacies))
		for i, legacy := range legacies {
			uses[i] = fmt.Sprintf("`%s` -> `%s`", legacy, active[legacy])
		}
		fmt.Fprintf(env.Warnings, "Warning: Legacy agent names are deprecated; use %s.\n", strings.Join(uses, ", "))
	}
	return nil
}
