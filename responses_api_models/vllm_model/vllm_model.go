// Package vllmmodel is NeMo Gym's vllm_model server in Go: Responses
// requests are translated to a vLLM server's Chat Completions (reasoning
// through <think> tags or reasoning_content, token ids and log probabilities
// for RL when asked), and sessions stick to one of several replicas.
package vllmmodel

import (
	"net/http"
	"slices"

	"github.com/nemo-gym-go/gym/internal/chatbackend"
	"github.com/nemo-gym-go/gym/internal/modelserver"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Kind and ClassName as NeMo Gym names them.
const (
	Kind      = "responses_api_models/vllm_model"
	ClassName = "VLLMModel"
)

func init() {
	server.Register(Kind, ClassName, New, slices.Concat(modelserver.UpstreamConfigKeys, []string{"base_url", "model", "api_key", "extra_body", "chat_template_kwargs", "default_headers", "return_token_id_information", "request_prompt_and_generation_token_ids", "uses_reasoning_parser", "replace_developer_role_with_system", "drop_unrepresentable_request_fields"})...)
}

// New builds the server from its config section.
func New(rt *server.Runtime) (http.Handler, error) {
	s := modelserver.Section{Instance: rt.Instance, Node: rt.Config}
	replicas, err := s.StringList("base_url")
	if err != nil || len(replicas) == 0 {
		one, err := s.BaseURL("base_url")
		if err != nil {
			return nil, err
		}
		replicas = []string{one}
	}
	opts := chatbackend.Options{Replicas: replicas, Tokenize: true, Name: rt.Instance}
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
	if opts.ChatTemplateKwargs, err = s.JSONObject("chat_template_kwargs"); err != nil {
		return nil, err
	}
	headers, err := s.StringMap("default_headers")
	if err != nil {
		return nil, err
	}
	flags := []struct {
		dst *bool
		key string
		def bool
	}{
		{&opts.Chat.ReturnTokenIDs, "return_token_id_information", false},
		{&opts.RequestTokenIDs, "request_prompt_and_generation_token_ids", false},
		{&opts.Chat.ParseThink, "uses_reasoning_parser", false},
		{&opts.Chat.ReplaceDeveloperRoleWithSystem, "replace_developer_role_with_system", false},
		{&opts.Chat.DropUnrepresentable, "drop_unrepresentable_request_fields", false},
	}
	for _, f := range flags {
		if *f.dst, err = s.Bool(f.key, f.def); err != nil {
			return nil, err
		}
	}
	if opts.Upstream, err = modelserver.UpstreamOptionsFromConfig(rt); err != nil {
		return nil, err
	}
	opts.Upstream.APIKey, opts.Upstream.Headers = key, headers
	b, err := chatbackend.New(opts)
	if err != nil {
		return nil, err
	}
	return modelserver.Serve(rt, b)
}
