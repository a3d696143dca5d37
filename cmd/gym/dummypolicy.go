package main

import (
	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// dummyPolicySeed is NeMo Gym's no-model seed for commands that read a
// benchmark's config but call no model (spec/config.md §9).
const dummyPolicySeed = `policy_base_url: ""
policy_api_key: ""
policy_model_name: ""
policy_model: {responses_api_models: {dummy_model: {entrypoint: app.py}}}
`

func dummyPolicy() *tree.Node {
	seed, err := pyyaml.Load([]byte(dummyPolicySeed), "<dummy policy>")
	if err != nil {
		panic(err) // a constant that does not parse is a bug in gym
	}
	return seed
}
