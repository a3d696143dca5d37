package gymserver

import (
	"net/http"

	"github.com/nemo-gym-go/gym/internal/agent"
)

// Agent is the rollout correlation of an agent server, NeMo Gym's
// SimpleResponsesAPIAgent helpers: with observability (or rollout
// correlation, or training token capture) on, every call an agent makes for
// one rollout goes under /ng-rollout/<rollout id>, so model servers capture
// calls per rollout and keep a session on one replica. With it off, every
// helper leaves paths and URLs unchanged.
type Agent struct{ b *agent.Base }

// NewAgent reads the agent's base config (skip_verification and the like)
// and the run's correlation switches.
func NewAgent(rt *Runtime) (*Agent, error) {
	b, err := agent.New(rt.rt)
	if err != nil {
		return nil, err
	}
	return &Agent{b: b}, nil
}

// RolloutIDFromRun is rollout_id_from_run: the rollout id of a /run body,
// its _ng_rollout_id or "<_ng_task_index>-<_ng_rollout_index>" (with
// "-a<N>" for a retried attempt); "" when correlation is off or the body
// has no indices. An id that cannot name a path is an error.
func (a *Agent) RolloutIDFromRun(body []byte) (string, error) { return a.b.RolloutIDFromRun(body) }

// URLPathForRun is url_path_for_run: path under the run's rollout prefix,
// for the calls made while handling /run (the self-call to /v1/responses,
// direct model calls); path unchanged without a rollout id.
func (a *Agent) URLPathForRun(path string, body []byte) (string, error) {
	return a.b.URLPathForRun(path, body)
}

// BaseURLForRun is base_url_for_run: a server's base URL with the run's
// rollout prefix, for SDK clients configured once per rollout (append the
// /v1 suffix afterwards).
func (a *Agent) BaseURLForRun(baseURL string, body []byte) (string, error) {
	return a.b.BaseURLForRun(baseURL, body)
}

// ResolveModelBaseURL is resolve_model_base_url: the OpenAI base URL
// (ending in /v1) of a model server instance of the run, under rolloutID's
// prefix when rolloutID is not empty.
func (a *Agent) ResolveModelBaseURL(modelServerName, rolloutID string) (string, error) {
	return a.b.ResolveModelBaseURL(modelServerName, rolloutID)
}

// SkipVerification reports the agent's skip_verification setting and the
// reward a skipped rollout gets.
func (a *Agent) SkipVerification() (bool, float64) {
	return a.b.Config.SkipVerification, a.b.Config.SkipVerificationReward
}

// URLPathForRequest is url_path_for_request: the rollout prefix a request
// arrived under (/ng-rollout/<id>/v1/responses, an agent's self-call)
// carried onto path, for the model calls made while serving it; path
// unchanged for an unprefixed request.
func URLPathForRequest(path string, r *http.Request) string { return agent.URLPathForRequest(path, r) }
