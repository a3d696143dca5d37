package inferenceprovider

import (
	"testing"

	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

func TestConfigKeysAreRead(t *testing.T) {
	servertest.ConfigKeysAreRead(t, Kind, "policy_model", `policy_model:
  responses_api_models:
    inference_provider:
      host: 127.0.0.1
      port: 8000
      base_url: http://127.0.0.1:9/v1
      api_key: dummy
      model: qwen
`)
}
