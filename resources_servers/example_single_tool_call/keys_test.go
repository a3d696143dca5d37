package examplesingletoolcall

import (
	"testing"

	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

func TestConfigKeysAreRead(t *testing.T) {
	servertest.ConfigKeysAreRead(t, Kind, "example_single_tool_call", `example_single_tool_call:
  resources_servers:
    example_single_tool_call:
      host: 127.0.0.1
      port: 8000
`)
}
