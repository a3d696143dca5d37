package modelserver

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/openai"
)

// streamAPI is the streaming protocol of a route: which event ends its
// streams, and how a stream that never got there is ended instead.
type streamAPI int

const (
	responsesAPI streamAPI = iota
	chatAPI
)

// truncatedStream is the start of what a client, and the log, are told
// when an upstream stream ends before its terminal event.
const truncatedStream = "the upstream stream ended before its final event"

func (api streamAPI) terminalEvents() string {
	if api == chatAPI {
		return "data: [DONE]"
	}
	return "response.completed, response.failed or response.incomplete"
}

// streamEnd follows the events of one relayed stream far enough to tell
// whether it reached its terminal event, and to end it if not. It parses
// only the events that may matter, so that following a stream costs little
// more than copying it (BenchmarkRelayEvents).
type streamEnd struct {
	api streamAPI
	// For Responses: whether any event carried data, the data of the last
	// one (for its sequence_number), and the response object as the stream
	// last showed it.
	seen     bool
	last     []byte
	response []byte
}

var (
	doneData       = []byte("[DONE]")
	errorMember    = []byte(`"error"`)
	responseMember = []byte(`"response"`)
	// What the data of a Responses terminal event must hold, so that other
	// events need no parsing.
	terminalMarks = [][]byte{[]byte(`completed"`), []byte(`failed"`), []byte(`incomplete"`), errorMember}
)

// terminal reports whether an event (its event field and its data) ends
// the stream: for Responses response.completed, response.failed,
// response.incomplete or an error event, by its data's type (which SDKs
// go by) or its event field; for Chat Completions [DONE] or an error
// chunk. Either way an upstream that reported its own failure has ended
// its stream, and nothing is added to it.
func (e *streamEnd) terminal(name, data []byte) bool {
	if len(data) == 0 {
		return false // no client dispatches an event without data
	}
	if e.api == chatAPI {
		return bytes.Equal(bytes.TrimSpace(data), doneData) ||
			(bytes.Contains(data, errorMember) && gjson.GetBytes(data, "error").Exists())
	}
	e.seen = true
	if terminalResponsesEvent(string(name)) {
		return true
	}
	for _, m := range terminalMarks {
		if bytes.Contains(data, m) {
			if typ := gjson.GetBytes(data, "type"); typ.Type == gjson.String && terminalResponsesEvent(typ.Str) {
				return true
			}
			break
		}
	}
	e.last = append(e.last[:0], data...)
	if bytes.Contains(data, responseMember) {
		if r := gjson.GetBytes(data, "response"); r.IsObject() {
			e.response = append(e.response[:0], r.Raw...)
		}
	}
	return false
}

func terminalResponsesEvent(typ string) bool {
	switch typ {
	case "response.completed", "response.failed", "response.incomplete", "error":
		return true
	}
	return false
}

// failure is what ends a stream cut short, in the API's own terms: for
// Responses a response.failed event on the response the client has seen,
// numbered after the last event (or, before any event, response.created
// and response.failed); for Chat Completions an error chunk and [DONE].
func (e *streamEnd) failure(message string) []byte {
	switch {
	case e.api == chatAPI:
		return openai.ChatErrorSSE(message)
	case !e.seen:
		return openai.FailedResponsesSSE(message)
	}
	var seq int64
	if n := gjson.GetBytes(e.last, "sequence_number"); n.Type == gjson.Number {
		seq = n.Int() + 1
	}
	return openai.FailedResponseEvent(e.response, seq, message)
}

func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// relayEvents passes an event stream through event by event: each read's
// complete events are written and flushed at once, byte for byte, and an
// event the upstream has not finished is held back. A client acts on an
// event only at its blank line, so holding it costs no latency; and if the
// stream breaks off, no half event has been sent that the failure event
// would be glued to. A stream that ends, cleanly or not, before its
// terminal event is ended with the API's failure event, logged once.
func (h *handler) relayEvents(w io.Writer, r *http.Request, rc *http.ResponseController, res *Result, api streamAPI) error {
	end := &streamEnd{api: api}
	bufp := copyBuffers.Get().(*[]byte)
	f := &sseFramer{buf: (*bufp)[:0]}
	defer func() {
		*bufp = f.buf[:cap(f.buf)] // the raw relay reads into the whole buffer
		copyBuffers.Put(bufp)
	}()
	done := false
	for {
		err := f.read(res.Stream)
		from := f.start
		for ev := f.next(); ev != nil; ev = f.next() {
			done = done || end.terminal(sseFields(ev))
		}
		if f.start > from {
			if _, werr := w.Write(f.buf[from:f.start]); werr != nil {
				return ignoreGone(r, werr)
			}
			if ferr := rc.Flush(); ferr != nil {
				return ignoreGone(r, ferr)
			}
		}
		if err == nil {
			continue
		}
		rest := f.buf[f.start:]
		if err == io.EOF && !done && len(rest) > 0 {
			// A last event without its blank line ends the stream if it is
			// whole: its data a JSON value or [DONE], not a line cut off.
			name, data := sseFields(rest)
			done = (bytes.Equal(bytes.TrimSpace(data), doneData) || jsonl.Valid(data)) && end.terminal(name, data)
		}
		if done {
			if err == io.EOF && len(rest) > 0 {
				if _, werr := w.Write(rest); werr != nil {
					return ignoreGone(r, werr)
				}
			}
			return nil
		}
		if r.Context().Err() != nil {
			return nil // the client left, which is why the upstream stopped
		}
		message := truncatedStream + " (" + api.terminalEvents() + ")"
		if err != io.EOF {
			message += ": " + err.Error()
		}
		h.logger.Error(truncatedStream, "path", r.URL.Path, "url", res.URL, "error", err)
		if _, werr := w.Write(end.failure(message)); werr != nil {
			return ignoreGone(r, werr)
		}
		return ignoreGone(r, rc.Flush())
	}
}

// sseFramer splits an SSE byte stream into events, each with the blank
// line that ends it. Lines end in LF, CRLF or CR, as the SSE spec allows.
type sseFramer struct {
	buf     []byte
	start   int  // buf[start:] is the event being received
	pos     int  // buf[start:pos] has been scanned
	lineLen int  // bytes of the line being scanned so far
	cr      bool // the byte before pos was a CR ending a line
}

// minRead is the least free space a read is given; the buffer doubles
// when it has less, so an event of any size is held whole.
const minRead = 4 << 10

// read appends one read of r after the bytes still held.
func (f *sseFramer) read(r io.Reader) error {
	if f.start > 0 {
		n := copy(f.buf, f.buf[f.start:])
		f.buf, f.pos, f.start = f.buf[:n], f.pos-f.start, 0
	}
	if cap(f.buf)-len(f.buf) < minRead {
		f.buf = slices.Grow(f.buf, max(minRead, len(f.buf)))
	}
	n, err := r.Read(f.buf[len(f.buf):cap(f.buf)])
	f.buf = f.buf[:len(f.buf)+n]
	return err
}

// next returns the next complete event, or nil when none is complete.
func (f *sseFramer) next() []byte {
	for f.pos < len(f.buf) {
		i := lineEnd(f.buf[f.pos:])
		if i < 0 {
			f.lineLen += len(f.buf) - f.pos
			f.pos, f.cr = len(f.buf), false
			return nil
		}
		if i > 0 {
			f.lineLen += i
			f.pos, f.cr = f.pos+i, false
		}
		c := f.buf[f.pos]
		f.pos++
		if c == '\n' && f.cr {
			f.cr = false
			if f.pos-1 == f.start {
				// The LF of a CRLF whose CR ended the previous event, which
				// was handed on before this byte arrived: hand it on too.
				return f.cut()
			}
			continue
		}
		f.cr = c == '\r'
		if f.lineLen > 0 {
			f.lineLen = 0
			continue
		}
		if f.cr && f.pos < len(f.buf) && f.buf[f.pos] == '\n' {
			f.pos++
			f.cr = false
		}
		return f.cut()
	}
	return nil
}

// lineEnd is the index of the first CR or LF in b, or -1.
func lineEnd(b []byte) int { return jsonl.IndexEither(b, '\n', '\r') }

func (f *sseFramer) cut() []byte {
	ev := f.buf[f.start:f.pos]
	f.start = f.pos
	return ev
}

var (
	eventName = []byte("event")
	dataName  = []byte("data")
	colon     = []byte(":")
	space     = []byte(" ")
)

// sseFields returns an event's event field and its data (its data lines
// joined with LF, as a client dispatches them). The empty lines that
// splitting a CRLF leaves are no field, and so are skipped.
func sseFields(ev []byte) (name, data []byte) {
	for len(ev) > 0 {
		line := ev
		if i := lineEnd(ev); i >= 0 {
			line, ev = ev[:i], ev[i+1:]
		} else {
			ev = nil
		}
		field, value, _ := bytes.Cut(line, colon)
		value = bytes.TrimPrefix(value, space)
		switch {
		case bytes.Equal(field, dataName):
			if data == nil {
				data = value
			} else {
				data = append(append(append([]byte(nil), data...), '\n'), value...)
			}
		case bytes.Equal(field, eventName):
			name = value
		}
	}
	return name, data
}
