// Package resources is the base every Go resources server is built on, as
// NeMo Gym's SimpleResourcesServer is for Python ones: the routes
// /seed_session, /verify (behind the judge failsafe), /aggregate_metrics,
// /reverify_mode and one POST route per tool; request validation answered
// with FastAPI's 422 body; per-session state; and the RewardProfiler
// statistics and pass@k helpers behind /aggregate_metrics, exported for the
// agent server and `gym eval`.
//
// A server supplies a VerifyFunc and declares its request fields; the base
// validates requests, echoes responses_create_params and response, and
// writes reward and the server's own fields after them. Servers run inside
// internal/server's runtime (server.Wrap), which provides session ids,
// rollout ids and error mapping.
package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/server"
)

// ReverifyMode is what GET /reverify_mode answers: whether `gym eval
// reverify` may verify this server's rollouts again.
type ReverifyMode string

const (
	ReverifyStateless   ReverifyMode = "stateless"
	ReverifyUnsupported ReverifyMode = "unsupported"
	ReverifyUnknown     ReverifyMode = "unknown"
)

// VerifyFunc scores one rollout. Returning a *JudgeError makes /verify
// answer 200 with reward 0 and the failure marked (NeMo Gym's
// judge_failsafe); a *server.ValidationError answers 422; any other error
// is a 500.
type VerifyFunc func(ctx context.Context, req *VerifyRequest) (*Verdict, error)

// Verdict is a verify result: the reward, and the server's declared reply
// fields, written after reward in this order.
type Verdict struct {
	Reward float64
	Fields []Field
}

// Field is one reply field. Value is anything appendJSON writes: a string,
// float64, int, bool, nil, json.RawMessage, *Metrics, or a slice of these.
type Field struct {
	Name  string
	Value any
}

// JudgeError is a failed call to a judge model. /verify answers it with the
// request, reward 0.0, `_ng_failure_class: "judge_failed"` and the message
// in `_ng_failure_judge_error`, so that rollout collection routes the row
// to the failures file and retries it, rather than scoring it 0.
type JudgeError struct{ Err error }

func (e *JudgeError) Error() string { return e.Err.Error() }
func (e *JudgeError) Unwrap() error { return e.Err }

// Tool is a POST /<Name> route: the body is the tool call's argument
// object, the reply (any JSON) is fed to the model as text. A
// *server.ValidationError from Call answers 422, which the agent also
// passes to the model.
type Tool struct {
	Name string
	Call func(r *http.Request, args json.RawMessage) (any, error)
}

// Options is a resources server's behaviour on top of the base.
type Options struct {
	// Verify scores a rollout. Required.
	Verify VerifyFunc
	// Fields are the verify request fields beyond responses_create_params
	// and response, as the server's request model declares them, in order.
	// The judge failsafe reply echoes them.
	Fields []FieldSpec
	// ReverifyMode defaults to ReverifyUnknown.
	ReverifyMode ReverifyMode
	// Seed sets up per-session state at /seed_session (keyed by
	// server.SessionID(r)) and returns the reply; nil answers {}. body is
	// the request's JSON object, whose fields NeMo Gym's base ignores.
	Seed func(r *http.Request, body json.RawMessage) (any, error)
	// Tools become POST /<name> routes.
	Tools []Tool
	// Metrics overrides compute_metrics and get_key_metrics.
	Metrics MetricsHooks
	// EndSessionOnVerify are cleared for the request's session once /verify
	// has answered, for servers whose episode ends at verification.
	EndSessionOnVerify []SessionStore
	// Logger defaults to the runtime's.
	Logger *slog.Logger
}

// VerifyRequest is a decoded /verify body.
type VerifyRequest struct {
	// ResponsesCreateParams and Response are the request's objects, raw.
	ResponsesCreateParams json.RawMessage
	Response              json.RawMessage
	// SessionID and RolloutID are the request's, from internal/server.
	SessionID string
	RolloutID string
	fields    map[string]json.RawMessage
	specs     []FieldSpec
}

// Field is the raw value of a declared field (its default when absent).
func (r *VerifyRequest) Field(name string) json.RawMessage { return r.fields[name] }

// String is a declared string field's value; "" when null.
func (r *VerifyRequest) String(name string) string {
	var s string
	json.Unmarshal(r.fields[name], &s)
	return s
}

// OutputText is the response's output_text.
func (r *VerifyRequest) OutputText() string { return OutputText(r.Response) }

// Echo returns the named declared fields as reply fields, for servers whose
// reply model subclasses the request model.
func (r *VerifyRequest) Echo(names ...string) []Field {
	out := make([]Field, len(names))
	for i, n := range names {
		out[i] = Field{n, r.fields[n]}
	}
	return out
}

// baseFields are BaseVerifyRequest's own fields.
var baseFields = []FieldSpec{
	{Name: "responses_create_params", Kind: Object, Required: true, Model: "NeMoGymResponseCreateParamsNonStreaming"},
	{Name: "response", Kind: Object, Required: true, Model: "NeMoGymResponse"},
}

// NewHandler builds a resources server's routes on top of rt. It refuses
// settings of NeMo Gym's base config the Go base does not implement.
func NewHandler(rt *server.Runtime, o Options) (http.Handler, error) {
	mcp, err := Config{Instance: rt.Instance, Node: rt.Config}.Bool("expose_tools_over_mcp", false)
	if err != nil {
		return nil, err
	}
	if mcp {
		return nil, fmt.Errorf("%s.expose_tools_over_mcp: serving tools over MCP is not supported by the Go %s server; set it to false or run the Python server", rt.Instance, rt.Implementation)
	}
	if o.Logger == nil {
		o.Logger = rt.Logger
	}
	return Handler(o)
}

// Handler builds the routes from o alone, for tests and embedders that
// have no runtime.
func Handler(o Options) (http.Handler, error) {
	if o.Verify == nil {
		return nil, errors.New("resources.Handler: Options.Verify is required")
	}
	if o.ReverifyMode == "" {
		o.ReverifyMode = ReverifyUnknown
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	b := &base{o: o, routes: map[string]string{}}
	mux := http.NewServeMux()
	route := func(method, path string, h server.HandlerFunc) {
		mux.Handle(method+" "+path, server.Handle(h))
		b.routes[path] = method
	}
	route(http.MethodPost, "/seed_session", b.seedSession)
	route(http.MethodPost, "/verify", b.verify)
	route(http.MethodPost, "/aggregate_metrics", b.aggregateMetrics)
	route(http.MethodGet, "/reverify_mode", b.reverifyMode)
	for _, t := range o.Tools {
		if _, dup := b.routes["/"+t.Name]; dup || t.Name == "" || t.Call == nil {
			return nil, fmt.Errorf("resources.Handler: tool %q is unnamed, has no Call, or collides with another route", t.Name)
		}
		route(http.MethodPost, "/"+t.Name, b.tool(t))
	}
	mux.Handle("/", server.Handle(b.unrouted))
	return handler{mux, o.Metrics}, nil
}

type base struct {
	o      Options
	routes map[string]string // path → method
}

func (b *base) seedSession(w http.ResponseWriter, r *http.Request) error {
	var body json.RawMessage
	if err := server.DecodeJSON(r, &body); err != nil {
		return err
	}
	if err := requireObject(body); err != nil {
		return err
	}
	var reply any = json.RawMessage("{}")
	if b.o.Seed != nil {
		var err error
		if reply, err = b.o.Seed(r, body); err != nil {
			return err
		}
	}
	return writeReply(w, reply)
}

func (b *base) verify(w http.ResponseWriter, r *http.Request) error {
	var scratch [16]jsonl.Member
	body, members, object, err := server.DecodeJSONObject(r, scratch[:0])
	if err != nil {
		return err
	}
	if !object {
		return notAnObject(body)
	}
	req, err := b.decodeVerify(body, objectOf(body, members))
	if err != nil {
		return err
	}
	req.SessionID, req.RolloutID = server.SessionID(r), server.RolloutID(r)
	verdict, err := b.o.Verify(r.Context(), req)
	var out []byte
	var je *JudgeError
	switch {
	case errors.As(err, &je):
		b.o.Logger.Warn("judge failed; answering with the judge_failed failsafe", "path", r.URL.Path, "error", je)
		out, err = failsafeReply(req, je)
	case err != nil:
		return err
	default:
		out, err = verifyReply(req, verdict)
	}
	if err != nil {
		return err
	}
	for _, s := range b.o.EndSessionOnVerify {
		s.Delete(req.SessionID)
	}
	return writeBody(w, out)
}

func (b *base) decodeVerify(body json.RawMessage, obj map[string]json.RawMessage) (*VerifyRequest, error) {
	fields, err := validateDecoded(body, obj, append(slices.Clip(baseFields), b.o.Fields...))
	if err != nil {
		return nil, err
	}
	return &VerifyRequest{
		ResponsesCreateParams: fields["responses_create_params"],
		Response:              fields["response"],
		fields:                fields,
		specs:                 b.o.Fields,
	}, nil
}

// verifyReply is BaseVerifyResponse: the request's two objects, reward,
// then the server's fields.
func verifyReply(req *VerifyRequest, v *Verdict) ([]byte, error) {
	m := NewMetrics()
	m.Set("responses_create_params", req.ResponsesCreateParams)
	m.Set("response", req.Response)
	m.Set("reward", v.Reward)
	for _, f := range v.Fields {
		m.Set(f.Name, f.Value)
	}
	return m.MarshalJSON()
}

// failsafeReply is judge_failsafe's row: the request model's dump with
// reward 0.0 and the failure marked.
func failsafeReply(req *VerifyRequest, je *JudgeError) ([]byte, error) {
	m := NewMetrics()
	m.Set("responses_create_params", req.ResponsesCreateParams)
	m.Set("response", req.Response)
	for _, f := range req.specs {
		m.Set(f.Name, req.fields[f.Name])
	}
	m.Set("reward", 0.0)
	m.Set("_ng_failure_class", "judge_failed")
	m.Set("_ng_failure_judge_error", je.Error())
	return m.MarshalJSON()
}

func (b *base) aggregateMetrics(w http.ResponseWriter, r *http.Request) error {
	var body json.RawMessage
	if err := server.DecodeJSON(r, &body); err != nil {
		return err
	}
	fields, err := ValidateFields(body, []FieldSpec{{Name: "verify_responses", Kind: List, Items: Object, Required: true}})
	if err != nil {
		return err
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(fields["verify_responses"], &rows); err != nil {
		return fmt.Errorf("aggregate_metrics: reading verify_responses: %w", err)
	}
	agg, err := Aggregate(rows, b.o.Metrics)
	if err != nil {
		return fmt.Errorf("aggregate_metrics: %w", err)
	}
	out, err := agg.MarshalJSON()
	if err != nil {
		return fmt.Errorf("aggregate_metrics: encoding the reply: %w", err)
	}
	return writeBody(w, out)
}

func (b *base) reverifyMode(w http.ResponseWriter, _ *http.Request) error {
	return writeReply(w, string(b.o.ReverifyMode))
}

func (b *base) tool(t Tool) server.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var body json.RawMessage
		if err := server.DecodeJSON(r, &body); err != nil {
			return err
		}
		if err := requireObject(body); err != nil {
			return err
		}
		reply, err := t.Call(r, body)
		if err != nil {
			return err
		}
		return writeReply(w, reply)
	}
}

// unrouted answers as FastAPI does for a path it has no route for, or a
// route called with the wrong method.
func (b *base) unrouted(w http.ResponseWriter, r *http.Request) error {
	if method, ok := b.routes[r.URL.Path]; ok {
		w.Header().Set("Allow", method)
		return writeStatus(w, http.StatusMethodNotAllowed, []byte(`{"detail":"Method Not Allowed"}`))
	}
	return writeStatus(w, http.StatusNotFound, []byte(`{"detail":"Not Found"}`))
}

func writeReply(w http.ResponseWriter, v any) error {
	out, err := appendJSON(nil, v)
	if err != nil {
		return err
	}
	return writeBody(w, out)
}

func writeBody(w http.ResponseWriter, body []byte) error {
	return writeStatus(w, http.StatusOK, body)
}

// writeStatus sends a complete reply. A failed write means the client has
// gone; there is nobody left to tell, so it is not an error of the handler.
func writeStatus(w http.ResponseWriter, status int, body []byte) error {
	w.Header().Set("Content-Type", "application/json")
	// Sized, as uvicorn sends it: without a length net/http chunks any
	// body over 2 KiB, which costs both ends more work.
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
	return nil
}

// ValidationFailed is a 422 for one field, for checks a FieldSpec cannot
// express (the element shape of a list, say).
func ValidationFailed(typ string, loc []any, msg string, input any) error {
	return &server.ValidationError{Details: []server.ValidationDetail{{Type: typ, Loc: loc, Msg: msg, Input: input}}}
}
