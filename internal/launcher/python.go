package launcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/python"
)

const (
	// rayStartTimeout bounds how long the Ray head may take to come up.
	rayStartTimeout = 2 * time.Minute
	// rayStopGrace is how long the Ray head gets to end its cluster after
	// SIGTERM (it takes a few seconds) before its group is killed.
	rayStopGrace = 15 * time.Second
)

// pythonServers is what a run's Python servers share: the venv of each
// server directory (none when uv is missing and python3 runs them).
type pythonServers struct {
	venvs map[string]python.Venv
}

// venv is the venv a Python server runs in, if it has one.
func (p *pythonServers) venv(dir string) (python.Venv, bool) {
	if p == nil {
		return python.Venv{}, false
	}
	v, ok := p.venvs[dir]
	return v, ok
}

// setUpPython makes every Python server's venv as NeMo Gym's env start
// does, starts the run's one Ray head (unless ray_head_node_address names a
// cluster), and writes what it used into the config the children receive.
func (l *Launch) setUpPython(ctx context.Context, specs []ChildSpec) (*pythonServers, error) {
	var pySpecs []ChildSpec
	for _, s := range specs {
		if s.kind == runPython {
			pySpecs = append(pySpecs, s)
		}
	}
	cfg := l.opts.Result.Config
	if len(pySpecs) == 0 {
		return nil, nil
	}
	settings := l.python
	if _, err := settings.UV(); err != nil {
		l.out.writeLine("warning: uv is not on PATH, so Python servers run with python3 from PATH, without their own venvs and without a shared Ray cluster\n")
		return nil, nil
	}
	venvs, err := buildVenvs(ctx, &settings, pySpecs, l.opts.Color, l.out)
	if err != nil {
		return nil, err
	}
	settings.Publish(cfg)
	p := &pythonServers{venvs: venvs}
	if addr := l.setting("ray_head_node_address"); addr != "" {
		l.out.writeLine(fmt.Sprintf("Using the Ray cluster at %s (ray_head_node_address)\n", addr))
		return p, nil
	}
	addr, err := l.startRayHead(ctx, venvs[pySpecs[0].Dir])
	if err != nil {
		return nil, err
	}
	cfg.Set("ray_head_node_address", tree.NewString(addr))
	return p, nil
}

// buildVenvs makes each distinct server directory's venv once, in order,
// its output prefixed with the first instance that uses it.
func buildVenvs(ctx context.Context, settings *python.Settings, specs []ChildSpec, colored bool, out *syncWriter) (map[string]python.Venv, error) {
	// Venvs that skip_venv_if_present will reuse already fix the Python;
	// asking uv again would only cost time at every start.
	if settings.PythonVersion == "" && settings.SkipIfPresent {
		settings.PythonVersion = reusedPython(settings, specs)
	}
	if err := settings.ResolvePython(ctx); err != nil {
		return nil, err
	}
	venvs := map[string]python.Venv{}
	for _, spec := range specs {
		if _, done := venvs[spec.Dir]; done {
			continue
		}
		emit := instanceEmitter(spec.Instance, colored, out)
		v, err := settings.Ensure(ctx, spec.Dir, emit)
		if err != nil {
			return nil, fmt.Errorf("server '%s': %w", spec.Instance, err)
		}
		venvs[spec.Dir] = v
	}
	return venvs, nil
}

// reusedPython is the one Python version of specs' venvs when every one of
// them exists to be reused; "" otherwise.
func reusedPython(settings *python.Settings, specs []ChildSpec) string {
	version := ""
	for _, spec := range specs {
		v := settings.VenvFor(spec.Dir)
		if !v.Present() {
			return ""
		}
		switch got := v.Version(); {
		case got == "" || (version != "" && got != version):
			return ""
		default:
			version = got
		}
	}
	return version
}

// instanceEmitter writes gym's own lines about an instance (its venv
// setup) the way the instance's lines are written.
func instanceEmitter(instance string, colored bool, out *syncWriter) func(string) {
	return newInstanceLines(instance, colored, out, &tail{max: 1}, nil, nil).write
}

// startRayHead starts the Ray head from venv and waits until it is up. It
// is stopped with the servers; should gym die, the kernel sends it SIGTERM,
// on which it ends the whole cluster itself.
func (l *Launch) startRayHead(ctx context.Context, venv python.Venv) (string, error) {
	port, err := freeLoopbackPort()
	if err != nil {
		return "", fmt.Errorf("cannot find a free port for the Ray head: %w", err)
	}
	clientPort := port
	for clientPort == port {
		if clientPort, err = freeLoopbackPort(); err != nil {
			return "", fmt.Errorf("cannot find a free port for the Ray client server: %w", err)
		}
	}
	low, high := l.opts.Result.PortRange()
	if _, err := os.Stat(venv.Bin("ray")); err != nil {
		return "", fmt.Errorf("the Python servers need a Ray cluster, but %s has no ray (head_server_deps pins ray[default]); set ray_head_node_address to use a running cluster", venv.Dir)
	}
	auth, err := python.RayAuthEnv(l.opts.Environ)
	if err != nil {
		return "", err
	}
	sweepRayTempDirs(os.TempDir())
	// Short, as Ray's unix sockets live under it.
	tempDir, err := os.MkdirTemp("", rayTempPrefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tempDir, rayOwnerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(tempDir)
		return "", err
	}
	argv := python.RayHeadArgv(venv, port, clientPort, tempDir, python.PortRange{Low: int(low), High: int(high)})
	c := &child{spec: ChildSpec{Instance: python.RayHeadName}, tail: &tail{max: 40}, pumpDone: make(chan struct{}), tempDir: tempDir}
	ready := make(chan string, 1)
	watch := &python.RayHead{Port: port}
	announced := false
	notify := func(line string) {
		if addr, ok := watch.Watch(line); ok && !announced {
			announced = true
			ready <- addr
		}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		os.RemoveAll(tempDir)
		return "", err
	}
	l.rayEnv = auth
	env := append(python.ReplaceEnv(python.RayHeadEnv(venv.Activate(l.opts.Environ)), l.python.UVEnv()...), auth...)
	cg, err := l.leafCgroup(python.RayHeadName)
	if err != nil {
		pw.Close()
		pr.Close()
		os.RemoveAll(tempDir)
		return "", err
	}
	proc, err := startProcess(argv[0], argv, l.opts.Cwd, env, pw, syscall.SIGTERM, cg)
	pw.Close()
	if err != nil {
		pr.Close()
		os.RemoveAll(tempDir)
		return "", fmt.Errorf("cannot start the Ray head (%s): %w", strings.Join(argv, " "), err)
	}
	c.proc, c.started, c.output = proc, time.Now(), pr
	l.ray = c
	go func() {
		defer close(c.pumpDone)
		pumpLines(pr, python.RayHeadName, l.opts.Color, l.out, c.tail, nil, notify)
	}()
	timer := time.NewTimer(rayStartTimeout)
	defer timer.Stop()
	select {
	case addr := <-ready:
		return addr, nil
	case <-proc.exited:
		c.drained()
		return "", fmt.Errorf("the Ray head %s: %s", proc.exitDescription(), strings.Join(c.tail.get(), "\n  "))
	case <-timer.C:
		return "", fmt.Errorf("the Ray head did not come up within %s; its last output:\n  %s", rayStartTimeout, strings.Join(c.tail.get(), "\n  "))
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// A Ray head's temp dir holds its session (logs, sockets) and names the gym
// that made it, so one a killed gym left behind can be told from a live one.
const (
	rayTempPrefix = "gym-ray-"
	rayOwnerFile  = "gym.pid"
)

// sweepRayTempDirs removes the Ray temp dirs under dir whose gym is gone
// (Stop removes a run's own; a killed gym cannot).
func sweepRayTempDirs(dir string) {
	matches, _ := filepath.Glob(filepath.Join(dir, rayTempPrefix+"*"))
	for _, m := range matches {
		data, err := os.ReadFile(filepath.Join(m, rayOwnerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(m)
		}
	}
}
