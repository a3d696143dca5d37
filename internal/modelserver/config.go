package modelserver

import (
	"time"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Section is the config reader every Go server shares.
type Section = server.Section

// UpstreamConfigKeys are the keys UpstreamOptionsFromConfig reads, which
// every Go model server built on it registers beside its own.
var UpstreamConfigKeys = []string{
	"session_key_headers", "request_timeout_seconds", "connect_timeout_seconds",
	"retry_backoff_seconds", "retry_max_backoff_seconds", "retry_deadline_seconds",
	"http2_ping_interval_seconds", "http2_ping_timeout_seconds",
	"max_retries", "max_concurrent_requests", "max_connections_per_host",
}

// UpstreamOptionsFromConfig reads the keys every Go model server shares
// from its section, over the defaults: session_key_headers,
// request_timeout_seconds, connect_timeout_seconds, max_retries,
// retry_backoff_seconds, retry_max_backoff_seconds, retry_deadline_seconds,
// max_concurrent_requests, max_connections_per_host,
// http2_ping_interval_seconds and http2_ping_timeout_seconds. The caller
// fills in the address, key and static headers under its own key names.
//
// NeMo Gym's model servers have no timeout or retry keys at all (their
// client retries rate limits forever, with no timeouts), so these are
// gym's own; each is optional, and null means its default.
// retry_deadline_seconds (default 120, 0 for none) is RetryDeadline: how
// long after a call's first try a retry may still be waited for.
func UpstreamOptionsFromConfig(rt *server.Runtime) (UpstreamOptions, error) {
	s := Section{Instance: rt.Instance, Node: rt.Config}
	o := DefaultUpstreamOptions()
	o.Logger = rt.Logger
	var err error
	if o.SessionKeyHeaders, err = s.StringList("session_key_headers"); err != nil {
		return UpstreamOptions{}, err
	}
	durations := []struct {
		dst *time.Duration
		key string
	}{
		{&o.RequestTimeout, "request_timeout_seconds"},
		{&o.ConnectTimeout, "connect_timeout_seconds"},
		{&o.BaseBackoff, "retry_backoff_seconds"},
		{&o.MaxBackoff, "retry_max_backoff_seconds"},
		{&o.RetryDeadline, "retry_deadline_seconds"},
		{&o.PingInterval, "http2_ping_interval_seconds"},
		{&o.PingTimeout, "http2_ping_timeout_seconds"},
	}
	for _, d := range durations {
		if *d.dst, err = s.Seconds(d.key, *d.dst); err != nil {
			return UpstreamOptions{}, err
		}
	}
	if o.MaxRetries, err = s.Int("max_retries", o.MaxRetries, 0); err != nil {
		return UpstreamOptions{}, err
	}
	if o.MaxConcurrentRequests, err = s.Int("max_concurrent_requests", 0, 1); err != nil {
		return UpstreamOptions{}, err
	}
	if o.MaxConnsPerHost, err = s.Int("max_connections_per_host", 0, 0); err != nil {
		return UpstreamOptions{}, err
	}
	if len(o.SessionKeyHeaders) > 0 && !correlationOn(rt.Global) && rt.Logger != nil {
		rt.Logger.Warn("session_key_headers is set but rollout_correlation (and observability_enabled) is off: agents will not send rollout ids, so no session header will be sent; set rollout_correlation: true",
			"session_key_headers", o.SessionKeyHeaders)
	}
	return o, nil
}

// correlationOn reports whether agents may prefix model calls with a rollout
// id: rollout correlation, observability or token capture is on, or one of
// them is an interpolation this process cannot judge.
func correlationOn(global *tree.Node) bool {
	maybe := func(n *tree.Node) bool {
		return n != nil && ((n.Kind == tree.Bool && n.Bool) || n.Kind == tree.String)
	}
	if global == nil {
		return false
	}
	tc := global.Get("token_id_capture")
	return maybe(global.Get("rollout_correlation")) || maybe(global.Get("observability_enabled")) ||
		(tc != nil && tc.Kind == tree.Map && maybe(tc.Get("enabled")))
}
