package config

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"time"

	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// Env is everything outside the config files that loading depends on.
// Commands fill it from the real process; tests fill it by hand.
type Env struct {
	LookupEnv func(string) (string, bool) // for ${oc.env:...}
	Cwd       string                      // the parent's working directory; WORKING_DIR defaults hang off it
	Home      string                      // for ~ in results_dir / cache_dir
	Roots     *resolve.Roots
	PortFree  func(port int) bool    // reports whether a port is free: not leased to another gym process, and a TCP bind on all interfaces succeeds
	RandInt   func(n int64) int64    // uniform in [0, n)
	MachineIP func() (string, error) // for use_absolute_ip
	Now       func() time.Time       // for ${now:...}
	Warnings  io.Writer              // notices and warnings (never stdout: output must stay parseable)

	// work is what the resolvers of one Load or one Resolved may do
	// between them; nil gives each resolver its own.
	work *workBudget
}

// Request says what to load.
type Request struct {
	// Overrides are Hydra override tokens, flags already translated.
	Overrides []string
	// Seed is a programmatic layer merged below the overrides (NeMo Gym's
	// initial_global_config_dict), such as the dummy policy model.
	Seed *tree.Node
	// Offline never probes sockets or the network: unset ports become -1.
	Offline bool
}

// Result is a parsed global config.
type Result struct {
	// Config has directives applied and defaults filled; interpolations are
	// still unresolved, which is what child processes receive.
	Config        *tree.Node
	Instances     []*Instance
	AlmostServers []string
	env           Env
	// The port range fillDefaults checked.
	portLow, portHigh int64
}

// Load runs NeMo Gym's parse pipeline (spec/config.md §1).
func Load(ctx context.Context, env Env, req Request) (*Result, error) {
	env = env.withDefaults()
	env.work = &workBudget{}
	cli, err := override.ParseAll(req.Overrides)
	if err != nil {
		return nil, redactOverrideError(err)
	}
	cliLayer := cli
	if req.Seed != nil {
		if cliLayer, err = mergeAll(req.Seed, cli); err != nil {
			return nil, err
		}
	}
	envYAML, err := loadEnvYAML(env.Roots)
	if err != nil {
		return nil, err
	}
	rootPaths, err := topConfigPaths(envYAML, cliLayer, env)
	if err != nil {
		return nil, err
	}
	files, discovered, err := expandConfigPaths(ctx, env, rootPaths)
	if err != nil {
		return nil, err
	}
	base, err := mergeAll(append(files, envYAML, req.Seed)...)
	if err != nil {
		return nil, err
	}
	held, err := holdBackComposedOverrides(cli, base, env)
	if err != nil {
		return nil, err
	}
	if held.Len() > 0 && req.Seed != nil {
		if cliLayer, err = mergeAll(req.Seed, cli); err != nil {
			return nil, err
		}
	}
	cfg, err := mergeAll(append(files, envYAML, cliLayer)...)
	if err != nil {
		return nil, err
	}
	if len(discovered) > 0 {
		list := tree.NewList()
		for _, p := range discovered {
			list.Items = append(list.Items, tree.NewString(p))
		}
		list.SetOrigin(originOf(cfg.Get("config_paths")))
		cfg.Set("config_paths", list)
	}
	if err := applyDirectives(cfg); err != nil {
		return nil, err
	}
	if err := composeUnboundAgent(cfg, held, env); err != nil {
		return nil, err
	}
	if held.Len() > 0 {
		if cfg, err = merge(cfg, held, nil); err != nil {
			return nil, err
		}
	}
	if err := applyLegacyAgentAliases(cfg, env); err != nil {
		return nil, err
	}
	// Files and overrides are each bounded, but a directive puts one
	// subtree inside another.
	if deep := tree.TooDeep(cfg, 1); deep != nil {
		return nil, errorf(ClassConfig, deep.Origin,
			"the merged config reaches %s once _inherit_from and _copy are applied; NeMo Gym fails on it too, at Python's recursion limit", tree.DepthProblem())
	}
	if err := checkMissing(cfg); err != nil {
		return nil, err
	}
	res := &Result{Config: cfg, env: env}
	res.env.work = nil // each later use of the result gets a budget of its own
	if err := foldDummyModel(cfg); err != nil {
		return nil, err
	}
	r := newResolver(cfg, env)
	// Nothing changes the tree until defaults are filled, so each value
	// need be resolved only once until then.
	r.memo = map[*tree.Node]memoEntry{}
	var top *trail
	for _, e := range cfg.Entries {
		if _, err := r.valueAt(e.Value, top.key(e.Key, e.Value)); err != nil {
			return nil, err
		}
	}
	if err := res.findServers(r); err != nil {
		return nil, err
	}
	r.memo = nil
	if err := res.fillDefaults(r, req.Offline); err != nil {
		return nil, err
	}
	return res, nil
}

func (env Env) withDefaults() Env {
	if env.LookupEnv == nil {
		env.LookupEnv = os.LookupEnv
	}
	if env.Home == "" {
		env.Home = userHome()
	}
	if env.Warnings == nil {
		env.Warnings = io.Discard
	}
	if env.Now == nil {
		env.Now = time.Now
	}
	if env.RandInt == nil {
		env.RandInt = rand.Int64N
	}
	if env.PortFree == nil {
		env.PortFree = sharedLeases.free
	}
	if env.MachineIP == nil {
		env.MachineIP = machineIP
	}
	return env
}

// machineIP is Python's gethostbyname(gethostname()): the first IPv4 address
// the host name resolves to.
func machineIP() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", err
	}
	addrs, err := net.LookupIP(host)
	if err != nil {
		return "", fmt.Errorf("use_absolute_ip: cannot resolve host name %q: %w", host, err)
	}
	for _, a := range addrs {
		if v4 := a.To4(); v4 != nil {
			return v4.String(), nil
		}
	}
	return "", fmt.Errorf("use_absolute_ip: host name %q has no IPv4 address", host)
}

// topConfigPaths reads config_paths from env.yaml under the CLI layer,
// resolving interpolation so `+config_paths=${my_config_paths}` works.
func topConfigPaths(envYAML, cliLayer *tree.Node, env Env) ([]string, error) {
	tmp, err := mergeAll(envYAML, cliLayer)
	if err != nil {
		return nil, err
	}
	raw := tmp.Get("config_paths")
	if raw == nil {
		return nil, nil
	}
	v, err := newResolver(tmp, env).full(raw, Path{{Key: "config_paths"}})
	if err != nil {
		return nil, err
	}
	return configPathList(v, raw.Origin, "")
}

// configPathList checks a config_paths value is a list of strings. Null and
// empty give no paths.
func configPathList(v *tree.Node, where tree.Origin, file string) ([]string, error) {
	if v.Kind == tree.Null {
		return nil, nil
	}
	bad := v.Kind != tree.List
	var out []string
	if !bad {
		for _, it := range v.Items {
			if it.Kind != tree.String {
				bad = true
				break
			}
			out = append(out, it.Str)
		}
	}
	if bad {
		in := ""
		if file != "" {
			in = " in " + file
		}
		return nil, errorf(ClassMalformedConfigPaths, where,
			"'config_paths'%s must be a list of paths. Got: %s. Pass config files with --config <path> (repeatable) or +config_paths=[a.yaml,b.yaml]",
			in, v.GoString())
	}
	return out, nil
}

func (r *Result) findServers(rv *resolver) error {
	cfg := r.Config
	var problems []string
	for _, e := range cfg.Entries {
		if IsReserved(e.Key) {
			continue
		}
		inst, errs, looks, err := classify(e.Key, e.Value, rv.value)
		if err != nil {
			return err
		}
		if inst != nil {
			r.Instances = append(r.Instances, inst)
			continue
		}
		if looks && len(errs) > 0 {
			r.AlmostServers = append(r.AlmostServers, e.Key)
			var b strings.Builder
			fmt.Fprintf(&b, "Almost-Server Detected: '%s'", e.Key)
			if o := e.Value.Origin.String(); o != "" {
				fmt.Fprintf(&b, " (%s)", o)
			}
			b.WriteString("\nThis server configuration failed validation:\n")
			for _, fe := range errs {
				b.WriteString("  - " + fe.String() + "\n")
			}
			b.WriteString("This server will NOT be started.\n")
			problems = append(problems, b.String())
		}
	}
	if len(problems) > 0 {
		fmt.Fprintf(r.env.Warnings, "Configuration Warnings: Almost-Servers Detected\n\n%s\n", strings.Join(problems, "\n"))
		flag := cfg.Get("error_on_almost_servers")
		strict := true
		if flag != nil {
			v, err := rv.value(flag, Path{{Key: "error_on_almost_servers"}})
			if err != nil {
				return err
			}
			strict = Truthy(v)
		}
		if strict {
			return &Error{Class: ClassAlmostServer, Msg: fmt.Sprintf(
				"Found %d almost-server(s) with validation errors (%s). Fix the issues above or set error_on_almost_servers=false to bypass this error.\n\n%s",
				len(problems), strings.Join(r.AlmostServers, ", "), strings.Join(problems, "\n"))}
		}
	}
	if err := checkModelPairings(rv); err != nil {
		return err
	}
	return r.checkRefs(rv)
}

// checkRefs verifies every server reference ({type, name} as a direct field
// of an instance's config) names a valid instance of that type.
func (r *Result) checkRefs(rv *resolver) error {
	byType := map[string][]string{}
	exists := map[[2]string]bool{}
	for _, in := range r.Instances {
		byType[in.Type] = append(byType[in.Type], in.Name)
		exists[[2]string{in.Type, in.Name}] = true
	}
	for _, in := range r.Instances {
		for _, f := range in.Config.Entries {
			typ, name, ok := serverRef(f.Value)
			if !ok || exists[[2]string{typ, name}] {
				continue
			}
			return errorf(ClassServerRefNotFound, f.Value.Origin,
				"In server instance '%s', field '%s' references %s/'%s', which is not defined in the merged config.\n%s",
				in.Name, f.Key, typ, name, refHint(name, typ, byType[typ], resolve.CloseMatches))
		}
	}
	return nil
}

func serverRef(n *tree.Node) (typ, name string, ok bool) {
	if n.Kind != tree.Map {
		return "", "", false
	}
	t, nm := n.Get("type"), n.Get("name")
	if t == nil || nm == nil || t.Kind != tree.String || !isServerType(t.Str) || nm.Kind != tree.String {
		return "", "", false
	}
	return t.Str, nm.Str, true
}

// foldDummyModel replaces the seeded dummy policy model with a real one when
// a config supplies it: the dummy is merged under the first real
// implementation, so the real config wins.
func foldDummyModel(cfg *tree.Node) error {
	for _, e := range cfg.Entries {
		models := e.Value.Get(ModelsType)
		if models == nil || models.Kind != tree.Map || !models.Has("dummy_model") {
			continue
		}
		if e.Value.Len() <= 1 && models.Len() <= 1 {
			continue
		}
		dummy := models.Get("dummy_model")
		models.Delete("dummy_model")
		if models.Len() == 0 {
			return errorf(ClassConfig, e.Value.Origin,
				"'%s' holds the placeholder dummy_model next to other keys but no real model implementation; give it one under %s", e.Key, ModelsType)
		}
		first := &models.Entries[0]
		merged, err := merge(dummy, first.Value, trailOf(Path{{Key: e.Key}, {Key: ModelsType}, {Key: first.Key}}))
		if err != nil {
			return err
		}
		first.Value = merged
	}
	return nil
}

// Resolved returns a copy of the config with every interpolation resolved,
// as `gym env resolve` prints it. With hideSecrets, secret-like values are
// resolved (so one that cannot be fails here, as in NeMo Gym) and then
// masked before the output is resolved, so values that interpolate them
// print masked too; last, every resolved string is masked by value shape
// (URL passwords, Bearer / Basic credentials), whatever its key.
func (r *Result) Resolved(hideSecrets bool) (*tree.Node, error) {
	cfg := r.Config.Clone()
	env := r.env
	env.work = &workBudget{}
	if hideSecrets {
		redactOrigins(cfg, map[string]string{})
		rv := newResolver(cfg, env)
		rv.memo = map[*tree.Node]memoEntry{}
		if err := readAsMasking(rv, cfg, nil); err != nil {
			return nil, err
		}
		maskSecrets(cfg)
	}
	rv := newResolver(cfg, env)
	rv.memo = map[*tree.Node]memoEntry{}
	out, _, err := rv.fullAt(cfg, nil)
	if err != nil || !hideSecrets {
		return out, err
	}
	maskShapesIn(out)
	return out, nil
}

// Value returns a top-level value with its interpolations resolved, or nil
// when the key is absent.
func (r *Result) Value(key string) (*tree.Node, error) {
	n := r.Config.Get(key)
	if n == nil {
		return nil, nil
	}
	return newResolver(r.Config, r.env).full(n, Path{{Key: key}})
}

// PortRange is the range servers without a port are given theirs from
// (port_range_low and port_range_high, both included), as the config
// checked them.
func (r *Result) PortRange() (low, high int64) { return r.portLow, r.portHigh }

// LookupEnv is the environment lookup the config was resolved with; server
// sections resolved later must see the same one.
func (r *Result) LookupEnv(name string) (string, bool) { return r.env.LookupEnv(name) }
