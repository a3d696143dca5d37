package python

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// System is python3 (or python) from PATH, for work that has no venv of
// its own; "" when there is none.
func System(lookPath func(string) (string, error)) string {
	for _, name := range []string{"python3", "python"} {
		if path, err := lookPath(name); err == nil {
			return path
		}
	}
	return ""
}

// ExitError is Python code that ran and failed.
type ExitError struct {
	What string
	Err  *exec.ExitError
}

func (e *ExitError) Error() string { return fmt.Sprintf("%s failed: %v", e.What, e.Err) }

// Pytest runs a component's own tests in dir with interpreter, its output
// going to out and errOut. As in NeMo Gym's env test, the component and
// the root it sits in (two levels up) lead PYTHONPATH, so both `import app`
// and `resources_servers.<name>.app` imports work.
func Pytest(ctx context.Context, interpreter, dir string, environ []string, out, errOut io.Writer) error {
	if err := exec.CommandContext(ctx, interpreter, "-c", "import pytest").Run(); err != nil {
		return fmt.Errorf("pytest is not installed for %s; add pytest to the component's requirements (NeMo Gym's `nemo-gym[dev]` has it) and run gym env prefetch, or pip install pytest", interpreter)
	}
	cmd := exec.CommandContext(ctx, interpreter, "-m", "pytest")
	contain(cmd)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, withPythonPath(environ, dir, filepath.Dir(filepath.Dir(dir))), out, errOut
	return classify("pytest in "+dir, cmd.Run())
}

// PrepareRequest is one benchmark's prepare.py run.
type PrepareRequest struct {
	Interpreter string
	Root        string // the search root the script is relative to
	Script      string // relative to Root, e.g. benchmarks/gsm8k/prepare.py
	ArgsJSON    []byte // prepare(**args)
	Environ     []string
	Out         io.Writer
}

// prepareProgram imports a benchmark's prepare module as NeMo Gym does (the
// path's parts joined by dots, from its root, with NEMO_GYM_EXTRA_ROOTS on
// sys.path) and calls prepare(**args); the returned path goes to the file
// named by GYM_PREPARE_RESULT.
const prepareProgram = `import importlib, json, os, sys
root = os.getcwd()
sys.path[:0] = [root] + [p for p in os.environ.get("NEMO_GYM_EXTRA_ROOTS", "").split(":") if p]
mod = importlib.import_module(sys.argv[1])
if not hasattr(mod, "prepare"):
    sys.exit("%s defines no prepare() function" % sys.argv[1])
path = mod.prepare(**json.loads(sys.argv[2]))
with open(os.environ["GYM_PREPARE_RESULT"], "w") as f:
    f.write(os.path.abspath(str(path)))
`

// Prepare runs a benchmark's prepare() and returns the absolute path it
// says it wrote.
func Prepare(ctx context.Context, r PrepareRequest) (string, error) {
	module := strings.ReplaceAll(strings.TrimSuffix(filepath.ToSlash(r.Script), ".py"), "/", ".")
	result, err := os.CreateTemp("", "gym-prepare-*")
	if err != nil {
		return "", err
	}
	result.Close()
	defer os.Remove(result.Name())
	cmd := exec.CommandContext(ctx, r.Interpreter, "-c", prepareProgram, module, string(r.ArgsJSON))
	contain(cmd)
	cmd.Dir = r.Root
	cmd.Env = append(r.Environ, "GYM_PREPARE_RESULT="+result.Name())
	cmd.Stdout, cmd.Stderr = r.Out, r.Out
	if err := classify(r.Script, cmd.Run()); err != nil {
		return "", err
	}
	got, err := os.ReadFile(result.Name())
	if err != nil {
		return "", err
	}
	return string(got), nil
}

func classify(what string, err error) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return &ExitError{What: what, Err: exit}
	}
	return err
}

// withPythonPath puts dirs in front of environ's PYTHONPATH.
func withPythonPath(environ []string, dirs ...string) []string {
	out := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if rest, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok {
			if rest != "" {
				dirs = append(dirs, rest)
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PYTHONPATH="+strings.Join(dirs, string(os.PathListSeparator)))
}
