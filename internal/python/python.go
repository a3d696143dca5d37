// Package python is everything gym does for Python: per-server uv venvs
// made the way NeMo Gym's nemo_gym/cli/setup_command.py makes them (the
// python_version, the head_server_deps pins, overrides.txt, nemo-gym from
// the checkout or from the index), the one Ray head a run shares, a
// component's pytest run, and a benchmark's prepare.py. gym never imports
// NeMo Gym's code; it runs the same commands NeMo Gym runs.
package python

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// The versions gym is made for: the nemo-gym release installed into server
// venvs outside a NeMo Gym checkout, and the pins NeMo Gym would take from
// its own process (ray[default] exactly, and openai at nemo-gym 0.7.0's own
// pin), so every venv and the Ray head agree.
const (
	NemoGymVersion = "0.7.0"
	RayVersion     = "2.60.0"
	OpenAIVersion  = "2.44.0"
	// PythonFloor is nemo-gym 0.7.0's Requires-Python.
	PythonFloor = "3.13.14"
)

// DefaultDeps is head_server_deps when the config does not set it.
func DefaultDeps() []string {
	return []string{"ray[default]==" + RayVersion, "openai==" + OpenAIVersion}
}

// Settings are the config keys NeMo Gym's venv setup reads, with their
// meaning kept.
type Settings struct {
	VenvRoot       string   // uv_venv_dir
	CacheDir       string   // uv_cache_dir
	LockTimeout    string   // uv_lock_timeout_seconds, passed to uv as UV_LOCK_TIMEOUT
	PythonVersion  string   // python_version; "" until ResolvePython picks one
	Deps           []string // head_server_deps
	SkipIfPresent  bool     // skip_venv_if_present
	SetPython      bool     // uv_pip_set_python
	Verbose        bool     // pip_install_verbose
	NemoGymVersion string   // nemo_gym_version (gym's own key)
	Environ        []string
	LookPath       func(string) (string, error)
}

// Defaults are the settings of a config that sets none of them: venvs
// under venvRoot, gym's pins, uv's own cache.
func Defaults(venvRoot string, environ []string, lookPath func(string) (string, error)) Settings {
	return Settings{VenvRoot: venvRoot, Deps: DefaultDeps(), NemoGymVersion: NemoGymVersion, Environ: environ, LookPath: lookPath}
}

// FromConfig reads the settings from a config through value, which
// resolves a top-level key (nil when absent); cwd anchors a relative
// uv_venv_dir as NeMo Gym's Path.absolute() does.
func FromConfig(value func(key string) (*tree.Node, error), cwd string, environ []string, lookPath func(string) (string, error)) (Settings, error) {
	s := Defaults(cwd, environ, lookPath)
	get := map[string]*tree.Node{}
	for _, key := range []string{"uv_venv_dir", "uv_cache_dir", "uv_lock_timeout_seconds", "python_version", "head_server_deps",
		"skip_venv_if_present", "uv_pip_set_python", "pip_install_verbose", "nemo_gym_version"} {
		v, err := value(key)
		if err != nil {
			return s, err
		}
		if v != nil && v.Kind != tree.Null {
			get[key] = v
		}
	}
	text := func(key string) string {
		if v := get[key]; v != nil && v.Kind == tree.String {
			return v.Str
		}
		return ""
	}
	s.CacheDir = text("uv_cache_dir")
	s.SkipIfPresent = config.Truthy(get["skip_venv_if_present"])
	s.SetPython = config.Truthy(get["uv_pip_set_python"])
	s.Verbose = config.Truthy(get["pip_install_verbose"])
	if v := text("uv_venv_dir"); filepath.IsAbs(v) {
		s.VenvRoot = v
	} else if v != "" {
		s.VenvRoot = filepath.Join(cwd, v)
	}
	if v := get["uv_lock_timeout_seconds"]; v != nil {
		s.LockTimeout = interp.PythonStr(v)
	}
	if v := get["nemo_gym_version"]; v != nil {
		if v.Kind != tree.String || v.Str == "" {
			return s, fmt.Errorf("nemo_gym_version must be a version string such as %q, got %s", NemoGymVersion, interp.PythonRepr(v))
		}
		s.NemoGymVersion = v.Str
	}
	if v := get["python_version"]; v != nil {
		// OmegaConf keeps 3.13 as a float; uv wants the text.
		s.PythonVersion = interp.PythonStr(v)
	}
	if deps := get["head_server_deps"]; deps != nil {
		if deps.Kind != tree.List {
			return s, fmt.Errorf("head_server_deps must be a list of requirement strings such as [%q], got %s", DefaultDeps()[0], interp.PythonRepr(deps))
		}
		s.Deps = nil
		for i, d := range deps.Items {
			if d.Kind != tree.String || strings.TrimSpace(d.Str) == "" {
				return s, fmt.Errorf("head_server_deps[%d] must be a requirement string such as %q, got %s", i, DefaultDeps()[0], interp.PythonRepr(d))
			}
			s.Deps = append(s.Deps, d.Str)
		}
	}
	return s, nil
}

// Publish writes what the venvs were made with into the config the
// children receive, as NeMo Gym's parser does: python_version and
// head_server_deps.
func (s Settings) Publish(cfg *tree.Node) {
	if s.PythonVersion != "" {
		cfg.Set("python_version", tree.NewString(s.PythonVersion))
	}
	deps := tree.NewList()
	for _, d := range s.Deps {
		deps.Items = append(deps.Items, tree.NewString(d))
	}
	cfg.Set("head_server_deps", deps)
}

// UV is the uv binary, or an error saying how to get it.
func (s Settings) UV() (string, error) {
	uv, err := s.LookPath("uv")
	if err != nil {
		return "", fmt.Errorf("uv is not on PATH; gym builds Python server venvs with uv as NeMo Gym does: install it with `pip install uv` or from https://docs.astral.sh/uv/")
	}
	return uv, nil
}

// ResolvePython fixes python_version when the config leaves it unset, so
// every venv of the run and the Ray head use one interpreter (Ray needs
// them to match): the first Python uv finds that nemo-gym can run on
// (>= PythonFloor), else uv's default Python.
func (s *Settings) ResolvePython(ctx context.Context) error {
	if s.PythonVersion != "" {
		return nil
	}
	uv, err := s.UV()
	if err != nil {
		return err
	}
	var found string
	for _, request := range []string{">=" + PythonFloor, ""} {
		argv := []string{"python", "find", "--no-project"}
		if request != "" {
			argv = append(argv, request)
		}
		cmd := exec.CommandContext(ctx, uv, argv...)
		cmd.Env = s.Environ
		if out, err := cmd.Output(); err == nil {
			found = strings.TrimSpace(string(out))
			break
		}
	}
	if found == "" {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &NoPythonError{}
	}
	cmd := exec.CommandContext(ctx, found, "-c", "import platform; print(platform.python_version())")
	cmd.Env = s.Environ
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("uv found Python at %s, but it does not run: %w", found, err)
	}
	s.PythonVersion = strings.TrimSpace(string(out))
	return nil
}

// NoPythonError is a machine where uv finds no Python at all.
type NoPythonError struct{}

func (*NoPythonError) Error() string {
	return "uv finds no Python interpreter for the Python servers. NeMo Gym " + NemoGymVersion + " needs Python >= " + PythonFloor +
		": install Python 3.13 (`uv python install 3.13`, or your system's packages, e.g. `apt install python3.13`), or name an installed one with ++python_version=<version>"
}
