package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/nemo-gym-go/gym/internal/python"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// TestComponentOptions say which component's own tests to run and how.
type TestComponentOptions struct {
	// Component is "<server_type>/<name>", e.g. resources_servers/mcqa.
	Component string
	Roots     *resolve.Roots
	LookPath  func(string) (string, error)
	Environ   []string
	// VenvRoot is where the component's venv goes (<root>/<type>/<impl>/.venv):
	// the working directory, gym env start's default uv_venv_dir.
	VenvRoot string
	Out, Err io.Writer
}

// TestFailedError is a component whose tests ran and failed.
type TestFailedError struct {
	Component string
	Err       error
}

func (e *TestFailedError) Error() string {
	return fmt.Sprintf("%s: tests failed: %v", e.Component, e.Err)
}

// BuiltinGoError is a Go component built into gym: its tests are gym's
// own (go test in a gym checkout), not runnable from the install tree.
type BuiltinGoError struct{ Component, Dir string }

func (e *BuiltinGoError) Error() string {
	return fmt.Sprintf("%s is a Go component built into gym (%s has no go.mod above it); its tests run with gym's own test suite: go test ./%s in a gym checkout", e.Component, e.Dir, e.Component)
}

// TestComponent runs a component's own tests from whichever root it
// resolves in: `go test` for a Go component inside a Go module, pytest for
// a Python one, in its venv (set up first when uv is on PATH).
func TestComponent(ctx context.Context, o TestComponentOptions) error {
	dir := o.Roots.ResolveFunc(o.Component, isDir)
	if !isDir(dir) {
		var looked []string
		for _, c := range o.Roots.Candidates(o.Component) {
			looked = append(looked, "  - "+c)
		}
		return fmt.Errorf("component %s was not found. Looked in:\n%s", o.Component, strings.Join(looked, "\n"))
	}
	var argv []string
	switch {
	case hasGoFiles(dir):
		module := moduleRoot(dir)
		if module == "" {
			return &BuiltinGoError{Component: o.Component, Dir: dir}
		}
		goBin, err := o.LookPath("go")
		if err != nil {
			return fmt.Errorf("%s is a Go component but go is not on PATH", o.Component)
		}
		argv = []string{goBin, "test", "./..."}
	case isPythonComponent(dir):
		settings := python.Defaults(o.VenvRoot, o.Environ, o.LookPath)
		venv := settings.VenvFor(dir)
		// As NeMo Gym's env test does, the venv is set up first, every
		// time, so changed requirements are installed.
		if _, err := settings.UV(); err == nil {
			if err := settings.ResolvePython(ctx); err != nil {
				return err
			}
			emit := func(line string) { fmt.Fprintln(o.Out, line) }
			if _, err := settings.Ensure(ctx, dir, emit); err != nil {
				return fmt.Errorf("%s: %w", o.Component, err)
			}
		}
		interpreter, env := venv.Python(), venv.Activate(o.Environ)
		if !fileExists(interpreter) {
			if interpreter, env = python.System(o.LookPath), o.Environ; interpreter == "" {
				return fmt.Errorf("%s is a Python component but neither uv (to build its venv %s) nor python3 is on PATH; install uv (pip install uv)", o.Component, venv.Dir)
			}
		}
		fmt.Fprintf(o.Out, "Testing %s in %s: %s -m pytest\n", o.Component, dir, interpreter)
		var exit *python.ExitError
		if err := python.Pytest(ctx, interpreter, dir, env, o.Out, o.Err); errors.As(err, &exit) {
			return &TestFailedError{Component: o.Component, Err: exit.Err}
		} else if err != nil {
			return fmt.Errorf("%s: %w", o.Component, err)
		}
		return nil
	default:
		return fmt.Errorf("%s (%s) has neither Go files nor requirements.txt / pyproject.toml, so gym does not know how to test it", o.Component, dir)
	}
	fmt.Fprintf(o.Out, "Testing %s in %s: %s\n", o.Component, dir, strings.Join(argv[1:], " "))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, o.Environ, o.Out, o.Err
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return &TestFailedError{Component: o.Component, Err: err}
		}
		return err
	}
	return nil
}

func isDir(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.IsDir()
}

func hasGoFiles(dir string) bool {
	matches, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	return len(matches) > 0
}

func isPythonComponent(dir string) bool {
	return fileExists(filepath.Join(dir, "requirements.txt")) || fileExists(filepath.Join(dir, "pyproject.toml")) ||
		fileExists(filepath.Join(dir, "app.py"))
}

// moduleRoot is the nearest directory at or above dir holding a go.mod.
func moduleRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if fileExists(filepath.Join(d, "go.mod")) {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
