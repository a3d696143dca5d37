package config

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

func mustYAML(t testing.TB, s string) *tree.Node {
	t.Helper()
	n, err := pyyaml.Load([]byte(s), "test.yaml")
	if err != nil {
		t.Fatalf("loading %q: %v", s, err)
	}
	return n
}

func dump(n *tree.Node) string { return string(pyyaml.Dump(n, pyyaml.Options{})) }

// testEnv is a hermetic environment: fixed cwd, no env vars, ports always
// free and picked deterministically.
func testEnv(t testing.TB, vars map[string]string) Env {
	dir := t.TempDir()
	next := int64(0)
	return Env{
		LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
		Cwd:       dir,
		Home:      dir + "/home",
		Roots:     resolve.NewRoots("", dir, dir),
		PortFree:  func(int) bool { return true },
		RandInt:   func(n int64) int64 { next++; return next % n },
		MachineIP: func() (string, error) { return "10.1.2.3", nil },
		Now:       func() time.Time { return time.Date(2026, 11, 29, 8, 5, 9, 0, time.UTC) },
	}
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name, a, b, want, err string
	}{
		{name: "maps merge keeping a's order", a: "{x: 1, y: 2}", b: "{z: 3, x: 4}", want: "{x: 4, y: 2, z: 3}"},
		{name: "lists replace", a: "{l: [1, 2]}", b: "{l: [3]}", want: "{l: [3]}"},
		{name: "scalar replaces map", a: "{m: {k: 1}}", b: "{m: 5}", want: "{m: 5}"},
		{name: "map replaces scalar", a: "{m: 5}", b: "{m: {k: 1}}", want: "{m: {k: 1}}"},
		{name: "null replaces map", a: "{m: {k: 1}}", b: "{m: null}", want: "{m: null}"},
		{name: "interpolation replaces map", a: "{m: {k: 1}}", b: "{m: '${x}'}", want: "{m: \"${x}\"}"},
		{name: "missing keeps value", a: "{m: 1}", b: "{m: '???'}", want: "{m: 1}"},
		{name: "missing keeps map", a: "{m: {k: 1}}", b: "{m: '???'}", want: "{m: {k: 1}}"},
		{name: "missing on absent stays missing", a: "{}", b: "{m: '???'}", want: "{m: \"???\"}"},
		{name: "deep merge", a: "{a: {b: {c: 1, d: 2}}}", b: "{a: {b: {d: 3}}}", want: "{a: {b: {c: 1, d: 3}}}"},
		{name: "map onto list fails", a: "{x: [1]}", b: "{x: {k: 1}}", err: "cannot merge a map"},
		{name: "list onto map fails", a: "{x: {k: 1}}", b: "{x: [1]}", err: "cannot merge a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mergeAll(mustYAML(t, tt.a), mustYAML(t, tt.b))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := mustYAML(t, tt.want); !tree.Equal(got, want) {
				t.Errorf("got %#v, want %#v", got, want)
			}
		})
	}
}

func TestDirectives(t *testing.T) {
	tests := []struct {
		name, in, want, err string
	}{
		{name: "inherit moves", in: "{k: '${inherit_from:s}', s: {a: 1}}", want: "{k: {a: 1}}"},
		{name: "copy keeps", in: "{k: '${copy:s}', s: {a: 1}}", want: "{k: {a: 1}, s: {a: 1}}"},
		{name: "map inherit merges local over source", in: "{k: {_inherit_from: s, a: 2}, s: {a: 1, b: 1}}", want: "{k: {a: 2, b: 1}}"},
		{name: "map copy", in: "{k: {_copy: s, b: 2}, s: {a: 1}}", want: "{k: {a: 1, b: 2}, s: {a: 1}}"},
		{name: "delete local", in: "{k: {_delete_key: 'x, y', x: 1, z: 2}}", want: "{k: {z: 2}}"},
		{name: "delete from source", in: "{k: {_copy: s, _delete_key: a}, s: {a: 1, b: 2}}", want: "{k: {b: 2}, s: {a: 1, b: 2}}"},
		{name: "delete unknown without source ignored", in: "{k: {_delete_key: nope, x: 1}}", want: "{k: {x: 1}}"},
		{name: "delete unknown with source fails", in: "{k: {_copy: s, _delete_key: nope}, s: {a: 1}}", err: "lists 'nope'"},
		{name: "nested path", in: "{a: {b: {c: 3}}, p: {q: '${inherit_from:a.b.c}'}}", want: "{a: {b: {}}, p: {q: 3}}"},
		{name: "two inherit one source", in: "{x: '${inherit_from:s}', y: '${inherit_from:s}', s: 1}", want: "{x: 1, y: 1}"},
		{name: "missing source becomes missing", in: "{x: '${copy:s}', s: '???'}", want: "{x: '???', s: '???'}"},
		{name: "missing ancestor becomes missing", in: "{x: '${copy:s.t}', s: '???'}", want: "{x: '???', s: '???'}"},
		{name: "missing parent shows parent", in: "{x: '${copy:nope.path}'}", err: "['nope']"},
		{name: "missing leaf shows full", in: "{a: {b: 1}, x: '${copy:a.nope}'}", err: "['a', 'nope']"},
		{name: "list strings untouched", in: "{l: ['${copy:s}'], s: 1}", want: "{l: ['${copy:s}'], s: 1}"},
		{name: "maps in lists walked", in: "{l: [{k: '${copy:s}'}], s: 1}", want: "{l: [{k: 1}], s: 1}"},
		{name: "list element's own directive kept", in: "{l: [{_copy: s}], s: {a: 1}}", want: "{l: [{_copy: s}], s: {a: 1}}"},
		{name: "root directive ignored", in: "{_inherit_from: s, s: 1}", want: "{_inherit_from: s, s: 1}"},
		{name: "text containing directive is not one", in: "{x: 'a-${copy:s}', s: 1}", want: "{x: 'a-${copy:s}', s: 1}"},
		{name: "non-string _delete_key", in: "{k: {_delete_key: [a]}}", err: "comma-separated string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustYAML(t, tt.in)
			err := applyDirectives(cfg)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := mustYAML(t, tt.want); !tree.Equal(cfg, want) {
				t.Errorf("got %#v, want %#v", cfg, want)
			}
		})
	}
}

func TestCheckMissing(t *testing.T) {
	err := checkMissing(mustYAML(t, "{a: '???', b: {c: value, d: '???'}, e: [ok, '???'], f: '???', g: '???'}"))
	var cfgErr *Error
	if !errors.As(err, &cfgErr) || cfgErr.Class != ClassMissingValues {
		t.Fatalf("err = %v, want a %s", err, ClassMissingValues)
	}
	msg := err.Error()
	for _, want := range []string{"5 required config value(s) are unset", "  - a ", "  - b.d ", "  - e[1] ", "++a=<value>", "++e[1]=<value>"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "++f=<value>") {
		t.Errorf("message shows more than three examples:\n%s", msg)
	}
	if checkMissing(mustYAML(t, "{a: 1, b: '??'}")) != nil {
		t.Error("no ??? left, but an error")
	}
}

func TestLoadPipeline(t *testing.T) {
	tests := []struct {
		name      string
		overrides []string
		seed      string
		env       map[string]string
		offline   bool
		check     func(t *testing.T, cfg *tree.Node)
		err       string
	}{
		{
			name:      "use_absolute_ip uses the machine address (T45)",
			overrides: []string{"+use_absolute_ip=true", "+m.responses_api_models.x.entrypoint=app.py"},
			check: func(t *testing.T, cfg *tree.Node) {
				if h := cfg.Get("head_server").Get("host").Str; h != "10.1.2.3" {
					t.Errorf("head host %q", h)
				}
				if h := cfg.Get("m").Get("responses_api_models").Get("x").Get("host").Str; h != "10.1.2.3" {
					t.Errorf("server host %q", h)
				}
			},
		},
		{
			name:      "default_host",
			overrides: []string{"+default_host=0.0.0.0", "+m.responses_api_models.x.entrypoint=app.py"},
			check: func(t *testing.T, cfg *tree.Node) {
				if h := cfg.Get("m").Get("responses_api_models").Get("x").Get("host").Str; h != "0.0.0.0" {
					t.Errorf("server host %q", h)
				}
			},
		},
		{
			name:      "dummy model folds under a real one (T48)",
			seed:      "{policy_base_url: '', policy_api_key: '', policy_model_name: '', policy_model: {responses_api_models: {dummy_model: {entrypoint: app.py}}}}",
			overrides: []string{"+policy_model.responses_api_models.test_model.entrypoint=app.py"},
			check: func(t *testing.T, cfg *tree.Node) {
				models := cfg.Get("policy_model").Get("responses_api_models")
				if models.Has("dummy_model") || !models.Has("test_model") {
					t.Errorf("models = %#v", models)
				}
				if v := cfg.Get("policy_base_url"); v == nil || v.Str != "" {
					t.Errorf("policy_base_url = %#v", v)
				}
			},
		},
		{
			name:      "offline ports are -1 and not reserved",
			offline:   true,
			overrides: []string{"+m.responses_api_models.x.entrypoint=app.py"},
			check: func(t *testing.T, cfg *tree.Node) {
				if p := cfg.Get("m").Get("responses_api_models").Get("x").Get("port").Int; p != -1 {
					t.Errorf("port %d", p)
				}
				if d := cfg.Get("disallowed_ports"); d.Len() != 1 {
					t.Errorf("disallowed_ports = %#v", d)
				}
			},
		},
		{
			name:      "skip_verification flows into agents only",
			overrides: []string{"+skip_verification=true", "+a.responses_api_agents.x.entrypoint=app.py", "+m.responses_api_models.x.entrypoint=app.py", "+b.responses_api_agents.y.entrypoint=app.py", "+b.responses_api_agents.y.skip_verification=null"},
			check: func(t *testing.T, cfg *tree.Node) {
				if v := cfg.Get("a").Get("responses_api_agents").Get("x").Get("skip_verification"); v == nil || !v.Bool {
					t.Errorf("agent a: %#v", v)
				}
				if cfg.Get("m").Get("responses_api_models").Get("x").Has("skip_verification") {
					t.Error("model got skip_verification")
				}
				if v := cfg.Get("b").Get("responses_api_agents").Get("y").Get("skip_verification"); v.Kind != tree.Null {
					t.Errorf("agent b's explicit null replaced: %#v", v)
				}
			},
		},
		{
			name:      "explicit head server port feeds disallowed ports",
			overrides: []string{"+head_server.port=12000", "+m.responses_api_models.x.entrypoint=app.py", "+m.responses_api_models.x.port=13000"},
			check: func(t *testing.T, cfg *tree.Node) {
				if got := dump(cfg.Get("disallowed_ports")); got != "- 12000\n- 13000\n" {
					t.Errorf("disallowed_ports = %q", got)
				}
				// nemo-gym 0.7.0 fills the head server per key, so a
				// config may pin just its port.
				if got := dump(cfg.Get("head_server")); got != "port: 12000\nhost: 127.0.0.1\n" {
					t.Errorf("head_server = %q, want the port kept and the host filled", got)
				}
			},
		},
		{
			name:      "port from an interpolation validates as the port",
			env:       map[string]string{"P": "12345"},
			overrides: []string{"+m.responses_api_models.x.entrypoint=app.py", `+m.responses_api_models.x.port="${oc.decode:${oc.env:P}}"`},
			check: func(t *testing.T, cfg *tree.Node) {
				if got := dump(cfg.Get("disallowed_ports")); got != "- 11000\n- 12345\n" {
					t.Errorf("disallowed_ports = %q", got)
				}
			},
		},
		{
			name:      "an earlier instance never gets a port a later one sets (errata L1)",
			overrides: []string{"+port_range_low=12000", "+port_range_high=12001", "+a.responses_api_models.x.entrypoint=app.py", "+b.responses_api_models.x.entrypoint=app.py", "+b.responses_api_models.x.port=12000"},
			check: func(t *testing.T, cfg *tree.Node) {
				if got := dump(cfg.Get("disallowed_ports")); got != "- 11000\n- 12001\n- 12000\n" {
					t.Errorf("disallowed_ports = %q", got)
				}
			},
		},
		{
			name:      "no free port",
			overrides: []string{"+port_range_low=11000", "+port_range_high=11000", "+m.responses_api_models.x.entrypoint=app.py"},
			err:       "Unable to find an open port",
		},
		{
			name:      "allow_openai_version_skew must be a bool",
			overrides: []string{"+allow_openai_version_skew='false'"},
			err:       "allow_openai_version_skew must be a boolean (true/false), got 'false'.",
		},
		{
			name:      "interpolation cycle",
			overrides: []string{"+a=${b}", "+b=${a}"},
			err:       "refers back to itself",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := Request{Overrides: tt.overrides, Offline: tt.offline}
			if tt.seed != "" {
				req.Seed = mustYAML(t, tt.seed)
			}
			res, err := Load(context.Background(), testEnv(t, tt.env), req)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, res.Config)
		})
	}
}

func TestIsSecretKey(t *testing.T) {
	for key, want := range map[string]bool{
		"api_key": true, "openai_api_key": true, "OPENAI_API_KEY": true, "hf_token": true,
		"access_token": true, "db_password": true, "client_secret": true, "monkey": true,
		"max_output_tokens": false, "max_tokens": false, "token_id_capture": false, "name": false,
	} {
		if got := IsSecretKey(key); got != want {
			t.Errorf("IsSecretKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestStrftime(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 4, 5, 123456000, time.UTC)
	if got := strftime(at, "%Y-%m-%d_%H-%M-%S.%f %y %j %I%p %b %B %a %A %% %q"); got != "2026-01-02_15-04-05.123456 26 002 03PM Jan January Fri Friday % %q" {
		t.Errorf("got %q", got)
	}
}

// PortRange is the range the config checked, NeMo Gym's default or set.
func TestResultPortRange(t *testing.T) {
	for _, tc := range []struct {
		overrides []string
		low, high int64
	}{
		{nil, 10001, 20000},
		{[]string{"+port_range_low=12000", `+port_range_high="${oc.decode:${oc.env:P}}"`}, 12000, 13000},
	} {
		res, err := Load(context.Background(), testEnv(t, map[string]string{"P": "13000"}), Request{Overrides: tc.overrides})
		if err != nil {
			t.Fatal(err)
		}
		if low, high := res.PortRange(); low != tc.low || high != tc.high {
			t.Errorf("%v: PortRange() = %d, %d; want %d, %d", tc.overrides, low, high, tc.low, tc.high)
		}
	}
}
