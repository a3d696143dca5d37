package modelserver

import (
	"context"
	"log/slog"

	"github.com/nemo-gym-go/gym/internal/capture"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/server"
)

// tokenIDProvider is a backend that can say whether its answers carry
// token ids; one that cannot say cannot provide them.
type tokenIDProvider interface{ ProvidesTokenIDs() bool }

// withTokenCapture wraps b in training-token capture when the run's
// token_id_capture turns it on: every call an agent sends under
// /ng-rollout/<id>/training-token-capture/ leaves an entry, in NeMo Gym's
// token store, of its prompt and generated token ids and log
// probabilities, or marks its rollout incomplete. A backend without token
// ids (a hosted API, or vllm_model without return_token_id_information)
// is said so at start; its calls still succeed.
func withTokenCapture(rt *server.Runtime, b Backend) (Backend, error) {
	settings, err := capture.TokenSettingsFrom(func(key string) (*tree.Node, error) { return rt.Global.Get(key), nil })
	if err != nil || !settings.Enabled || settings.Dir == "" {
		return b, err
	}
	store, err := capture.OpenTokens(settings.Dir)
	if err != nil {
		return nil, err
	}
	logger := rt.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if p, ok := b.(tokenIDProvider); !ok || !p.ProvidesTokenIDs() {
		logger.Warn("token_id_capture is on, but this model server's answers carry no token ids (a hosted API, or vllm_model without return_token_id_information: true): every call under training-token capture marks its rollout's capture incomplete, and the collector masks the row",
			"server", rt.Instance)
	}
	return &tokenBackend{Backend: b, store: store, logger: logger}, nil
}

type tokenBackend struct {
	Backend
	store  *capture.TokenStore
	logger *slog.Logger
}

func (t *tokenBackend) Responses(ctx context.Context, body []byte, call CallInfo) (*Result, error) {
	return t.capture(ctx, body, call, t.Backend.Responses)
}

func (t *tokenBackend) ChatCompletions(ctx context.Context, body []byte, call CallInfo) (*Result, error) {
	return t.capture(ctx, body, call, t.Backend.ChatCompletions)
}

// capture decides the call's parent and records its dispatch before it is
// generated (a capture the collector has taken fails the call), then
// writes its entry from the whole answer. A call that fails leaves its
// dispatch without an entry, which marks the rollout incomplete when the
// collector takes it.
func (t *tokenBackend) capture(ctx context.Context, body []byte, call CallInfo, fn backendCall) (*Result, error) {
	if !call.TokenCapture || call.RolloutID == "" {
		return fn(ctx, body, call)
	}
	id := capture.CallID(ctx)
	tc, err := t.store.Begin(call.RolloutID, id, body)
	if err != nil {
		return nil, err
	}
	res, err := fn(ctx, body, call)
	if err != nil || statusOf(res) > 299 {
		return res, err
	}
	answer := res.Body
	if res.Complete != nil {
		answer = res.Complete
	}
	if res.Stream != nil {
		answer = nil // an upstream stream: the whole answer is never held
	}
	if err := tc.Finish(answer); err != nil {
		t.logger.Warn("Training-token capture has no usable token ids for this model call; the rollout's token capture is marked incomplete",
			"model_call_id", id, "rollout", call.RolloutID, "error", err)
	}
	return res, nil
}
