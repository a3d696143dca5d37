package capture

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/server"
)

// dialects are the routes whose calls are captured, by NeMo Gym's names.
var dialects = map[string]string{
	"/v1/responses":        "responses",
	"/v1/chat/completions": "chat",
	"/v1/messages":         "messages",
}

// Recorder captures the calls a model server answers for rollouts: those
// that came under an /ng-rollout/<id>/ prefix to one of the three model
// routes, whatever the method. It runs inside server.Wrap, which strips
// the prefix and keeps the id.
type Recorder struct {
	Store *Store
	// Server is the model server's instance name (model_ref.name).
	Server string
	Logger *slog.Logger
}

// Failure tells the recorder that a call's answer is an error the server
// relays rather than a response of its own: the upstream answered with an
// error status (Status and Body as it answered), or never answered
// (Status 0, Timeout saying whether it timed out). NeMo Gym records such a
// call from the exception its server raised: no parsed response, the
// upstream's body as text.
type Failure struct {
	Status  int
	Body    []byte
	Timeout bool
}

type callKey struct{}

// CallID is the model_call_id the recorder gave the call ctx belongs to,
// so that the call's training-token entry has the same; outside a
// captured call it is a new one.
func CallID(ctx context.Context) string {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		return c.id
	}
	return newCallID()
}

// ReportFailure records f for the call ctx belongs to; outside a captured
// call it does nothing.
func ReportFailure(ctx context.Context, f Failure) {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		c.failure = &f
	}
}

// Wrap captures next's calls.
func (rc *Recorder) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dialect, ok := dialects[r.URL.Path]
		key := server.RolloutID(r)
		if !ok || key == "" || rc == nil || rc.Store == nil {
			next.ServeHTTP(w, r)
			return
		}
		c := &call{dialect: dialect, start: time.Now(), session: sessionHeader(r.Header)}
		c.id = newCallID()
		reqBody, err := io.ReadAll(r.Body)
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		c.request = reqBody
		cw := &captureWriter{w: w, c: c, body: getBuffer(), heldFrom: -1}
		defer putBuffer(cw.body)
		r = r.WithContext(context.WithValue(r.Context(), callKey{}, c))
		if err != nil {
			// The body never arrived whole; the handler answers that.
			c.request = nil
		}
		// A handler that aborts (a stream broken after it started) still
		// leaves its record, of what it had sent, before the abort goes on.
		defer func() {
			if p := recover(); p != nil {
				c.end, c.aborted = time.Now(), true
				rc.finish(key, c, cw)
				panic(p)
			}
		}()
		next.ServeHTTP(cw, r)
		c.end = time.Now()
		c.cancelled = r.Context().Err() != nil
		rc.finish(key, c, cw)
	})
}

// finish writes the call's record, marks the capture incomplete if it
// cannot, and lets the held end of the answer go.
func (rc *Recorder) finish(key string, c *call, cw *captureWriter) {
	if err := rc.write(key, c, cw); err != nil {
		if rc.Logger != nil {
			rc.Logger.Warn("Model-call capture failed for one call; the rollout's capture is marked incomplete", "rollout", key, "dialect", c.dialect, "error", err)
		}
		if merr := rc.Store.MarkIncomplete(key); merr != nil && rc.Logger != nil {
			rc.Logger.Warn("Could not mark the rollout's capture as incomplete", "rollout", key, "error", merr)
		}
	}
	if !c.aborted {
		cw.release()
	}
}

func (rc *Recorder) write(key string, c *call, cw *captureWriter) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	line, scratch := getBuffer(), getBuffer()
	defer putBuffer(line)
	defer putBuffer(scratch)
	rec, err := c.record((*line)[:0], (*scratch)[:0], rc.Server, cw)
	if err != nil {
		return err
	}
	rec = append(rec, '\n')
	*line = rec
	return rc.Store.appendRecord(key, rec)
}

// buffers hold the answers and the lines of calls under way: a line is
// the size of its request and answer, and allocating each afresh was a
// third of the capture's cost.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

// putBuffer gives b back unless it grew past what most calls need.
func putBuffer(b *[]byte) {
	if cap(*b) <= 1<<20 {
		*b = (*b)[:0]
		buffers.Put(b)
	}
}

// sessionHeader is X-Session-Id when the request carries exactly one
// distinct non-empty value of it.
func sessionHeader(h http.Header) *string {
	var found *string
	for _, v := range h.Values("X-Session-Id") {
		if v == "" {
			continue
		}
		if found != nil && *found != v {
			return nil
		}
		found = &v
	}
	return found
}

func newCallID() string {
	b := make([]byte, 16)
	rand.Read(b)
	// A version-4 UUID's hex, as Python's uuid4().hex.
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b)
}

// call is one captured call as it happens.
type call struct {
	id, dialect string
	session     *string
	start, end  time.Time
	ttft        time.Duration
	sawByte     bool
	request     []byte
	failure     *Failure
	aborted     bool // the handler panicked: the answer was cut off
	cancelled   bool // the client went away before the answer was whole
}

// captureWriter passes the answer through, keeping a copy, and holds back
// the end of it (the whole of an answer that is not a stream; a stream's
// terminal event and what follows) until the record is written: a client
// that has the end of an answer can count on its capture.
type captureWriter struct {
	w      http.ResponseWriter
	c      *call
	status int
	stream bool
	body   *[]byte
	// heldFrom is where in body the held end of the answer starts, -1
	// while nothing is held.
	heldFrom int
	terminal string // "complete", "incomplete" or "error" once seen
	scanned  int    // bytes of body already searched for the terminal event
}

func (cw *captureWriter) Header() http.Header { return cw.w.Header() }

func (cw *captureWriter) WriteHeader(status int) {
	if cw.status != 0 {
		return
	}
	cw.status = status
	cw.stream = strings.HasPrefix(cw.w.Header().Get("Content-Type"), "text/event-stream")
	if !cw.stream {
		cw.heldFrom = 0
	}
	cw.w.WriteHeader(status)
}

func (cw *captureWriter) Write(p []byte) (int, error) {
	if cw.status == 0 {
		cw.WriteHeader(http.StatusOK)
	}
	if len(p) > 0 && !cw.c.sawByte && string(p) != ": keep-alive\n\n" {
		cw.c.sawByte = true
		cw.c.ttft = time.Since(cw.c.start)
	}
	before := len(*cw.body)
	*cw.body = append(*cw.body, p...)
	if cw.stream && cw.terminal == "" {
		cw.terminal, cw.scanned = findTerminal(*cw.body, cw.scanned, cw.c.dialect)
		if cw.terminal != "" {
			cw.heldFrom = before
		}
	}
	if cw.heldFrom >= 0 {
		return len(p), nil
	}
	return cw.w.Write(p)
}

// Flush passes a flush on while nothing is held.
func (cw *captureWriter) Flush() {
	if cw.heldFrom < 0 {
		http.NewResponseController(cw.w).Flush()
	}
}

func (cw *captureWriter) Unwrap() http.ResponseWriter { return cw.w }

// release sends what was held back.
func (cw *captureWriter) release() {
	if cw.heldFrom >= 0 && cw.heldFrom < len(*cw.body) {
		cw.w.Write((*cw.body)[cw.heldFrom:])
	}
	if cw.stream {
		http.NewResponseController(cw.w).Flush()
	}
}

// record is the call's line, in NeMo Gym's key order: model_call_id,
// dialect, model_ref, started_at, completed_at, latency_ms,
// latency_ttft_ms, status_code, error_category, request, response, then
// client_session_id, request_raw and response_raw when there are any.
//
// The line is appended to dst; scratch is room for the parsed response.
func (c *call) record(dst, scratch []byte, serverName string, cw *captureWriter) ([]byte, error) {
	dst = append(dst, `{"model_call_id":`...)
	dst = appendString(dst, c.id)
	dst = append(dst, `,"dialect":`...)
	dst = appendString(dst, c.dialect)
	dst = append(dst, `,"model_ref":`...)
	if serverName != "" {
		dst = append(dst, `{"type":"responses_api_models","name":`...)
		dst = appendString(dst, serverName)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"started_at":`...)
	dst = tree.AppendOrjsonFloat(dst, epochSeconds(c.start))
	dst = append(dst, `,"completed_at":`...)
	dst = tree.AppendOrjsonFloat(dst, epochSeconds(c.end))
	dst = append(dst, `,"latency_ms":`...)
	dst = tree.AppendOrjsonFloat(dst, pyRound(float64(c.end.Sub(c.start))/float64(time.Millisecond), 2))
	dst = append(dst, `,"latency_ttft_ms":`...)
	if c.sawByte {
		dst = tree.AppendOrjsonFloat(dst, pyRound(float64(c.ttft)/float64(time.Millisecond), 2))
	} else {
		dst = append(dst, "null"...)
	}

	body := *cw.body
	status := cw.status
	var response, responseRaw []byte
	var category string
	switch f := c.failure; {
	case f == nil && (c.cancelled || c.aborted):
		// NeMo Gym records a call its client left, or a handler that
		// raised, from the exception: no parsed response, what was sent
		// as text.
		category = classify(status)
		switch {
		case category != "":
		case c.cancelled:
			category = "cancelled"
		default:
			category = "exception"
		}
		if len(body) > 0 {
			responseRaw = appendString(nil, decodeReplace(body))
		}
	case f != nil:
		// An answer relayed from an exception: no parsed response.
		status = f.Status
		switch {
		case f.Status != 0:
			category = classify(f.Status)
		case f.Timeout:
			category = "timeout"
		default:
			category = "connection"
		}
		if len(f.Body) > 0 {
			responseRaw = appendString(nil, decodeReplace(f.Body))
		}
	default:
		if len(body) > 0 {
			if cw.stream {
				response = reconstruct(body, c.dialect)
			} else {
				v, ok, err := appendObject(scratch, body)
				if err != nil {
					return nil, err
				}
				if ok {
					response = v
				}
			}
		}
		category = classify(status)
		if category == "" {
			switch cw.terminal {
			case "error":
				category = "upstream_error"
			case "incomplete":
				category = "incomplete"
			}
		}
		if category == "" && cw.stream && cw.terminal == "" {
			category = "stream_truncated"
		}
		if category == "" && len(body) > 0 && response == nil {
			category = "capture_parse_error"
		}
		if len(body) > 0 && (cw.stream || response == nil) {
			responseRaw = appendString(nil, decodeReplace(body))
		}
	}
	dst = append(dst, `,"status_code":`...)
	if status != 0 {
		dst = strconv.AppendInt(dst, int64(status), 10)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"error_category":`...)
	dst = appendNullable(dst, category)
	dst = append(dst, `,"request":`...)
	var requestRaw []byte
	if len(c.request) > 0 {
		var ok bool
		var err error
		if dst, ok, err = appendObject(dst, c.request); err != nil {
			return nil, err
		}
		if !ok {
			dst = append(dst, "null"...)
			requestRaw = appendString(nil, decodeReplace(c.request))
		}
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"response":`...)
	dst = appendRawOrNull(dst, response)
	if c.session != nil {
		dst = append(dst, `,"client_session_id":`...)
		dst = appendString(dst, *c.session)
	}
	if requestRaw != nil {
		dst = append(dst, `,"request_raw":`...)
		dst = append(dst, requestRaw...)
	}
	if responseRaw != nil {
		dst = append(dst, `,"response_raw":`...)
		dst = append(dst, responseRaw...)
	}
	return append(dst, '}'), nil
}

// classify is NeMo Gym's error category of a status, "" below 400.
func classify(status int) string {
	switch {
	case status == 0 || status < 400:
		return ""
	case status == 408 || status == 504:
		return "timeout"
	case status == 429:
		return "rate_limit"
	case status == 401 || status == 403:
		return "auth"
	case status == 404:
		return "not_found"
	case status < 500:
		return "client_error"
	}
	return "upstream_error"
}

// epochSeconds is Python's time.time(): nanoseconds over 1e9.
func epochSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func appendNullable(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "null"...)
	}
	return appendString(dst, s)
}

func appendRawOrNull(dst, raw []byte) []byte {
	if raw == nil {
		return append(dst, "null"...)
	}
	return append(dst, raw...)
}
