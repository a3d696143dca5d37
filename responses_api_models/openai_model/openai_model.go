// Package openaimodel is NeMo Gym's openai_model server in Go: a
// pass-through to an OpenAI-compatible endpoint that serves both the
// Responses API and Chat Completions natively. Requests go upstream in the
// format they came in; only `model` (always the configured one), the
// extra_body defaults and, when asked, replayed reasoning items are
// touched. Non-streaming Responses results get the provider reasoning fix;
// streams are relayed as they arrive.
package openaimodel

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/nemo-gym-go/gym/internal/modelserver"
	"github.com/nemo-gym-go/gym/internal/openai"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Kind and ClassName as NeMo Gym names them, so the session cookie is
// `SimpleModelServer___<instance>` in mixed Go/Python deployments too.
const (
	Kind      = "responses_api_models/openai_model"
	ClassName = "SimpleModelServer"
)

func init() {
	server.Register(Kind, ClassName, New, slices.Concat(modelserver.UpstreamConfigKeys, []string{"openai_base_url", "openai_api_key", "openai_model", "extra_body", "openai_default_headers", "drop_input_reasoning_items"})...)
}

// New builds the server's handler from its config section.
func New(rt *server.Runtime) (http.Handler, error) {
	b, err := newBackend(rt)
	if err != nil {
		return nil, err
	}
	return modelserver.Serve(rt, b)
}

type backend struct {
	up            *modelserver.Upstream
	model         string
	extraBody     []byte // a JSON object, or nil
	dropReasoning bool
}

func newBackend(rt *server.Runtime) (*backend, error) {
	s := modelserver.Section{Instance: rt.Instance, Node: rt.Config}
	base, err := s.BaseURL("openai_base_url")
	if err != nil {
		return nil, err
	}
	key, err := s.String("openai_api_key")
	if err != nil {
		return nil, err
	}
	model, err := s.String("openai_model")
	if err != nil {
		return nil, err
	}
	extra, err := s.JSONObject("extra_body")
	if err != nil {
		return nil, err
	}
	headers, err := s.StringMap("openai_default_headers")
	if err != nil {
		return nil, err
	}
	drop, err := s.Bool("drop_input_reasoning_items", false)
	if err != nil {
		return nil, err
	}
	opts, err := modelserver.UpstreamOptionsFromConfig(rt)
	if err != nil {
		return nil, err
	}
	opts.BaseURL, opts.APIKey, opts.Headers = base, key, headers
	up, err := modelserver.NewUpstream(opts)
	if err != nil {
		return nil, err
	}
	return &backend{up: up, model: model, extraBody: extra, dropReasoning: drop}, nil
}

// prepare applies what every request gets: extra_body under the request's
// own fields, then the configured model over whatever the client named.
// The handler has checked that body is a JSON object, so an error here is
// a bug, reported as a 500. A body the handler validated (call.Checked) is
// not validated again for the model, whose place the check found unless
// extra_body has moved it; MergeUnder keeps the body valid.
func (b *backend) prepare(body []byte, call modelserver.CallInfo) ([]byte, error) {
	var err error
	if b.extraBody != nil {
		if body, err = openai.MergeUnder(body, b.extraBody); err != nil {
			return nil, fmt.Errorf("merging extra_body into the request: %w", err)
		}
		if call.Checked {
			return openai.SetModelChecked(body, b.model), nil
		}
	} else if call.Checked {
		return openai.SetModelAt(body, call.Model, b.model), nil
	}
	if body, err = openai.SetModel(body, b.model); err != nil {
		return nil, fmt.Errorf("setting the request's model: %w", err)
	}
	return body, nil
}

func (b *backend) Responses(ctx context.Context, body []byte, call modelserver.CallInfo) (*modelserver.Result, error) {
	body, err := b.prepare(body, call)
	if err != nil {
		return nil, err
	}
	if b.dropReasoning {
		if body, err = openai.DropInputReasoning(body); err != nil {
			return nil, fmt.Errorf("dropping the input's reasoning items: %w", err)
		}
	}
	res, err := b.up.Post(ctx, "/responses", body, call)
	if err != nil {
		return nil, err
	}
	if res.Stream != nil {
		res.Stream = modelserver.FixReasoningStream(res.Stream)
	} else {
		res.Body = openai.FixProviderReasoning(res.Body)
	}
	return res, nil
}

func (b *backend) ChatCompletions(ctx context.Context, body []byte, call modelserver.CallInfo) (*modelserver.Result, error) {
	body, err := b.prepare(body, call)
	if err != nil {
		return nil, err
	}
	return b.up.Post(ctx, "/chat/completions", body, call)
}
