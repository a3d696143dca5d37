// Package modelserver is what every Go model server shares: the routes
// (/v1/responses, /v1/chat/completions, and Anthropic's /v1/messages served
// through the backend's Responses) on top of internal/server's runtime, a
// Backend interface the concrete servers implement, and the upstream
// plumbing they call through — a transport sized for thousands of
// concurrent rollouts with HTTP/2 PING keep-alives, timeouts, bounded
// retries, a concurrency cap and the session key headers of rollout
// correlation.
//
// Bodies stay raw JSON end to end. Upstream errors reach the caller with
// the upstream's own status and body, not wrapped into a 500, so an OpenAI
// client sees the 400 or 429 it would have seen talking to the upstream
// directly.
package modelserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/capture"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/openai"
	"github.com/nemo-gym-go/gym/internal/server"
)

// CallInfo is what a backend learns about an inbound call besides its body.
type CallInfo struct {
	// RolloutID is the id from the /ng-rollout/<id>/ prefix ("" without
	// one). It is the session key: `<rollout id>` or, for a retried
	// attempt, `<rollout id>-a<N>`, exactly as the agent sent it.
	RolloutID string
	// SessionID is the session cookie's id.
	SessionID string
	// TokenCapture is set under /ng-rollout/<id>/training-token-capture/.
	TokenCapture bool
	// Stream is set when the body asks for a stream (openai.IsStreaming).
	Stream bool
	// Checked is set when the handler has validated the body as a JSON
	// object (every body but the requests the Messages route converts), so
	// that edits such as openai.SetModelAt need not validate it again.
	Checked bool
	// Model is where a checked body's top-level model value is, found in
	// the same read (Start below 0: it has none), for openai.SetModelAt.
	Model jsonl.Span
}

// Result is a backend's successful answer: a whole body, or a stream that
// the handler relays as it arrives and then closes.
type Result struct {
	Status int         // 0 means 200
	Header http.Header // Content-Type, Retry-After and X-Request-Id are relayed
	Body   []byte
	// Complete is the whole answer as JSON when Body is an event stream
	// synthesized from it: what training-token capture reads.
	Complete []byte
	Stream   io.ReadCloser
	// URL is the upstream URL the answer came from, secrets redacted, for
	// log lines about it ("" when it came from no Upstream).
	URL string
}

// Backend is a concrete model server. Each method gets the request body as
// the client sent it (a JSON object) and answers in the same API format.
// An error that is a *StatusError is relayed as is, a *TransportError
// becomes a 502 or 504, a *server.ValidationError a 422, anything else
// a 500.
type Backend interface {
	Responses(ctx context.Context, body []byte, call CallInfo) (*Result, error)
	ChatCompletions(ctx context.Context, body []byte, call CallInfo) (*Result, error)
}

// Serve is the handler of a model server process: b's routes, with
// model-call capture and training-token capture when the run's config
// turns them on. A capture setting NeMo Gym refuses stops the server, as
// it stops NeMo Gym's; a capture directory that cannot be made leaves
// capture off, with a warning.
func Serve(rt *server.Runtime, b Backend) (http.Handler, error) {
	b, err := withTokenCapture(rt, b)
	if err != nil {
		return nil, err
	}
	h := Handler(b, rt.Logger)
	settings, err := capture.SettingsFrom(func(key string) (*tree.Node, error) { return rt.Global.Get(key), nil })
	if err != nil || !settings.Enabled {
		return h, err
	}
	store, err := capture.Open(settings.Dir)
	if err != nil {
		if rt.Logger != nil {
			rt.Logger.Warn("Could not initialize model-call capture; disabling it", "dir", settings.Dir, "error", err)
		}
		return h, nil
	}
	return (&capture.Recorder{Store: store, Server: rt.Instance, Logger: rt.Logger}).Wrap(h), nil
}

// Handler serves b's routes. It expects to run inside server.Wrap, which
// strips the rollout prefix and provides the session.
func Handler(b Backend, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	h := &handler{logger: logger}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/responses", server.Handle(h.route(responsesAPI, b.Responses)))
	mux.Handle("POST /v1/chat/completions", server.Handle(h.route(chatAPI, b.ChatCompletions)))
	mux.Handle("POST /v1/messages", server.Handle(h.messages(b)))
	return mux
}

type handler struct {
	logger *slog.Logger
}

type backendCall func(ctx context.Context, body []byte, call CallInfo) (*Result, error)

func (h *handler) route(api streamAPI, fn backendCall) server.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		body, facts, err := readObject(r)
		if err != nil {
			return err
		}
		call := callInfo(r, facts.stream)
		call.Checked, call.Model = true, facts.model
		res, err := fn(r.Context(), body, call)
		if err != nil {
			return h.fail(w, r, err, openAIError)
		}
		if res.Stream != nil {
			return h.relay(w, r, res, api)
		}
		copyRelayed(w.Header(), res.Header)
		w.Header().Set("Content-Length", strconv.Itoa(len(res.Body)))
		w.WriteHeader(statusOf(res))
		_, err = w.Write(res.Body)
		return ignoreGone(r, err)
	}
}

// messages serves Anthropic Messages on top of the backend's Responses, as
// NeMo Gym's base model server does: the request is converted, answered
// whole (never streamed upstream), converted back, and replayed as
// Anthropic's event stream when the client asked for one.
func (h *handler) messages(b Backend) server.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		body, _, err := readObject(r)
		if err != nil {
			return err
		}
		req, err := openai.MessagesToResponsesRequest(body, openai.ChatOptions{})
		if err != nil {
			var ue *openai.UnrepresentableError
			var ie *openai.InvalidError
			if errors.As(err, &ue) || errors.As(err, &ie) {
				writeJSONError(w, http.StatusBadRequest, anthropicError("invalid_request_error", err.Error()))
				return nil
			}
			return fmt.Errorf("converting the Messages request to Responses: %w", err)
		}
		res, err := b.Responses(r.Context(), req, callInfo(r, false))
		if err != nil {
			return h.fail(w, r, err, anthropicGatewayError)
		}
		if res.Stream != nil {
			res.Stream.Close()
			return errors.New("the backend streamed an answer to a non-streaming Responses call")
		}
		if st := statusOf(res); st < 200 || st > 299 {
			return h.fail(w, r, &StatusError{URL: r.URL.Path, Status: st, Header: res.Header, Body: res.Body, Tries: 1}, anthropicGatewayError)
		}
		// The message names the model the client asked for, as Anthropic's
		// API does; the Responses answer knows only the upstream's name.
		msg, err := openai.ResponsesToMessagesResponse(res.Body, gjson.GetBytes(body, "model").String())
		if err != nil {
			h.logger.Error("the upstream's answer has no Anthropic rendering", "path", r.URL.Path, "error", err)
			writeJSONError(w, http.StatusBadGateway, anthropicError("api_error", "the upstream's Responses answer cannot be rendered as an Anthropic message: "+err.Error()))
			return nil
		}
		if openai.IsStreaming(body) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			msg = openai.SynthesizeMessagesSSE(msg)
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(msg)))
		w.WriteHeader(http.StatusOK)
		_, err = w.Write(msg)
		return ignoreGone(r, err)
	}
}

// bodyFacts is what reading a request body learns of it besides that it is
// a JSON object: whether it asks for a stream, and where its model value
// is.
type bodyFacts struct {
	stream bool
	model  jsonl.Span
}

// readObject reads a request body that must be a JSON object, failing as
// FastAPI does (422) otherwise. The body is checked and its members found
// in one read (server.DecodeJSONObject), and `stream` and `model` are read
// from the members instead of walking the body again for each.
func readObject(r *http.Request) (body []byte, facts bodyFacts, err error) {
	var scratch [16]jsonl.Member
	body, members, object, err := server.DecodeJSONObject(r, scratch[:0])
	if err != nil {
		return nil, bodyFacts{}, err
	}
	if !object {
		return nil, bodyFacts{}, &server.ValidationError{Details: []server.ValidationDetail{{
			Type: "model_attributes_type", Loc: []any{"body"},
			Msg: "Input should be a valid dictionary or object to extract fields from", Input: json.RawMessage(body),
		}}}
	}
	facts.model = jsonl.Span{Start: -1, End: -1}
	if i := jsonl.Lookup(body, members, "stream"); i >= 0 {
		facts.stream = string(members[i].Value(body)) == "true"
	}
	if i := jsonl.Lookup(body, members, "model"); i >= 0 {
		facts.model = jsonl.Span{Start: members[i].ValueStart, End: members[i].ValueEnd}
	}
	return body, facts, nil
}

func callInfo(r *http.Request, stream bool) CallInfo {
	return CallInfo{
		RolloutID:    server.RolloutID(r),
		SessionID:    server.SessionID(r),
		TokenCapture: server.TokenCapture(r),
		Stream:       stream,
	}
}

func statusOf(res *Result) int {
	if res.Status == 0 {
		return http.StatusOK
	}
	return res.Status
}

// relayedHeaders are the upstream headers a client may act on: the body's
// type, when to retry, and the id to quote to the provider.
var relayedHeaders = []string{"Content-Type", "Retry-After", "Retry-After-Ms", "X-Request-Id"}

func copyRelayed(dst, src http.Header) {
	for _, k := range relayedHeaders {
		if v := src[k]; len(v) > 0 {
			dst[k] = v
		}
	}
}

// fail answers a backend error: upstream answers pass through with their
// own status; an upstream that never answered is a gateway error in the
// route's error shape (gatewayError), which its clients parse and retry.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error, gatewayError func(typ, msg string) []byte) error {
	if r.Context().Err() != nil {
		return err // the client left; Handle logs it quietly
	}
	var se *StatusError
	var te *TransportError
	switch {
	case errors.As(err, &se):
		capture.ReportFailure(r.Context(), capture.Failure{Status: se.Status, Body: se.Body})
		h.logger.Warn("relaying an error answer", "path", r.URL.Path, "error", err)
		copyRelayed(w.Header(), se.Header)
		w.Header().Set("Content-Length", strconv.Itoa(len(se.Body)))
		w.WriteHeader(se.Status)
		_, werr := w.Write(se.Body)
		return ignoreGone(r, werr)
	case errors.As(err, &te):
		capture.ReportFailure(r.Context(), capture.Failure{Timeout: te.Timeout})
		h.logger.Error("upstream gave no answer", "path", r.URL.Path, "error", err)
		status, typ := http.StatusBadGateway, "upstream_unreachable"
		if te.Timeout {
			status, typ = http.StatusGatewayTimeout, "upstream_timeout"
		}
		writeJSONError(w, status, gatewayError(typ, err.Error()))
		return nil
	}
	return err
}

// relay passes a stream through as it arrives. An event stream goes event
// by event and is ended properly if the upstream breaks it off
// (relayEvents); anything else is flushed read by read, and cut off if it
// breaks.
func (h *handler) relay(w http.ResponseWriter, r *http.Request, res *Result, api streamAPI) error {
	defer res.Stream.Close()
	copyRelayed(w.Header(), res.Header)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(statusOf(res))
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		return ignoreGone(r, err)
	}
	if isEventStream(res.Header) {
		return h.relayEvents(w, r, rc, res, api)
	}
	bufp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bufp)
	buf := *bufp
	for {
		n, err := res.Stream.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return ignoreGone(r, werr)
			}
			if ferr := rc.Flush(); ferr != nil {
				return ignoreGone(r, ferr)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			// The response has started, so Handle aborts the connection and
			// the client sees a truncated stream rather than a complete one.
			return ignoreGone(r, fmt.Errorf("relaying the upstream stream: %w", err))
		}
	}
}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// ignoreGone drops an error caused by the client going away: there is no
// one left to tell, and the upstream call was cancelled with the request.
func ignoreGone(r *http.Request, err error) error {
	if err == nil || r.Context().Err() != nil {
		return nil
	}
	return err
}

func openAIError(typ, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
	return b
}

func writeJSONError(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

func anthropicError(typ, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	return b
}

// anthropicGatewayError is a gateway error as Anthropic's API words it:
// timeout_error for a 504, api_error otherwise.
func anthropicGatewayError(typ, msg string) []byte {
	if typ == "upstream_timeout" {
		return anthropicError("timeout_error", msg)
	}
	return anthropicError("api_error", msg)
}
