package launcher

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// pythonEnv decides how a Python server runs: in a per-server uv venv when
// uv is on PATH (created and filled from requirements.txt or pyproject.toml,
// as NeMo Gym does), else with python3 from PATH.
type pythonEnv struct {
	lookPath   func(string) (string, error)
	venvRoot   string // uv_venv_dir
	skipIfSet  bool   // skip_venv_if_present
	verbosePip bool   // pip_install_verbose
	extraEnv   []string
}

func newPythonEnv(cfg *tree.Node, lookPath func(string) (string, error), env []string) pythonEnv {
	return pythonEnv{
		lookPath:   lookPath,
		venvRoot:   stringField(cfg, "uv_venv_dir"),
		skipIfSet:  boolField(cfg, "skip_venv_if_present"),
		verbosePip: boolField(cfg, "pip_install_verbose"),
		extraEnv:   env,
	}
}

func boolField(m *tree.Node, key string) bool {
	v := m.Get(key)
	return v != nil && v.Kind == tree.Bool && v.Bool
}

// venvDir is where a component's venv lives: <uv_venv_dir>/<type>/<impl>/.venv.
func (p pythonEnv) venvDir(spec ChildSpec) string {
	return filepath.Join(p.venvRoot, spec.ServerType, spec.Implementation, ".venv")
}

// interpreter sets up (if needed) and returns the Python that runs spec.
// Setup output goes through emit so it is prefixed like the server's own.
func (p pythonEnv) interpreter(ctx context.Context, spec ChildSpec, emit func(string)) (string, error) {
	uv, err := p.lookPath("uv")
	if err != nil {
		py, err := p.lookPath("python3")
		if err != nil {
			return "", fmt.Errorf("server '%s' has a Python entrypoint (%s) but neither uv nor python3 is on PATH; install uv (recommended) or Python 3", spec.Instance, spec.Entrypoint)
		}
		return py, nil
	}
	venv := p.venvDir(spec)
	python := filepath.Join(venv, "bin", "python")
	if p.skipIfSet && fileExists(python) && fileExists(filepath.Join(venv, "bin", "activate")) {
		return python, nil
	}
	steps := [][]string{{uv, "venv", "--seed", "--allow-existing", venv}}
	install := []string{uv, "pip", "install", "--python", python}
	if p.verbosePip {
		install = append(install, "-v")
	}
	req, proj := fileExists(filepath.Join(spec.Dir, "requirements.txt")), fileExists(filepath.Join(spec.Dir, "pyproject.toml"))
	switch {
	case req && proj:
		return "", fmt.Errorf("server '%s': %s has both requirements.txt and pyproject.toml; keep one so gym knows what to install", spec.Instance, spec.Dir)
	case req:
		steps = append(steps, append(install, "-r", "requirements.txt"))
	case proj:
		steps = append(steps, append(install, "-e", "."))
	}
	for _, argv := range steps {
		if err := runSetup(ctx, argv, spec.Dir, p.extraEnv, emit); err != nil {
			return "", fmt.Errorf("server '%s': setting up its Python environment failed: %s: %w", spec.Instance, argv[1]+" "+argv[2], err)
		}
	}
	return python, nil
}

// runSetup runs one setup command, its output line by line through emit.
func runSetup(ctx context.Context, argv []string, dir string, env []string, emit func(string)) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	for _, line := range splitLines(string(out)) {
		emit(line)
	}
	return err
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
