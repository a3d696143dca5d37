package graphwalks

import (
	"testing"

	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

func TestConfigKeysAreRead(t *testing.T) {
	servertest.ConfigKeysAreRead(t, Kind, "graphwalks", `graphwalks:
  resources_servers:
    graphwalks:
      host: 127.0.0.1
      port: 8000
`)
}
