package mcqa

import (
	"testing"

	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

func TestConfigKeysAreRead(t *testing.T) {
	servertest.ConfigKeysAreRead(t, Kind, "mcqa", `mcqa:
  resources_servers:
    mcqa:
      host: 127.0.0.1
      port: 8000
      grading_mode: lenient_boxed
`)
}
