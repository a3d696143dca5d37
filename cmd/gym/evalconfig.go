package main

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/nemo-gym-go/gym/internal/capture"
	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/rollout"
	"github.com/nemo-gym-go/gym/internal/server"
)

// dummyPolicySeed is NeMo Gym's no-model seed for commands that read a
// benchmark's config but call no model (spec/config.md §9).
const dummyPolicySeed = `policy_base_url: ""
policy_api_key: ""
policy_model_name: ""
policy_model: {responses_api_models: {dummy_model: {entrypoint: app.py}}}
`

func dummyPolicy() *tree.Node {
	seed, err := pyyaml.Load([]byte(dummyPolicySeed), "<dummy policy>")
	if err != nil {
		panic(err) // a constant that does not parse is a bug in gym
	}
	return seed
}

// settings reads a command's own keys from the resolved config, so a flag
// and its +key=value override are the same thing, as in NeMo Gym.
type settings struct{ res *config.Result }

func (s settings) node(key string) (*tree.Node, error) {
	n, err := s.res.Value(key)
	if err != nil || n == nil || n.Kind == tree.Null {
		return nil, err
	}
	return n, nil
}

func (s settings) str(key string) (string, error) {
	n, err := s.node(key)
	if err != nil || n == nil {
		return "", err
	}
	switch n.Kind {
	case tree.String:
		return n.Str, nil
	case tree.Int:
		return strconv.FormatInt(n.Int, 10), nil
	}
	return "", fmt.Errorf("invalid configuration: %s must be a string, got %s", key, n.Kind)
}

// integer reads a whole number; def when unset.
func (s settings) integer(key string, def int) (int, error) {
	n, err := s.node(key)
	if err != nil || n == nil {
		return def, err
	}
	switch n.Kind {
	case tree.Int:
		return int(n.Int), nil
	case tree.String:
		if v, err := strconv.Atoi(strings.TrimSpace(n.Str)); err == nil {
			return v, nil
		}
	}
	return 0, fmt.Errorf("invalid configuration: %s must be an integer, got %s", key, describeValue(n))
}

func (s settings) number(key string, def float64) (float64, error) {
	n, err := s.node(key)
	if err != nil || n == nil {
		return def, err
	}
	switch n.Kind {
	case tree.Int:
		return float64(n.Int), nil
	case tree.Float:
		return n.Float, nil
	case tree.String:
		if v, err := strconv.ParseFloat(strings.TrimSpace(n.Str), 64); err == nil {
			return v, nil
		}
	}
	return 0, fmt.Errorf("invalid configuration: %s must be a number, got %s", key, describeValue(n))
}

func (s settings) boolean(key string) (bool, error) {
	n, err := s.node(key)
	if err != nil || n == nil {
		return false, err
	}
	return config.Truthy(n), nil
}

// object renders a map-valued key as JSON; nil when unset or empty.
func (s settings) object(key string) ([]byte, error) {
	n, err := s.node(key)
	if err != nil || n == nil {
		return nil, err
	}
	holder := tree.NewMap()
	holder.Set(key, n)
	return server.Section{Instance: "config", Node: holder}.JSONObject(key)
}

func describeValue(n *tree.Node) string {
	switch n.Kind {
	case tree.String:
		return strconv.Quote(n.Str)
	case tree.Int:
		return strconv.FormatInt(n.Int, 10)
	case tree.Float:
		return tree.PythonFloatRepr(n.Float)
	case tree.Bool:
		return strconv.FormatBool(n.Bool)
	}
	return n.Kind.String()
}

// missingConfig is NeMo Gym's pydantic message for required keys, a usage
// error (exit 2).
func missingConfig(keys ...string) error {
	return usageErrorf("missing required configuration: %s. Provide each via its flag (see --help) or as a +<key>=<value> override.", strings.Join(keys, ", "))
}

// captureStores is the capture directory the collector joins from, when
// observability_enabled is on, checked as NeMo Gym checks it.
func captureStores(s settings) ([]*capture.Store, error) {
	cs, err := capture.SettingsFrom(s.node)
	if err != nil || !cs.Enabled {
		return nil, err
	}
	store, err := capture.Open(cs.Dir)
	if err != nil {
		return nil, err
	}
	return []*capture.Store{store}, nil
}

// tokenCapture is training-token capture as the collector runs it, nil
// when token_id_capture is off: the store, and which agents take part
// (all_agents, or each agent's own token_id_capture flag).
func tokenCapture(s settings) (*rollout.TokenCapture, error) {
	ts, err := capture.TokenSettingsFrom(s.node)
	if err != nil || !ts.Enabled {
		return nil, err
	}
	tc := &rollout.TokenCapture{Settings: ts}
	if ts.Dir != "" {
		if tc.Store, err = capture.OpenTokens(ts.Dir); err != nil {
			return nil, err
		}
	}
	var mu sync.Mutex
	flags := map[string]bool{}
	tc.Participates = func(agent string) bool {
		if ts.AllAgents {
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		on, seen := flags[agent]
		if !seen {
			n, _ := s.node(agent)
			if n != nil && n.Kind == tree.Map {
				if agents := n.Get("responses_api_agents"); agents != nil && agents.Kind == tree.Map {
					for _, k := range agents.Keys() {
						if impl := agents.Get(k); impl != nil && impl.Kind == tree.Map {
							v, _ := config.LaxBool(impl.Get("token_id_capture"))
							on = on || v
						}
					}
				}
			}
			flags[agent] = on
		}
		return on
	}
	return tc, nil
}
