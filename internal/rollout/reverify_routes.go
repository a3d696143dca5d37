package rollout

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Row keys NeMo Gym routes a rollout to its resources server by.
const (
	TaskSourceKey        = "task_source"
	EnvironmentServerKey = "_ng_environment_server"
)

// Routes says which resources server instance verifies a rollout, as NeMo
// Gym's reverification routes it: the row's task_source when it names a
// resources server, else the resources server of the environment server
// that ran it, else the one its agent's config names. A config without
// agents but with exactly one resources server sends every rollout there.
type Routes struct {
	global  *tree.Node
	agentRS map[string]string
	// only is the resources server of a config without agents.
	only string
	// Warning is what the user must hear about this routing (the fallback
	// to the only resources server); "" when nothing.
	Warning string
}

// NewRoutes reads the routes from a resolved config.
func NewRoutes(global *tree.Node) (*Routes, error) {
	r := &Routes{global: global, agentRS: map[string]string{}}
	var resourcesServers []string
	for _, e := range global.Entries {
		if e.Value.Kind != tree.Map {
			continue
		}
		if agents := e.Value.Get(config.AgentsType); agents != nil && agents.Kind == tree.Map && agents.Len() > 0 {
			impl := agents.Entries[0].Value
			if rs := stringAt(impl, "resources_server", "name"); rs != "" {
				r.agentRS[e.Key] = rs
			}
		}
		if rs := e.Value.Get(config.ResourcesType); rs != nil && rs.Kind == tree.Map {
			resourcesServers = append(resourcesServers, e.Key)
		}
	}
	if len(r.agentRS) > 0 {
		return r, nil
	}
	switch len(resourcesServers) {
	case 0:
		return nil, fmt.Errorf("reverify: no resources server found in the config; give the --benchmark, --resources-server or --config the rollouts were collected with")
	case 1:
		r.only = resourcesServers[0]
		r.Warning = fmt.Sprintf("the config has no agent blocks, so every rollout goes to its only resources server %s; mismatched or stale agent names cannot be detected this way", r.only)
		return r, nil
	}
	return nil, fmt.Errorf("reverify: the config has several resources servers (%s) and no agent to route the rollouts by; use a config with the agents the rollouts name", strings.Join(resourcesServers, ", "))
}

// For names the resources server instance that verifies row.
func (r *Routes) For(row gjson.Result) (string, error) {
	ts := row.Get(TaskSourceKey)
	if ts.Type == gjson.String {
		if b := r.global.Get(ts.Str); b != nil && b.Kind == tree.Map && b.Get(config.ResourcesType) != nil {
			return ts.Str, nil
		}
	}
	if es := row.Get(EnvironmentServerKey); es.Type == gjson.String {
		if b := r.global.Get(es.Str); b != nil && b.Kind == tree.Map {
			if envs := b.Get(config.EnvironmentsType); envs != nil && envs.Kind == tree.Map {
				for _, e := range envs.Entries {
					if rs := stringAt(e.Value, "resources_server", "name"); rs != "" {
						return rs, nil
					}
				}
			}
		}
	}
	if r.only != "" {
		return r.only, nil
	}
	agent := row.Get(AgentRefKey + ".name")
	if rs, ok := r.agentRS[agent.Str]; ok && agent.Type == gjson.String {
		return rs, nil
	}
	known := make([]string, 0, len(r.agentRS))
	for a := range r.agentRS {
		known = append(known, a)
	}
	sort.Strings(known)
	return "", fmt.Errorf("cannot find a resources server for the rollout (agent_ref.name=%s, task_source=%s); the config's agents are %s",
		orNone(agent), orNone(ts), strings.Join(known, ", "))
}

func orNone(v gjson.Result) string {
	if !v.Exists() {
		return "None"
	}
	return v.Raw
}

// stringAt is the string at a path of map keys; "" when absent.
func stringAt(n *tree.Node, path ...string) string {
	for _, k := range path {
		if n == nil || n.Kind != tree.Map {
			return ""
		}
		n = n.Get(k)
	}
	if n == nil || n.Kind != tree.String {
		return ""
	}
	return n.Str
}

// ServersFor is the part of res a reverification starts: the named
// resources servers and every server their configs reference, however
// deeply (a judge's model server), in the config's order. The agents and
// the policy model the rollouts were collected with are left out.
func ServersFor(res *config.Result, resolved *tree.Node, names []string) []*config.Instance {
	want := map[string]bool{}
	queue := slices.Clone(names)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if want[name] {
			continue
		}
		want[name] = true
		block := resolved.Get(name)
		if block == nil {
			continue
		}
		walkRefs(block, func(ref string) { queue = append(queue, ref) })
	}
	var out []*config.Instance
	for _, in := range res.Instances {
		if want[in.Name] {
			out = append(out, in)
		}
	}
	return out
}

// walkRefs calls fn with the instance name of every server reference
// ({type: <server type>, name: ...}) inside n.
func walkRefs(n *tree.Node, fn func(string)) {
	switch n.Kind {
	case tree.Map:
		t, name := n.Get("type"), n.Get("name")
		if t != nil && name != nil && t.Kind == tree.String && name.Kind == tree.String && slices.Contains(config.ServerTypes, t.Str) {
			fn(name.Str)
		}
		for _, e := range n.Entries {
			walkRefs(e.Value, fn)
		}
	case tree.List:
		for _, it := range n.Items {
			walkRefs(it, fn)
		}
	}
}
