// Package chatbackend is the model-server backend for upstreams that only
// speak Chat Completions (vLLM, hosted inference providers): Responses
// requests are translated to Chat Completions and the answers back, with
// seed 000's rejection rules, while Chat Completions requests pass through.
// A list of upstream replicas is supported; a session sticks to one of
// them so its KV cache is reused.
package chatbackend

import (
	"github.com/nemo-gym-go/gym/internal/config"

	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/modelserver"
	"github.com/nemo-gym-go/gym/internal/openai"
)

// Options configure a Backend.
type Options struct {
	// Replicas are the upstream base URLs (each including /v1).
	Replicas []string
	// Upstream holds everything but the base URL, shared by every replica.
	Upstream modelserver.UpstreamOptions
	Model    string
	// ExtraBody is merged under every upstream request (request keys win).
	ExtraBody []byte
	// ChatTemplateKwargs, when set, is sent as the request's
	// chat_template_kwargs unless the request has its own.
	ChatTemplateKwargs []byte
	Chat               openai.ChatOptions
	// Tokenize fetches prompt token ids from vLLM's /tokenize when the
	// completion lacks them and token ids were asked for.
	Tokenize bool
	// RequestTokenIDs (request_prompt_and_generation_token_ids) asks vLLM
	// for return_token_ids as well, so /tokenize is not needed.
	RequestTokenIDs bool
	// Name is the server's instance name, for NeMo Gym's messages.
	Name string
}

// ProvidesTokenIDs is whether answers carry token ids and log
// probabilities (return_token_id_information), which training-token
// capture records.
func (b *Backend) ProvidesTokenIDs() bool { return b.opts.Chat.ReturnTokenIDs }

// Backend implements modelserver.Backend over Chat Completions upstreams.
type Backend struct {
	replicas  []*modelserver.Upstream
	tokenizer []*modelserver.Upstream // per replica, its root without /v1; nil unless Tokenize
	roots     []string                // per replica, its root as messages show it, secrets redacted
	opts      Options
}

// New builds a Backend with one upstream client per replica.
func New(opts Options) (*Backend, error) {
	if len(opts.Replicas) == 0 {
		return nil, errors.New("no upstream base_url is configured")
	}
	b := &Backend{opts: opts}
	for _, base := range opts.Replicas {
		o := opts.Upstream
		o.BaseURL = strings.TrimRight(base, "/")
		up, err := modelserver.NewUpstream(o)
		if err != nil {
			return nil, err
		}
		b.replicas = append(b.replicas, up)
		if opts.Tokenize {
			o.BaseURL = strings.TrimSuffix(o.BaseURL, "/v1")
			tok, err := modelserver.NewUpstream(o)
			if err != nil {
				return nil, err
			}
			b.tokenizer = append(b.tokenizer, tok)
			b.roots = append(b.roots, config.RedactURL(o.BaseURL))
		}
	}
	return b, nil
}

// replica picks the upstream for a session: the first 8 hex digits of
// sha256(session id) modulo the replica count, as NeMo Gym's vllm_model
// does, so every request of a rollout lands on one replica.
func (b *Backend) replica(sessionID string) int {
	if len(b.replicas) == 1 || sessionID == "" {
		return 0
	}
	sum := sha256.Sum256([]byte(sessionID))
	n, _ := strconv.ParseUint(hex.EncodeToString(sum[:])[:8], 16, 64)
	return int(n % uint64(len(b.replicas)))
}

// Responses translates the request to Chat Completions, calls the upstream
// without streaming, and translates the answer back; a streaming client
// gets the answer as synthesized Responses SSE.
func (b *Backend) Responses(ctx context.Context, body []byte, call modelserver.CallInfo) (*modelserver.Result, error) {
	body, err := openai.SetModel(body, b.opts.Model)
	if err != nil {
		return nil, err
	}
	chatReq, err := openai.ResponsesToChatRequest(body, b.opts.Chat)
	if err != nil {
		return nil, badRequest(err)
	}
	if chatReq, err = b.prepareChat(chatReq); err != nil {
		return nil, err
	}
	idx := b.replica(call.SessionID)
	upCall := call
	upCall.Stream = false
	res, err := b.replicas[idx].Post(ctx, "/chat/completions", chatReq, upCall)
	if err != nil {
		return nil, err
	}
	completion := res.Body
	if completion, err = b.promptTokenIDs(ctx, idx, chatReq, completion, upCall); err != nil {
		return nil, err
	}
	resp, err := openai.ChatToResponsesResponse(completion, body, b.opts.Chat)
	if err != nil {
		return nil, &modelserver.StatusError{Status: http.StatusBadGateway, Header: jsonHeader(),
			Body: errorBody("upstream_invalid_response", "the upstream's chat completion cannot be read as a Responses answer: "+err.Error())}
	}
	if call.Stream {
		h := http.Header{}
		h.Set("Content-Type", "text/event-stream")
		return &modelserver.Result{Header: h, Body: openai.SynthesizeResponsesSSE(resp), Complete: resp}, nil
	}
	return &modelserver.Result{Header: jsonHeader(), Body: resp}, nil
}

// ChatCompletions passes the request through with the configured model and
// extra_body, streaming or not, to the session's replica. With token ids
// asked for, it is NeMo Gym's: the upstream is called without streaming,
// the token ids are moved onto the message, and a streaming client gets
// the answer as synthesized SSE.
func (b *Backend) ChatCompletions(ctx context.Context, body []byte, call modelserver.CallInfo) (*modelserver.Result, error) {
	body, err := openai.SetModel(body, b.opts.Model)
	if err != nil {
		return nil, err
	}
	if body, err = b.prepareChat(body); err != nil {
		return nil, err
	}
	idx := b.replica(call.SessionID)
	if !b.opts.Chat.ReturnTokenIDs {
		return b.replicas[idx].Post(ctx, "/chat/completions", body, call)
	}
	upstreamBody, err := sjson.DeleteBytes(body, "stream")
	if err == nil {
		upstreamBody, err = sjson.DeleteBytes(upstreamBody, "stream_options")
	}
	if err != nil {
		return nil, err
	}
	upCall := call
	upCall.Stream = false
	res, err := b.replicas[idx].Post(ctx, "/chat/completions", upstreamBody, upCall)
	if err != nil {
		return nil, err
	}
	completion, err := b.promptTokenIDs(ctx, idx, body, res.Body, upCall)
	if err != nil {
		return nil, err
	}
	if completion, err = openai.MoveChatTokenFields(completion); err != nil {
		return nil, &modelserver.StatusError{Status: http.StatusBadGateway, Header: jsonHeader(),
			Body: errorBody("upstream_invalid_response", "the upstream's chat completion carries no usable token ids: "+err.Error())}
	}
	if call.Stream {
		h := http.Header{}
		h.Set("Content-Type", "text/event-stream")
		return &modelserver.Result{Header: h, Body: openai.SynthesizeChatSSE(completion, gjson.GetBytes(body, "stream_options.include_usage").Bool()), Complete: completion}, nil
	}
	return &modelserver.Result{Header: jsonHeader(), Body: completion}, nil
}

// tokenRequestFields are what NeMo Gym's vllm_model sets, over the
// request's own, when token ids are asked for: the chosen token's id and
// log probability, and nothing of the alternatives.
var tokenRequestFields = []struct{ key, raw string }{
	{"logprobs", "true"}, {"top_logprobs", "0"}, {"return_tokens_as_token_ids", "true"},
}

// prepareChat is NeMo Gym's order: the token fields over the request's,
// a null top_logprobs dropped (vLLM reads it as no log probabilities), extra_body under the request, then the
// configured chat_template_kwargs where there are none, and n=1 when token
// ids are asked for.
func (b *Backend) prepareChat(req []byte) ([]byte, error) {
	var err error
	if b.opts.Chat.ReturnTokenIDs {
		fields := tokenRequestFields
		if b.opts.RequestTokenIDs {
			fields = append(fields[:len(fields):len(fields)], struct{ key, raw string }{"return_token_ids", "true"})
		}
		for _, f := range fields {
			if req, err = sjson.SetRawBytes(req, f.key, []byte(f.raw)); err != nil {
				return nil, fmt.Errorf("setting %s: %w", f.key, err)
			}
		}
	}
	if v := gjson.GetBytes(req, "top_logprobs"); b.opts.Tokenize && v.Exists() && v.Type == gjson.Null {
		if req, err = sjson.DeleteBytes(req, "top_logprobs"); err != nil {
			return nil, err
		}
	}
	if b.opts.ExtraBody != nil {
		if req, err = openai.MergeUnder(req, b.opts.ExtraBody); err != nil {
			return nil, fmt.Errorf("merging extra_body into the request: %w", err)
		}
	}
	if b.opts.ChatTemplateKwargs != nil && !gjson.GetBytes(req, "chat_template_kwargs").Exists() {
		if req, err = sjson.SetRawBytes(req, "chat_template_kwargs", b.opts.ChatTemplateKwargs); err != nil {
			return nil, fmt.Errorf("setting chat_template_kwargs: %w", err)
		}
	}
	if n := gjson.GetBytes(req, "n"); b.opts.Chat.ReturnTokenIDs && n.Exists() && n.Type != gjson.Null && n.Raw != "1" {
		return nil, &modelserver.StatusError{Status: http.StatusBadRequest, Header: jsonHeader(),
			Body: errorBody("invalid_request", fmt.Sprintf("NeMo Gym server `%s` requires n=1 for token capture.", b.opts.Name))}
	}
	return req, nil
}

// tokenizeFields are the request fields that shape the prompt, which
// /tokenize is given as NeMo Gym's vllm_model gives them, so the ids are
// those of the prompt that was generated from.
var tokenizeFields = [...]string{"model", "messages", "tools", "chat_template_kwargs", "mm_processor_kwargs", "required_prefix_token_ids"}

// promptTokenIDs asks vLLM's /tokenize for the prompt's token ids, as
// NeMo Gym's vllm_model does, when token ids were asked for and the
// completion carries neither them nor a message that has its own.
func (b *Backend) promptTokenIDs(ctx context.Context, idx int, chatReq, completion []byte, call modelserver.CallInfo) ([]byte, error) {
	if !b.opts.Tokenize || !b.opts.Chat.ReturnTokenIDs || gjson.GetBytes(completion, "prompt_token_ids").Exists() ||
		gjson.GetBytes(completion, "choices.0.message.prompt_token_ids").Exists() {
		return completion, nil
	}
	tok := []byte("{}")
	var err error
	for _, f := range tokenizeFields {
		if v := gjson.GetBytes(chatReq, f); v.Exists() {
			if tok, err = sjson.SetRawBytes(tok, f, []byte(v.Raw)); err != nil {
				return nil, err
			}
		}
	}
	res, err := b.tokenizer[idx].Post(ctx, "/tokenize", tok, call)
	if err != nil {
		return nil, fmt.Errorf("fetching prompt token ids from %s/tokenize: %w", b.roots[idx], err)
	}
	ids := gjson.GetBytes(res.Body, "tokens")
	if !ids.IsArray() {
		return nil, fmt.Errorf("%s/tokenize answered without a tokens list", b.roots[idx])
	}
	return sjson.SetRawBytes(completion, "prompt_token_ids", []byte(ids.Raw))
}

func jsonHeader() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return h
}

func errorBody(code, message string) []byte {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message, "type": "invalid_request_error", "code": code,
	}})
	return body
}

// badRequest answers a request the Chat Completions format cannot carry
// with a 400 in OpenAI's error shape, naming the field.
func badRequest(err error) error {
	var ue *openai.UnrepresentableError
	var ie *openai.InvalidError
	code := ""
	switch {
	case errors.As(err, &ue):
		code = "unrepresentable_in_chat_completions"
	case errors.As(err, &ie):
		code = "invalid_request"
	default:
		return err
	}
	return &modelserver.StatusError{Status: http.StatusBadRequest, Header: jsonHeader(), Body: errorBody(code, err.Error())}
}
