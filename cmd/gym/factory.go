package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"

	"github.com/mattn/go-isatty"

	"github.com/nemo-gym-go/gym"
	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// IOStreams are the streams a command talks through, injected so commands
// are testable without a terminal.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Factory hands commands what they need from the process.
type Factory struct {
	IO         IOStreams
	Getenv     func(string) string
	LookupEnv  func(string) (string, bool)
	Environ    func() []string
	Getwd      func() (string, error)
	Executable func() (string, error)
	LookPath   func(string) (string, error)
	// OutIsTerminal says whether IO.Out is a terminal, for colour and
	// live progress.
	OutIsTerminal bool
	// ErrIsTerminal says whether IO.ErrOut is a terminal, for the live
	// progress bar.
	ErrIsTerminal bool
	Version       string
}

func newFactory() *Factory {
	return &Factory{
		IO:            IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		Getenv:        os.Getenv,
		LookupEnv:     os.LookupEnv,
		Environ:       os.Environ,
		Getwd:         os.Getwd,
		Executable:    os.Executable,
		LookPath:      exec.LookPath,
		OutIsTerminal: isatty.IsTerminal(os.Stdout.Fd()),
		ErrIsTerminal: isatty.IsTerminal(os.Stderr.Fd()),
		Version:       version(),
	}
}

func version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

// installRootEnv overrides where the built-in components live; a gym
// developer points it at a checkout to work on them without rebuilding.
const installRootEnv = "GYM_INSTALL_ROOT"

// installRoot is the directory of the built-in component tree.
func (f *Factory) installRoot() (string, error) {
	if dir := f.Getenv(installRootEnv); dir != "" {
		return dir, nil
	}
	return resolve.Materialize(gym.Builtin, resolve.DefaultCacheDir(f.Getenv))
}

// extraRoots is NEMO_GYM_EXTRA_ROOTS for this command: --search-dir
// directories first, then the inherited value.
func (f *Factory) extraRoots(searchDirs []string) string {
	return resolve.WithSearchDirs(searchDirs, f.Getenv("NEMO_GYM_EXTRA_ROOTS"))
}

// commandRoots are where this command finds things.
type commandRoots struct {
	*resolve.Roots
	cwd, install, extra string
}

// roots builds the search roots for this command.
func (f *Factory) roots(searchDirs []string) (commandRoots, error) {
	cwd, err := f.Getwd()
	if err != nil {
		return commandRoots{}, err
	}
	install, err := f.installRoot()
	if err != nil {
		return commandRoots{}, err
	}
	extra := f.extraRoots(searchDirs)
	return commandRoots{Roots: resolve.NewRoots(extra, cwd, install), cwd: cwd, install: install, extra: extra}, nil
}

// configEnv is the environment config loading runs in.
func (f *Factory) configEnv(r commandRoots) config.Env {
	roots, cwd := r.Roots, r.cwd
	return config.Env{
		LookupEnv: f.LookupEnv,
		Cwd:       cwd,
		Home:      f.Getenv("HOME"),
		Roots:     roots,
		RandInt:   rand.Int64N,
		Warnings:  f.IO.ErrOut,
	}
}

// colorOutput reports whether prefixes may be coloured: on a terminal, and
// not when NO_COLOR is set (https://no-color.org).
func (f *Factory) colorOutput() bool {
	_, noColor := f.LookupEnv("NO_COLOR")
	return f.OutIsTerminal && !noColor
}

// childEnviron is the environment servers inherit: ours, with
// NEMO_GYM_EXTRA_ROOTS holding this command's search dirs and
// GYM_INSTALL_ROOT the install root, so children resolve paths the way
// this command did.
func (f *Factory) childEnviron(r commandRoots) []string {
	extraRoots, installRoot := r.extra, r.install
	var env []string
	for _, kv := range f.Environ() {
		if !strings.HasPrefix(kv, "NEMO_GYM_EXTRA_ROOTS=") && !strings.HasPrefix(kv, installRootEnv+"=") {
			env = append(env, kv)
		}
	}
	if extraRoots != "" {
		env = append(env, "NEMO_GYM_EXTRA_ROOTS="+extraRoots)
	}
	return append(env, installRootEnv+"="+installRoot)
}

// loadConfig resolves the search roots, translates the shared flags plus
// a command's own tokens (which come before the user's, as NeMo Gym
// prepends flag tokens) and loads the config.
func (f *Factory) loadConfig(ctx context.Context, flags *configFlags, verbose bool, own, passthrough []string, req config.Request) (*config.Result, commandRoots, error) {
	roots, err := f.roots(flags.searchDirs)
	if err != nil {
		return nil, roots, err
	}
	tokens, warnings, err := flags.overrides(roots.Roots, verbose, append(own, passthrough...))
	if err != nil {
		return nil, roots, err
	}
	for _, w := range warnings {
		fmt.Fprintln(f.IO.ErrOut, "Warning:", w)
	}
	req.Overrides = tokens
	// Loading checks ctx only between files; a signal must not wait for a
	// huge file to parse or a slow (or never-written FIFO) read to end.
	type loaded struct {
		res *config.Result
		err error
	}
	done := make(chan loaded, 1)
	go func() {
		res, err := config.Load(ctx, f.configEnv(roots), req)
		done <- loaded{res, err}
	}()
	select {
	case l := <-done:
		return l.res, roots, l.err
	case <-ctx.Done():
		return nil, roots, context.Cause(ctx)
	}
}
