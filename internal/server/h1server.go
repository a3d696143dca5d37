package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// disconnectWatchDelay is how long a handler runs before its connection is
// watched for the client going away (which cancels the request's context).
// net/http watches every request from the end of its body, at the price of
// a goroutine, a read and two deadline changes each; a request that ends
// within the delay never needs it, and a handler waiting on a model for
// seconds learns of the disconnect a quarter of a second later than it
// would. Under load short requests queue for tens of milliseconds
// (bench/rollouts.sh at 256 clients: 40-150 ms), and at 50 ms the watches
// of the ones past it were 5% of the servers' CPU (bench/ab.sh).
const disconnectWatchDelay = 250 * time.Millisecond

var (
	errHeadTooLarge = errors.New("head larger than the read buffer")
	errBareLF       = errors.New("head with a line feed alone")
)

func leadingLineBreaks(b []byte) int {
	n := 0
	for n < len(b) && (b[n] == '\r' || b[n] == '\n') {
		n++
	}
	return n
}

// bareLF is whether b has a line feed without a carriage return before it.
func bareLF(b []byte) bool {
	for i := bytes.IndexByte(b, '\n'); i >= 0; {
		if i == 0 || b[i-1] != '\r' {
			return true
		}
		j := bytes.IndexByte(b[i+1:], '\n')
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// h1Server runs an *http.Server's handler on gym's own HTTP/1.1 connection
// loop: the requests gym's clients and NeMo Gym's send (a usual method,
// HTTP/1.1, a Host, a Content-Length or no body) are read and answered
// there, with one goroutine per connection and no other per request; a
// connection whose next request is anything else (HTTP/1.0, HEAD,
// chunked, Expect, Upgrade, Connection, a head over 4 KiB, a malformed
// line) is handed, with the bytes read so far, to the *http.Server itself,
// which serves it from then on as it always has. Clients see the same
// bytes either way (TestH1ServerMatchesNetHTTP).
//
// It honours the server's Handler, ErrorLog, BaseContext,
// ReadHeaderTimeout and IdleTimeout; Shutdown and Close act on both loops.
type h1Server struct {
	srv      *http.Server
	shutting atomic.Bool

	mu       sync.Mutex
	listener net.Listener
	handoff  *handoffListener
	conns    map[*h1ServerConn]struct{}
}

func newH1Server(srv *http.Server) *h1Server {
	return &h1Server{srv: srv, conns: map[*h1ServerConn]struct{}{}}
}

func (s *h1Server) logf(format string, args ...any) {
	if s.srv.ErrorLog != nil {
		s.srv.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

// Serve accepts connections on ln until Shutdown or Close, which make it
// return http.ErrServerClosed. It closes ln when it returns, as
// http.Server.Serve does, even when it was shut down before it began.
func (s *h1Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.shutting.Load() {
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	s.listener = ln
	s.handoff = &handoffListener{addr: ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{})}
	handoff := s.handoff
	s.mu.Unlock()
	go s.srv.Serve(handoff)

	base := context.Background()
	if s.srv.BaseContext != nil {
		base = s.srv.BaseContext(ln)
	}
	base = context.WithValue(base, http.ServerContextKey, s.srv)
	var delay time.Duration
	for {
		rwc, err := ln.Accept()
		if err != nil {
			if s.shutting.Load() {
				return http.ErrServerClosed
			}
			if !retryableAccept(err) {
				ln.Close()
				handoff.Close()
				return err
			}
			// Out of descriptors and the like: net/http backs off the same way.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.logf("http: Accept error: %v; retrying in %v", err, delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		c := &h1ServerConn{s: s, rwc: rwc, remote: rwc.RemoteAddr().String()}
		c.ctx = context.WithValue(base, http.LocalAddrContextKey, rwc.LocalAddr())
		c.cond.L = &c.mu
		if !s.track(c) {
			rwc.Close()
			return http.ErrServerClosed
		}
		go c.serve()
	}
}

func retryableAccept(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() ||
		errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}

func (s *h1Server) track(c *h1ServerConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutting.Load() {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *h1Server) untrack(c *h1ServerConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Shutdown stops accepting, closes idle connections, lets requests under
// way finish (their connections close after the answer) and waits for
// them until ctx ends, as http.Server.Shutdown does.
func (s *h1Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutting.Store(true)
	ln, handoff := s.listener, s.handoff
	s.mu.Unlock()
	var err error
	if ln != nil {
		err = ln.Close()
		// Closed here too, as the *http.Server may not have begun serving
		// it: a connection handed over now is closed, not left waiting.
		handoff.Close()
	}
	served := make(chan error, 1)
	go func() { served <- s.srv.Shutdown(ctx) }()
	wait := time.Millisecond
	for !s.closeIdle() {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			<-served
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
	if e := <-served; err == nil {
		err = e
	}
	return err
}

// closeIdle closes the connections waiting for a request and reports
// whether none is left.
func (s *h1Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.state.CompareAndSwap(connIdle, connClosed) {
			c.rwc.Close()
		}
	}
	return len(s.conns) == 0
}

// Close closes the listener and every connection at once.
func (s *h1Server) Close() error {
	s.mu.Lock()
	s.shutting.Store(true)
	ln, handoff := s.listener, s.handoff
	for c := range s.conns {
		c.state.Store(connClosed)
		c.rwc.Close()
	}
	s.mu.Unlock()
	var err error
	if ln != nil {
		err = ln.Close()
		handoff.Close()
	}
	if e := s.srv.Close(); err == nil {
		err = e
	}
	return err
}

const (
	connIdle int32 = iota
	connActive
	connClosed
)

var (
	readerPool   sync.Pool
	writerPool   sync.Pool
	responsePool sync.Pool
	headEnd      = []byte("\r\n\r\n")
	longAgo      = time.Unix(1, 0)
)

// h1ServerConn is one connection of gym's loop.
type h1ServerConn struct {
	s      *h1Server
	rwc    net.Conn
	remote string
	ctx    context.Context
	state  atomic.Int32
	bufr   *bufio.Reader
	bufw   *bufio.Writer
	resBuf *bufio.Writer      // a response's first 2 KiB
	werr   error              // the first write error; the connection is done
	cancel context.CancelFunc // the request under way's
	// blank is never set: WithContext on it makes a request with its
	// context in one allocation.
	blank http.Request

	// The disconnect watch of the request under way, under mu.
	mu       sync.Mutex
	cond     sync.Cond
	timer    *time.Timer
	handling bool // a handler is running
	bodyDone bool // its request body is read to the end, or it has none
	due      bool // the watch delay passed before bodyDone
	inRead   bool // the watch is blocked reading the connection
	aborted  bool // the watch's read was cut off on purpose
	hasByte  bool // the watch read a byte of the next request
	oneByte  [1]byte
	rerr     error // the error the watch read, for the loop's next read
}

// Read is the connection as the loop's reader sees it: a byte the watch
// took first.
func (c *h1ServerConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.hasByte {
		p[0] = c.oneByte[0]
		c.hasByte = false
		return 1, nil
	}
	if c.rerr != nil {
		return 0, c.rerr
	}
	return c.rwc.Read(p)
}

// h1ConnWriter records the first write error and cancels the request
// under way with it, as net/http does.
type h1ConnWriter struct{ c *h1ServerConn }

func (w h1ConnWriter) Write(p []byte) (int, error) {
	n, err := w.c.rwc.Write(p)
	if err != nil && w.c.werr == nil {
		w.c.werr = err
		if w.c.cancel != nil {
			w.c.cancel()
		}
	}
	return n, err
}

func (c *h1ServerConn) flush() error { return c.bufw.Flush() }

func (c *h1ServerConn) serve() {
	c.bufr = getReader(c)
	c.bufw = getWriter(writerPool.Get(), h1ConnWriter{c}, 4<<10)
	handedOff := false
	defer func() {
		if c.timer != nil {
			c.timer.Stop()
		}
		c.s.untrack(c)
		if !handedOff {
			c.bufw.Flush()
			c.rwc.Close()
		}
		readerPool.Put(c.bufr)
		writerPool.Put(c.bufw)
		if c.resBuf != nil {
			responsePool.Put(c.resBuf)
		}
	}()
	first, afterPost := true, false
	for {
		if c.bufr.Buffered() == 0 && !c.hasByte {
			wait := c.s.srv.IdleTimeout
			if first {
				wait = c.s.srv.ReadHeaderTimeout
			}
			if wait > 0 {
				c.rwc.SetReadDeadline(time.Now().Add(wait))
			}
		}
		n, err := c.readHead(!first, afterPost)
		if err != nil {
			// What net/http would answer (a head with bare line feeds, one
			// cut off by the end of the connection, one too large for the
			// buffer) is its to answer.
			if c.bufr.Buffered() > 0 || errors.Is(err, errHeadTooLarge) || errors.Is(err, errBareLF) {
				c.handOff(err)
				handedOff = true
			}
			return
		}
		if !c.state.CompareAndSwap(connIdle, connActive) {
			return
		}
		c.rwc.SetReadDeadline(time.Time{})
		head, _ := c.bufr.Peek(n)
		ctx, cancel := context.WithCancel(c.ctx)
		req := c.blank.WithContext(ctx)
		contentLength, ok := parseHead(head, req)
		if !ok {
			cancel()
			c.handOff(nil)
			handedOff = true
			return
		}
		c.bufr.Discard(n)
		afterPost = req.Method == http.MethodPost
		if !c.handle(req, contentLength, cancel) {
			return
		}
		if !c.state.CompareAndSwap(connActive, connIdle) || c.s.shutting.Load() {
			return
		}
		first = false
	}
}

// readHead waits until a whole request head is buffered and returns its
// length. While idle it waits under the idle timeout; from the first byte
// the rest must come within the header timeout. After a POST, line breaks
// before the head are dropped, as net/http drops them for old clients
// that end a body with one.
func (c *h1ServerConn) readHead(idle, afterPost bool) (int, error) {
	if afterPost {
		start, _ := c.bufr.Peek(4) // a read error comes again from peekHead
		c.bufr.Discard(leadingLineBreaks(start))
	}
	return peekHead(c.bufr, func() {
		if idle {
			idle = false
			if d := c.s.srv.ReadHeaderTimeout; d > 0 {
				c.rwc.SetReadDeadline(time.Now().Add(d))
			}
		}
	})
}

// handOff gives the connection, with what was read of it and not used, to
// the *http.Server; readErr is what reading it further gave, if anything.
func (c *h1ServerConn) handOff(readErr error) {
	pending, _ := c.bufr.Peek(c.bufr.Buffered())
	prefix := append([]byte(nil), pending...)
	if c.hasByte {
		prefix = append(prefix, c.oneByte[0])
	}
	c.rwc.SetReadDeadline(time.Time{})
	c.s.untrack(c)
	c.s.mu.Lock()
	handoff := c.s.handoff
	c.s.mu.Unlock()
	if readErr == nil || errors.Is(readErr, errHeadTooLarge) || errors.Is(readErr, errBareLF) {
		readErr = c.rerr
	}
	handoff.push(&prefixConn{Conn: c.rwc, prefix: prefix, rerr: readErr})
}

// handle serves one request and reports whether the connection can carry
// another.
func (c *h1ServerConn) handle(req *http.Request, contentLength int64, cancel context.CancelFunc) (reuse bool) {
	c.cancel = cancel
	req.RemoteAddr = c.remote
	w := &h1Response{c: c, req: req, contentLength: -1}
	if contentLength > 0 {
		w.body = &h1RequestBody{lengthBody: lengthBody{br: c.bufr, remaining: contentLength}, c: c, cancel: cancel}
		req.Body = w.body
	} else {
		req.Body = http.NoBody
	}
	if c.resBuf == nil {
		c.resBuf = getWriter(responsePool.Get(), &w.cw, bufferBeforeChunking)
	} else {
		c.resBuf.Reset(&w.cw)
	}
	w.w, w.cw.res = c.resBuf, w
	c.beginWatch(w.body == nil)

	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				const size = 64 << 10
				buf := make([]byte, size)
				buf = buf[:runtime.Stack(buf, false)]
				c.s.logf("http: panic serving %v: %v\n%s", c.remote, v, buf)
			}
			cancel()
			c.endWatch()
			// A goroutine the handler left must not write into the buffers
			// the next connection gets.
			w.handlerDone.Store(true)
			if w.body != nil {
				w.body.Close()
			}
			reuse = false
		}
		c.cancel = nil
	}()
	handler := c.s.srv.Handler
	if handler == nil {
		handler = http.DefaultServeMux
	}
	handler.ServeHTTP(w, req)
	cancel()
	c.endWatch()
	w.finish()
	if w.reusable() {
		return true
	}
	if w.bodyLimitHit || w.body != nil && w.body.earlyClose {
		c.closeWriteAndWait()
	}
	return false
}

// closeWriteAndWait half-closes the connection and lingers, so a client
// still sending a body we gave up on reads the answer before a reset.
func (c *h1ServerConn) closeWriteAndWait() {
	c.bufw.Flush()
	if tcp, ok := c.rwc.(interface{ CloseWrite() error }); ok {
		tcp.CloseWrite()
	}
	time.Sleep(rstAvoidanceDelay)
}

func (c *h1ServerConn) beginWatch(bodyDone bool) {
	c.mu.Lock()
	c.handling, c.bodyDone, c.due = true, bodyDone, false
	c.mu.Unlock()
	if c.timer == nil {
		c.timer = time.AfterFunc(disconnectWatchDelay, c.watchDue)
	} else {
		c.timer.Reset(disconnectWatchDelay)
	}
}

// watchDue runs when a handler has run for the watch delay: the watch
// starts now, or when the handler has read its request body.
func (c *h1ServerConn) watchDue() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.handling || !c.watchable() {
		return
	}
	if !c.bodyDone {
		c.due = true
		return
	}
	c.startWatchLocked()
}

func (c *h1ServerConn) bodyEOF() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bodyDone = true
	if c.due && c.handling && c.watchable() {
		c.startWatchLocked()
	}
}

// watchable is whether a watch may start: none is reading, and none has
// read a byte of the next request or the end of the connection.
func (c *h1ServerConn) watchable() bool {
	return !c.inRead && !c.hasByte && c.rerr == nil
}

func (c *h1ServerConn) startWatchLocked() {
	c.inRead, c.due = true, false
	go c.watch()
}

// watch reads one byte: the client's next request, or the end of the
// connection, which cancels the request under way.
func (c *h1ServerConn) watch() {
	n, err := c.rwc.Read(c.oneByte[:])
	c.mu.Lock()
	if n == 1 {
		c.hasByte = true
	}
	var ne net.Error
	if err != nil && !(c.aborted && errors.As(err, &ne) && ne.Timeout()) {
		c.rerr = err
		if c.cancel != nil {
			c.cancel()
		}
	}
	c.inRead, c.aborted = false, false
	c.mu.Unlock()
	c.cond.Broadcast()
}

// endWatch stops the watch when the handler returns, cutting short a read
// under way.
func (c *h1ServerConn) endWatch() {
	c.timer.Stop()
	c.mu.Lock()
	c.handling, c.due = false, false
	if c.inRead {
		c.aborted = true
		c.rwc.SetReadDeadline(longAgo)
		for c.inRead {
			c.cond.Wait()
		}
		c.rwc.SetReadDeadline(time.Time{})
	}
	c.mu.Unlock()
}

// h1RequestBody is a request body of Content-Length bytes, behaving as net/http's
// server body does: io.ErrUnexpectedEOF when the connection ends early,
// http.ErrBodyReadAfterClose after Close, and Close reading what is left
// (up to 256 KiB) so the connection can carry the next request.
type h1RequestBody struct {
	lengthBody
	c          *h1ServerConn
	cancel     context.CancelFunc // the request's
	mu         sync.Mutex
	closed     bool
	earlyClose bool // closed with more than 256 KiB unread
}

func (b *h1RequestBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	return b.readLocked(p)
}

func (b *h1RequestBody) readLocked(p []byte) (int, error) {
	n, err := b.lengthBody.Read(p)
	if err != nil && err != io.EOF {
		// The connection failed under the body: net/http cancels the
		// request then, as for a client gone during the handler.
		b.cancel()
	}
	if b.sawEOF {
		b.c.bodyEOF()
	}
	return n, err
}

func (b *h1RequestBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	var err error
	switch {
	case b.sawEOF:
	case b.remaining > maxPostHandlerRead:
		b.earlyClose = true
	default:
		var n int64
		n, err = io.CopyN(io.Discard, bodyReader{b}, maxPostHandlerRead)
		if err == io.EOF {
			err = nil
		}
		if n == maxPostHandlerRead {
			b.earlyClose = true
		}
	}
	b.closed = true
	return err
}

// bodyReader reads a body whose lock is held.
type bodyReader struct{ b *h1RequestBody }

func (r bodyReader) Read(p []byte) (int, error) { return r.b.readLocked(p) }

func getReader(r io.Reader) *bufio.Reader {
	if br, ok := readerPool.Get().(*bufio.Reader); ok {
		br.Reset(r)
		return br
	}
	return bufio.NewReaderSize(r, 4<<10)
}

func getWriter(pooled any, w io.Writer, size int) *bufio.Writer {
	if bw, ok := pooled.(*bufio.Writer); ok {
		bw.Reset(w)
		return bw
	}
	return bufio.NewWriterSize(w, size)
}

// handoffListener hands connections gym's loop passes on to the
// *http.Server.
type handoffListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// push hands c over, or closes it when the listener is closed.
func (l *handoffListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

// prefixConn is a connection whose first bytes were already read.
type prefixConn struct {
	net.Conn
	prefix []byte
	rerr   error
}

// CloseWrite half-closes the connection when it can, for net/http's
// lingering close.
func (c *prefixConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	if c.rerr != nil {
		return 0, c.rerr
	}
	return c.Conn.Read(p)
}
