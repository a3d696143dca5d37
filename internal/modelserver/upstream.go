package modelserver

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/server"
)

// UpstreamOptions configure an Upstream. Fields are used as given;
// DefaultUpstreamOptions has the defaults the config keys document.
type UpstreamOptions struct {
	// BaseURL is the upstream API root including /v1; request paths such
	// as /responses are appended to its path, before any query it has
	// (https://host/v1?key=k posts to https://host/v1/responses?key=k).
	// Credentials in it (https://user:password@host/v1) are sent as HTTP
	// Basic auth, in place of the API key, as curl and httpx send them.
	// Wherever the URL is shown its secrets are redacted (config.RedactURL).
	BaseURL string
	// APIKey is sent as `Authorization: Bearer <key>` on every request
	// unless BaseURL carries credentials.
	APIKey string
	// Headers are sent on every request, before the session header and
	// Authorization (openai_default_headers).
	Headers [][2]string
	// SessionKeyHeaders name the headers that carry the session key, the
	// request's rollout id, when it has one (session_key_headers).
	SessionKeyHeaders []string
	// RequestTimeout bounds one attempt, from sending to the end of the
	// response (streams included); zero means none, as in NeMo Gym.
	RequestTimeout time.Duration
	// ConnectTimeout bounds dialling and the TLS handshake; zero means none.
	ConnectTimeout time.Duration
	// MaxRetries caps the retries after the first try. A 500 gets at most
	// serverErrorTries tries in all, whatever the cap.
	MaxRetries int
	// BaseBackoff and MaxBackoff bound the exponential backoff.
	BaseBackoff, MaxBackoff time.Duration
	// MaxConcurrentRequests caps requests in flight upstream, retries and
	// streams included; zero means unlimited.
	MaxConcurrentRequests int
	// MaxConnsPerHost caps HTTP/1.1 connections to the upstream, and so
	// its concurrent requests; zero means unlimited. HTTP/2 multiplexes
	// requests over few connections and is never capped by it.
	MaxConnsPerHost int
	// PingInterval is how long an HTTP/2 connection may go without a frame
	// from the upstream before it is pinged; zero turns pings off.
	// PingTimeout is how long a ping may go unanswered before the
	// connection is dropped.
	PingInterval, PingTimeout time.Duration
	// RetryDeadline bounds how long a call keeps retrying, counted from
	// the start of its first try (a wait for a max_concurrent_requests
	// slot does not count): a wait before the next try that would end past
	// it is not taken, and the last try's error is returned at once — for
	// a Retry-After as for a backoff. A try in flight is never cut by it,
	// since that try may be a long generation the upstream is producing;
	// RequestTimeout bounds each try. Zero means no deadline, only
	// MaxRetries.
	RetryDeadline time.Duration
	// TLSConfig, when set, replaces the default TLS settings (system roots).
	TLSConfig *tls.Config
	// Logger receives a line per retry and per relayed failure.
	Logger *slog.Logger
}

// Defaults of the shared config keys (see the component READMEs).
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultMaxRetries     = 10
	DefaultBaseBackoff    = 500 * time.Millisecond
	DefaultMaxBackoff     = 60 * time.Second
	// Two minutes is about what the default tries take against an
	// upstream that is down (half of the 4 minutes their backoff ceilings
	// add up to), so the common case is unchanged; what the deadline cuts
	// is the tail: a run of Retry-After waits could otherwise hold one
	// call for over an hour (10 retries of up to 10 minutes each).
	DefaultRetryDeadline = 2 * time.Minute
	// Pinging after 30 s of silence keeps a connection well inside the
	// idle limits of load balancers (NVCF's 340 s, 60 s for many others)
	// while a response is slow to start.
	DefaultPingInterval = 30 * time.Second
	DefaultPingTimeout  = 15 * time.Second
)

const (
	// A 500 is usually a real failure, so like NeMo Gym's model client it
	// gets 3 tries in all, however many retries rate limits get.
	serverErrorTries = 3
	// Error bodies are relayed and logged; a bound keeps a misbehaving
	// upstream from filling memory.
	maxErrorBody = 4 << 20
)

// DefaultUpstreamOptions returns the defaults for everything but the
// upstream's address and credentials.
func DefaultUpstreamOptions() UpstreamOptions {
	return UpstreamOptions{
		ConnectTimeout: DefaultConnectTimeout,
		MaxRetries:     DefaultMaxRetries,
		BaseBackoff:    DefaultBaseBackoff,
		MaxBackoff:     DefaultMaxBackoff,
		RetryDeadline:  DefaultRetryDeadline,
		PingInterval:   DefaultPingInterval,
		PingTimeout:    DefaultPingTimeout,
	}
}

// Upstream sends model requests to one OpenAI-compatible endpoint. It is
// safe for concurrent use.
type Upstream struct {
	base           string // the base URL up to its query, with no trailing slash
	query          string // the base URL's query: "" or "?..."
	transport      http.RoundTripper
	header         http.Header // shared by requests without a session key; never written
	sessionHeaders []string
	timeout        time.Duration
	maxRetries     int
	baseBackoff    time.Duration
	maxBackoff     time.Duration
	retryDeadline  time.Duration
	slots          chan struct{} // nil when unlimited
	logger         *slog.Logger
	// The clock and the randomness of waits, replaced in tests.
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
	jitter func(n int64) int64 // uniform in [0, n)
}

// NewUpstream checks opts and builds the Upstream with its own transport.
func NewUpstream(opts UpstreamOptions) (*Upstream, error) {
	if !strings.HasPrefix(opts.BaseURL, "http://") && !strings.HasPrefix(opts.BaseURL, "https://") {
		return nil, fmt.Errorf("upstream base URL %q is not an http(s) URL", config.RedactURL(opts.BaseURL))
	}
	base, query, hasQuery := strings.Cut(opts.BaseURL, "?")
	base = strings.TrimRight(base, "/")
	if hasQuery {
		query = "?" + query
	}
	parsed, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("upstream base URL %q: %w", config.RedactURL(opts.BaseURL), withoutURL(err))
	}
	header := http.Header{"Content-Type": {"application/json"}}
	for _, kv := range opts.Headers {
		if !validHeaderName(kv[0]) {
			return nil, fmt.Errorf("default header name %q is not a valid HTTP header name", kv[0])
		}
		if strings.ContainsAny(kv[1], "\r\n\x00") {
			return nil, fmt.Errorf("default header %s: the value holds a line break or NUL, which HTTP cannot carry", kv[0])
		}
		header.Set(kv[0], kv[1])
	}
	// Checked here because the transport would only refuse each request.
	if strings.ContainsAny(opts.APIKey, "\r\n\x00") {
		return nil, errors.New("the API key holds a line break or NUL, which an HTTP header cannot carry")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if user := parsed.User; user != nil {
		password, _ := user.Password()
		header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user.Username()+":"+password)))
		if opts.APIKey != "" {
			opts.Logger.Info("the upstream base URL carries credentials: they are sent as HTTP Basic auth, in place of the API key", "url", config.RedactURL(opts.BaseURL))
		}
	} else {
		header.Set("Authorization", "Bearer "+opts.APIKey)
	}
	for _, name := range opts.SessionKeyHeaders {
		if !validHeaderName(name) {
			return nil, fmt.Errorf("session key header name %q is not a valid HTTP header name", name)
		}
		if strings.EqualFold(name, "Authorization") {
			return nil, errors.New("session key headers cannot include Authorization: it always carries the credentials")
		}
	}
	transport := newTransport(opts, parsed)
	u := &Upstream{
		base:           base,
		query:          query,
		transport:      transport,
		header:         header,
		sessionHeaders: opts.SessionKeyHeaders,
		timeout:        opts.RequestTimeout,
		maxRetries:     max(opts.MaxRetries, 0),
		baseBackoff:    opts.BaseBackoff,
		maxBackoff:     opts.MaxBackoff,
		retryDeadline:  opts.RetryDeadline,
		logger:         opts.Logger,
		now:            time.Now,
		sleep:          server.Sleep,
		jitter:         rand.Int64N,
	}
	if opts.MaxConcurrentRequests > 0 {
		u.slots = make(chan struct{}, opts.MaxConcurrentRequests)
	}
	return u, nil
}

// StatusError is the upstream's final answer when it is not a 2xx: the
// handler relays its status, headers and body to the caller unchanged.
type StatusError struct {
	URL    string // secrets redacted
	Status int
	Header http.Header
	Body   []byte
	Tries  int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("POST %s: HTTP %d after %d %s: %s", e.URL, e.Status, e.Tries, plural(e.Tries, "try", "tries"), truncate(string(e.Body), 2000))
}

// TransportError is an upstream that gave no answer on any try: it could
// not be reached, dropped the connection, or (Timeout) took longer than
// request_timeout_seconds or connect_timeout_seconds.
type TransportError struct {
	URL     string // secrets redacted
	Tries   int
	Timeout bool
	Err     error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("POST %s: no answer after %d %s: %v", e.URL, e.Tries, plural(e.Tries, "try", "tries"), e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// Post sends body to <base URL><path> with the configured headers and, when
// the call has a rollout id, the session key headers, retrying as the
// options allow. A 2xx answer comes back whole, or as a stream when
// call.Stream is set (close it to free the request's slot). Anything else
// is a *StatusError, a *TransportError, or the context's error.
func (u *Upstream) Post(ctx context.Context, path string, body []byte, call CallInfo) (*Result, error) {
	target := u.base + path + u.query
	shown := config.RedactURL(target)
	// Without a cap there is no slot to release, and no func value to
	// allocate for it on every call.
	var release func()
	if u.slots != nil {
		select {
		case u.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("POST %s: waiting for one of the max_concurrent_requests slots: %w", shown, context.Cause(ctx))
		}
		release = u.release
	}
	defer func() {
		if release != nil {
			release()
		}
	}()
	header := u.headerFor(call)
	deadline := u.now().Add(u.retryDeadline)
	for try := 1; ; try++ {
		res, err := u.attempt(ctx, target, shown, body, header, call.Stream)
		if err == nil {
			if sb, ok := res.Stream.(*streamBody); ok {
				sb.release, release = release, nil
			}
			res.URL = shown
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("POST %s: %w", shown, context.Cause(ctx))
		}
		delay, retry := u.retryDelay(err, try)
		if !retry {
			return nil, err
		}
		if u.retryDeadline > 0 && u.now().Add(delay).After(deadline) {
			u.logger.Warn("not retrying upstream request: the wait would end past retry_deadline_seconds", "url", shown, "try", try, "delay", delay, "retry_deadline", u.retryDeadline, "error", err)
			return nil, err
		}
		u.logger.Warn("retrying upstream request", "url", shown, "try", try, "max_tries", u.maxRetries+1, "delay", delay, "error", err)
		if err := u.sleep(ctx, delay); err != nil {
			return nil, fmt.Errorf("POST %s: %w while waiting to retry", shown, err)
		}
	}
}

func (u *Upstream) release() { <-u.slots }

// headerFor returns the request headers. Without a session key the shared
// map serves: the transport only reads it.
func (u *Upstream) headerFor(call CallInfo) http.Header {
	if call.RolloutID == "" || len(u.sessionHeaders) == 0 {
		return u.header
	}
	h := u.header.Clone()
	for _, name := range u.sessionHeaders {
		h.Set(name, call.RolloutID)
	}
	return h
}

// attempt is one try of target, which errors name as shown. Its error is a
// *StatusError or a *TransportError with Tries left for Post to fill in.
func (u *Upstream) attempt(ctx context.Context, target, shown string, body []byte, header http.Header, stream bool) (*Result, error) {
	actx, cancel := ctx, context.CancelFunc(func() {})
	if u.timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, u.timeout)
	}
	req, err := server.NewPostRequest(actx, target, body)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("POST %s: %w", shown, withoutURL(err))
	}
	req.Header = header
	resp, err := u.roundTrip(req)
	if err != nil {
		cancel()
		return nil, transportError(shown, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		cancel()
		if err != nil {
			return nil, transportError(shown, fmt.Errorf("HTTP %d, reading the body: %w", resp.StatusCode, err))
		}
		return nil, &StatusError{URL: shown, Status: resp.StatusCode, Header: resp.Header, Body: data}
	}
	if stream {
		return &Result{Status: resp.StatusCode, Header: resp.Header, Stream: &streamBody{ReadCloser: resp.Body, done: cancel}}, nil
	}
	data, err := server.ReadAll(resp.Body, resp.ContentLength)
	resp.Body.Close()
	cancel()
	if err != nil {
		return nil, transportError(shown, fmt.Errorf("HTTP %d, reading the body: %w", resp.StatusCode, err))
	}
	return &Result{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

// roundTrip sends req as an http.Client that follows no redirect would
// (a redirect would turn a POST into a GET, so the caller sees the 3xx),
// without the client's per-request work: its header copy for redirects,
// its error wrapping that the caller strips again. What the client adds
// that anyone could see is kept: its error for an HTTPS request answered
// in plain HTTP, and its failure on a redirect whose Location does not
// parse. The upstream's Authorization is always in the header, so the
// client's Basic auth from the URL never applies.
func (u *Upstream) roundTrip(req *http.Request) (*http.Response, error) {
	resp, err := u.transport.RoundTrip(req)
	if err != nil {
		if tlsErr, ok := err.(tls.RecordHeaderError); ok && string(tlsErr.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch
		}
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		if loc := resp.Header.Get("Location"); loc != "" {
			if _, err := req.URL.Parse(loc); err != nil {
				resp.Body.Close()
				return nil, fmt.Errorf("failed to parse Location header %q: %v", loc, err)
			}
		}
	}
	return resp, nil
}

func transportError(shown string, err error) *TransportError {
	var ne net.Error
	return &TransportError{URL: shown, Err: err, Timeout: errors.As(err, &ne) && ne.Timeout()}
}

// withoutURL drops the *url.Error around err: it quotes the URL with its
// query, and so with any key in it, and the caller names the URL itself.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// retryDelay decides whether try failed in a way worth another try, and how
// long to wait first: timeouts, rate limits and gateway errors (408, 429,
// 502, 503, 504, 520) and connection failures are retried up to the cap, a
// 500 up to 3 tries in all, with exponential backoff and full jitter, or as
// long as a Retry-After asks. It fills in the error's tries.
func (u *Upstream) retryDelay(err error, try int) (time.Duration, bool) {
	var se *StatusError
	var te *TransportError
	switch {
	case errors.As(err, &se):
		se.Tries = try
		kind := retryableStatus(se.Status)
		if kind == "" || try > u.maxRetries || (kind == "server_error" && try >= serverErrorTries) {
			return 0, false
		}
		if wait, ok := server.RetryAfter(se.Header, u.now()); ok {
			if wait > server.MaxRetryAfter {
				return 0, false
			}
			// Jitter on top keeps a crowd of clients told the same time
			// from returning at once.
			return wait + time.Duration(u.jitter(int64(u.baseBackoff)+1)), true
		}
		return u.backoff(try), true
	case errors.As(err, &te):
		te.Tries = try
		var cert *tls.CertificateVerificationError
		if errors.As(err, &cert) || try > u.maxRetries {
			return 0, false
		}
		return u.backoff(try), true
	}
	return 0, false
}

// backoff is full jitter: uniform in [0, min(MaxBackoff, BaseBackoff·2^(try-1))].
func (u *Upstream) backoff(try int) time.Duration {
	ceiling := u.baseBackoff
	for i := 1; i < try && ceiling < u.maxBackoff; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, u.maxBackoff)
	return time.Duration(u.jitter(int64(ceiling) + 1))
}

// retryableStatus classifies statuses as NeMo Gym's model client does:
// rate limits and gateway failures are transient, a 500 may be. A 408 is
// transient too, as OpenAI's SDKs treat it (NeMo Gym fails it at once);
// every other 4xx would only be refused again.
func retryableStatus(code int) string {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, 520:
		return "rate_limit"
	case http.StatusInternalServerError:
		return "server_error"
	}
	return ""
}

// streamBody is a streamed answer; closing it ends the attempt and frees
// the request's slot, once.
type streamBody struct {
	io.ReadCloser
	done, release func()
	once          sync.Once
}

func (s *streamBody) Close() error {
	err := s.ReadCloser.Close()
	s.once.Do(func() {
		s.done()
		if s.release != nil {
			s.release()
		}
	})
	return err
}

// validHeaderName reports whether name is an HTTP token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
