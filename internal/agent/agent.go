// Package agent is the base every Go agent server is built on, as NeMo
// Gym's SimpleResponsesAPIAgent is for Python ones: the config every agent
// shares (skip_verification, skip_verification_reward, token_id_capture),
// rollout correlation (the rollout id of a /run row and the
// /ng-rollout/<id>[/training-token-capture] prefixes built from it, spec
// §7), the cookie relay between servers (spec §5.4) and the
// /aggregate_metrics handlers.
//
// Agents run inside internal/server's runtime: server.Wrap strips an
// inbound rollout prefix and remembers it for URLPathForRequest;
// rt.Client makes the calls that may be retried, Base.SingleTry those that
// must not be.
package agent

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/resources"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Config is BaseResponsesAPIAgentConfig: the keys every agent's section
// may set.
type Config struct {
	// SkipVerification: /run does not call /verify and rewards every
	// rollout with SkipVerificationReward.
	SkipVerification       bool
	SkipVerificationReward float64
	// TokenIDCapture opts this agent into training token capture when the
	// run-level token_id_capture.enabled is set.
	TokenIDCapture bool
}

// Base is what an agent server shares with every other: its runtime, the
// base config and the rollout correlation it derives from the global
// config. Correlation is embedded, so an agent calls b.URLPathForRun and
// friends as NeMo Gym agents call self.url_path_for_run.
type Base struct {
	Runtime *server.Runtime
	Config  Config
	Correlation
	// SingleTry makes the calls whose repetition would repeat side effects:
	// tool calls, and an agent's self-call that runs a whole episode. It
	// never retries, where Runtime.Client retries 429s and 5xx; NeMo Gym
	// retries no status at all, and a tool that failed on a bad call would
	// otherwise run three times before the model hears of it.
	SingleTry *server.Client
}

// ConfigKeys are the keys of an agent's section New reads, which every Go
// agent registers beside its own.
var ConfigKeys = []string{"skip_verification", "skip_verification_reward", "token_id_capture"}

// New reads the base config from rt's section and the correlation
// switches from the global config.
func New(rt *server.Runtime) (*Base, error) {
	s := Section{Instance: rt.Instance, Node: rt.Config}
	var c Config
	var err error
	if c.SkipVerification, err = s.Bool("skip_verification", false); err != nil {
		return nil, err
	}
	if c.SkipVerificationReward, err = s.Float("skip_verification_reward", 0); err != nil {
		return nil, err
	}
	if c.TokenIDCapture, err = s.Bool("token_id_capture", false); err != nil {
		return nil, err
	}
	corr, err := correlationFor(rt.Global, c.TokenIDCapture)
	if err != nil {
		return nil, err
	}
	opts := server.ClientOptions{MaxRetries: -1, Logger: rt.Logger}
	if n := rt.Global.Get(perHostLimitKey); n != nil && n.Kind == tree.Int && n.Int > 0 {
		opts.MaxConnsPerHost = int(n.Int)
	}
	return &Base{Runtime: rt, Config: c, Correlation: corr, SingleTry: server.NewClient(opts)}, nil
}

// perHostLimitKey sizes connection pools per host, as for Runtime.Client.
const perHostLimitKey = "global_aiohttp_connector_limit_per_host"

// Section is the agent's own config section, for reading its other keys.
func (b *Base) Section() Section {
	return Section{Instance: b.Runtime.Instance, Node: b.Runtime.Config}
}

// ServerURL is http://host:port of a server instance named in the global
// config (this agent itself included, for self-calls).
func (b *Base) ServerURL(instance string) (string, error) {
	return server.ServerURL(b.Runtime.Global, instance)
}

// ResolveModelBaseURL is the OpenAI base URL of a model server for one
// rollout: http://host:port, the prefix of rolloutID (with
// /training-token-capture when token capture covers this agent), then /v1.
// An empty rolloutID gives the plain base URL.
func (b *Base) ResolveModelBaseURL(modelServerName, rolloutID string) (string, error) {
	if rolloutID != "" && !validRolloutID(rolloutID) {
		return "", fmt.Errorf("rollout id %s cannot name a request path: it must be letters, digits, dots, dashes or underscores starting with a letter or digit", shortJSON(fmt.Sprintf("%q", rolloutID)))
	}
	base, err := b.ServerURL(modelServerName)
	if err != nil {
		return "", err
	}
	return base + RolloutPath(rolloutID, b.TokenCapture, "/v1"), nil
}

// AggregateMetrics is the base agent's /aggregate_metrics: NeMo Gym's
// RewardProfiler aggregation of the verify responses, computed here with
// hooks, as the Python base class does. An agent whose resources server
// computes benchmark metrics serves ProxyAggregateMetrics instead.
func (b *Base) AggregateMetrics(hooks resources.MetricsHooks) server.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var body json.RawMessage
		if err := server.DecodeJSON(r, &body); err != nil {
			return err
		}
		fields, err := resources.ValidateFields(body, []resources.FieldSpec{{Name: "verify_responses", Kind: resources.List, Items: resources.Object, Required: true}})
		if err != nil {
			return err
		}
		if b.Config.SkipVerification {
			return b.skippedMetrics(w)
		}
		var rows []json.RawMessage
		if err := json.Unmarshal(fields["verify_responses"], &rows); err != nil {
			return fmt.Errorf("aggregate_metrics: reading verify_responses: %w", err)
		}
		agg, err := resources.Aggregate(rows, hooks)
		if err != nil {
			return fmt.Errorf("aggregate_metrics: %w", err)
		}
		return writeMetrics(w, agg)
	}
}

// ProxyAggregateMetrics serves /aggregate_metrics by forwarding the request
// to resourcesURL's /aggregate_metrics, where the benchmark's own metrics
// (pass@k and the like) are computed.
func (b *Base) ProxyAggregateMetrics(resourcesURL string) server.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var body json.RawMessage
		if err := server.DecodeJSON(r, &body); err != nil {
			return err
		}
		if b.Config.SkipVerification {
			return b.skippedMetrics(w)
		}
		out, _, err := b.Runtime.Client.PostJSON(r.Context(), resourcesURL+"/aggregate_metrics", body, nil)
		if err != nil {
			return fmt.Errorf("aggregate_metrics: %w", err)
		}
		return WriteJSON(w, out)
	}
}

// skippedMetrics answers with empty metrics: without verification there
// are no rewards to aggregate.
func (b *Base) skippedMetrics(w http.ResponseWriter) error {
	b.Logger().Warn("skip_verification is set, so there are no rewards to aggregate; answering with empty metrics (pass --disable-aggregation to gym eval to skip the aggregate metrics file)")
	agg, err := resources.Aggregate(nil, resources.MetricsHooks{})
	if err != nil {
		return err
	}
	return writeMetrics(w, agg)
}

func writeMetrics(w http.ResponseWriter, agg *resources.AggregateMetrics) error {
	out, err := agg.MarshalJSON()
	if err != nil {
		return fmt.Errorf("aggregate_metrics: encoding the reply: %w", err)
	}
	return WriteJSON(w, out)
}

// Logger is the server's logger.
func (b *Base) Logger() *slog.Logger {
	if b.Runtime.Logger != nil {
		return b.Runtime.Logger
	}
	return slog.Default()
}

// WriteJSON writes a 200 JSON body.
func WriteJSON(w http.ResponseWriter, body []byte) error {
	w.Header().Set("Content-Type", "application/json")
	// Sized, as uvicorn sends it: without a length net/http chunks any
	// body over 2 KiB, which costs both ends more work.
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, err := w.Write(body)
	return err
}
