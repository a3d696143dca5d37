package agent

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Section reads typed keys of an agent's resolved config section the way
// Pydantic reads NeMo Gym's config models in lax mode. Absent and null keys
// take the default; errors name the instance and key and say what was found.
type Section struct {
	Instance string
	Node     *tree.Node
}

func (s Section) get(key string) *tree.Node {
	if s.Node == nil {
		return nil
	}
	if n := s.Node.Get(key); n != nil && n.Kind != tree.Null {
		return n
	}
	return nil
}

func (s Section) errorf(key, format string, args ...any) error {
	return fmt.Errorf("%s.%s: "+format, append([]any{s.Instance, key}, args...)...)
}

// Bool is an optional boolean.
func (s Section) Bool(key string, def bool) (bool, error) {
	n := s.get(key)
	if n == nil {
		return def, nil
	}
	if b, ok := laxBool(n); ok {
		return b, nil
	}
	return false, s.errorf(key, "a boolean is required, got %s", describe(n))
}

// Float is an optional finite number.
func (s Section) Float(key string, def float64) (float64, error) {
	n := s.get(key)
	if n == nil {
		return def, nil
	}
	v, ok := 0.0, false
	switch n.Kind {
	case tree.Int:
		v, ok = float64(n.Int), true
	case tree.Float:
		v, ok = n.Float, true
	case tree.String:
		f, err := strconv.ParseFloat(strings.TrimSpace(n.Str), 64)
		v, ok = f, err == nil
	}
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, s.errorf(key, "a finite number is required, got %s", describe(n))
	}
	return v, nil
}

// Int is an optional integer no smaller than min.
func (s Section) Int(key string, def, min int) (int, error) {
	n := s.get(key)
	if n == nil {
		return def, nil
	}
	v, ok := int64(0), false
	switch n.Kind {
	case tree.Int:
		v, ok = n.Int, true
	case tree.String:
		i, err := strconv.ParseInt(strings.TrimSpace(n.Str), 10, 0)
		v, ok = i, err == nil
	case tree.Float:
		v, ok = int64(n.Float), n.Float == math.Trunc(n.Float) && !math.IsInf(n.Float, 0)
	}
	if !ok || v < int64(min) {
		return 0, s.errorf(key, "an integer of at least %d is required, got %s", min, describe(n))
	}
	return int(v), nil
}

// ServerRef is a required reference to another server instance,
// {type: <wantType>, name: <instance>}; it returns the instance name.
func (s Section) ServerRef(key, wantType string) (string, error) {
	n := s.get(key)
	if n == nil || n.Kind != tree.Map {
		return "", s.errorf(key, "a server reference {type: %s, name: <instance>} is required, got %s", wantType, describe(n))
	}
	typ, name := n.Get("type"), n.Get("name")
	if typ == nil || typ.Kind != tree.String || typ.Str != wantType {
		return "", s.errorf(key+".type", "must be %s, got %s", wantType, describe(typ))
	}
	if name == nil || name.Kind != tree.String || name.Str == "" || name.Str == "???" {
		return "", s.errorf(key+".name", "the name of a %s instance is required, got %s", wantType, describe(name))
	}
	return name.Str, nil
}

// laxBool is Pydantic's lax boolean.
func laxBool(n *tree.Node) (bool, bool) {
	switch n.Kind {
	case tree.Bool:
		return n.Bool, true
	case tree.Int:
		if n.Int == 0 || n.Int == 1 {
			return n.Int == 1, true
		}
	case tree.String:
		switch strings.ToLower(strings.TrimSpace(n.Str)) {
		case "1", "true", "t", "yes", "y", "on":
			return true, true
		case "0", "false", "f", "no", "n", "off":
			return false, true
		}
	}
	return false, false
}

func describe(n *tree.Node) string {
	if n == nil {
		return "nothing"
	}
	return n.Kind.String() + " " + n.GoString()
}

// correlationFor reads the global switches of spec §7.2 and seed 000:
// observability_enabled and rollout_correlation turn correlation on for
// every agent; token_id_capture.enabled does for this agent when
// token_id_capture.all_agents or the agent's own token_id_capture is set.
func correlationFor(global *tree.Node, agentTokenCapture bool) (Correlation, error) {
	flag := func(path ...string) (bool, error) {
		n := global
		for _, k := range path {
			if n == nil || n.Kind != tree.Map {
				return false, nil
			}
			n = n.Get(k)
		}
		return globalFlag(global, n, strings.Join(path, "."))
	}
	var c Correlation
	for _, key := range []string{"observability_enabled", "rollout_correlation"} {
		on, err := flag(key)
		if err != nil {
			return Correlation{}, err
		}
		c.On = c.On || on
	}
	enabled, err := flag("token_id_capture", "enabled")
	if err != nil {
		return Correlation{}, err
	}
	all, err := flag("token_id_capture", "all_agents")
	if err != nil {
		return Correlation{}, err
	}
	c.TokenCapture = enabled && (all || agentTokenCapture)
	c.On = c.On || c.TokenCapture
	return c, nil
}

// globalFlag is the truth of a top-level switch. A server receives the
// global config with interpolations unresolved, and NeMo Gym resolves them
// when it reads the key, so an interpolated switch
// (`${oc.env:OBSERVABILITY,false}`) is resolved here too.
func globalFlag(global, n *tree.Node, path string) (bool, error) {
	if n != nil && n.Kind == tree.String && strings.Contains(n.Str, "${") {
		var err error
		if n, err = resolveGlobal(global, path); err != nil {
			return false, err
		}
	}
	if n == nil || n.Kind == tree.Null {
		return false, nil
	}
	if b, ok := laxBool(n); ok {
		return b, nil
	}
	return false, fmt.Errorf("%s: a boolean is required, got %s", path, describe(n))
}

// resolveGlobal resolves the global key at path with the config's own
// resolver: it is the only entry point that resolves against the whole
// config, so the key is referenced from a throwaway server section.
func resolveGlobal(global *tree.Node, path string) (*tree.Node, error) {
	const probe = "_gym_agent_global_probe"
	impl := tree.NewMap()
	impl.Set("value", tree.NewString("${"+path+"}"))
	typ := tree.NewMap()
	typ.Set("probe", impl)
	block := tree.NewMap()
	block.Set(config.AgentsType, typ)
	g := tree.NewMap()
	for _, e := range global.Entries {
		g.SetEntry(e)
	}
	g.Set(probe, block)
	section, _, _, err := config.InstanceSection(g, probe, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("resolving the global key %s: %w", path, err)
	}
	return section.Get("value"), nil
}
