package python

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
)

// NoVenvError is a server whose venv has not been made yet.
type NoVenvError struct {
	Component string
	Looked    []string
}

func (e *NoVenvError) Error() string {
	msg := fmt.Sprintf("%s has no virtual environment yet (looked in", e.Component)
	for i, l := range e.Looked {
		if i > 0 {
			msg += ","
		}
		msg += " " + l
	}
	name := filepath.Base(e.Component)
	return msg + "); set it up with gym env prefetch --resources-server " + name + " --model-type <model type> (or gym env test --resources-server " + name + ")"
}

// PipListOptions say how to list a venv's packages.
type PipListOptions struct {
	// Format is pip's --format (columns, freeze, json); "" is pip's default.
	Format   string
	Outdated bool
	Environ  []string
	LookPath func(string) (string, error)
	Out, Err io.Writer
}

// PipList prints the packages of venv as NeMo Gym's `gym env packages`
// does: `uv pip list` with the venv active, in dir; without uv on PATH,
// the venv's own `python -m pip list`.
func PipList(ctx context.Context, venv Venv, dir string, o PipListOptions) error {
	var args []string
	if o.Format != "" {
		args = append(args, "--format="+o.Format)
	}
	if o.Outdated {
		args = append(args, "--outdated")
	}
	var cmd *exec.Cmd
	if uv, err := o.LookPath("uv"); err == nil {
		cmd = exec.CommandContext(ctx, uv, append([]string{"pip", "list", "--python", venv.Python()}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, venv.Python(), append([]string{"-m", "pip", "list"}, args...)...)
	}
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, venv.Activate(o.Environ), o.Out, o.Err
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return &ExitError{What: "pip list in " + venv.Dir, Err: exit}
		}
		return err
	}
	return nil
}
