package rollout

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/nemo-gym-go/gym/internal/capture"
	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// CaptureStores is the capture directory the collector joins from, when
// observability_enabled is on, checked as NeMo Gym checks it.
func CaptureStores(s config.Settings) ([]*capture.Store, error) {
	cs, err := capture.SettingsFrom(s.Node)
	if err != nil || !cs.Enabled {
		return nil, err
	}
	store, err := capture.Open(cs.Dir)
	if err != nil {
		return nil, err
	}
	return []*capture.Store{store}, nil
}

// TokenCaptureFrom is training-token capture as the collector runs it, nil
// when token_id_capture is off: the store, and which agents take part
// (all_agents, or each agent's own token_id_capture flag).
func TokenCaptureFrom(s config.Settings) (*TokenCapture, error) {
	ts, err := capture.TokenSettingsFrom(s.Node)
	if err != nil || !ts.Enabled {
		return nil, err
	}
	tc := &TokenCapture{Settings: ts}
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
			on = agentCapturesTokens(s, agent)
			flags[agent] = on
		}
		return on
	}
	return tc, nil
}

// agentCapturesTokens is an agent instance's own token_id_capture flag.
func agentCapturesTokens(s config.Settings, agent string) bool {
	n, _ := s.Node(agent)
	if n == nil || n.Kind != tree.Map {
		return false
	}
	agents := n.Get("responses_api_agents")
	if agents == nil || agents.Kind != tree.Map {
		return false
	}
	for _, k := range agents.Keys() {
		if impl := agents.Get(k); impl != nil && impl.Kind == tree.Map {
			if v, _ := config.LaxBool(impl.Get("token_id_capture")); v {
				return true
			}
		}
	}
	return false
}

// MaxAttemptsEnv caps how many runs may attempt one rollout (NeMo Gym's).
const MaxAttemptsEnv = "NEMO_GYM_MAX_ROLLOUT_ATTEMPTS"

// DefaultMaxAttempts is NeMo Gym's cap when MaxAttemptsEnv is unset.
const DefaultMaxAttempts = 3

// MaxAttempts reads NEMO_GYM_MAX_ROLLOUT_ATTEMPTS; a bad value warns and
// falls back to 3, as in NeMo Gym.
func MaxAttempts(lookupEnv func(string) (string, bool), warn io.Writer) int {
	v, ok := lookupEnv(MaxAttemptsEnv)
	if !ok || v == "" {
		return DefaultMaxAttempts
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		fmt.Fprintf(warn, "Warning: %s=%q is not a positive integer; using %d\n", MaxAttemptsEnv, v, DefaultMaxAttempts)
		return DefaultMaxAttempts
	}
	return n
}
