package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Agent composition (nemo-gym 0.7.0): an agent config that leaves its
// resources server unset (simple_agent.yaml: resources_server.name: ???) is
// "unbound"; loaded beside an environment, it replaces the environment's
// own agents, each keeping its bindings, and the unbound instance goes.

const allowedAgentsKey = "allowed_agents"

// carriedOverKeys are what a composed agent takes from the agent it
// replaces; everything else comes from the unbound agent.
var carriedOverKeys = []string{"resources_server", "model_server", "datasets"}

// agentPath is the path of an agent instance's implementation config.
func agentPath(name, agentType string) Path {
	return Path{{Key: name}, {Key: AgentsType}, {Key: agentType}}
}

// resourcesRef returns an agent's resources_server block, resolved, or nil
// when it has none (a self-contained agent).
func resourcesRef(rv *resolver, in agentInstance) (*tree.Node, error) {
	n := in.config.Get("resources_server")
	if n == nil {
		return nil, nil
	}
	v, err := rv.value(n, agentPath(in.name, in.agentType).Key("resources_server"))
	if err != nil || v.Kind != tree.Map {
		return nil, err
	}
	return v, nil
}

// unboundAgents splits the agent instances of rv's tree into the unbound
// ones and the rest.
func unboundAgents(rv *resolver) (unbound, bound []agentInstance, err error) {
	for _, in := range agentInstances(rv.root) {
		ref, err := resourcesRef(rv, in)
		if err != nil {
			return nil, nil, err
		}
		if ref != nil && isMissing(ref.Get("name")) {
			unbound = append(unbound, in)
		} else {
			bound = append(bound, in)
		}
	}
	return unbound, bound, nil
}

// composedName is the name of the instance that replaces target once an
// agent of agentType is composed onto it: the trailing agent type (or else
// "_agent") is swapped for the new one, so gpqa_mcqa_simple_agent becomes
// gpqa_mcqa_hermes_agent.
func composedName(target agentInstance, agentType string) string {
	stem := strings.TrimRight(strings.TrimSuffix(strings.TrimSuffix(target.name, "_"+target.agentType), target.agentType), "_")
	if stem == target.name {
		stem = strings.TrimRight(strings.TrimSuffix(target.name, "_agent"), "_")
	}
	if stem == "" {
		return agentType
	}
	return stem + "_" + agentType
}

// holdBackComposedOverrides takes out of the command-line layer the
// top-level overrides that name an instance composition will create from
// base (the config files, env.yaml and the seed), and returns them: merged
// now they would build a partial server beside it, so they are applied to
// the composed agent instead.
func holdBackComposedOverrides(cli, base *tree.Node, env Env) (*tree.Node, error) {
	held := tree.NewMap()
	rv := newResolver(base, env)
	unbound, _, err := unboundAgents(rv)
	if err != nil || len(unbound) != 1 {
		return held, err
	}
	names := map[string]bool{}
	for _, in := range agentInstances(base) {
		if in.name != unbound[0].name {
			names[composedName(in, unbound[0].agentType)] = true
		}
	}
	for _, e := range slices.Clone(cli.Entries) {
		if names[e.Key] {
			held.SetEntry(e)
			cli.Delete(e.Key)
		}
	}
	return held, nil
}

// composeUnboundAgent rehosts every agent instance that runs against a
// resources server on the config's one unbound agent, then drops that
// agent. held are the overrides holdBackComposedOverrides kept, applied to
// the composed instances; it is left holding those that named none.
func composeUnboundAgent(cfg, held *tree.Node, env Env) error {
	rv := newResolver(cfg, env)
	unbound, bound, err := unboundAgents(rv)
	if err != nil || len(unbound) == 0 {
		return err
	}
	if len(unbound) > 1 {
		names := make([]string, len(unbound))
		for i, in := range unbound {
			names[i] = "'" + in.name + "'"
		}
		sort.Strings(names)
		return errorf(ClassAgentComposition, unbound[1].config.Origin,
			"%d agent instances leave their 'resources_server' unset, so there is no single agent to compose onto the others: %s. "+
				"Load exactly one standalone agent config, or bind the others in your own config.",
			len(unbound), strings.Join(names, ", "))
	}
	source := unbound[0]
	var targets []agentInstance
	for _, in := range bound {
		ref, err := resourcesRef(rv, in)
		if err != nil {
			return err
		}
		if ref != nil {
			targets = append(targets, in)
		}
	}
	if len(targets) == 0 {
		return errorf(ClassAgentComposition, source.config.Origin,
			"Agent instance '%s' leaves its 'resources_server' unset, but the merged config defines no other agent instance to rehost it on. "+
				"Select an environment, benchmark, or resources server alongside the agent so there is a task for it to run.", source.name)
	}
	if err := checkAgentPairings(rv, source, targets); err != nil {
		return err
	}
	renames := make([][2]string, len(targets))
	renamed := map[string]string{}
	for i, t := range targets {
		renames[i] = [2]string{t.name, composedName(t, source.agentType)}
		renamed[t.name] = renames[i][1]
	}
	if err := checkComposedNames(cfg, renames, source.name); err != nil {
		return err
	}

	cfg.Delete(source.name)
	for i, t := range targets {
		composed := source.config.Clone()
		for _, k := range carriedOverKeys {
			if v := t.config.Get(k); v != nil {
				composed.Set(k, v.Clone())
			}
		}
		name := renames[i][1]
		if err := applyHeldOverride(held, name, source.agentType, composed); err != nil {
			return err
		}
		block := cfg.Get(t.name)
		cfg.Delete(t.name)
		agents := block.Get(AgentsType)
		agents.Delete(t.agentType)
		agents.Set(source.agentType, composed)
		cfg.Set(name, block)
	}
	retargetEnvironmentServers(cfg, renamed)
	if err := checkRoutingAfterComposition(rv, renamed); err != nil {
		return err
	}
	if err := routeComposedNames(rv, renames); err != nil {
		return err
	}
	if held.Len() > 0 {
		var b strings.Builder
		for _, e := range held.Entries {
			b.WriteString("\n  - " + e.Key)
		}
		return errorf(ClassOverride, held.Entries[0].Value.Origin,
			"Command line overrides name agent instances that do not exist:%s\nUse the instance name the composed config reports, e.g. from `gym env resolve`.", b.String())
	}
	return nil
}

// checkAgentPairings rejects composing source onto a target whose resources
// server declares allowed_agents without source's type.
func checkAgentPairings(rv *resolver, source agentInstance, targets []agentInstance) error {
	if waived, err := pairingWaived(rv); waived || err != nil {
		return err
	}
	var common []string
	restricted := false
	var rejected []string
	for _, t := range targets {
		ref, err := resourcesRef(rv, t)
		if err != nil {
			return err
		}
		name, err := rv.value(ref.Get("name"), agentPath(t.name, t.agentType).Key("resources_server").Key("name"))
		if err != nil {
			return err
		}
		if name == nil || name.Kind != tree.String {
			continue
		}
		allowed, where, err := declaredTypes(rv, name.Str, allowedAgentsKey, "agent types")
		if err != nil {
			return err
		}
		if allowed == nil {
			continue
		}
		if !restricted {
			common, restricted = slices.Clone(allowed), true
		} else {
			common = slices.DeleteFunc(common, func(a string) bool { return !slices.Contains(allowed, a) })
		}
		if !slices.Contains(allowed, source.agentType) {
			line := fmt.Sprintf("  - %s uses %s and accepts %s", t.name, name.Str, strings.Join(allowed, ", "))
			if o := where.String(); o != "" {
				line += " (" + allowedAgentsKey + " at " + o + ")"
			}
			rejected = append(rejected, line)
		}
	}
	if len(rejected) == 0 {
		return nil
	}
	sort.Strings(common)
	common = slices.Compact(common)
	remedy := "No single agent satisfies all of them."
	if len(common) > 0 {
		remedy = "Select one of: " + strings.Join(common, ", ") + "."
	}
	return &Error{Class: ClassUnsupportedAgentPairing, Msg: fmt.Sprintf(
		"'%s' is not declared compatible with %d of the agent instance(s) it would replace, so it cannot be scored correctly:\n%s\n\n%s %s",
		source.agentType, len(rejected), strings.Join(rejected, "\n"), remedy, pairingBypassHint)}
}

// checkComposedNames rejects renames that give two instances one name.
func checkComposedNames(cfg *tree.Node, renames [][2]string, source string) error {
	old := map[string]bool{source: true}
	count := map[string]int{}
	for _, r := range renames {
		old[r[0]] = true
		count[r[1]]++
	}
	var clashes []string
	var where tree.Origin
	for _, r := range renames {
		if (cfg.Has(r[1]) && !old[r[1]]) || count[r[1]] > 1 {
			clashes = append(clashes, r[0]+" -> "+r[1])
			if where.Kind == tree.FromNowhere {
				where = cfg.Get(r[0]).Origin
			}
		}
	}
	if len(clashes) == 0 {
		return nil
	}
	sort.Strings(clashes)
	return errorf(ClassAgentComposition, where,
		"Composing would give two instances the same name: %s. Rename the environment's agent instance or compose the config manually.",
		strings.Join(clashes, ", "))
}

// applyHeldOverride merges the override held for the composed instance name
// onto its agent config, which must already have every field it sets.
func applyHeldOverride(held *tree.Node, name, agentType string, composed *tree.Node) error {
	block := held.Get(name)
	if block == nil {
		return nil
	}
	held.Delete(name)
	over := block.Get(AgentsType).Get(agentType)
	if over == nil || over.Kind != tree.Map {
		return nil
	}
	at := trailOf(agentPath(name, agentType))
	if err := checkFieldsExist(composed, over, at, agentType); err != nil {
		return err
	}
	_, err := merge(composed, over, at)
	return err
}

// checkFieldsExist rejects a field of src that dst, at the same place, does
// not have: an override of a composed agent may only change what the agent
// declares (OmegaConf struct mode in NeMo Gym).
func checkFieldsExist(dst, src *tree.Node, at *trail, agentType string) error {
	for _, e := range src.Entries {
		d := dst.Get(e.Key)
		if d == nil {
			return errorf(ClassOverride, e.Value.Origin,
				"Could not override '%s': Key '%s' is not in the config of the agent composed onto this instance ('%s' declares no such field). "+
					"Override only the fields it declares (gym env resolve shows them), or set it on the '%s' agent config before it is composed",
				at.key(e.Key, nil), e.Key, agentType, agentType)
		}
		if d.Kind == tree.Map && e.Value.Kind == tree.Map {
			if err := checkFieldsExist(d, e.Value, at.key(e.Key, nil), agentType); err != nil {
				return err
			}
		}
	}
	return nil
}

// retargetEnvironmentServers points every environment server's agent
// references at the instances that replaced the ones they named.
func retargetEnvironmentServers(cfg *tree.Node, renamed map[string]string) {
	for _, e := range cfg.Entries {
		if e.Value.Kind != tree.Map {
			continue
		}
		servers := e.Value.Get(EnvironmentsType)
		if servers == nil || servers.Kind != tree.Map {
			continue
		}
		for _, s := range servers.Entries {
			if s.Value.Kind != tree.Map {
				continue
			}
			for _, f := range s.Value.Entries {
				ref := f.Value
				if ref.Kind != tree.Map {
					continue
				}
				typ := ref.Get("type")
				isAgent := typ != nil && typ.Kind == tree.String && typ.Str == AgentsType
				if !isAgent && !(f.Key == "agent_server" && (typ == nil || typ.Kind == tree.Null)) {
					continue
				}
				if n := ref.Get("name"); n != nil && n.Kind == tree.String {
					if to, ok := renamed[n.Str]; ok {
						named := tree.NewString(to)
						named.Origin = n.Origin
						ref.Set("name", named)
					}
				}
			}
		}
	}
}

// checkRoutingAfterComposition rejects agent_name, agent_map destinations
// and fan_out entries naming an instance composition renamed away.
func checkRoutingAfterComposition(rv *resolver, renamed map[string]string) error {
	var outdated []string
	var where tree.Origin
	note := func(at, name string, o tree.Origin) {
		if to, ok := renamed[name]; ok {
			outdated = append(outdated, fmt.Sprintf("  - %s: '%s' is now '%s'", at, name, to))
			if where.Kind == tree.FromNowhere {
				where = o
			}
		}
	}
	if n := rv.root.Get(agentNameKey); n != nil {
		v, err := rv.value(n, Path{{Key: agentNameKey}})
		if err != nil {
			return err
		}
		if v.Kind == tree.String {
			note(agentNameKey, v.Str, n.Origin)
		}
	}
	if n := rv.root.Get(agentMapKey); n != nil {
		v, err := rv.full(n, Path{{Key: agentMapKey}})
		if err != nil {
			return err
		}
		for _, e := range v.Entries {
			if e.Value.Kind == tree.String {
				note(agentMapKey+"["+e.Key+"]", e.Value.Str, e.Value.Origin)
			}
		}
	}
	if n := rv.root.Get(fanOutKey); n != nil {
		v, err := rv.full(n, Path{{Key: fanOutKey}})
		if err != nil {
			return err
		}
		for _, e := range v.Entries {
			for _, it := range e.Value.Items {
				if it.Kind == tree.String {
					note(fanOutKey+"["+e.Key+"]", it.Str, it.Origin)
				}
			}
		}
	}
	if len(outdated) == 0 {
		return nil
	}
	return errorf(ClassAgentComposition, where,
		"Routing names agent instances that no longer exist once the agent is swapped:\n%s\n\nUse the name the composed config reports.",
		strings.Join(outdated, "\n"))
}

// routeComposedNames writes agent_map routes from each replaced instance
// name to its replacement, for rows stamped before the swap; the routes a
// config declares win.
func routeComposedNames(rv *resolver, renames [][2]string) error {
	routes := tree.NewMap()
	routes.SetOrigin(tree.Origin{Kind: tree.FromDefault})
	for _, r := range renames {
		to := tree.NewString(r[1])
		to.Origin = routes.Origin
		routes.Set(r[0], to)
	}
	if n := rv.root.Get(agentMapKey); n != nil {
		v, err := rv.full(n, Path{{Key: agentMapKey}})
		if err != nil {
			return err
		}
		if v.Kind == tree.Map {
			routes.Origin = n.Origin
			for _, e := range v.Entries {
				routes.SetEntry(e)
			}
		}
	}
	rv.root.Set(agentMapKey, routes)
	return nil
}
