package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

const (
	// What net/http buffers of a response before it decides between a
	// Content-Length (the handler finished within it) and chunking.
	bufferBeforeChunking = 2048
	// The request body net/http reads after the handler, unread, to keep
	// the connection; past it the connection is closed instead.
	maxPostHandlerRead = 256 << 10
	// How long net/http lingers after half-closing a connection whose
	// request body it gave up on, so the client reads the answer before a
	// reset.
	rstAvoidanceDelay = 500 * time.Millisecond
)

var errWriteAfterHandler = errors.New("http: write on a response after its handler returned")

// noBodyHeaders are left out of a 1xx answer.
var noBodyHeaders = map[string]bool{"Content-Length": true, "Transfer-Encoding": true}

// h1Response is the http.ResponseWriter of gym's own connection loop. What
// it writes is what net/http's server writes for the same handler calls,
// byte for byte but for the Date (TestH1ServerMatchesNetHTTP): the header
// as it was at WriteHeader, sorted; a Content-Length when the handler
// finished within the first 2 KiB, else chunks; a sniffed Content-Type when
// none was set; the request body read (up to 256 KiB) or the connection
// closed; 1xx answers written at once; declared trailers after the last
// chunk. What it cannot do: close the connection when an
// http.MaxBytesReader runs over its limit (net/http's hook for that is
// unexported); no gym handler uses one. Hijacking, CloseNotify and
// ResponseController's deadlines are not offered either.
type h1Response struct {
	c             *h1ServerConn
	req           *http.Request
	body          *h1RequestBody // nil without a request body
	handlerHeader http.Header    // nil until the handler asks for it
	sent          http.Header    // the header as of WriteHeader; nil: empty
	wroteHeader   bool
	status        int
	contentLength int64 // declared or computed; -1: none
	written       int64
	w             *bufio.Writer // bufferBeforeChunking bytes in front of chunkWriter
	cw            h1ChunkWriter
	handlerDone   atomic.Bool // set by the connection loop, read by any goroutine the handler left
	closeAfter    bool
	bodyLimitHit  bool
	trailers      []string
}

// Header is the handler's header. The one sent is a copy taken at
// WriteHeader, as net/http takes it; asked for only after WriteHeader, it
// was empty then.
func (w *h1Response) Header() http.Header {
	if w.handlerHeader == nil {
		w.handlerHeader = http.Header{}
	}
	return w.handlerHeader
}

func (w *h1Response) WriteHeader(code int) {
	if w.wroteHeader {
		w.c.s.logf("http: superfluous response.WriteHeader call from %s", relevantCaller())
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		bw := w.c.bufw
		writeStatusLine(bw, code)
		writeHeaderFields(bw, w.handlerHeader, noBodyHeaders)
		bw.Write(crlf)
		w.c.flush()
		return
	}
	w.wroteHeader = true
	w.status = code
	w.sent = w.handlerHeader.Clone()
	if cl := w.handlerHeader.Get("Content-Length"); cl != "" {
		if v, err := strconv.ParseInt(cl, 10, 64); err == nil && v >= 0 {
			w.contentLength = v
		} else {
			w.c.s.logf("http: invalid Content-Length of %q", cl)
			w.handlerHeader.Del("Content-Length")
		}
	}
}

func (w *h1Response) Write(p []byte) (int, error) {
	if err := w.admit(len(p)); err != nil || len(p) == 0 {
		return 0, err
	}
	return w.w.Write(p)
}

func (w *h1Response) WriteString(s string) (int, error) {
	if err := w.admit(len(s)); err != nil || len(s) == 0 {
		return 0, err
	}
	return w.w.WriteString(s)
}

// admit checks a write of n bytes as net/http's does: the header goes
// first, a body only where the status allows one and no longer than the
// Content-Length said.
func (w *h1Response) admit(n int) error {
	if w.handlerDone.Load() {
		return errWriteAfterHandler
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if n == 0 {
		return nil
	}
	if !bodyAllowedForStatus(w.status) {
		return http.ErrBodyNotAllowed
	}
	w.written += int64(n)
	if w.contentLength != -1 && w.written > w.contentLength {
		return http.ErrContentLength
	}
	return nil
}

// FlushError sends what is buffered, header first; http.ResponseController
// finds it.
func (w *h1Response) FlushError() error {
	if w.handlerDone.Load() {
		return errWriteAfterHandler
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	err := w.w.Flush()
	w.cw.writeHeader(nil)
	if e := w.c.flush(); err == nil {
		err = e
	}
	return err
}

func (w *h1Response) Flush() { w.FlushError() }

// finish is net/http's finishRequest: the rest of the body, the last chunk
// and trailers, and the request body closed.
func (w *h1Response) finish() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	w.handlerDone.Store(true)
	w.w.Flush()
	w.cw.writeHeader(nil)
	if w.cw.chunking {
		bw := w.c.bufw
		bw.WriteString("0\r\n")
		if t := w.finalTrailers(); t != nil {
			t.Write(bw)
		}
		bw.Write(crlf)
	}
	w.c.flush()
	if w.body != nil {
		w.body.Close()
	}
	if w.req.MultipartForm != nil {
		w.req.MultipartForm.RemoveAll()
	}
}

// reusable is whether the connection can carry another request.
func (w *h1Response) reusable() bool {
	if w.closeAfter || w.c.werr != nil || w.body != nil && w.body.earlyClose {
		return false
	}
	return w.contentLength == -1 || !bodyAllowedForStatus(w.status) || w.contentLength == w.written
}

func (w *h1Response) declareTrailer(k string) {
	k = http.CanonicalHeaderKey(k)
	if strings.HasPrefix(k, "If-") {
		return
	}
	switch k {
	case "Authorization", "Cache-Control", "Connection", "Content-Encoding", "Content-Length", "Content-Range",
		"Content-Type", "Expect", "Host", "Keep-Alive", "Max-Forwards", "Pragma", "Proxy-Authenticate",
		"Proxy-Authorization", "Proxy-Connection", "Range", "Realm", "Te", "Trailer", "Transfer-Encoding",
		"Www-Authenticate":
		return
	}
	w.trailers = append(w.trailers, k)
}

func (w *h1Response) finalTrailers() http.Header {
	var t http.Header
	for k, vv := range w.handlerHeader {
		if kk, found := strings.CutPrefix(k, http.TrailerPrefix); found {
			if t == nil {
				t = http.Header{}
			}
			t[kk] = vv
		}
	}
	for _, k := range w.trailers {
		if t == nil {
			t = http.Header{}
		}
		for _, v := range w.handlerHeader[k] {
			t.Add(k, v)
		}
	}
	return t
}

// h1ChunkWriter sits behind the response's 2 KiB buffer: the first time
// that buffer flushes, the header is decided and written; after it, body
// bytes go out, in chunks unless the length is known.
type h1ChunkWriter struct {
	res         *h1Response
	wroteHeader bool
	chunking    bool
}

func (cw *h1ChunkWriter) Write(p []byte) (int, error) {
	cw.writeHeader(p)
	bw := cw.res.c.bufw
	if cw.chunking {
		var size [16]byte
		bw.Write(strconv.AppendUint(size[:0], uint64(len(p)), 16))
		if _, err := bw.Write(crlf); err != nil {
			cw.res.c.rwc.Close()
			return 0, err
		}
	}
	n, err := bw.Write(p)
	if cw.chunking && err == nil {
		_, err = bw.Write(crlf)
	}
	if err != nil {
		cw.res.c.rwc.Close()
	}
	return n, err
}

// writeHeader decides the header the way net/http's chunkWriter does for
// an HTTP/1.1 request that is not HEAD and sent no Connection or Expect
// header (the requests gym's loop serves), and writes it. p is the first
// body bytes, all of them when the handler is done.
func (cw *h1ChunkWriter) writeHeader(p []byte) {
	if cw.wroteHeader {
		return
	}
	cw.wroteHeader = true
	w := cw.res
	keepAlives := !w.c.s.shutting.Load()
	header := w.sent // nil reads as empty, and deletes from it do nothing
	var lengthBuf [20]byte
	var extra struct {
		date, contentLength                    []byte
		contentType, connection, transferCoded string
	}

	trailers := false
	for k := range header {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			delete(header, k)
			trailers = true
		}
	}
	for _, v := range header["Trailer"] {
		trailers = true
		forEachHeaderElement(v, w.declareTrailer)
	}

	te := header.Get("Transfer-Encoding")
	hasTE := te != ""
	if w.handlerDone.Load() && !trailers && !hasTE && bodyAllowedForStatus(w.status) && !hasKey(header, "Content-Length") {
		w.contentLength = int64(len(p))
		extra.contentLength = strconv.AppendInt(lengthBuf[:0], int64(len(p)), 10)
	}
	hasCL := w.contentLength != -1
	if header.Get("Connection") == "close" || !keepAlives {
		w.closeAfter = true
	}

	if w.req.ContentLength != 0 && !w.closeAfter && w.body != nil {
		b := w.body
		discard, tooBig := false, false
		b.mu.Lock()
		switch {
		case b.closed:
			if !b.sawEOF {
				w.closeAfter = true
			}
		case b.remaining >= maxPostHandlerRead:
			tooBig = true
		default:
			discard = true
		}
		b.mu.Unlock()
		if discard {
			_, err := io.CopyN(io.Discard, b, maxPostHandlerRead+1)
			switch err {
			case nil:
				tooBig = true
			case http.ErrBodyReadAfterClose:
			case io.EOF:
				if b.Close() != nil {
					w.closeAfter = true
				}
			default:
				w.closeAfter = true
			}
		}
		if tooBig {
			w.closeAfter, w.bodyLimitHit = true, true
			delete(header, "Connection")
			extra.connection = "close"
		}
	}

	code := w.status
	if bodyAllowedForStatus(code) {
		_, haveType := header["Content-Type"]
		if header.Get("Content-Encoding") == "" && !haveType && !hasTE && len(p) > 0 {
			extra.contentType = http.DetectContentType(p)
		}
	} else {
		delete(header, "Content-Length")
		delete(header, "Transfer-Encoding")
		if code == http.StatusNotModified {
			delete(header, "Content-Type")
		}
	}
	if !hasKey(header, "Date") {
		extra.date = httpDate(time.Now())
	}
	if hasCL && hasTE && te != "identity" {
		w.c.s.logf("http: WriteHeader called with both Transfer-Encoding of %q and a Content-Length of %d", te, w.contentLength)
		delete(header, "Content-Length")
		hasCL = false
	}
	switch {
	case !bodyAllowedForStatus(code), hasCL:
		delete(header, "Transfer-Encoding")
	case hasTE && te == "identity":
		cw.chunking = false
		w.closeAfter = true
		delete(header, "Transfer-Encoding")
	default:
		cw.chunking = true
		extra.transferCoded = "chunked"
		if hasTE && te == "chunked" {
			delete(header, "Transfer-Encoding")
		}
	}
	if cw.chunking {
		delete(header, "Content-Length")
	}
	switchesProtocol := code == http.StatusSwitchingProtocols && header.Get("Upgrade") != ""
	if w.closeAfter && (!keepAlives || !hasToken(header.Get("Connection"), "close")) && !switchesProtocol {
		delete(header, "Connection")
		extra.connection = "close"
	}

	bw := w.c.bufw
	writeStatusLine(bw, code)
	writeHeaderFields(bw, header, nil)
	if extra.date != nil {
		bw.WriteString("Date: ")
		bw.Write(extra.date)
		bw.Write(crlf)
	}
	if extra.contentLength != nil {
		bw.WriteString("Content-Length: ")
		bw.Write(extra.contentLength)
		bw.Write(crlf)
	}
	for _, h := range [...]struct{ key, value string }{{"Content-Type", extra.contentType}, {"Connection", extra.connection}, {"Transfer-Encoding", extra.transferCoded}} {
		if h.value != "" {
			bw.WriteString(h.key)
			bw.WriteString(": ")
			bw.WriteString(h.value)
			bw.Write(crlf)
		}
	}
	bw.Write(crlf)
}

// httpDate is now as a Date header, formatted once a second.
func httpDate(now time.Time) []byte {
	sec := now.Unix()
	if d := dateCache.Load(); d != nil && d.sec == sec {
		return d.text
	}
	d := &formattedDate{sec: sec, text: now.UTC().AppendFormat(make([]byte, 0, len(http.TimeFormat)), http.TimeFormat)}
	dateCache.Store(d)
	return d.text
}

type formattedDate struct {
	sec  int64
	text []byte
}

var dateCache atomic.Pointer[formattedDate]

func writeStatusLine(bw *bufio.Writer, code int) {
	bw.WriteString("HTTP/1.1 ")
	if text := http.StatusText(code); text != "" {
		var digits [3]byte
		bw.Write(strconv.AppendInt(digits[:0], int64(code), 10))
		bw.WriteByte(' ')
		bw.WriteString(text)
		bw.Write(crlf)
		return
	}
	fmt.Fprintf(bw, "%03d status code %d\r\n", code, code)
}

func bodyAllowedForStatus(status int) bool {
	switch {
	case status >= 100 && status <= 199, status == http.StatusNoContent, status == http.StatusNotModified:
		return false
	}
	return true
}

func hasKey(h http.Header, key string) bool {
	_, ok := h[key]
	return ok
}

// hasToken is whether v holds token, in any case, between spaces, tabs,
// commas or the ends of v.
func hasToken(v, token string) bool {
	boundary := func(i int) bool { return i < 0 || i >= len(v) || v[i] == ' ' || v[i] == ',' || v[i] == '\t' }
	for i := 0; i+len(token) <= len(v); i++ {
		if boundary(i-1) && boundary(i+len(token)) && strings.EqualFold(v[i:i+len(token)], token) {
			return true
		}
	}
	return false
}

func forEachHeaderElement(v string, fn func(string)) {
	for f := range strings.SplitSeq(v, ",") {
		if f = strings.Trim(f, " \t\n\r"); f != "" {
			fn(f)
		}
	}
}

// relevantCaller names the first caller outside this response writer and
// net/http, for the superfluous-WriteHeader warning net/http logs too.
func relevantCaller() string {
	pc := make([]uintptr, 16)
	frames := runtime.CallersFrames(pc[:runtime.Callers(1, pc)])
	for {
		f, more := frames.Next()
		if !strings.Contains(f.Function, "internal/server.(*h1Response)") && !strings.HasPrefix(f.Function, "net/http.") && f.Function != "github.com/nemo-gym-go/gym/internal/server.relevantCaller" {
			return fmt.Sprintf("%s (%s:%d)", f.Function, path.Base(f.File), f.Line)
		}
		if !more {
			return "unknown"
		}
	}
}
