package python

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/nemo-gym-go/gym/internal/flock"
)

// setupCompleteMarker is the file NeMo Gym leaves in a venv it finished, so
// a venv made by either tool is known ready by both.
const setupCompleteMarker = ".nemo-gym-setup-complete"

// Venv is one server directory's virtual environment.
type Venv struct {
	Dir string // the .venv directory
}

// Python is the venv's own interpreter.
func (v Venv) Python() string { return filepath.Join(v.Dir, "bin", "python") }

// Bin is a console script installed in the venv.
func (v Venv) Bin(name string) string { return filepath.Join(v.Dir, "bin", name) }

// Activate is environ as `source bin/activate` leaves it: VIRTUAL_ENV set
// and the venv's bin first on PATH.
func (v Venv) Activate(environ []string) []string {
	out := make([]string, 0, len(environ)+2)
	path := ""
	for _, kv := range environ {
		k, val, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH":
			path = val
		case "VIRTUAL_ENV", "PYTHONHOME":
		default:
			out = append(out, kv)
		}
	}
	bin := filepath.Join(v.Dir, "bin")
	if path != "" {
		bin += string(os.PathListSeparator) + path
	}
	return append(out, "VIRTUAL_ENV="+v.Dir, "PATH="+bin)
}

// Version is the Python version the venv was made with (pyvenv.cfg's
// version_info, as uv writes it, or version, as python -m venv does); ""
// when unknown.
func (v Venv) Version() string {
	data, err := os.ReadFile(filepath.Join(v.Dir, "pyvenv.cfg"))
	if err != nil {
		return ""
	}
	found := ""
	for _, line := range strings.Split(string(data), "\n") {
		key, value, ok := strings.Cut(line, "=")
		switch key = strings.TrimSpace(key); {
		case !ok:
		case key == "version_info":
			return strings.TrimSpace(value)
		case key == "version":
			found = strings.TrimSpace(value)
		}
	}
	return found
}

// Present reports whether the venv has what skip_venv_if_present reuses.
func (v Venv) Present() bool {
	return fileExists(v.Python()) && fileExists(filepath.Join(v.Dir, "bin", "activate"))
}

func (v Venv) complete() bool {
	return v.Present() && fileExists(filepath.Join(v.Dir, setupCompleteMarker))
}

// VenvFor is where a server directory's venv lives, by NeMo Gym's rule:
// <uv_venv_dir>/<type>/<implementation>/.venv, which is the directory's own
// .venv when uv_venv_dir is the root the component sits in.
func (s Settings) VenvFor(serverDir string) Venv {
	impl := filepath.Base(serverDir)
	typ := filepath.Base(filepath.Dir(serverDir))
	return Venv{Dir: filepath.Join(s.VenvRoot, typ, impl, ".venv")}
}

// Step is one setup command; Stdin, when set, is fed to it (NeMo Gym pipes
// a rewritten requirements list into `uv pip install -r /dev/stdin`).
type Step struct {
	Argv  []string
	Stdin string
}

// SetupError is a venv that could not be made, with the installer's own
// last lines.
type SetupError struct {
	Dir  string
	Step string
	Err  error
	Tail []string
}

func (e *SetupError) Unwrap() error { return e.Err }

func (e *SetupError) Error() string {
	msg := fmt.Sprintf("setting up the Python environment of %s failed: %s", e.Dir, e.Err)
	if e.Step != "" {
		msg = fmt.Sprintf("setting up the Python environment of %s failed: `%s`: %s", e.Dir, e.Step, e.Err)
	}
	if len(e.Tail) > 0 {
		msg += "; its last output:\n  " + strings.Join(e.Tail, "\n  ")
	}
	return msg
}

// Steps are the commands NeMo Gym's setup_env_command runs for serverDir,
// in order: the venv, then the install that fits the directory.
func (s Settings) Steps(uv, serverDir string) ([]Step, error) {
	venv := s.VenvFor(serverDir)
	create := []string{uv, "venv", "--seed", "--allow-existing"}
	if s.PythonVersion != "" {
		create = append(create, "--python", s.PythonVersion)
	}
	steps := []Step{{Argv: append(create, venv.Dir)}}

	pip := []string{uv, "pip", "install"}
	if s.Verbose {
		pip = append(pip, "-v")
	}
	if s.SetPython {
		pip = append(pip, "--python", venv.Python())
	}
	hasPyproject := fileExists(filepath.Join(serverDir, "pyproject.toml"))
	hasRequirements := fileExists(filepath.Join(serverDir, "requirements.txt"))
	switch {
	case hasPyproject && hasRequirements:
		return nil, fmt.Errorf("found both pyproject.toml and requirements.txt for uv venv setup in server dir %s; keep only one of them", serverDir)
	case !hasPyproject && !hasRequirements:
		return nil, fmt.Errorf("missing pyproject.toml or requirements.txt for uv venv setup in server dir %s; add a requirements.txt (a NeMo Gym server lists `-e nemo-gym[dev] @ ../../`)", serverDir)
	}
	editable := inCheckout(serverDir)
	pin := "nemo-gym==" + s.NemoGymVersion
	switch {
	case hasPyproject && editable:
		steps = append(steps, Step{Argv: concat(pip, []string{"-e", "."}, s.Deps)})
	case hasPyproject:
		steps = append(steps,
			Step{Argv: concat(pip, s.indexFlags(), []string{pin})},
			Step{Argv: concat(pip, []string{"--no-sources", "-e", "."}, s.Deps)})
	default:
		var override []string
		if fileExists(filepath.Join(serverDir, "overrides.txt")) {
			override = []string{"--override", "overrides.txt"}
		}
		if editable {
			steps = append(steps, Step{Argv: concat(pip, override, []string{"-r", "requirements.txt"}, s.Deps)})
			break
		}
		reqs, err := withoutCheckoutLines(filepath.Join(serverDir, "requirements.txt"))
		if err != nil {
			return nil, err
		}
		steps = append(steps, Step{
			Argv:  concat(pip, s.indexFlags(), override, []string{"-r", "/dev/stdin"}, s.Deps),
			Stdin: pin + "\n" + reqs,
		})
	}
	return steps, nil
}

// inCheckout is NeMo Gym's "editable install" test: the server directory
// sits two levels under a project with a pyproject.toml (a Gym checkout).
func inCheckout(serverDir string) bool {
	dir := serverDir
	if real, err := filepath.EvalSymlinks(serverDir); err == nil {
		dir = real
	}
	return fileExists(filepath.Join(filepath.Dir(filepath.Dir(dir)), "pyproject.toml"))
}

// withoutCheckoutLines is requirements.txt minus every line naming the
// checkout (`../..`), which outside a checkout points nowhere.
func withoutCheckoutLines(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if line != "" && !strings.Contains(line, "../..") {
			b.WriteString(line)
		}
	}
	out := b.String()
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return out, nil
}

// indexFlags are the uv flags NeMo Gym derives from the environment for
// installing nemo-gym from an index. NeMo Gym also repeats UV_INDEX_URL and
// UV_EXTRA_INDEX_URL as flags; uv reads them from the environment it
// inherits anyway, and on a command line an index's credentials would show
// in ps and in error messages, so they stay in the environment.
func (s Settings) indexFlags() []string {
	env := func(k string) string {
		for _, kv := range s.Environ {
			if key, v, ok := strings.Cut(kv, "="); ok && key == k {
				return v
			}
		}
		return ""
	}
	var flags []string
	strategy := env("UV_INDEX_STRATEGY")
	if strings.EqualFold(env("NEMO_GYM_ALLOW_PRERELEASE"), "true") {
		flags = append(flags, "--pre")
		if strategy == "" {
			flags = append(flags, "--index-strategy", "unsafe-best-match")
		}
		flags = append(flags, "fastapi<1.0")
	}
	if strategy != "" {
		flags = append(flags, "--index-strategy", strategy)
	}
	return flags
}

// Ensure makes serverDir's venv as NeMo Gym does, unless skip_venv_if_present
// finds one already there, and returns it. Setup output goes to emit line
// by line. The venv's setup lock and completion marker are NeMo Gym's, so
// gym and NeMo Gym never build one venv at the same time.
func (s Settings) Ensure(ctx context.Context, serverDir string, emit func(string)) (Venv, error) {
	venv := s.VenvFor(serverDir)
	if s.SkipIfPresent && venv.Present() {
		return venv, nil
	}
	uv, err := s.UV()
	if err != nil {
		return venv, &SetupError{Dir: serverDir, Err: err}
	}
	if err := os.MkdirAll(filepath.Dir(venv.Dir), 0o755); err != nil {
		return venv, &SetupError{Dir: serverDir, Err: err}
	}
	lock, err := flock.Lock(ctx, venv.Dir+".setup.lock", func() { emit("Waiting for virtual environment setup: " + venv.Dir) })
	if err != nil {
		return venv, &SetupError{Dir: serverDir, Err: err}
	}
	defer lock.Close()
	if s.SkipIfPresent && venv.complete() {
		return venv, nil
	}
	steps, err := s.Steps(uv, serverDir)
	if err != nil {
		return venv, &SetupError{Dir: serverDir, Err: err}
	}
	marker := filepath.Join(venv.Dir, setupCompleteMarker)
	os.Remove(marker)
	env := venv.Activate(s.env())
	for _, step := range steps {
		if err := runStep(ctx, step, serverDir, env, lock, emit); err != nil {
			return venv, err
		}
	}
	if !venv.Present() {
		return venv, &SetupError{Dir: serverDir, Err: fmt.Errorf("uv finished but %s has no bin/python and bin/activate", venv.Dir)}
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		return venv, &SetupError{Dir: serverDir, Err: err}
	}
	return venv, nil
}

// env is the environment setup commands run with: the parent's, with
// uv_cache_dir and uv_lock_timeout as uv reads them.
func (s Settings) env() []string { return ReplaceEnv(s.Environ, s.UVEnv()...) }

// UVEnv is uv_cache_dir and uv_lock_timeout_seconds as uv reads them, for
// every process that may run uv, as NeMo Gym exports them; an unset (or
// null) one exports nothing, so an inherited value applies.
func (s Settings) UVEnv() []string {
	var env []string
	if s.CacheDir != "" {
		env = append(env, "UV_CACHE_DIR="+s.CacheDir)
	}
	if s.LockTimeout != "" {
		env = append(env, "UV_LOCK_TIMEOUT="+s.LockTimeout)
	}
	return env
}

// ReplaceEnv is environ with each KEY=value of pairs in place of any entry
// for KEY it had.
func ReplaceEnv(environ []string, pairs ...string) []string {
	set := make(map[string]bool, len(pairs))
	for _, kv := range pairs {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	out := make([]string, 0, len(environ)+len(pairs))
	for _, kv := range environ {
		if k, _, _ := strings.Cut(kv, "="); !set[k] {
			out = append(out, kv)
		}
	}
	return append(out, pairs...)
}

// tailLines is how much of a failed step's output its error repeats.
const tailLines = 15

// runStep runs one setup command, contained, holding the venv's lock: the
// installer inherits the lock's descriptor (as with NeMo Gym's
// _venv_setup.py), so no other setup can start while it still runs.
func runStep(ctx context.Context, step Step, dir string, env []string, lock *os.File, emit func(string)) error {
	cmd := exec.CommandContext(ctx, step.Argv[0], step.Argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	contain(cmd)
	if lock != nil {
		cmd.ExtraFiles = []*os.File{lock}
	}
	if step.Stdin != "" {
		cmd.Stdin = strings.NewReader(step.Stdin)
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var tail []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			emit(line)
			if tail = append(tail, line); len(tail) > tailLines {
				tail = tail[1:]
			}
		}
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	wg.Wait()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	shown := strings.Join(append([]string{"uv"}, step.Argv[1:]...), " ")
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = fmt.Errorf("exited with code %d", exit.ExitCode())
	}
	return &SetupError{Dir: dir, Step: shown, Err: err, Tail: tail}
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
