package main

// Linking the built-in Go servers: each registers itself with
// internal/server from init, so `gym serve` (and `gym env start`, which
// decides between Python and Go) can find it.
import (
	_ "github.com/nemo-gym-go/gym/environment_servers/legacy_agent"
	_ "github.com/nemo-gym-go/gym/resources_servers/example_single_tool_call"
	_ "github.com/nemo-gym-go/gym/resources_servers/graphwalks"
	_ "github.com/nemo-gym-go/gym/resources_servers/math_with_judge"
	_ "github.com/nemo-gym-go/gym/resources_servers/mcqa"
	_ "github.com/nemo-gym-go/gym/resources_servers/ruler"
	_ "github.com/nemo-gym-go/gym/responses_api_agents/simple_agent"
	_ "github.com/nemo-gym-go/gym/responses_api_models/inference_provider"
	_ "github.com/nemo-gym-go/gym/responses_api_models/openai_model"
	_ "github.com/nemo-gym-go/gym/responses_api_models/replay_model"
	_ "github.com/nemo-gym-go/gym/responses_api_models/vllm_model"
)
