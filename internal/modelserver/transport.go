package modelserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nemo-gym-go/gym/internal/server"
)

const (
	// Thousands of rollouts share one upstream; keeping every connection a
	// burst needed avoids reconnecting (and TLS handshakes) on the next.
	// Idle connections still close after idleConnTimeout.
	maxIdleConnsPerHost = 10000
	idleConnTimeout     = 90 * time.Second
	// maxHTTP2Dials bounds the connections dialled at once to an HTTP/2
	// upstream. net/http dials a new connection for every request that
	// finds every connection at its stream limit: when thousands of
	// rollouts start together that is thousands of TLS handshakes at once,
	// which starve the CPU, time out, and leave thousands of barely used
	// connections behind (measured: 5,000 handshakes and +400 MiB for a
	// burst of 10,000 requests). A connection carries 100-250 streams, so a
	// few dials in flight keep up with any burst.
	maxHTTP2Dials = 8
)

// newTransport returns the round tripper for u, the upstream's parsed base
// URL. An http:// upstream gets HTTP/1.1 (h2c is never attempted) with no
// connection cap unless MaxConnsPerHost sets one. For an https:// upstream
// the first request learns, with one TLS handshake, which protocol the
// upstream negotiates: HTTP/2 goes through a transport that dials at most
// maxHTTP2Dials connections at a time, HTTP/1.1 through one like the
// http:// transport, since there a connection carries one request at a
// time.
func newTransport(opts UpstreamOptions, u *url.URL) http.RoundTripper {
	dialer := &net.Dialer{
		Timeout: opts.ConnectTimeout,
		// NeMo Gym's TCP keepalive (idle 60 s, interval 10 s, 3 probes)
		// keeps NAT entries alive on HTTP/1.1 connections, which cannot ping.
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 60 * time.Second, Interval: 10 * time.Second, Count: 3},
	}
	var http1 http.Protocols
	http1.SetHTTP1(true)
	h1 := &http.Transport{
		// Like NeMo Gym's aiohttp session, proxy variables are ignored: a
		// cluster-internal model endpoint must not detour through a proxy.
		Proxy:               nil,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     opts.TLSConfig,
		TLSHandshakeTimeout: opts.ConnectTimeout,
		Protocols:           &http1,
		MaxIdleConnsPerHost: maxIdleConnsPerHost,
		MaxConnsPerHost:     opts.MaxConnsPerHost,
		IdleConnTimeout:     idleConnTimeout,
	}
	if u.Scheme != "https" {
		return server.PlainHTTPTransport(dialer.DialContext, opts.MaxConnsPerHost, idleConnTimeout, h1)
	}
	dials := maxHTTP2Dials
	if opts.MaxConnsPerHost > 0 {
		dials = min(dials, opts.MaxConnsPerHost)
	}
	h2 := h1.Clone()
	h2.Protocols = nil // HTTP/1.1 and HTTP/2, as the server chooses
	h2.ForceAttemptHTTP2 = true
	h2.MaxConnsPerHost = dials
	// PINGs flow while a response waits minutes for its first byte, so
	// middleboxes that cut idle connections (NVCF at 340 s) see traffic.
	h2.HTTP2 = &http.HTTP2Config{SendPingTimeout: opts.PingInterval, PingTimeout: opts.PingTimeout}
	cfg := &tls.Config{}
	if opts.TLSConfig != nil {
		cfg = opts.TLSConfig.Clone()
	}
	cfg.NextProtos = []string{"h2", "http/1.1"}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	return &protocolSwitch{
		h1: h1, h2: h2, addr: addr,
		probeDialer:  &tls.Dialer{NetDialer: dialer, Config: cfg},
		probeTimeout: opts.ConnectTimeout,
	}
}

// protocolSwitch routes each request to the transport for the protocol
// the upstream negotiated in the first TLS handshake (the probe). Requests
// that arrive during the probe wait for it; a failed probe fails them and
// the next request probes again.
type protocolSwitch struct {
	h1, h2       *http.Transport
	addr         string
	probeDialer  *tls.Dialer
	probeTimeout time.Duration

	chosen  atomic.Pointer[http.Transport]
	mu      sync.Mutex
	probing chan struct{} // closed when the probe in flight ends
	probed  error         // that probe's error
}

func (s *protocolSwitch) RoundTrip(req *http.Request) (*http.Response, error) {
	t := s.chosen.Load()
	if t == nil {
		var err error
		if t, err = s.choose(req.Context()); err != nil {
			return nil, err
		}
	}
	return t.RoundTrip(req)
}

func (s *protocolSwitch) choose(ctx context.Context) (*http.Transport, error) {
	s.mu.Lock()
	if t := s.chosen.Load(); t != nil {
		s.mu.Unlock()
		return t, nil
	}
	done := s.probing
	if done == nil {
		done = make(chan struct{})
		s.probing = done
		go s.probe(done)
	}
	s.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if t := s.chosen.Load(); t != nil {
		return t, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return nil, s.probed
}

// probe dials the upstream once, outside any request's context so that a
// cancelled request does not fail the others waiting, and notes the
// protocol it negotiates.
func (s *protocolSwitch) probe(done chan struct{}) {
	ctx := context.Background()
	if s.probeTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.probeTimeout)
		defer cancel()
	}
	conn, err := s.probeDialer.DialContext(ctx, "tcp", s.addr)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.probed = fmt.Errorf("connecting to %s: %w", s.addr, err)
	} else {
		t := s.h1
		if conn.(*tls.Conn).ConnectionState().NegotiatedProtocol == "h2" {
			t = s.h2
		}
		conn.Close()
		s.chosen.Store(t)
	}
	s.probing = nil
	close(done)
}
