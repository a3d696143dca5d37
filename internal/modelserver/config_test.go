package modelserver

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/server"
	"github.com/nemo-gym-go/gym/internal/server/servertest"
)

// runtimeFor builds the runtime of instance m from a config whose instance
// section holds lines; global holds top-level lines.
func runtimeFor(t *testing.T, global string, lines ...string) (*server.Runtime, *bytes.Buffer) {
	t.Helper()
	yaml := global + "m:\n  responses_api_models:\n    some_model:\n      host: 127.0.0.1\n      port: 0\n"
	for _, l := range lines {
		yaml += "      " + l + "\n"
	}
	rt, err := servertest.Runtime(yaml, "m")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	rt.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	return rt, &logs
}

func TestUpstreamOptionsFromConfig(t *testing.T) {
	rt, _ := runtimeFor(t, "")
	got, err := UpstreamOptionsFromConfig(rt)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultUpstreamOptions()
	want.Logger = rt.Logger
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults\n got %+v\nwant %+v", got, want)
	}

	rt, _ = runtimeFor(t, "rollout_correlation: true\n",
		"session_key_headers: [X-Session]",
		"request_timeout_seconds: 1.5",
		`connect_timeout_seconds: "3"`,
		"max_retries: 0",
		"retry_backoff_seconds: 0.25",
		"retry_max_backoff_seconds: 8",
		"max_concurrent_requests: 64",
		"max_connections_per_host: 512",
		"http2_ping_interval_seconds: 0",
		"http2_ping_timeout_seconds: 5",
		"retry_deadline_seconds: 45",
	)
	got, err = UpstreamOptionsFromConfig(rt)
	if err != nil {
		t.Fatal(err)
	}
	want = UpstreamOptions{
		SessionKeyHeaders: []string{"X-Session"},
		RequestTimeout:    1500 * time.Millisecond, ConnectTimeout: 3 * time.Second,
		MaxRetries: 0, BaseBackoff: 250 * time.Millisecond, MaxBackoff: 8 * time.Second,
		MaxConcurrentRequests: 64, MaxConnsPerHost: 512,
		PingInterval: 0, PingTimeout: 5 * time.Second,
		RetryDeadline: 45 * time.Second,
		Logger:        rt.Logger,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("set\n got %+v\nwant %+v", got, want)
	}

	rt, _ = runtimeFor(t, "", "max_concurrent_requests: null", "request_timeout_seconds: null")
	if got, err := UpstreamOptionsFromConfig(rt); err != nil || got.MaxConcurrentRequests != 0 || got.RequestTimeout != 0 {
		t.Errorf("null means unlimited: %+v, %v", got, err)
	}
	rt, _ = runtimeFor(t, "", "retry_deadline_seconds: 0")
	if got, err := UpstreamOptionsFromConfig(rt); err != nil || got.RetryDeadline != 0 {
		t.Errorf("retry_deadline_seconds: 0 turns the deadline off: %+v, %v", got, err)
	}
}

func TestUpstreamOptionsFromConfigErrors(t *testing.T) {
	for line, want := range map[string]string{
		"max_retries: -1":                          "m.max_retries: an integer of at least 0 is required, got int -1",
		"max_retries: 2.5":                         "m.max_retries: an integer of at least 0",
		"max_concurrent_requests: 0":               "m.max_concurrent_requests: an integer of at least 1",
		"request_timeout_seconds: soon":            `m.request_timeout_seconds: a number of seconds ≥ 0 is required, got string "soon"`,
		"http2_ping_interval_seconds: -3":          "m.http2_ping_interval_seconds: a number of seconds ≥ 0",
		"session_key_headers: [X-A, 3]":            "m.session_key_headers[1]: a string is required, got int 3",
		"session_key_headers: {X-A: 1}":            "m.session_key_headers: a list of strings is required",
		"connect_timeout_seconds: [1]":             "m.connect_timeout_seconds: a number of seconds",
		"retry_max_backoff_seconds: 1e99":          "m.retry_max_backoff_seconds: a number of seconds",
		"max_connections_per_host: 99999999999999": "m.max_connections_per_host: an integer",
		"retry_deadline_seconds: -5":               "m.retry_deadline_seconds: a number of seconds ≥ 0 is required, got int -5",
		"retry_deadline_seconds: 2m":               `m.retry_deadline_seconds: a number of seconds ≥ 0 is required, got string "2m"`,
		"retry_deadline_seconds: true":             "m.retry_deadline_seconds: a number of seconds ≥ 0 is required, got bool",
	} {
		rt, _ := runtimeFor(t, "", line)
		if _, err := UpstreamOptionsFromConfig(rt); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", line, err, want)
		}
	}
}

// session_key_headers does nothing unless agents send rollout ids, which
// they do only with rollout correlation (or capture) on: say so at start.
func TestSessionHeadersWithoutCorrelationWarn(t *testing.T) {
	for global, warn := range map[string]bool{
		"":                                       true,
		"rollout_correlation: false\n":           true,
		"rollout_correlation: true\n":            false,
		"observability_enabled: true\n":          false,
		"token_id_capture: {enabled: true}\n":    false,
		"rollout_correlation: ${oc.env:RC,no}\n": false,
	} {
		rt, logs := runtimeFor(t, global, "session_key_headers: [X-Session]")
		if _, err := UpstreamOptionsFromConfig(rt); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(logs.String(), "rollout_correlation"); got != warn {
			t.Errorf("global %q: warned %v, want %v (logs: %s)", global, got, warn, logs)
		}
	}
}

func TestSectionValues(t *testing.T) {
	rt, _ := runtimeFor(t, "",
		`url: "http://h:1/v1/"`,
		"flag_str: 'False'",
		"flag_int: 1",
		"headers: {B: two, A: one}",
		`body: {max_output_tokens: null, temperature: 0.7, n: 1, list: [true, "x<y>"], tiny: 1.0e-05}`,
		"empty_body: {}",
		"number: 12",
	)
	s := Section{Instance: rt.Instance, Node: rt.Config}
	if u, err := s.BaseURL("url"); err != nil || u != "http://h:1/v1" {
		t.Errorf("BaseURL = %q, %v", u, err)
	}
	if b, err := s.Bool("flag_str", true); err != nil || b {
		t.Errorf("Bool('False') = %v, %v", b, err)
	}
	if b, err := s.Bool("flag_int", false); err != nil || !b {
		t.Errorf("Bool(1) = %v, %v", b, err)
	}
	if b, err := s.Bool("absent", true); err != nil || !b {
		t.Errorf("Bool(absent) = %v, %v, want the default", b, err)
	}
	if m, err := s.StringMap("headers"); err != nil || !reflect.DeepEqual(m, [][2]string{{"B", "two"}, {"A", "one"}}) {
		t.Errorf("StringMap = %v, %v (config order expected)", m, err)
	}
	if j, err := s.JSONObject("body"); err != nil || string(j) != `{"max_output_tokens":null,"temperature":0.7,"n":1,"list":[true,"x<y>"],"tiny":1e-05}` {
		t.Errorf("JSONObject = %s, %v", j, err)
	}
	if j, err := s.JSONObject("empty_body"); err != nil || j != nil {
		t.Errorf("JSONObject({}) = %s, %v, want nil", j, err)
	}
	if _, err := s.String("number"); err == nil || !strings.Contains(err.Error(), "m.number: a string is required, got int") {
		t.Errorf("String(12) error %v", err)
	}
	if _, err := s.String("absent"); err == nil || !strings.Contains(err.Error(), "got nothing") {
		t.Errorf("String(absent) error %v", err)
	}
}
