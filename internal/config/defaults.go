package config

import (
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

const (
	defaultHeadPort      = 11000
	defaultPortRangeLow  = 10001
	defaultPortRangeHigh = 20000
	portAttempts         = 50
	portNumber           = "a port number (0-65535)"
)

func defaulted(n *tree.Node) *tree.Node {
	n.SetOrigin(tree.Origin{Kind: tree.FromDefault})
	return n
}

// setDefault stores v at key unless the key is present.
func setDefault(root *tree.Node, key string, v *tree.Node) {
	if !root.Has(key) {
		root.Set(key, defaulted(v))
	}
}

// LaxBool is pydantic's reading of a bool field (observability_enabled,
// upload_rollouts, token_id_capture.enabled): LaxBoolOK's values; nil and
// null are false; anything else is an error.
func LaxBool(n *tree.Node) (bool, error) {
	if n == nil || n.Kind == tree.Null {
		return false, nil
	}
	if v, ok := LaxBoolOK(n); ok {
		return v, nil
	}
	what := n.GoString()
	if n.Kind == tree.String {
		what = fmt.Sprintf("%q", n.Str)
	}
	return false, fmt.Errorf("Input should be a valid boolean, unable to interpret input %s", what)
}

// LaxBoolOK reads n as pydantic's lax mode reads a bool: true and false,
// the integers and floats 0 and 1, and its yes/no words; ok is false for
// anything else.
func LaxBoolOK(n *tree.Node) (value, ok bool) {
	switch n.Kind {
	case tree.Bool:
		return n.Bool, true
	case tree.Int:
		if n.Int == 0 || n.Int == 1 {
			return n.Int == 1, true
		}
	case tree.Float:
		if n.Float == 0 || n.Float == 1 {
			return n.Float == 1, true
		}
	case tree.String:
		switch strings.ToLower(strings.TrimSpace(n.Str)) {
		case "1", "true", "t", "yes", "y", "on":
			return true, true
		case "0", "false", "f", "no", "n", "off":
			return false, true
		}
	}
	return false, false
}

// Truthy is Python truthiness of a resolved value, which is how NeMo Gym
// reads switches such as verbose, dry_run and use_absolute_ip.
func Truthy(n *tree.Node) bool {
	if n == nil {
		return false
	}
	switch n.Kind {
	case tree.Bool:
		return n.Bool
	case tree.Int:
		return n.Int != 0
	case tree.BigInt:
		return true // never zero
	case tree.Float:
		return n.Float != 0
	case tree.String:
		return n.Str != ""
	case tree.Map, tree.List:
		return n.Len() > 0
	}
	return false
}

// integerValue reads n as an integer of any size: an int, a bool, an
// integral float or a string of digits. ok is false for anything else.
func integerValue(n *tree.Node) (v *big.Int, ok bool) {
	switch n.Kind {
	case tree.Int, tree.BigInt:
		return n.BigValue(), true
	case tree.Bool:
		if n.Bool {
			return big.NewInt(1), true
		}
		return new(big.Int), true
	case tree.Float:
		if n.Float == math.Trunc(n.Float) && !math.IsInf(n.Float, 0) {
			return tree.FloatToInt(n.Float).BigValue(), true
		}
	case tree.String:
		var i big.Int
		if _, err := fmt.Sscan(strings.TrimSpace(n.Str), &i); err == nil {
			return &i, true
		}
	}
	return nil, false
}

// intValue is integerValue for values that fit in int64; see checkInt64
// for telling a larger one apart from a value that is no integer at all.
func intValue(n *tree.Node) (int64, bool) {
	v, ok := integerValue(n)
	if !ok || !v.IsInt64() {
		return 0, false
	}
	return v.Int64(), true
}

// checkInt64 refuses an integer too large for int64 where gym needs a
// machine number, such as a port, naming the key; intValue would read it
// as no value at all.
func checkInt64(n *tree.Node, at, what string) error {
	if n == nil {
		return nil
	}
	if v, ok := integerValue(n); ok && !v.IsInt64() {
		return errorf(ClassConfig, n.Origin, "%s must be %s, got %s", at, what, interp.PythonStr(n))
	}
	return nil
}

// normalizeDir applies the results_dir/cache_dir rule: a non-empty string,
// ~-expanded, absolute against the parent's cwd, symlinks resolved, so every
// child process agrees on it whatever its own cwd.
func normalizeDir(key string, v *tree.Node, cwd, home string) (string, error) {
	if v == nil || v.Kind != tree.String || v.Str == "" {
		got := "None"
		if v != nil {
			got = interp.PythonStr(v)
			if v.Kind == tree.String {
				got = interp.PythonRepr(tree.NewString(v.Str))
			}
		}
		return "", errorf(ClassConfig, originOf(v), "%s must be a non-empty path string, got %s. Set it with ++%s=/path/to/dir", key, got, key)
	}
	p := v.Str
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = home + p[1:]
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	return resolveExistingPrefix(filepath.Clean(p)), nil
}

// resolveExistingPrefix resolves symlinks in the longest existing prefix of
// p and keeps the rest, as Python's non-strict Path.resolve() does.
func resolveExistingPrefix(p string) string {
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

func originOf(n *tree.Node) tree.Origin {
	if n == nil {
		return tree.Origin{}
	}
	return n.Origin
}

// portAllocator picks free ports the way NeMo Gym does: uniformly at random
// in the configured range, never one already handed out or reserved, and
// only if a bind on all interfaces succeeds right now.
type portAllocator struct {
	low, high  int64
	disallowed []int64
	// explicit holds every port a later instance sets itself, so an earlier
	// instance is never given it (NeMo Gym only learns of them in turn).
	explicit map[int64]bool
	free     func(port int) bool
	randInt  func(n int64) int64
}

func (a *portAllocator) pick() (int64, error) {
	for range portAttempts {
		p := a.low + a.randInt(a.high-a.low+1)
		if a.isDisallowed(p) || !a.free(int(p)) {
			continue
		}
		a.disallowed = append(a.disallowed, p)
		return p, nil
	}
	return 0, errorf(ClassPort, tree.Origin{},
		"Unable to find an open port that doesn't conflict with disallowed ports %v after %d attempts. Widen ++port_range_low/++port_range_high or set ports explicitly",
		a.disallowed, portAttempts)
}

func (a *portAllocator) isDisallowed(p int64) bool {
	if a.explicit[p] {
		return true
	}
	for _, d := range a.disallowed {
		if d == p {
			return true
		}
	}
	return false
}

// userHome is used for ~ in results_dir/cache_dir when Env gives none.
func userHome() string {
	h, _ := os.UserHomeDir()
	return h
}

// fillDefaults runs steps 11–17 of the pipeline: default host, head port,
// port range, per-instance host/port and agent flags, head server,
// disallowed ports, runtime defaults and artifact dirs.
func (r *Result) fillDefaults(rv *resolver, offline bool) error {
	cfg, env := r.Config, r.env
	top := func(key string) (*tree.Node, error) {
		n := cfg.Get(key)
		if n == nil {
			return nil, nil
		}
		return rv.value(n, Path{{Key: key}})
	}

	setDefault(cfg, "use_absolute_ip", tree.NewBool(false))
	absIP, err := top("use_absolute_ip")
	if err != nil {
		return err
	}
	host := "127.0.0.1"
	if Truthy(absIP) && !offline {
		if host, err = env.MachineIP(); err != nil {
			return errorf(ClassConfig, originOf(cfg.Get("use_absolute_ip")), "%v", err)
		}
	} else if dh, err := top("default_host"); err != nil {
		return err
	} else if Truthy(dh) {
		host = interp.PythonStr(dh)
	}

	headPort := int64(defaultHeadPort)
	disallowed := []int64{headPort}
	if hs := cfg.Get("head_server"); hs != nil && hs.Kind == tree.Map && hs.Has("port") {
		p, err := rv.value(hs.Get("port"), Path{{Key: "head_server"}, {Key: "port"}})
		if err != nil {
			return err
		}
		if err := checkInt64(p, "head_server.port", portNumber); err != nil {
			return err
		}
		if p.Kind == tree.Null {
			disallowed = nil
		} else if headPort, _ = intValue(p); true {
			disallowed = []int64{headPort}
		}
	}

	setDefault(cfg, "port_range_low", tree.NewInt(defaultPortRangeLow))
	setDefault(cfg, "port_range_high", tree.NewInt(defaultPortRangeHigh))
	alloc := &portAllocator{disallowed: disallowed, free: env.PortFree, randInt: env.RandInt}
	for _, bound := range []struct {
		key string
		dst *int64
	}{{"port_range_low", &alloc.low}, {"port_range_high", &alloc.high}} {
		v, err := top(bound.key)
		if err != nil {
			return err
		}
		i, ok := intValue(v)
		if !ok || v.Kind == tree.Bool {
			return errorf(ClassConfig, v.Origin, "%s must be an integer port number, got %s", bound.key, interp.PythonStr(v))
		}
		*bound.dst = i
	}
	if alloc.low > alloc.high {
		return errorf(ClassConfig, cfg.Get("port_range_low").Origin, "port_range_low (%d) is above port_range_high (%d)", alloc.low, alloc.high)
	}
	r.portLow, r.portHigh = alloc.low, alloc.high

	alloc.explicit = map[int64]bool{}
	for _, in := range r.Instances {
		at := Path{{Key: in.Name}, {Key: in.Type}, {Key: in.Implementation}}
		p, err := fieldValue(rv, in.Config, at, "port")
		if err != nil {
			return err
		}
		if err := checkInt64(p, at.Key("port").String(), portNumber); err != nil {
			return err
		}
		if port, ok := intValue(orNull(p)); ok && port != 0 {
			alloc.explicit[port] = true
		}
	}

	skip := map[string]*tree.Node{}
	for _, key := range []string{"skip_verification", "skip_verification_reward"} {
		if v, err := top(key); err != nil {
			return err
		} else if v != nil && v.Kind != tree.Null {
			skip[key] = cfg.Get(key)
		}
	}
	for _, in := range r.Instances {
		at := Path{{Key: in.Name}, {Key: in.Type}, {Key: in.Implementation}}
		for _, f := range in.Config.Entries {
			if _, err := rv.value(f.Value, at.Key(f.Key)); err != nil {
				return err
			}
		}
		h, err := fieldValue(rv, in.Config, at, "host")
		if err != nil {
			return err
		}
		if h == nil || h.Kind == tree.Null || (h.Kind == tree.String && h.Str == "") {
			in.Config.Set("host", defaulted(tree.NewString(host)))
		}
		p, err := fieldValue(rv, in.Config, at, "port")
		if err != nil {
			return err
		}
		port, _ := intValue(orNull(p))
		switch {
		case p != nil && p.Kind != tree.Null && port != 0:
			alloc.disallowed = append(alloc.disallowed, port)
		case offline:
			in.Config.Set("port", defaulted(tree.NewInt(-1)))
		default:
			picked, err := alloc.pick()
			if err != nil {
				return err
			}
			in.Config.Set("port", defaulted(tree.NewInt(picked)))
		}
		if in.Type == AgentsType {
			for key, v := range skip {
				if !in.Config.Has(key) {
					in.Config.Set(key, v.Clone())
				}
			}
		}
	}

	// nemo-gym 0.7.0 fills the head server per key, so a config may pin
	// just one of host and port.
	switch hs := cfg.Get("head_server"); {
	case hs == nil || hs.Kind == tree.Null || (hs.Kind == tree.Map && hs.Len() == 0):
		m := tree.NewMap()
		m.Set("host", tree.NewString(host))
		m.Set("port", tree.NewInt(defaultHeadPort))
		cfg.Set("head_server", defaulted(m))
	case hs.Kind == tree.Map:
		setDefault(hs, "host", tree.NewString(host))
		setDefault(hs, "port", tree.NewInt(defaultHeadPort))
	}
	ports := tree.NewList()
	for _, p := range alloc.disallowed {
		ports.Items = append(ports.Items, tree.NewInt(p))
	}
	cfg.Set("disallowed_ports", defaulted(ports))

	setDefault(cfg, "allow_openai_version_skew", tree.NewBool(false))
	if v, err := top("allow_openai_version_skew"); err != nil {
		return err
	} else if v.Kind != tree.Bool {
		return errorf(ClassConfig, v.Origin, "allow_openai_version_skew must be a boolean (true/false), got %s.", interp.PythonRepr(v))
	}
	setDefault(cfg, "skip_venv_if_present", tree.NewBool(false))
	setDefault(cfg, "dry_run", tree.NewBool(false))
	// nemo-gym 0.7.0: how long servers get to come up, apart from the
	// model endpoints' own wait.
	setDefault(cfg, "server_spinup_timeout_seconds", tree.NewInt(600))
	setDefault(cfg, "model_endpoint_readiness_timeout_seconds", tree.NewInt(600))

	for _, dir := range []struct{ key, def string }{{"results_dir", "results"}, {"cache_dir", "cache"}} {
		key := dir.key
		setDefault(cfg, key, tree.NewString(dir.def))
		v, err := top(key)
		if err != nil {
			return err
		}
		dir, err := normalizeDir(key, v, env.Cwd, env.Home)
		if err != nil {
			return err
		}
		n := tree.NewString(dir)
		n.Origin = cfg.Get(key).Origin
		cfg.Set(key, n)
	}
	setDefault(cfg, "uv_cache_dir", tree.NewString(filepath.Join(cfg.Get("cache_dir").Str, "uv")))
	// nemo-gym 0.7.0: servers set up at once contend for uv's cache lock, so
	// the wait covers a cold install (uv's own default is 300 s); a decimal
	// UV_LOCK_TIMEOUT in the environment is the default, null exports none.
	lockTimeout := int64(1800)
	if v, ok := env.LookupEnv("UV_LOCK_TIMEOUT"); ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n >= 0 && strings.Trim(strings.TrimSpace(v), "0123456789") == "" {
			lockTimeout = n
		}
	}
	setDefault(cfg, "uv_lock_timeout_seconds", tree.NewInt(lockTimeout))
	setDefault(cfg, "uv_venv_dir", tree.NewString(env.Cwd))
	return nil
}

func fieldValue(rv *resolver, m *tree.Node, at Path, key string) (*tree.Node, error) {
	n := m.Get(key)
	if n == nil {
		return nil, nil
	}
	return rv.value(n, at.Key(key))
}

func orNull(n *tree.Node) *tree.Node {
	if n == nil {
		return tree.NewNull()
	}
	return n
}
