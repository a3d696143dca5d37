package openaimodel

import (
	"testing"

	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

func TestConfigKeysAreRead(t *testing.T) {
	servertest.ConfigKeysAreRead(t, Kind, "policy_model", `policy_model:
  responses_api_models:
    openai_model:
      host: 127.0.0.1
      port: 8000
      openai_base_url: http://127.0.0.1:9/v1
      openai_api_key: dummy
      openai_model: gpt-4o
`)
}
