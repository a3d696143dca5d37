package legacyagent

import (
	"testing"

	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

func TestConfigKeysAreRead(t *testing.T) {
	servertest.ConfigKeysAreRead(t, Kind, "relay", relayConfig("127.0.0.1:8001",
		"max_concurrent_episodes: 4", "queue_timeout_seconds: 30", "default_episode_timeout_seconds: 21600", "cleanup_timeout_seconds: 180"))
}
