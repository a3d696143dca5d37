package legacyagent

import (
	"testing"

	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

func TestConfigKeysAreRead(t *testing.T) {
	servertest.ConfigKeysAreRead(t, Kind, "relay", `relay:
  environment_servers:
    legacy_agent:
      host: 127.0.0.1
      port: 8000
      agent_server:
        type: responses_api_agents
        name: agent
      max_concurrent_episodes: 4
      queue_timeout_seconds: 30
      default_episode_timeout_seconds: 21600
      cleanup_timeout_seconds: 180
agent:
  responses_api_agents:
    simple_agent:
      host: 127.0.0.1
      port: 8001
`)
}
