package launcher

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Readiness polling starts fast and backs off: a Go server answers within
// milliseconds, a Python one installing its venv may take minutes.
const (
	firstPoll       = 10 * time.Millisecond
	maxPoll         = 500 * time.Millisecond
	progressEvery   = 10 * time.Second
	endpointMaxPoll = 3 * time.Second
)

func nextDelay(d, max time.Duration) time.Duration {
	if d = d * 3 / 2; d > max {
		return max
	}
	return d
}

// timeouts are the two waits of a start, in seconds, read from the config
// once, before anything is built or started.
type timeouts struct {
	spinup    float64 // server_spinup_timeout_seconds; 0 or less: no limit
	endpoints float64 // model_endpoint_readiness_timeout_seconds; 0 or less: no check
}

func (l *Launch) readTimeouts() (timeouts, error) {
	spinup, err := l.seconds("server_spinup_timeout_seconds", "0 waits without a limit")
	if err != nil {
		return timeouts{}, err
	}
	endpoints, err := l.seconds("model_endpoint_readiness_timeout_seconds", "0 skips the check")
	return timeouts{spinup: spinup, endpoints: endpoints}, err
}

// seconds reads a timeout key (NeMo Gym's default 600 when unset or null):
// a number, or a numeric string as environment interpolation yields.
func (l *Launch) seconds(key, zeroMeans string) (float64, error) {
	v, err := l.opts.Result.Value(key)
	if err != nil {
		return 0, err
	}
	switch {
	case v == nil || v.Kind == tree.Null:
		return 600, nil
	case v.Kind == tree.Int:
		return float64(v.Int), nil
	case v.Kind == tree.Float:
		return v.Float, nil
	case v.Kind == tree.String:
		if f, err := strconv.ParseFloat(strings.TrimSpace(v.Str), 64); err == nil {
			return f, nil
		}
	}
	return 0, &config.Error{Class: config.ClassConfig, Where: v.Origin, Msg: fmt.Sprintf(
		"%s must be a number of seconds (%s), got %s", key, zeroMeans, scalarText(v))}
}

// waitReady polls every server's GET / until it answers (any HTTP status
// counts, as upstream), failing fast when a server exits, for up to
// server_spinup_timeout_seconds.
func (l *Launch) waitReady(ctx context.Context) error {
	limit := l.timeouts.spinup
	var deadline <-chan time.Time
	if limit > 0 {
		timer := time.NewTimer(time.Duration(limit * float64(time.Second)))
		defer timer.Stop()
		deadline = timer.C
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	ready := make(chan int, len(l.children))
	for i, c := range l.children {
		go func() {
			delay := firstPoll
			for {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.spec.URL()+"/", nil)
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
					ready <- i
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-l.stopping:
					return
				case <-time.After(delay):
				}
				delay = nextDelay(delay, maxPoll)
			}
		}()
	}
	done := make([]bool, len(l.children))
	progress := time.NewTicker(progressEvery)
	defer progress.Stop()
	for n := 0; n < len(l.children); {
		select {
		case i := <-ready:
			done[i] = true
			n++
		case c := <-l.crashed:
			return c.crashError()
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("timed out after %gs waiting for servers to become ready: %s; raise the limit with ++server_spinup_timeout_seconds=<seconds>, or set it to 0 to wait without a limit",
				limit, strings.Join(waiting(done, l.children), ", "))
		case <-progress.C:
			fmt.Fprintf(l.opts.Out, "%d / %d servers ready. Waiting for: %s\n", n, len(l.children), strings.Join(waiting(done, l.children), ", "))
		}
	}
	return nil
}

// endpoint is one upstream model URL and the config key it came from.
type endpoint struct{ url, key string }

// modelEndpoints lists the upstream URLs of every model server: each field
// whose key ends in base_url (a string or a list of strings), deduplicated
// without a trailing slash.
func (l *Launch) modelEndpoints() ([]endpoint, error) {
	res := l.opts.Result
	seen := map[string]bool{}
	var out []endpoint
	add := func(u, key string) {
		u = strings.TrimRight(strings.TrimSpace(u), "/")
		if u != "" && !seen[u] {
			seen[u] = true
			out = append(out, endpoint{u, key})
		}
	}
	for _, in := range res.Instances {
		if in.Type != config.ModelsType {
			continue
		}
		section, _, _, err := config.InstanceSection(res.Config, in.Name, res.LookupEnv)
		if err != nil {
			return nil, err
		}
		for _, f := range section.Entries {
			if !strings.HasSuffix(f.Key, "base_url") {
				continue
			}
			key := in.Name + "." + in.Type + "." + in.Implementation + "." + f.Key
			switch f.Value.Kind {
			case tree.String:
				add(f.Value.Str, key)
			case tree.List:
				for _, it := range f.Value.Items {
					if it.Kind == tree.String {
						add(it.Str, key)
					}
				}
			}
		}
	}
	return out, nil
}

// probeResult classifies one endpoint probe.
type probeResult int

const (
	answering probeResult = iota
	refused
	unresolvable
)

func probe(ctx context.Context, client *http.Client, url string) probeResult {
	target := url
	if strings.HasSuffix(url, "/v1") {
		target += "/models"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return answering // a malformed URL is the server's to report, not ours to wait on
	}
	resp, err := client.Do(req)
	if err == nil {
		resp.Body.Close()
		return answering
	}
	var dnsErr *net.DNSError
	var tlsErr *tls.RecordHeaderError
	var certErr *tls.CertificateVerificationError
	var opErr *net.OpError
	switch {
	case errors.As(err, &dnsErr):
		return unresolvable
	case errors.As(err, &tlsErr), errors.As(err, &certErr):
		return answering
	case errors.As(err, &opErr), errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return refused
	}
	return answering
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// waitModelEndpoints waits, up to model_endpoint_readiness_timeout_seconds
// (0 or less skips), until every upstream model endpoint answers: Gym's
// model server is up long before a vLLM behind it has loaded its weights.
func (l *Launch) waitModelEndpoints(ctx context.Context) error {
	seconds := l.timeouts.endpoints
	if seconds <= 0 {
		return nil
	}
	endpoints, err := l.modelEndpoints()
	if err != nil || len(endpoints) == 0 {
		return err
	}
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	start := time.Now()
	pending := endpoints
	announced := false
	delay := 50 * time.Millisecond
	for {
		var still []endpoint
		for _, e := range pending {
			switch probe(ctx, client, e.url) {
			case refused:
				still = append(still, e)
			case unresolvable:
				fmt.Fprintf(l.opts.Out, "Model endpoint %s (%s) does not resolve. Waiting cannot fix a hostname, so it is not retried.\n", config.RedactURL(e.url), e.key)
			}
		}
		if len(still) == 0 {
			if announced {
				fmt.Fprintf(l.opts.Out, "All model endpoints are answering after %.0fs.\n", time.Since(start).Seconds())
			}
			return nil
		}
		pending = still
		if !announced {
			announced = true
			fmt.Fprintf(l.opts.Out, "Waiting for %d model endpoint(s) to answer: %s (the model may still be loading its weights)\n", len(still), describe(still))
		}
		if time.Now().After(deadline) {
			return &config.Error{Class: config.ClassConfig, Msg: fmt.Sprintf(
				"model endpoints did not answer within %gs:\n%s\nCheck each with `curl -i <base_url>/models`; raise ++model_endpoint_readiness_timeout_seconds=<seconds>, or set it to 0 to skip this check.",
				seconds, listEndpoints(still))}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case c := <-l.crashed:
			return c.crashError()
		case <-time.After(delay):
		}
		delay = nextDelay(delay, endpointMaxPoll)
	}
}

func describe(es []endpoint) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = config.RedactURL(e.url) + " (" + e.key + ")"
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func listEndpoints(es []endpoint) string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = "  - " + config.RedactURL(e.url) + " (from `" + e.key + "`)"
	}
	return strings.Join(lines, "\n")
}

func waiting(done []bool, children []*child) []string {
	var names []string
	for i, d := range done {
		if !d {
			names = append(names, children[i].spec.Instance)
		}
	}
	return names
}
