package simpleagent

import (
	"testing"

	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

func TestConfigKeysAreRead(t *testing.T) {
	servertest.ConfigKeysAreRead(t, Kind, "simple_agent", `policy_model:
  responses_api_models:
    openai_model:
      host: 127.0.0.1
      port: 8001
mcqa:
  resources_servers:
    mcqa:
      host: 127.0.0.1
      port: 8002
simple_agent:
  responses_api_agents:
    simple_agent:
      host: 127.0.0.1
      port: 8000
      resources_server: {type: resources_servers, name: mcqa}
      model_server: {type: responses_api_models, name: policy_model}
`)
}
