package gymserver

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/nemo-gym-go/gym/internal/resources"
)

// ResourcesServer is a resources server, NeMo Gym's SimpleResourcesServer:
// the routes /seed_session, /verify, /aggregate_metrics (NeMo Gym's reward
// statistics), /reverify_mode and one POST /<name> per tool.
type ResourcesServer struct {
	// ClassName is the NeMo Gym class the server stands for, e.g.
	// MyEnvResourcesServer; it names the session cookie.
	ClassName string
	// Verify scores a rollout. Required.
	Verify func(ctx context.Context, req *VerifyRequest) (*Verdict, error)
	// Fields are the task row's fields /verify reads, beyond
	// responses_create_params and response, which every request has.
	Fields []Field
	// Seed sets up a rollout's state at /seed_session (keyed by
	// SessionID(r)) and returns the reply; nil answers {}. body is the
	// request's JSON object.
	Seed func(r *http.Request, body json.RawMessage) (any, error)
	// Tools become POST /<Name> routes.
	Tools []Tool
	// Reverify is what GET /reverify_mode answers; ReverifyUnknown when
	// empty.
	Reverify ReverifyMode
	// EndSessionOnVerify are cleared for the rollout once /verify has
	// answered, for servers whose episode ends at verification.
	EndSessionOnVerify []interface{ Delete(sessionID string) }
}

// ReverifyMode says whether `gym eval reverify` may verify this server's
// rollouts again.
type ReverifyMode string

const (
	// ReverifyStateless: /verify depends on the request alone.
	ReverifyStateless   ReverifyMode = "stateless"
	ReverifyUnsupported ReverifyMode = "unsupported"
	ReverifyUnknown     ReverifyMode = "unknown"
)

// FieldType is the JSON type a declared field holds, as the Pydantic type
// of a NeMo Gym request model field.
type FieldType uint8

const (
	Any    FieldType = iota // any JSON value
	String                  // str
	Int                     // int: integral numbers and numeric strings
	Number                  // float: numbers and numeric strings
	Bool                    // bool
	List                    // list
	Object                  // dict
)

// Field declares one request field.
type Field struct {
	Name     string
	Type     FieldType
	Required bool      // absent: 422 "Field required"
	Nullable bool      // Optional[...]: null is accepted
	Items    FieldType // a List's element type; Any leaves the elements unchecked
	// Default is the JSON value an absent optional field takes; null when
	// empty.
	Default json.RawMessage
}

func (f Field) spec() resources.FieldSpec {
	return resources.FieldSpec{Name: f.Name, Kind: resources.Kind(f.Type), Items: resources.Kind(f.Items), Required: f.Required, Nullable: f.Nullable, Default: f.Default}
}

func specs(fields []Field) []resources.FieldSpec {
	out := make([]resources.FieldSpec, len(fields))
	for i, f := range fields {
		out[i] = f.spec()
	}
	return out
}

// Tool is a POST /<Name> route: args is the tool call's argument object,
// and the reply (any JSON-encodable value) goes back to the model. An
// error from ValidateFields answers 422, which the agent also passes on to
// the model.
type Tool struct {
	Name string
	Call func(r *http.Request, args json.RawMessage) (any, error)
}

// VerifyRequest is a /verify body.
type VerifyRequest struct {
	// ResponsesCreateParams and Response are the request's objects, raw.
	ResponsesCreateParams json.RawMessage
	Response              json.RawMessage
	// SessionID and RolloutID identify the rollout.
	SessionID, RolloutID string
	req                  *resources.VerifyRequest
}

// Field is the raw JSON of a declared field (its default when absent).
func (r *VerifyRequest) Field(name string) json.RawMessage { return r.req.Field(name) }

// String is a declared string field's value; "" when null.
func (r *VerifyRequest) String(name string) string { return r.req.String(name) }

// OutputText is the response's output_text: the text of its assistant
// messages, as the OpenAI SDK's property NeMo Gym verifiers read.
func (r *VerifyRequest) OutputText() string { return r.req.OutputText() }

// Echo returns declared fields as reply fields, for a reply that repeats
// the task row's fields beside the reward.
func (r *VerifyRequest) Echo(names ...string) []ReplyField {
	out := make([]ReplyField, len(names))
	for i, n := range names {
		out[i] = ReplyField{n, r.req.Field(n)}
	}
	return out
}

// Verdict is a verify result: the reward, then the reply's other fields,
// written after it in this order.
type Verdict struct {
	Reward float64
	Fields []ReplyField
}

// ReplyField is one field of a /verify reply. Value is a string, float64,
// int, bool, nil, json.RawMessage, or a slice of these.
type ReplyField struct {
	Name  string
	Value any
}

// JudgeFailed marks a failed call to a judge model: /verify then answers
// reward 0 with the failure marked (NeMo Gym's judge_failsafe), so that
// rollout collection retries the row instead of scoring it 0.
func JudgeFailed(err error) error { return &resources.JudgeError{Err: err} }

// ValidateFields checks a JSON object against fields, as /verify checks
// its body: each declared field's value (defaults filled in), or an error
// that answers 422 with FastAPI's body.
func ValidateFields(body json.RawMessage, fields []Field) (map[string]json.RawMessage, error) {
	return resources.ValidateFields(body, specs(fields))
}

// Invalid is a 422 answer for one field, for checks a Field cannot
// express; loc is its location, e.g. []any{"body", "answer"}.
func Invalid(loc []any, msg string, input any) error {
	return resources.ValidationFailed("value_error", loc, msg, input)
}

// Handler builds the server's routes. rt is the runtime Main passes; nil
// builds them for a test, with no runtime behind them.
func (s ResourcesServer) Handler(rt *Runtime) (http.Handler, error) {
	o := resources.Options{
		Fields:       specs(s.Fields),
		ReverifyMode: resources.ReverifyMode(s.Reverify),
		Seed:         s.Seed,
		Verify:       s.verify(),
	}
	for _, t := range s.Tools {
		o.Tools = append(o.Tools, resources.Tool{Name: t.Name, Call: t.Call})
	}
	for _, d := range s.EndSessionOnVerify {
		o.EndSessionOnVerify = append(o.EndSessionOnVerify, d)
	}
	if rt == nil {
		return resources.Handler(o)
	}
	return resources.NewHandler(rt.rt, o)
}

func (s ResourcesServer) verify() resources.VerifyFunc {
	if s.Verify == nil {
		return nil
	}
	return func(ctx context.Context, req *resources.VerifyRequest) (*resources.Verdict, error) {
		v, err := s.Verify(ctx, &VerifyRequest{
			ResponsesCreateParams: req.ResponsesCreateParams,
			Response:              req.Response,
			SessionID:             req.SessionID,
			RolloutID:             req.RolloutID,
			req:                   req,
		})
		if err != nil || v == nil {
			return nil, err
		}
		out := &resources.Verdict{Reward: v.Reward}
		for _, f := range v.Fields {
			out.Fields = append(out.Fields, resources.Field{Name: f.Name, Value: f.Value})
		}
		return out, nil
	}
}

// Sessions is per-rollout state keyed by SessionID, safe for the
// concurrent requests of many rollouts (NeMo Gym servers keep a dict keyed
// by request.session["session_id"]).
type Sessions[T any] struct{ s resources.Sessions[T] }

// Get returns the session's state and whether it has one.
func (s *Sessions[T]) Get(sessionID string) (T, bool) { return s.s.Get(sessionID) }

// Set replaces the session's state.
func (s *Sessions[T]) Set(sessionID string, v T) { s.s.Set(sessionID, v) }

// Update replaces the session's state with fn's result in one step, so
// two calls of one rollout cannot interleave their read and write.
func (s *Sessions[T]) Update(sessionID string, fn func(v T, ok bool) T) T {
	return s.s.Update(sessionID, fn)
}

// Delete forgets the session.
func (s *Sessions[T]) Delete(sessionID string) { s.s.Delete(sessionID) }
