package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// How a server's process is run.
type runKind int

const (
	runPython     runKind = iota // <entrypoint>.py with uv's venv or python3
	runExecutable                // the entrypoint file itself
	runGo                        // this binary's hidden `gym serve`
)

func (k runKind) String() string {
	switch k {
	case runPython:
		return "python"
	case runExecutable:
		return "executable"
	}
	return "go"
}

// ChildSpec is everything needed to start one server instance.
type ChildSpec struct {
	Instance       string
	ServerType     string
	Implementation string
	Entrypoint     string
	Dir            string // component directory, the child's cwd ("" for a Go server with no directory)
	Host           string
	Port           int
	// Note says why a server runs as it does when that is not the
	// default rule (builtin_servers: prefer); "" otherwise.
	Note string
	kind runKind
}

// Kind is "<server type>/<implementation>", the registry key.
func (s ChildSpec) Kind() string { return s.ServerType + "/" + s.Implementation }

// URL is where the server answers.
func (s ChildSpec) URL() string { return "http://" + dialHost(s.Host) + ":" + strconv.Itoa(s.Port) }

// dialHost turns a bind-all address into one a client can connect to.
func dialHost(h string) string {
	switch h {
	case "", "0.0.0.0", "::":
		return "127.0.0.1"
	}
	return h
}

// PlanError is a server that cannot be started; nothing was started.
type PlanError struct{ Msg string }

func (e *PlanError) Error() string { return e.Msg }

// BuiltinServersKey chooses between a Go built-in and a Python server of
// the same kind: BuiltinShadow (the default) keeps NeMo Gym's rule that the
// earliest search root holding the component wins; BuiltinPrefer runs the
// built-in even where a Python component shadows it, unless the section
// sets a key the built-in does not read.
const (
	BuiltinServersKey = "builtin_servers"
	BuiltinShadow     = "shadow"
	BuiltinPrefer     = "prefer"
)

// planAndSay plans opts' servers as Start and Prefetch run them, and
// prints why each server the builtin_servers policy decided on runs as it
// does.
func planAndSay(opts Options) ([]ChildSpec, error) {
	specs, err := plan(opts.Result, opts.Roots, opts.Result.LookupEnv, opts.Builtin, opts.RegisteredKinds)
	if err != nil {
		return nil, err
	}
	for _, spec := range specs {
		if spec.Note != "" {
			fmt.Fprintln(opts.Out, spec.Note)
		}
	}
	return specs, nil
}

// Builtin reports whether a Go implementation is registered as kind and
// which keys of a server section it would not read (server.UnknownConfigKeys).
type Builtin func(kind string, section *tree.Node) (unknown []string, registered bool)

// plan decides, for every valid server instance, how to run it (DESIGN.md
// "Child process"): an entrypoint file in the resolved component directory
// runs as Python (.py) or directly (executable); otherwise a Go
// implementation registered under <server_type>/<implementation> runs via
// `gym serve`; otherwise it is an error listing what was tried. With
// builtin_servers: prefer, a registered Go implementation that reads every
// key of the section runs in place of a Python entrypoint.
func plan(res *config.Result, roots *resolve.Roots, lookupEnv func(string) (string, bool), builtin Builtin, registeredKinds []string) ([]ChildSpec, error) {
	prefer, err := preferBuiltins(res)
	if err != nil {
		return nil, err
	}
	var specs []ChildSpec
	for _, in := range res.Instances {
		section, _, _, err := config.InstanceSection(res.Config, in.Name, lookupEnv)
		if err != nil {
			return nil, err
		}
		port, err := strconv.Atoi(scalarText(section.Get("port")))
		if err != nil || port <= 0 || port > 65535 {
			return nil, &PlanError{fmt.Sprintf("server '%s' has port %q, which is not a TCP port; set ++%s.%s.%s.port=<1-65535> or leave it unset",
				in.Name, scalarText(section.Get("port")), in.Name, in.Type, in.Implementation)}
		}
		spec, err := planServer(in, section, roots, builtin, registeredKinds, prefer)
		if err != nil {
			return nil, err
		}
		spec.Port = port
		specs = append(specs, spec)
	}
	return specs, nil
}

// policyModel is the instance the model flags configure.
const policyModel = "policy_model"

// PythonServers lists the servers of res, but the policy model (the
// user's choice), that need Python even under builtin_servers: prefer,
// each as its plan note says. A server that cannot be planned at all is
// the error.
func PythonServers(res *config.Result, roots *resolve.Roots, builtin Builtin, registeredKinds []string) ([]string, error) {
	var python []string
	for _, in := range res.Instances {
		if in.Name == policyModel {
			continue
		}
		section, _, _, err := config.InstanceSection(res.Config, in.Name, res.LookupEnv)
		if err != nil {
			return nil, err
		}
		spec, err := planServer(in, section, roots, builtin, registeredKinds, true)
		switch {
		case err != nil:
			return nil, err
		case spec.kind == runPython && spec.Note != "":
			python = append(python, spec.Note)
		case spec.kind == runPython:
			python = append(python, fmt.Sprintf("server '%s' runs %s with Python: gym has no built-in %s", in.Name, filepath.Join(spec.Dir, spec.Entrypoint), spec.Kind()))
		}
	}
	return python, nil
}

// planServer decides how one server instance, its resolved section given,
// runs; the caller checks its port.
func planServer(in *config.Instance, section *tree.Node, roots *resolve.Roots, builtin Builtin, registeredKinds []string, prefer bool) (ChildSpec, error) {
	spec := ChildSpec{Instance: in.Name, ServerType: in.Type, Implementation: in.Implementation}
	spec.Entrypoint = stringField(section, "entrypoint")
	spec.Host = stringField(section, "host")
	if filepath.IsAbs(spec.Entrypoint) || strings.Contains(spec.Entrypoint, "..") {
		return spec, &PlanError{fmt.Sprintf("server '%s' has entrypoint %q; it must be a path relative to %s", in.Name, spec.Entrypoint, spec.Kind())}
	}
	rel := filepath.Join(in.Type, in.Implementation)
	dir := roots.ResolveFunc(rel, func(d string) bool { return isComponentDir(d, spec.Entrypoint) })
	found := isComponentDir(dir, spec.Entrypoint)
	entry := filepath.Join(dir, spec.Entrypoint)
	info, statErr := os.Stat(entry)
	unknown, registered := builtin(spec.Kind(), section)
	switch {
	case found && statErr == nil && !info.IsDir() && strings.HasSuffix(spec.Entrypoint, ".py"):
		spec.kind, spec.Dir = runPython, dir
		if prefer && registered {
			if len(unknown) == 0 {
				spec.kind = runGo
				spec.Note = fmt.Sprintf("server '%s' runs gym's built-in %s in place of %s (%s: %s)", in.Name, spec.Kind(), entry, BuiltinServersKey, BuiltinPrefer)
			} else {
				spec.Note = fmt.Sprintf("server '%s' runs %s with Python: gym's built-in %s does not read its %s (%s: %s)", in.Name, entry, spec.Kind(), quotedKeys(unknown), BuiltinServersKey, BuiltinPrefer)
			}
		}
	case found && statErr == nil && !info.IsDir() && info.Mode()&0o111 != 0:
		spec.kind, spec.Dir = runExecutable, dir
	case found && statErr == nil && !info.IsDir():
		return spec, &PlanError{fmt.Sprintf("server '%s': %s exists but is neither a .py file nor executable; make it executable (chmod +x) or point entrypoint at a Python file", in.Name, entry)}
	case registered:
		spec.kind = runGo
		if found {
			spec.Dir = dir
		}
	default:
		var looked []string
		for _, c := range roots.Candidates(filepath.Join(rel, spec.Entrypoint)) {
			looked = append(looked, "  - "+c)
		}
		kinds := append([]string(nil), registeredKinds...)
		sort.Strings(kinds)
		builtIn := strings.Join(kinds, ", ")
		if builtIn == "" {
			builtIn = "none"
		}
		return spec, &PlanError{fmt.Sprintf(
			"cannot start server '%s': its entrypoint %s was not found and no Go implementation is registered as %s.\nLooked for the entrypoint in:\n%s\nGo implementations built into gym: %s.%s",
			in.Name, spec.Entrypoint, spec.Kind(), strings.Join(looked, "\n"), builtIn,
			resolve.DidYouMean(spec.Kind(), kinds))}
	}
	return spec, nil
}

// preferBuiltins reads builtin_servers: shadow (or unset) or prefer.
func preferBuiltins(res *config.Result) (bool, error) {
	v, err := res.Value(BuiltinServersKey)
	if err != nil {
		return false, err
	}
	switch {
	case v == nil || v.Kind == tree.Null:
		return false, nil
	case v.Kind == tree.String && v.Str == BuiltinShadow:
		return false, nil
	case v.Kind == tree.String && v.Str == BuiltinPrefer:
		return true, nil
	}
	return false, &PlanError{fmt.Sprintf("%s is %s; it must be %s (the earliest search root's server runs, as in NeMo Gym) or %s (gym's Go built-in runs where it reads every key of the server's config)",
		BuiltinServersKey, v.GoString(), BuiltinShadow, BuiltinPrefer)}
}

// quotedKeys names config keys in a message: key 'a', keys 'a', 'b'.
func quotedKeys(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = "'" + k + "'"
	}
	if len(q) == 1 {
		return "key " + q[0]
	}
	return "keys " + strings.Join(q, ", ")
}

// isComponentDir reports whether dir holds a server: its entrypoint file, or
// NeMo Gym's markers requirements.txt / pyproject.toml.
func isComponentDir(dir, entrypoint string) bool {
	for _, name := range []string{entrypoint, "requirements.txt", "pyproject.toml"} {
		if name == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

func stringField(m *tree.Node, key string) string {
	if v := m.Get(key); v != nil && v.Kind == tree.String {
		return v.Str
	}
	return ""
}

// scalarText renders a (resolved) scalar for messages and numbers.
func scalarText(n *tree.Node) string {
	if n == nil {
		return ""
	}
	switch n.Kind {
	case tree.String:
		return n.Str
	case tree.Int:
		return strconv.FormatInt(n.Int, 10)
	case tree.Float:
		return strconv.FormatFloat(n.Float, 'f', -1, 64)
	case tree.Bool:
		return strconv.FormatBool(n.Bool)
	}
	return n.GoString()
}
