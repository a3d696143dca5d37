package replaymodel

import (
	"testing"

	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

func TestConfigKeysAreRead(t *testing.T) {
	servertest.ConfigKeysAreRead(t, Kind, "policy_model", `policy_model:
  responses_api_models:
    replay_model:
      host: 127.0.0.1
      port: 8000
      rollouts_jsonl_fpath: testdata/reasoning_rollouts.jsonl
`)
}
