// Package inferenceprovider is NeMo Gym's inference_provider server in Go:
// for hosted providers that only expose Chat Completions (OpenRouter,
// Together, Fireworks, …), Responses requests are translated to Chat
// Completions and the answers back.
package inferenceprovider

import (
	"net/http"
	"slices"

	"github.com/nemo-gym-go/gym/internal/chatbackend"
	"github.com/nemo-gym-go/gym/internal/modelserver"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Kind and ClassName as NeMo Gym names them.
const (
	Kind      = "responses_api_models/inference_provider"
	ClassName = "InferenceProviderModel"
)

func init() {
	server.Register(Kind, ClassName, New, slices.Concat(modelserver.UpstreamConfigKeys, []string{"base_url", "model", "api_key", "extra_body", "uses_reasoning_parser", "drop_unrepresentable_request_fields", "num_concurrent_requests"})...)
}

// New builds the server from its config section.
func New(rt *server.Runtime) (http.Handler, error) {
	s := modelserver.Section{Instance: rt.Instance, Node: rt.Config}
	base, err := s.BaseURL("base_url")
	if err != nil {
		return nil, err
	}
	opts := chatbackend.Options{Replicas: []string{base}}
	if opts.Model, err = s.String("model"); err != nil {
		return nil, err
	}
	key, err := s.String("api_key")
	if err != nil {
		return nil, err
	}
	if opts.ExtraBody, err = s.JSONObject("extra_body"); err != nil {
		return nil, err
	}
	if opts.Chat.ParseThink, err = s.Bool("uses_reasoning_parser", false); err != nil {
		return nil, err
	}
	if opts.Chat.DropUnrepresentable, err = s.Bool("drop_unrepresentable_request_fields", false); err != nil {
		return nil, err
	}
	if opts.Upstream, err = modelserver.UpstreamOptionsFromConfig(rt); err != nil {
		return nil, err
	}
	// NeMo Gym's num_concurrent_requests (default 1000) is this server's
	// name for max_concurrent_requests.
	if opts.Upstream.MaxConcurrentRequests, err = s.Int("num_concurrent_requests", 1000, 1); err != nil {
		return nil, err
	}
	opts.Upstream.APIKey = key
	b, err := chatbackend.New(opts)
	if err != nil {
		return nil, err
	}
	return modelserver.Serve(rt, b)
}
