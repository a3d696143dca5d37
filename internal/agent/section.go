package agent

import (
	"fmt"
	"os"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Section is the config reader every Go server shares.
type Section = server.Section

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
		if key == "observability_enabled" {
			c.Observability = on
		}
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
		if n, err = config.ResolveGlobal(global, path, os.LookupEnv); err != nil {
			return false, fmt.Errorf("resolving the global key %s: %w", path, err)
		}
	}
	if n == nil || n.Kind == tree.Null {
		return false, nil
	}
	if b, ok := config.LaxBoolOK(n); ok {
		return b, nil
	}
	return false, fmt.Errorf("%s: a boolean is required, got %s", path, describe(n))
}
