package server

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// h1Transport carries plain-http requests over HTTP/1.1 the way
// http.Transport does — pooled keep-alive connections, at most maxConns
// per host (0: no limit), idle ones closed after idleTimeout (0: kept),
// gzip asked for and undone, the request's context closing its connection
// — but writes each request and reads its response on the caller's
// goroutine.
// http.Transport runs two goroutines per connection and hands every
// request and response between them over channels: bench/floor's agent
// spent 0.20-0.23 ms of CPU per rollout with it, 0.12-0.15 ms with this.
// https goes to fallback, which alone speaks TLS and HTTP/2.
type h1Transport struct {
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	maxConns    int
	idleTimeout time.Duration
	fallback    http.RoundTripper

	mu      sync.Mutex
	hosts   map[string]*h1Host
	janitor *time.Timer // armed while any connection is idle
}

// h1Host is one host's connections: a slot for each open one, the idle
// ones (the most recently used last), and the requests waiting for one,
// which are handed a connection as it comes free.
type h1Host struct {
	slots   chan struct{}
	idle    []*h1Conn
	waiting []chan *h1Conn
}

type h1Conn struct {
	net.Conn
	host      *h1Host
	br        *bufio.Reader
	bw        *bufio.Writer
	idleSince time.Time
	peek      peeker
	abort     func() // closes the connection; made once, for every call's context.AfterFunc
}

func newH1Transport(dial func(ctx context.Context, network, addr string) (net.Conn, error), maxConns int, idleTimeout time.Duration, fallback http.RoundTripper) *h1Transport {
	return &h1Transport{dial: preferLocal(dial), maxConns: maxConns, idleTimeout: idleTimeout, fallback: fallback, hosts: map[string]*h1Host{}}
}

// PlainHTTPTransport is the transport Client uses, for callers with their
// own client: plain-http requests over HTTP/1.1 on the caller's goroutine,
// dialled with dial, at most maxConns connections per host (0: no limit),
// idle ones closed after idleTimeout (0: kept); https requests go to
// fallback.
func PlainHTTPTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error), maxConns int, idleTimeout time.Duration, fallback http.RoundTripper) http.RoundTripper {
	return newH1Transport(dial, maxConns, idleTimeout, fallback)
}

// RoundTrip implements http.RoundTripper.
func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil || req.URL.Scheme != "http" {
		return t.fallback.RoundTrip(req)
	}
	if req.URL.Host == "" {
		closeBody(req)
		return nil, errors.New("http: no Host in request URL")
	}
	ctx := req.Context()
	gzipAsked := asksGzip(req)
	c, err := t.conn(ctx, dialAddress(req))
	if err != nil {
		closeBody(req)
		return nil, err
	}
	stop := context.AfterFunc(ctx, c.abort)
	fail := func(err error) (*http.Response, error) {
		stop()
		t.discard(c)
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	if err := writeRequest(c.bw, req, gzipAsked); err != nil {
		return fail(err)
	}
	if err := c.bw.Flush(); err != nil {
		return fail(err)
	}
	var resp *http.Response
	for {
		if resp, err = readResponse(c.br, req); err != nil {
			return fail(err)
		}
		// An interim 1xx answer (but 101, a protocol switch) is followed
		// by the real one.
		if resp.StatusCode >= 200 || resp.StatusCode < 100 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	// After a 101 the connection speaks another protocol; gym asks for
	// no upgrade, and such a connection is never used again.
	reusable := !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols
	if resp.Body == http.NoBody {
		if stop() && reusable {
			t.release(c)
		} else {
			t.discard(c)
		}
		return resp, nil
	}
	resp.Body = &h1Body{ctx: ctx, body: resp.Body, t: t, c: c, stop: stop, reusable: reusable}
	if gzipAsked && strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Uncompressed = true
		resp.Body = &gunzipBody{body: resp.Body}
	}
	return resp, nil
}

// asksGzip is whether req goes out asking for gzip, which the transport
// then undoes, as http.Transport does: unless the caller asked for an
// encoding or a range.
func asksGzip(req *http.Request) bool {
	return req.Method != http.MethodHead && req.Header.Get("Accept-Encoding") == "" && req.Header.Get("Range") == ""
}

// dialAddress is the address a request goes to, with http's port by
// default.
func dialAddress(req *http.Request) string {
	port := req.URL.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(req.URL.Hostname(), port)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// probeIdleAfter is how long a connection sits idle before it is probed
// for a close (a syscall) when it is taken again. A server closes a
// keep-alive connection after its idle timeout, seconds at the least
// (gunicorn's 2 s, uvicorn's 5 s), or says Connection: close first; one
// taken again within a fraction of that, as under load nearly all are, is
// as open as one handed straight to a waiting request, which is never
// probed. A server that closes one sooner without saying so (on its
// shutdown, restarted on the same port, or with a keep-alive under 50 ms)
// fails the request sent on it; gym's clients (Client, the model server's
// upstream calls) retry it after their backoff, where a probe would have
// sent it on a new connection at once.
const probeIdleAfter = 50 * time.Millisecond

// conn is an idle connection to addr that is still open, a new one while
// the host has a free slot, or else the first to come free.
func (t *h1Transport) conn(ctx context.Context, addr string) (*h1Conn, error) {
	t.mu.Lock()
	h := t.hosts[addr]
	if h == nil {
		h = &h1Host{}
		if t.maxConns > 0 {
			h.slots = make(chan struct{}, t.maxConns)
		}
		t.hosts[addr] = h
	}
	for len(h.idle) > 0 {
		c := h.idle[len(h.idle)-1]
		h.idle[len(h.idle)-1] = nil
		h.idle = h.idle[:len(h.idle)-1]
		// The probe is a syscall: other requests need not wait on it.
		t.mu.Unlock()
		if t.usable(c, time.Since(c.idleSince)) {
			return c, nil
		}
		t.discard(c)
		t.mu.Lock()
	}
	if h.slots == nil {
		t.mu.Unlock()
		return t.dialNew(ctx, h, addr)
	}
	select {
	case h.slots <- struct{}{}:
		t.mu.Unlock()
		return t.dialNew(ctx, h, addr)
	default:
	}
	handed := make(chan *h1Conn, 1)
	h.waiting = append(h.waiting, handed)
	t.mu.Unlock()
	select {
	case c := <-handed:
		return c, nil
	case h.slots <- struct{}{}:
		t.stopWaiting(h, handed)
		return t.dialNew(ctx, h, addr)
	case <-ctx.Done():
		t.stopWaiting(h, handed)
		return nil, context.Cause(ctx)
	}
}

// stopWaiting takes a request off its host's queue, and passes on a
// connection handed to it meanwhile.
func (t *h1Transport) stopWaiting(h *h1Host, handed chan *h1Conn) {
	t.mu.Lock()
	h.waiting = slices.DeleteFunc(h.waiting, func(w chan *h1Conn) bool { return w == handed })
	t.mu.Unlock()
	select {
	case c := <-handed:
		t.release(c)
	default:
	}
}

// dialNew opens a connection in a slot taken for it.
func (t *h1Transport) dialNew(ctx context.Context, h *h1Host, addr string) (*h1Conn, error) {
	nc, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		freeSlot(h)
		return nil, err
	}
	nc = withSysIO(nc, "tcp")
	c := &h1Conn{Conn: nc, host: h, br: bufio.NewReaderSize(nc, 8<<10), bw: bufio.NewWriterSize(nc, 4<<10)}
	c.abort = func() { c.Close() }
	return c, nil
}

// release hands c to the first request waiting for its host, or makes it
// idle.
func (t *h1Transport) release(c *h1Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := c.host; len(h.waiting) > 0 {
		handed := h.waiting[0]
		h.waiting = h.waiting[1:]
		handed <- c
		return
	}
	c.idleSince = time.Now()
	c.host.idle = append(c.host.idle, c)
	if t.janitor == nil && t.idleTimeout > 0 {
		t.janitor = time.AfterFunc(t.idleTimeout, t.closeExpired)
	}
}

// expired is whether a connection idle for idle has reached idleTimeout,
// when there is one.
func (t *h1Transport) expired(idle time.Duration) bool {
	return t.idleTimeout > 0 && idle >= t.idleTimeout
}

// usable is whether c, idle for idle, can carry another request: not past
// the idle timeout, nothing sent unasked, and, once idle for
// probeIdleAfter, not closed by the server.
func (t *h1Transport) usable(c *h1Conn, idle time.Duration) bool {
	if t.expired(idle) {
		return false
	}
	if idle < probeIdleAfter {
		return c.br.Buffered() == 0
	}
	return c.open()
}

// discard closes c and frees its slot.
func (t *h1Transport) discard(c *h1Conn) {
	c.Close()
	freeSlot(c.host)
}

func freeSlot(h *h1Host) {
	if h.slots != nil {
		<-h.slots
	}
}

// closeExpired closes the connections idle for idleTimeout, and runs again
// while any stay idle.
func (t *h1Transport) closeExpired() {
	var expired []*h1Conn
	t.mu.Lock()
	idle := false
	for _, h := range t.hosts {
		kept := h.idle[:0]
		for _, c := range h.idle {
			if t.expired(time.Since(c.idleSince)) {
				expired = append(expired, c)
			} else {
				kept = append(kept, c)
			}
		}
		clear(h.idle[len(kept):])
		h.idle = kept
		idle = idle || len(kept) > 0
	}
	t.janitor = nil
	if idle {
		t.janitor = time.AfterFunc(t.idleTimeout/2, t.closeExpired)
	}
	t.mu.Unlock()
	for _, c := range expired {
		t.discard(c)
	}
}

// CloseIdleConnections closes the idle connections, as http.Client's
// CloseIdleConnections asks of its transport.
func (t *h1Transport) CloseIdleConnections() {
	var idle []*h1Conn
	t.mu.Lock()
	for _, h := range t.hosts {
		idle = append(idle, h.idle...)
		clear(h.idle)
		h.idle = h.idle[:0]
	}
	t.mu.Unlock()
	for _, c := range idle {
		t.discard(c)
	}
	if f, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		f.CloseIdleConnections()
	}
}

// h1Body is a response body that gives its connection back once read to
// the end, and closes it when abandoned before.
type h1Body struct {
	ctx      context.Context
	body     io.ReadCloser
	t        *h1Transport
	c        *h1Conn
	stop     func() bool
	reusable bool
	mu       sync.Mutex
	done     bool
}

// Read reads the body; a read cut off by the request's context ending
// fails with the context's cause, as http.Transport's does.
func (b *h1Body) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if err != nil {
		b.finish(err == io.EOF)
		if err != io.EOF && b.ctx.Err() != nil {
			err = context.Cause(b.ctx)
		}
	}
	return n, err
}

func (b *h1Body) Close() error {
	b.finish(false)
	return nil
}

// finish settles the connection once: idle again after a whole body, on a
// connection both sides keep alive, that the context did not close.
func (b *h1Body) finish(whole bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	if b.stop() && whole && b.reusable {
		b.t.release(b.c)
		return
	}
	b.t.discard(b.c)
}

// gunzipBody undoes a gzip body as it is read.
type gunzipBody struct {
	body io.ReadCloser
	zr   *gzip.Reader
	err  error
}

func (g *gunzipBody) Read(p []byte) (int, error) {
	if g.zr == nil && g.err == nil {
		g.zr, g.err = gzip.NewReader(g.body)
	}
	if g.err != nil {
		return 0, g.err
	}
	return g.zr.Read(p)
}

func (g *gunzipBody) Close() error { return g.body.Close() }
