package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/nemo-gym-go/gym"
	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// Factory hands commands what they need from the process: its streams, its
// environment and the binary's version. A command's options keep only the
// parts it uses.
type Factory struct {
	IOStreams *iostreams.IOStreams
	Workspace *workspace
	Version   string
}

// workspace is the process environment a command resolves paths and
// configs in, injected so tests choose it.
type workspace struct {
	Getenv     func(string) string
	LookupEnv  func(string) (string, bool)
	Environ    func() []string
	Getwd      func() (string, error)
	Executable func() (string, error)
	LookPath   func(string) (string, error)
}

func newFactory() *Factory {
	return &Factory{
		IOStreams: iostreams.System(os.LookupEnv),
		Workspace: &workspace{
			Getenv:     os.Getenv,
			LookupEnv:  os.LookupEnv,
			Environ:    os.Environ,
			Getwd:      os.Getwd,
			Executable: os.Executable,
			LookPath:   exec.LookPath,
		},
		Version: version(),
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
func (ws *workspace) installRoot() (string, error) {
	if dir := ws.Getenv(installRootEnv); dir != "" {
		return dir, nil
	}
	return resolve.Materialize(gym.Builtin, resolve.DefaultCacheDir(ws.Getenv))
}

// extraRoots is NEMO_GYM_EXTRA_ROOTS for this command: --search-dir
// directories first, then the inherited value.
func (ws *workspace) extraRoots(searchDirs []string) string {
	return resolve.WithSearchDirs(searchDirs, ws.Getenv("NEMO_GYM_EXTRA_ROOTS"))
}

// commandRoots are where this command finds things.
type commandRoots struct {
	*resolve.Roots
	cwd, install, extra string
}

// roots builds the search roots for this command.
func (ws *workspace) roots(searchDirs []string) (commandRoots, error) {
	cwd, err := ws.Getwd()
	if err != nil {
		return commandRoots{}, err
	}
	install, err := ws.installRoot()
	if err != nil {
		return commandRoots{}, err
	}
	extra := ws.extraRoots(searchDirs)
	return commandRoots{Roots: resolve.NewRoots(extra, cwd, install), cwd: cwd, install: install, extra: extra}, nil
}

// configEnv is the environment config loading runs in.
func (ws *workspace) configEnv(r commandRoots, warnings io.Writer) config.Env {
	roots, cwd := r.Roots, r.cwd
	return config.Env{
		LookupEnv: ws.LookupEnv,
		Cwd:       cwd,
		Home:      ws.Getenv("HOME"),
		Roots:     roots,
		RandInt:   rand.Int64N,
		Warnings:  warnings,
	}
}

// childEnviron is the environment servers inherit: ours, with
// NEMO_GYM_EXTRA_ROOTS holding this command's search dirs and
// GYM_INSTALL_ROOT the install root, so children resolve paths the way
// this command did.
func (ws *workspace) childEnviron(r commandRoots) []string {
	extraRoots, installRoot := r.extra, r.install
	var env []string
	for _, kv := range ws.Environ() {
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
// prepends flag tokens) and loads the config; warnings go to errOut.
func (ws *workspace) loadConfig(ctx context.Context, errOut io.Writer, flags *configFlags, verbose bool, own, passthrough []string, req config.Request) (*config.Result, commandRoots, error) {
	roots, err := ws.roots(flags.searchDirs)
	if err != nil {
		return nil, roots, err
	}
	tokens, warnings, err := flags.overrides(roots.Roots, verbose, append(own, passthrough...))
	if err != nil {
		return nil, roots, err
	}
	for _, w := range warnings {
		fmt.Fprintln(errOut, "Warning:", w)
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
		res, err := config.Load(ctx, ws.configEnv(roots, errOut), req)
		done <- loaded{res, err}
	}()
	select {
	case l := <-done:
		return l.res, roots, l.err
	case <-ctx.Done():
		return nil, roots, context.Cause(ctx)
	}
}

// abs makes a path the user typed absolute against the working directory.
func (r commandRoots) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(r.cwd, p)
}

// resolveExisting finds a read path over the search roots; a path found
// nowhere comes back anchored at the working directory, so errors name
// the user's own location.
func (r commandRoots) resolveExisting(p string) string {
	if found := r.find(p); found != "" {
		return found
	}
	return r.abs(p)
}

// find is where a read path exists over the search roots; "" if nowhere.
func (r commandRoots) find(p string) string {
	found := r.Roots.Resolve(p)
	if !filepath.IsAbs(found) {
		found = filepath.Join(r.cwd, found)
	}
	if _, err := os.Stat(found); err == nil {
		return found
	}
	return ""
}
