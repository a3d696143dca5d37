package mathwithjudge

import (
	"testing"

	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

func TestConfigKeysAreRead(t *testing.T) {
	servertest.ConfigKeysAreRead(t, Kind, "math_with_judge", `policy_model:
  responses_api_models:
    openai_model:
      host: 127.0.0.1
      port: 8001
math_with_judge:
  resources_servers:
    math_with_judge:
      host: 127.0.0.1
      port: 8000
      judge_model_server: {type: responses_api_models, name: policy_model}
      judge_responses_create_params: {input: []}
      should_use_judge: true
`)
}
