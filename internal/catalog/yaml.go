package catalog

import (
	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// serverGroups are the top-level server types of NeMo Gym, in the order
// metadata is searched.
var serverGroups = []string{"resources_servers", "responses_api_agents", "responses_api_models"}

// loadRaw reads a YAML file without resolving anything; nil when it cannot
// be read or parsed (listings never fail on one bad file).
func loadRaw(path string) *tree.Node {
	n, err := config.LoadFile(path)
	if err != nil {
		return nil
	}
	return n
}

// server is one server mapping found in a raw config:
// <instance>: {<group>: {<impl>: {...}}}.
type server struct {
	instance, group, impl string
	body                  *tree.Node
}

// servers lists every server mapping of a raw config, instances in file
// order, groups in serverGroups order.
func servers(n *tree.Node) []server {
	if n == nil || n.Kind != tree.Map {
		return nil
	}
	var out []server
	for _, inst := range n.Entries {
		if inst.Value == nil || inst.Value.Kind != tree.Map {
			continue
		}
		for _, g := range serverGroups {
			grp := inst.Value.Get(g)
			if grp == nil || grp.Kind != tree.Map {
				continue
			}
			for _, impl := range grp.Entries {
				if impl.Value != nil && impl.Value.Kind == tree.Map {
					out = append(out, server{instance: inst.Key, group: g, impl: impl.Key, body: impl.Value})
				}
			}
		}
	}
	return out
}

// hasGroup reports whether some top-level value is a mapping holding a
// mapping under group.
func hasGroup(n *tree.Node, group string) bool {
	if n == nil || n.Kind != tree.Map {
		return false
	}
	for _, inst := range n.Entries {
		if inst.Value != nil && inst.Value.Kind == tree.Map {
			if g := inst.Value.Get(group); g != nil && g.Kind == tree.Map {
				return true
			}
		}
	}
	return false
}

// str returns a node's string value, "" for anything else.
func str(n *tree.Node) string {
	if n == nil || n.Kind != tree.String {
		return ""
	}
	return n.Str
}

// text is NeMo Gym's `str(v) if v else None` for a config value: "" for a
// falsy value, else Python's str() of it (so `domain: 7` reads "7").
func text(n *tree.Node) string {
	if !config.Truthy(n) {
		return ""
	}
	return interp.PythonStr(n)
}

// containsTypeBenchmark reports whether a mapping with `type: benchmark`
// appears anywhere in n.
func containsTypeBenchmark(n *tree.Node) bool {
	if n == nil {
		return false
	}
	switch n.Kind {
	case tree.Map:
		if str(n.Get("type")) == "benchmark" {
			return true
		}
		for _, e := range n.Entries {
			if containsTypeBenchmark(e.Value) {
				return true
			}
		}
	case tree.List:
		for _, it := range n.Items {
			if containsTypeBenchmark(it) {
				return true
			}
		}
	}
	return false
}
