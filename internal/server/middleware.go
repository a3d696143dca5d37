package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
)

// HandlerFunc is a handler that may fail: Handle turns its error into the
// response NeMo Gym's exception middleware gives (spec §3.3).
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Handle adapts h to http.Handler. A returned *ValidationError (from
// DecodeJSON, say) becomes FastAPI's 422; an *UpstreamError anywhere in the
// chain becomes "Hit an exception in <ServerName> calling an inner server:
// <body>", with the inner server's status when it is a client error no
// retry fixes (400, 401, 404, 422, ...; not 408 or 429) and NeMo Gym's 500
// otherwise, so that a deterministic failure is not retried hop by hop;
// any other error becomes 500 with its text as a JSON string. An error
// after the response has started aborts the connection, so the client sees
// a truncated response rather than a complete-looking one. Handle is meant
// to run inside Wrap, which supplies the server's name.
func Handle(h HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			st := stateOf(r)
			if st == nil {
				st = &requestState{mw: &middleware{logger: slog.Default()}, tw: trackingWriter{w: w}}
			}
			st.fail(w, r, err)
		}
	})
}

// Wrap puts h behind the middleware every Gym server has, outermost first:
// error mapping (panics become 500s), the run token (with rt.RunToken set,
// a client from another machine without it gets 401, as RequireRunToken
// describes), the rollout prefix
// (/ng-rollout/<id>[/training-token-capture]/<rest> is served as /<rest>),
// the session cookie, `GET /` liveness, and with uvicorn_logging_show_200_ok
// on, uvicorn's access line a request. Serve calls it; tests of a
// component call it to see what a client sees. rt.ServerName() must be a
// valid cookie name (Serve checks).
func Wrap(rt *Runtime, h http.Handler) http.Handler {
	name := rt.ServerName()
	return &middleware{next: h, name: name, logger: loggerOf(rt), cookie: newSessionCookie(name), runToken: rt.RunToken, access: rt.serving.accessLog}
}

type middleware struct {
	next     http.Handler
	name     string
	logger   *slog.Logger
	cookie   *sessionCookie
	runToken string
	access   io.Writer // uvicorn_logging_show_200_ok: where a line per request goes; nil for none
}

type ctxKey struct{}

// requestState is everything the middleware learns about one request, kept
// in one allocation with the writer that tracks whether the response began.
type requestState struct {
	mw           *middleware
	tw           trackingWriter
	sessionID    string
	rolloutID    string
	tokenCapture bool
}

func stateOf(r *http.Request) *requestState {
	st, _ := r.Context().Value(ctxKey{}).(*requestState)
	return st
}

// SessionID is the request's session id: the one its cookie carries, or a
// fresh UUIDv4 when it has no valid cookie. Per-rollout state is keyed by it.
func SessionID(r *http.Request) string {
	if st := stateOf(r); st != nil {
		return st.sessionID
	}
	return ""
}

// RolloutID is the id from an /ng-rollout/<id>/ request path, or "" when the
// request came without the prefix.
func RolloutID(r *http.Request) string {
	if st := stateOf(r); st != nil {
		return st.rolloutID
	}
	return ""
}

// TokenCapture reports whether the request came under
// /ng-rollout/<id>/training-token-capture/.
func TokenCapture(r *http.Request) bool {
	if st := stateOf(r); st != nil {
		return st.tokenCapture
	}
	return false
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := &requestState{mw: m, tw: trackingWriter{w: w}}
	if m.access != nil {
		// Deferred first, so it runs last: after a panic's 500.
		defer m.logAccess(r, &st.tw)
	}
	defer func() {
		if v := recover(); v != nil {
			st.recovered(r, v)
		}
	}()
	if m.runToken != "" && !trusted(r, m.runToken) {
		m.logger.Warn("refused a request from another machine without the run token", "peer", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
		refuseUntrusted(&st.tw)
		return
	}
	route, prefixed, err := parseRolloutPath(r.URL.EscapedPath())
	if err != nil {
		m.logger.Warn("rejected request", "path", r.URL.Path, "error", err)
		writeJSON(&st.tw, http.StatusBadRequest, jsonString(err.Error()))
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, st))
	if prefixed {
		st.rolloutID, st.tokenCapture = route.ID, route.Capture
		u := *r.URL
		u.Path, u.RawPath = route.Path, route.RawPath
		r.URL = &u
	}
	var token string
	st.sessionID, token = m.cookie.session(r)
	// Starlette re-issues the cookie on every response, refreshing its
	// max-age; the id is fixed for the request, so the header goes out now.
	st.tw.Header().Add("Set-Cookie", m.cookie.header(token))
	if r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		writeJSON(&st.tw, http.StatusOK, []byte(`{"status":"ok"}`))
		return
	}
	m.next.ServeHTTP(&st.tw, r)
}

// logAccess writes the request's line of uvicorn's access log, which NeMo
// Gym's servers write when uvicorn_logging_show_200_ok is on (the agent's
// self-call, an HTTP request there, included): the client, the request
// line as it came (with the rollout prefix and the query) and the status,
// once the handler is done. A response that never began went out as
// net/http's 200; one cut off before it began (http.ErrAbortHandler, the
// one panic the recover before this lets through) is not logged, as
// uvicorn logs a response only as it starts.
func (m *middleware) logAccess(r *http.Request, tw *trackingWriter) {
	if v := recover(); v != nil {
		if tw.started {
			m.writeAccessLine(r, tw.status)
		}
		panic(v)
	}
	status := tw.status
	if status == 0 {
		status = http.StatusOK
	}
	m.writeAccessLine(r, status)
}

// writeAccessLine writes the line as uvicorn formats it: the client as
// host:port (an IPv6 host unbracketed), the path as it came with the
// query when there is one, and a double quote in either escaped.
func (m *middleware) writeAccessLine(r *http.Request, status int) {
	client := r.RemoteAddr
	if ap, err := netip.ParseAddrPort(client); err == nil {
		client = ap.Addr().String() + ":" + strconv.Itoa(int(ap.Port()))
	}
	target := r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	target = strings.ReplaceAll(target, `"`, "%22")
	fmt.Fprintf(m.access, "INFO:     %s - \"%s %s HTTP/%d.%d\" %d %s\n", client, r.Method, target, r.ProtoMajor, r.ProtoMinor, status, statusPhrase(status))
}

// statusPhrase is the status's phrase in Python's http.HTTPStatus (3.13,
// the Python NeMo Gym runs on), which uvicorn prints: RFC 9110's names
// where Go's keep older ones.
func statusPhrase(code int) string {
	switch code {
	case http.StatusRequestEntityTooLarge:
		return "Content Too Large"
	case http.StatusRequestURITooLong:
		return "URI Too Long"
	case http.StatusRequestedRangeNotSatisfiable:
		return "Range Not Satisfiable"
	case http.StatusTeapot:
		return "I'm a Teapot"
	case http.StatusUnprocessableEntity:
		return "Unprocessable Content"
	}
	return http.StatusText(code)
}

// recovered maps a panic the way NeMo Gym maps a non-Exception throwable.
func (st *requestState) recovered(r *http.Request, v any) {
	if v == http.ErrAbortHandler {
		panic(v)
	}
	st.mw.logger.Error("panic while serving a request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
	if st.tw.started {
		panic(http.ErrAbortHandler)
	}
	clearHeader(st.tw.Header())
	writeJSON(&st.tw, http.StatusInternalServerError, jsonString("An unknown error occurred"))
}

func (st *requestState) fail(w http.ResponseWriter, r *http.Request, err error) {
	log := st.mw.logger
	if st.tw.started {
		log.Error("request failed after its response started; aborting the connection", "method", r.Method, "path", r.URL.Path, "error", err)
		panic(http.ErrAbortHandler)
	}
	var ve *ValidationError
	var ue *UpstreamError
	switch {
	case errors.As(err, &ve):
		// FastAPI answers 422 inside the session middleware, so the
		// cookie stays on this response.
		log.Info("request validation failed", "method", r.Method, "path", r.URL.Path, "error", err)
		writeJSON(w, http.StatusUnprocessableEntity, ve.body())
		return
	case errors.As(err, &ue):
		status := http.StatusInternalServerError
		if clientErrorKept(ue.Status) {
			status = ue.Status
		}
		clearHeader(w.Header())
		writeJSON(w, status, jsonString(fmt.Sprintf("Hit an exception in %s calling an inner server: %s", st.mw.name, ue.Body)))
	default:
		clearHeader(w.Header())
		writeJSON(w, http.StatusInternalServerError, jsonString(err.Error()))
	}
	if r.Context().Err() != nil {
		log.Debug("request ended after its client went away", "method", r.Method, "path", r.URL.Path, "error", err)
		return
	}
	log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
}

// clearHeader drops what a failed handler had prepared: NeMo Gym's
// exception middleware sits outside the session middleware and answers with
// a fresh response.
func clearHeader(h http.Header) {
	for k := range h {
		delete(h, k)
	}
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// jsonString encodes s as Starlette's JSONResponse does: no HTML escaping.
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// trackingWriter records whether the response has started, which decides
// whether a failure can still become an error response.
type trackingWriter struct {
	w       http.ResponseWriter
	started bool
	status  int // the final status sent; 0 until the response starts
}

func (t *trackingWriter) Header() http.Header { return t.w.Header() }

func (t *trackingWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		t.begin(code)
	}
	t.w.WriteHeader(code)
}

// begin records that the response started, with status unless it had
// started already.
func (t *trackingWriter) begin(status int) {
	if !t.started {
		t.started, t.status = true, status
	}
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.begin(http.StatusOK)
	return t.w.Write(b)
}

// Flush keeps synthesized SSE streams flowing through the wrapper.
func (t *trackingWriter) Flush() {
	t.begin(http.StatusOK)
	if f, ok := t.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.w }
