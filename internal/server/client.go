package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ClientOptions tunes a Client. Zero fields take the defaults, which are
// sized for thousands of concurrent rollouts through one process.
type ClientOptions struct {
	// Timeout bounds one attempt, from dialling to the end of the body.
	// Zero means none, as in NeMo Gym: an agent's /run can legitimately
	// take hours, and the caller's context is the real bound.
	Timeout time.Duration
	// ConnectTimeout bounds dialling and the TLS handshake (default 10 s).
	ConnectTimeout time.Duration
	// MaxRetries caps retries after the first try (default 10; negative:
	// never retry). NeMo Gym retries rate limits and connection errors
	// forever; gym gives up and lets the rollout be recorded as failed.
	MaxRetries int
	// BaseBackoff and MaxBackoff bound the exponential backoff (defaults
	// 0.5 s, NeMo Gym's fixed retry sleep, and 60 s).
	BaseBackoff, MaxBackoff time.Duration
	// RetryDeadline bounds one call across all its tries and the waits
	// between them: no wait is begun that would end after it (nor after
	// the caller's context deadline), so a call that would retry past it
	// ends at once with its last error. A try under way is not cut off by
	// it; Timeout and the caller's context bound that, because one call
	// (an agent's /run) may legitimately take hours. Default: Timeout plus
	// 10 minutes, room for one try at its bound and ten minutes of
	// retrying; negative: no bound.
	RetryDeadline time.Duration
	// MaxConnsPerHost caps connections, and idle ones kept, per host
	// (default 1024, NeMo Gym's global_aiohttp_connector_limit_per_host).
	MaxConnsPerHost int
	// RunToken is sent in X-Gym-Run-Token to RunServers, and only to them,
	// so it never reaches an upstream API or any other host. RunServers
	// are host:port of this run's servers and head server, as RunServers
	// lists them; hosts are compared by name, never resolved.
	RunToken   string
	RunServers []string
	// Logger receives a line per retry (default slog.Default()).
	Logger *slog.Logger
}

const (
	defaultConnectTimeout  = 10 * time.Second
	defaultMaxRetries      = 10
	defaultBaseBackoff     = 500 * time.Millisecond
	defaultMaxBackoff      = 60 * time.Second
	defaultMaxConnsPerHost = 1024
	// MaxRetryAfter's span: a call stops retrying after as long as the
	// longest single wait it would accept.
	defaultRetryDeadline = MaxRetryAfter
	// net/http's own redirect limit, which a CheckRedirect must restate.
	maxRedirects = 10
	// Shorter than the servers' 30 s so the client, not the server, closes
	// an idle connection, and never reuses one the server is closing.
	clientKeepAlive = 15 * time.Second
	// A 500 is usually a real failure, so like NeMo Gym's model client it
	// gets 3 tries in all, however many retries rate limits get.
	serverErrorTries = 3
	// MaxRetryAfter is the longest Retry-After waited for; a longer one (a
	// daily quota, say) is an error at once.
	MaxRetryAfter = 10 * time.Minute
	// Error bodies end up inside error messages; a bound keeps a
	// misbehaving upstream from filling memory.
	maxErrorBody = 4 << 20
)

// Client makes server→server and server→upstream HTTP calls with bounded
// retries. It keeps no cookie jar: callers forward cookies by hand, as NeMo
// Gym's servers do. It is safe for concurrent use.
type Client struct {
	http          *http.Client
	timeout       time.Duration // one attempt's, 0: none
	maxRetries    int
	baseBackoff   time.Duration
	maxBackoff    time.Duration
	retryDeadline time.Duration // 0: none
	runToken      string
	runServers    atomic.Pointer[map[string]bool] // canonicalHostPort of each; replaced whole by TrustServers
	logger        *slog.Logger
	// Seams for tests: waiting, jitter and the clock.
	sleep  func(context.Context, time.Duration) error
	jitter func(n int64) int64
	now    func() time.Time
}

// NewClient returns a Client with opts, defaults filled in.
func NewClient(opts ClientOptions) *Client {
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = defaultConnectTimeout
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = defaultMaxRetries
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = defaultBaseBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = defaultMaxBackoff
	}
	if opts.MaxConnsPerHost <= 0 {
		opts.MaxConnsPerHost = defaultMaxConnsPerHost
	}
	if opts.RetryDeadline == 0 {
		opts.RetryDeadline = opts.Timeout + defaultRetryDeadline
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	dialer := &net.Dialer{
		Timeout: opts.ConnectTimeout,
		// NeMo Gym's TCP keepalive: idle 60 s, interval 10 s, 3 probes. It
		// also keeps NAT entries alive while a response is slow to start.
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 60 * time.Second, Interval: 10 * time.Second, Count: 3},
	}
	transport := &http.Transport{
		// NeMo Gym's aiohttp session ignores proxy variables; internal
		// traffic on a cluster must not detour through a proxy.
		Proxy:               nil,
		DialContext:         dialer.DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: opts.MaxConnsPerHost,
		MaxConnsPerHost:     opts.MaxConnsPerHost,
		IdleConnTimeout:     clientKeepAlive,
		TLSHandshakeTimeout: opts.ConnectTimeout,
		// PINGs keep an HTTP/2 connection alive while a response waits
		// minutes for its first byte, past idle cut-offs of middleboxes.
		HTTP2: &http.HTTP2Config{SendPingTimeout: 30 * time.Second, PingTimeout: 15 * time.Second},
	}
	c := &Client{
		timeout:       opts.Timeout,
		maxRetries:    max(opts.MaxRetries, 0),
		baseBackoff:   opts.BaseBackoff,
		maxBackoff:    opts.MaxBackoff,
		retryDeadline: max(opts.RetryDeadline, 0),
		runToken:      opts.RunToken,
		logger:        opts.Logger,
		sleep:         Sleep,
		jitter:        rand.Int64N,
		now:           time.Now,
	}
	c.TrustServers(opts.RunServers)
	// Timeout bounds each attempt through its context (do), not through
	// http.Client.Timeout: for a transport other than http.Transport that
	// costs a timer and a goroutine per request.
	c.http = &http.Client{
		Transport:     newH1Transport(dialer.DialContext, opts.MaxConnsPerHost, clientKeepAlive, transport),
		CheckRedirect: c.checkRedirect,
	}
	return c
}

// TrustServers adds host:port pairs to the run's servers, for a client
// that learns them after it is made (from a head server's config).
func (c *Client) TrustServers(hostports []string) {
	next := map[string]bool{}
	if cur := c.runServers.Load(); cur != nil {
		for k := range *cur {
			next[k] = true
		}
	}
	for _, hp := range hostports {
		if host, port, err := net.SplitHostPort(hp); err == nil {
			next[canonicalHostPort(host, port)] = true
		}
	}
	c.runServers.Store(&next)
}

func (c *Client) isRunServer(u *url.URL) bool {
	m := c.runServers.Load()
	if m == nil {
		return false
	}
	// A host spelled as its key is its own canonical form (which is what
	// gym's URLs to its servers are); only other spellings pay for
	// canonicalizing. A host with no port is never a key: its port is
	// the scheme's.
	if (*m)[u.Host] && u.Port() != "" {
		return true
	}
	return (*m)[urlHostPort(u)]
}

// errTooManyRedirects is a redirect loop, which no retry gets out of.
var errTooManyRedirects = fmt.Errorf("stopped after %d redirects", maxRedirects)

// checkRedirect keeps the run token from following a redirect off the
// run's servers: net/http copies custom headers to any redirect target.
// It never adds the token, so a host outside the run cannot redirect a
// call into the run to have it authenticated.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return errTooManyRedirects
	}
	if !c.isRunServer(req.URL) {
		req.Header = withoutRunToken(req.Header)
	}
	return nil
}

// runTokenHeader returns h as it must go to u: with the run token when u
// is a server of the run, and without any run token otherwise, whoever set
// it. h itself is never changed; a copy is made only when one is needed.
func (c *Client) runTokenHeader(u *url.URL, h http.Header) http.Header {
	if !c.isRunServer(u) {
		return withoutRunToken(h)
	}
	if c.runToken == "" || slices.Equal(h[RunTokenHeader], []string{c.runToken}) {
		return h
	}
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set(RunTokenHeader, c.runToken)
	return h
}

// withoutRunToken returns h without X-Gym-Run-Token in any spelling a
// caller may have put straight into the map.
func withoutRunToken(h http.Header) http.Header {
	var out http.Header
	for k := range h {
		if strings.EqualFold(k, RunTokenHeader) {
			if out == nil {
				out = h.Clone()
			}
			delete(out, k)
		}
	}
	if out == nil {
		return h
	}
	return out
}

// Sleep waits d, or until ctx ends (returning its cause).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// UpstreamError is a call that ended with a non-2xx status. Handle maps it
// to NeMo Gym's "Hit an exception in <server> calling an inner server",
// with the same status when that is a client error no retry can fix, and
// 500 otherwise.
type UpstreamError struct {
	Status int
	Body   []byte
	URL    string
}

func (e *UpstreamError) Error() string {
	body := e.Body
	if len(body) > 2000 {
		body = append(body[:2000:2000], "..."...)
	}
	return fmt.Sprintf("%s returned HTTP %d: %s", e.URL, e.Status, body)
}

// Do sends req, retrying what another try may fix (connection errors and
// 408/429/500/502/503/504/520 responses, a 500 at most serverErrorTries
// times in all) with exponential backoff and full jitter, waiting at least
// as long as a Retry-After asks, until MaxRetries or the RetryDeadline runs
// out. The body is replayed on each try (from GetBody, or buffered when the
// request has none). The run token is added or removed as the destination
// requires; req itself is not changed. A 2xx response is returned with its
// body open; any other final status is an *UpstreamError holding the body.
func (c *Client) Do(ctx context.Context, req *http.Request) (*http.Response, error) {
	return c.do(ctx, req, false)
}

// Forward is Do for a relay: connection errors are retried as Do retries
// them, but any answer, whatever its status, is returned with its body
// open, for the caller to pass on. A relay that retried a 500 would run
// the upstream's work again behind its caller's back.
func (c *Client) Forward(ctx context.Context, req *http.Request) (*http.Response, error) {
	return c.do(ctx, req, true)
}

func (c *Client) do(ctx context.Context, req *http.Request, anyStatus bool) (*http.Response, error) {
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" {
		return nil, fmt.Errorf("%s %q: not an http(s) URL with a host", req.Method, req.URL)
	}
	req = req.WithContext(ctx)
	req.Header = c.runTokenHeader(req.URL, req.Header)
	if err := makeReplayable(req); err != nil {
		return nil, err
	}
	// Only errors and retries name the URL.
	url := func() string { return req.URL.Redacted() }
	deadline := c.deadline(ctx)
	for try := 1; ; try++ {
		attempt, cancel := req, context.CancelFunc(func() {})
		if replay := try > 1 && req.GetBody != nil; replay || c.timeout > 0 {
			attemptCtx := ctx
			if c.timeout > 0 {
				attemptCtx, cancel = context.WithTimeout(ctx, c.timeout)
			}
			attempt = req.WithContext(attemptCtx)
			if replay {
				body, err := req.GetBody()
				if err != nil {
					cancel()
					return nil, fmt.Errorf("%s %s: replaying the request body: %w", req.Method, url(), err)
				}
				attempt.Body = body
			}
		}
		resp, err := c.http.Do(attempt)
		var delay time.Duration
		var last error // what the call ends with if it retries no more
		if err != nil {
			cancel()
			if ctx.Err() != nil || !retryableError(err) {
				return nil, err
			}
			if try > c.maxRetries {
				return nil, fmt.Errorf("%w (gave up after %d tries)", err, try)
			}
			delay = c.backoff(try)
			last = fmt.Errorf("%w (gave up after %d tries: the next would start after the retry deadline)", err, try)
			if c.pastDeadline(deadline, delay, url(), try, last) {
				return nil, last
			}
			c.logger.Warn("retrying request", "url", url(), "kind", "connection", "try", try, "max_tries", c.maxRetries+1, "error", err, "delay", delay)
		} else {
			if anyStatus || resp.StatusCode >= 200 && resp.StatusCode < 300 {
				if c.timeout > 0 {
					resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
				} else {
					cancel()
				}
				return resp, nil
			}
			body, readErr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			resp.Body.Close()
			cancel()
			if readErr != nil {
				return nil, fmt.Errorf("%s %s: HTTP %d, reading the body: %w", req.Method, url(), resp.StatusCode, readErr)
			}
			last = &UpstreamError{Status: resp.StatusCode, Body: body, URL: url()}
			kind, retryable := retryableStatus(resp.StatusCode)
			wait, hasWait := RetryAfter(resp.Header, c.now())
			if !retryable || try > c.maxRetries || (kind == "server_error" && try >= serverErrorTries) || wait > MaxRetryAfter {
				return nil, last
			}
			delay = c.backoff(try)
			if hasWait {
				// The server named the time; jitter on top keeps a crowd of
				// clients told the same thing from returning at once.
				delay = wait + time.Duration(c.jitter(int64(c.baseBackoff)))
			}
			if c.pastDeadline(deadline, delay, url(), try, last) {
				return nil, last
			}
			c.logger.Warn("retrying request", "url", url(), "kind", kind, "status", resp.StatusCode, "try", try, "max_tries", c.maxRetries+1, "delay", delay, "error_msg", truncate(string(body), 200))
		}
		if err := c.sleep(ctx, delay); err != nil {
			return nil, fmt.Errorf("%s %s: %w while waiting to retry", req.Method, url(), err)
		}
	}
}

// cancelOnClose ends an attempt's Timeout context when its body closes:
// the Timeout covers reading the body too.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// deadline is when a call starting now must stop retrying: the earlier of
// its RetryDeadline and ctx's deadline, or zero for none.
func (c *Client) deadline(ctx context.Context) time.Time {
	var d time.Time
	if c.retryDeadline > 0 {
		d = c.now().Add(c.retryDeadline)
	}
	if cd, ok := ctx.Deadline(); ok && (d.IsZero() || cd.Before(d)) {
		d = cd
	}
	return d
}

// pastDeadline reports, and logs, that waiting delay would end after
// deadline. Sleeping into a deadline only to fail then would hold the
// caller for nothing: the call ends now with what it has.
func (c *Client) pastDeadline(deadline time.Time, delay time.Duration, url string, try int, last error) bool {
	if deadline.IsZero() || !c.now().Add(delay).After(deadline) {
		return false
	}
	c.logger.Warn("not retrying: the wait would pass the call's deadline", "url", url, "try", try, "delay", delay, "deadline", deadline, "error", last)
	return true
}

// makeReplayable gives req a GetBody, buffering a body that has none, so
// every try sends the same bytes.
func makeReplayable(req *http.Request) error {
	if req.Body == nil || req.Body == http.NoBody || req.GetBody != nil {
		return nil
	}
	data, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return fmt.Errorf("%s %s: reading the request body: %w", req.Method, req.URL.Redacted(), err)
	}
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	req.Body, _ = req.GetBody()
	req.ContentLength = int64(len(data))
	return nil
}

// backoff is full jitter: uniform in [0, min(MaxBackoff, BaseBackoff·2^(try-1))].
func (c *Client) backoff(try int) time.Duration {
	ceiling := c.baseBackoff
	for i := 1; i < try && ceiling < c.maxBackoff; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, c.maxBackoff)
	return time.Duration(c.jitter(int64(ceiling) + 1))
}

// retryableStatus classifies statuses as NeMo Gym's model client does:
// rate limits and gateway failures are transient, a 500 may be. A 408 is a
// server that gave up waiting for the request, which a new try may deliver
// in time; any other 4xx answers the same request the same way again.
func retryableStatus(code int) (kind string, ok bool) {
	switch code {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, 520:
		return "rate_limit", true
	case http.StatusRequestTimeout:
		return "timeout", true
	case http.StatusInternalServerError:
		return "server_error", true
	}
	return "", false
}

// clientErrorKept reports whether Handle answers an inner server's status
// with that same status: a client error no retry fixes, which as a 500
// every caller up the chain would retry. 408 and 429 become the 500 a
// caller retries at most serverErrorTries times: passed on as they are,
// each hop would retry them up to MaxRetries times, multiplying the load
// on an upstream that asked for less.
func clientErrorKept(code int) bool {
	_, retry := retryableStatus(code)
	return code >= 400 && code < 500 && !retry
}

// retryableError reports whether another try might succeed: a refused or
// dropped connection might, a certificate the client rejects or a redirect
// loop will not.
func retryableError(err error) bool {
	var cert *tls.CertificateVerificationError
	return !errors.As(err, &cert) && !errors.Is(err, errTooManyRedirects)
}

// RetryAfter reads the wait an answer asks for: OpenAI's retry-after-ms, or
// Retry-After as delay-seconds or an HTTP date. Waits are clamped just past
// MaxRetryAfter, so callers can tell "too long to wait" without overflow.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms >= 0 {
			return time.Duration(min(ms, float64(MaxRetryAfter/time.Millisecond)+1) * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, int64(MaxRetryAfter/time.Second)+1)) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// SetCookies are the Set-Cookie lines of an answer, read into cookies only
// by a caller that relays them.
type SetCookies []string

// Cookies is what http.Response.Cookies reads from the lines, each cookie
// with only its name and value (and whether the value was quoted): what a
// relay sends on. Of a line, only the name and value can make net/http
// drop it, so the attributes are not read.
func (s SetCookies) Cookies() []*http.Cookie {
	if len(s) > maxSetCookies || cookieLimitBuiltIn() || strings.Contains(os.Getenv("GODEBUG"), "httpcookiemaxnum") {
		all := (&http.Response{Header: http.Header{"Set-Cookie": s}}).Cookies()
		for i, c := range all {
			all[i] = &http.Cookie{Name: c.Name, Value: c.Value, Quoted: c.Quoted}
		}
		return all
	}
	cookies := make([]*http.Cookie, 0, len(s))
	for _, line := range s {
		if c, ok := parseSetCookie(line); ok {
			cookies = append(cookies, c)
		}
	}
	return cookies
}

// maxSetCookies is the most Set-Cookie lines Cookies reads itself; net/http
// reads more, up to its limit (3,000 unless GODEBUG's httpcookiemaxnum says
// otherwise), past which it reads none.
const maxSetCookies = 64

// cookieLimitBuiltIn is whether the binary was built with a GODEBUG
// httpcookiemaxnum of its own (a //go:debug line, or a godebug line or an
// old go version in the main module's go.mod), which Cookies leaves
// net/http to apply.
var cookieLimitBuiltIn = sync.OnceValue(func() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "DefaultGODEBUG" && strings.Contains(s.Value, "httpcookiemaxnum") {
			return true
		}
	}
	return false
})

// parseSetCookie is the name and value http.ParseSetCookie reads from a
// Set-Cookie line; ok is false where it returns an error.
func parseSetCookie(line string) (*http.Cookie, bool) {
	line = textproto.TrimString(line)
	pair, _, _ := strings.Cut(line, ";")
	name, value, ok := strings.Cut(textproto.TrimString(pair), "=")
	name = textproto.TrimString(name)
	if !ok || name == "" {
		return nil, false
	}
	for i := 0; i < len(name); i++ {
		if !tokenByte[name[i]] {
			return nil, false
		}
	}
	quoted := len(value) > 1 && value[0] == '"' && value[len(value)-1] == '"'
	if quoted {
		value = value[1 : len(value)-1]
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; c < 0x20 || c >= 0x7f || c == '"' || c == ';' || c == '\\' {
			return nil, false
		}
	}
	return &http.Cookie{Name: name, Value: value, Quoted: quoted}, true
}

// PostJSON posts a JSON body with the given cookies and returns the
// response body and the cookies the response set. Cookies are sent
// verbatim: a session cookie belongs to the server that issued it, and the
// caller relays it, as NeMo Gym's agents do.
func (c *Client) PostJSON(ctx context.Context, url string, body []byte, cookies []*http.Cookie) ([]byte, SetCookies, error) {
	req, err := NewPostRequest(ctx, url, body)
	if err != nil {
		return nil, nil, err
	}
	req.Header["Content-Type"] = []string{"application/json"}
	if h := cookieHeader(cookies); h != "" {
		req.Header["Cookie"] = []string{h}
	}
	// The token set here spares Do a copy of the header to add it.
	if c.runToken != "" && c.isRunServer(req.URL) {
		req.Header[RunTokenHeader] = []string{c.runToken}
	}
	resp, err := c.Do(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := readBody(resp.Body, resp.ContentLength)
	if err != nil {
		return nil, nil, fmt.Errorf("POST %s: reading the response: %w", req.URL.Redacted(), err)
	}
	return data, resp.Header["Set-Cookie"], nil
}

// readBody reads an answer's body whole, in one allocation when it is as
// long as it said; one shorter than it said is io.ErrUnexpectedEOF.
func readBody(body io.Reader, length int64) ([]byte, error) {
	data, err := ReadAll(body, length)
	if err == nil && int64(len(data)) < length {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, err
	}
	return data, nil
}

// presizeLimit is the longest declared length ReadAll allocates for
// before the bytes arrive: a peer that says more and sends less would
// otherwise hold that much memory for nothing.
const presizeLimit = 1 << 20

// ReadAll is io.ReadAll, whose buffer starts at the declared length (and
// a byte to see the end), when that is known and at most presizeLimit: a
// body as long as it said takes one allocation.
func ReadAll(body io.Reader, length int64) ([]byte, error) {
	if length < 0 || length > presizeLimit {
		return io.ReadAll(body)
	}
	data := make([]byte, 0, length+1)
	for {
		n, err := body.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return data, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}

// cookieHeader joins cookies as a Cookie header without net/http's value
// sanitizing, which would rewrite a value another server issued.
func cookieHeader(cookies []*http.Cookie) string {
	var b strings.Builder
	for _, ck := range cookies {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(ck.Name)
		b.WriteByte('=')
		if ck.Quoted {
			b.WriteByte('"')
			b.WriteString(ck.Value)
			b.WriteByte('"')
		} else {
			b.WriteString(ck.Value)
		}
	}
	return b.String()
}
