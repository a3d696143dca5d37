package rollout

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/launcher"
	"github.com/nemo-gym-go/gym/internal/resolve"
	"github.com/nemo-gym-go/gym/internal/server"
)

// AgentURLs finds an agent instance's base URL by name.
type AgentURLs func(ctx context.Context, agent string) (string, error)

// ConfigAgentURLs finds agents in a config whose ports are assigned.
func ConfigAgentURLs(global *tree.Node) AgentURLs {
	var cache sync.Map
	return func(_ context.Context, agent string) (string, error) {
		if u, ok := cache.Load(agent); ok {
			return u.(string), nil
		}
		if n := global.Get(agent); n == nil || n.Kind != tree.Map || n.Get("responses_api_agents") == nil {
			var known []string
			for _, e := range global.Entries {
				if e.Value.Kind == tree.Map && e.Value.Get("responses_api_agents") != nil {
					known = append(known, e.Key)
				}
			}
			return "", fmt.Errorf("no agent server instance is named %q; the config has %s.%s", agent, strings.Join(known, ", "), resolve.DidYouMean(agent, known))
		}
		u, err := server.ServerURL(global, agent)
		if err != nil {
			return "", err
		}
		cache.Store(agent, u)
		return u, nil
	}
}

// HeadAgentURLs finds agents through the head server of servers started by
// `gym env start`, as NeMo Gym's --no-serve collector does. The servers are
// the head server's, which the local config may not name: client trusts
// them with the run token (if any) too.
func HeadAgentURLs(res *config.Result, client *server.Client) AgentURLs {
	var (
		once   sync.Once
		lookup AgentURLs
		err    error
	)
	return func(ctx context.Context, agent string) (string, error) {
		once.Do(func() {
			var global *tree.Node
			global, err = launcher.NewHeadClient(res).Config(ctx)
			if err == nil {
				lookup = ConfigAgentURLs(global)
				client.TrustServers(server.RunServers(global, res.LookupEnv))
			}
		})
		if err != nil {
			return "", err
		}
		return lookup(ctx, agent)
	}
}
