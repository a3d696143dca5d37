// Package gymserver writes NeMo Gym servers in Go: resources servers (the
// verifier and tools of an environment) and the rollout-correlation helpers
// of agent servers. It is the public face of the runtime gym's own built-in
// servers run in, for components that live outside gym's module, such as
// those `gym env init --resources-server NAME --lang go` makes.
//
// A server is an executable whose main calls Main. `gym env start` runs it
// (its config's entrypoint names the executable) with the whole config in
// NEMO_GYM_CONFIG_DICT and its instance name in NEMO_GYM_CONFIG_PATH, as it
// runs NeMo Gym's Python servers; Main reads them, listens on the
// instance's host and port, and serves until SIGINT or SIGTERM. Every
// server answers GET / and keeps NeMo Gym's session cookie
// (<ClassName>___<instance>), so Go and Python servers mix in one run.
//
// A resources server is a ResourcesServer value: Verify scores a rollout,
// Fields declare the task row's fields (requests that do not fit are
// answered 422 as FastAPI answers them), Tools become POST /<name> routes,
// and Sessions keeps per-rollout state between /seed_session, tool calls
// and /verify.
//
// The API is kept small and stable: what gym's built-in resources servers
// need, and NeMo Gym's SimpleResponsesAPIAgent correlation helpers
// (rollout_id_from_run, url_path_for_run, base_url_for_run,
// url_path_for_request, resolve_model_base_url) as Agent's methods.
package gymserver

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/nemo-gym-go/gym/internal/server"
)

// BuildFunc builds a server's routes from the runtime it runs in.
type BuildFunc func(rt *Runtime) (http.Handler, error)

// Runtime is what a server knows about the process it runs in: its
// instance, its config section and the run's other servers.
type Runtime struct {
	rt *server.Runtime
}

// Instance is the server's instance name in the config, e.g.
// my_env_resources_server.
func (r *Runtime) Instance() string { return r.rt.Instance }

// Implementation is the server's implementation name, the directory under
// resources_servers/ (or responses_api_agents/, ...) it runs from.
func (r *Runtime) Implementation() string { return r.rt.Implementation }

// Config reads the server's own config section.
func (r *Runtime) Config() Config {
	return Config{s: server.Section{Instance: r.rt.Instance, Node: r.rt.Config}}
}

// ServerURL is http://host:port of another server instance of the run.
func (r *Runtime) ServerURL(instance string) (string, error) {
	return server.ServerURL(r.rt.Global, instance)
}

// Config is a server's config section. Each getter returns an error naming
// the key and what it holds when the value has the wrong type.
type Config struct{ s server.Section }

// String is a required string setting.
func (c Config) String(key string) (string, error) { return c.s.String(key) }

// Bool is a boolean setting, def when unset.
func (c Config) Bool(key string, def bool) (bool, error) { return c.s.Bool(key, def) }

// Int is an integer setting of at least min, def when unset.
func (c Config) Int(key string, def, min int) (int, error) { return c.s.Int(key, def, min) }

// Float is a number setting, def when unset.
func (c Config) Float(key string, def float64) (float64, error) { return c.s.Float(key, def) }

// Main runs the server gym started this process as, under className (the
// NeMo Gym class it stands for; it names the session cookie), and exits:
// 0 after SIGINT or SIGTERM, 1 with the error on standard error when the
// server cannot start.
func Main(className string, build BuildFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := Serve(ctx, className, build)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

// Serve is Main without the exit: it serves until ctx ends and returns nil
// then, or the error that kept the server from starting.
func Serve(ctx context.Context, className string, build BuildFunc) error {
	rt, err := server.FromEnv(os.LookupEnv)
	if err != nil {
		return err
	}
	if rt.ClassName == "" {
		rt.ClassName = className
	}
	h, err := build(&Runtime{rt: rt})
	if err != nil {
		return fmt.Errorf("%s '%s': %w", rt.Kind(), rt.Instance, err)
	}
	return server.Serve(ctx, rt, h, os.Stdout)
}

// Register makes a server available as a built-in of the binary it is
// linked into, under kind (<server_type>/<implementation>, e.g.
// resources_servers/mcqa). configKeys are the keys of its section it reads;
// gym warns about any other. Only gym's own built-ins register: a
// component outside gym runs with Main.
func Register(kind, className string, build BuildFunc, configKeys ...string) {
	server.Register(kind, className, func(rt *server.Runtime) (http.Handler, error) {
		return build(&Runtime{rt: rt})
	}, configKeys...)
}

// SessionID is the id of the rollout session a request belongs to (NeMo
// Gym's request.session["session_id"]), for keying per-rollout state.
func SessionID(r *http.Request) string { return server.SessionID(r) }
