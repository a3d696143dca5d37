package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/iostreams"
)

// gymModule is the module path a gym checkout's go.mod declares.
const gymModule = "github.com/nemo-gym-go/gym"

func newCmdDev(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Contributor helpers",
		Example: `  git clone <gym's repository> gym && cd gym
  gym dev test`,
	}
	cmd.AddCommand(newCmdDevTest(f, nil))
	makeGroup(cmd)
	return cmd
}

// devTestOptions are the inputs of `gym dev test`.
type devTestOptions struct {
	IO *iostreams.IOStreams
	ws *workspace
}

func newCmdDevTest(f *Factory, runF func(context.Context, *devTestOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDevTest
	}
	opts := &devTestOptions{IO: f.IOStreams, ws: f.Workspace}
	return &cobra.Command{
		Use:   "test",
		Short: "Run gym's own tests with coverage (go test -cover ./...) in the checkout you are in",
		Long: `NeMo Gym's dev test runs its unit tests with coverage in its checkout; gym's
runs go test -cover ./... at the root of the gym checkout that holds the
working directory, and exits with its status.`,
		Example: `  cd ~/src/gym/internal/config && gym dev test`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runF(cmd.Context(), opts)
		},
	}
}

func runDevTest(ctx context.Context, opts *devTestOptions) error {
	cwd, err := opts.ws.Getwd()
	if err != nil {
		return err
	}
	root, err := checkoutRoot(cwd)
	if err != nil {
		return err
	}
	goTool, err := opts.ws.LookPath("go")
	if err != nil {
		return errors.New("gym dev test runs the Go toolchain, and go is not on PATH")
	}
	c := exec.CommandContext(ctx, goTool, "test", "-cover", "./...")
	c.Dir, c.Stdout, c.Stderr = root, opts.IO.Out, opts.IO.ErrOut
	c.Env = opts.ws.Environ()
	if err := c.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("go test -cover ./... in %s failed (%v)", root, exit)
		}
		return err
	}
	return nil
}

// checkoutRoot is the nearest directory at or above dir whose go.mod
// declares gym's module.
func checkoutRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if module, ok := goModModule(filepath.Join(d, "go.mod")); ok {
			if module == gymModule {
				return d, nil
			}
			return "", fmt.Errorf("%s is in the Go module %s, not in a gym checkout (module %s): gym dev test runs gym's own tests", dir, module, gymModule)
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%s is not in a gym checkout (no go.mod declaring module %s above it): gym dev test runs gym's own tests", dir, gymModule)
		}
	}
}

// goModModule is the module path a go.mod file declares.
func goModModule(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`), true
		}
	}
	return "", true
}
