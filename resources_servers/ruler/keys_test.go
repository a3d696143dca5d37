package ruler

import (
	"testing"

	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

func TestConfigKeysAreRead(t *testing.T) {
	servertest.ConfigKeysAreRead(t, Kind, "ruler", `ruler:
  resources_servers:
    ruler:
      host: 127.0.0.1
      port: 8000
`)
}
