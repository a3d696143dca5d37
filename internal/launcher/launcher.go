// Package launcher turns a resolved config into running server processes:
// NeMo Gym's head server, one child per server instance in its own process
// group, prefixed logs, readiness, crash handling and a shutdown that leaves
// nothing behind.
package launcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/python"
	"github.com/nemo-gym-go/gym/internal/resolve"
	"github.com/nemo-gym-go/gym/internal/server"
	"github.com/nemo-gym-go/gym/internal/table"
)

// Options are what a launch needs from the command.
type Options struct {
	Result *config.Result
	Roots  *resolve.Roots
	// Environ is the parent environment children inherit, with
	// NEMO_GYM_EXTRA_ROOTS already holding this command's search dirs.
	Environ  []string
	LookPath func(string) (string, error)
	// Self is this binary, run as `gym serve` for Go implementations.
	Self string
	// Builtin says which Go implementations this binary has and what
	// config keys they read.
	Builtin         Builtin
	RegisteredKinds []string
	Cwd             string
	Out             io.Writer
	Color           bool
	// Grace is how long a stopping server group gets before SIGKILL.
	Grace time.Duration
}

// Launch is a set of running servers.
type Launch struct {
	opts     Options
	head     *headServer
	children []*child
	timeouts timeouts
	python   python.Settings // what Python servers and uv are set up with
	ray      *child          // the run's Ray head, when gym started one
	cgroup   *runCgroup      // holds every process of the run; nil without cgroup v2
	token    string          // the run token its servers trust each other by
	rayEnv   []string        // what a Python server needs to use that cluster
	out      *syncWriter
	crashed  chan *child
	stopOnce sync.Once
	stopping chan struct{}
	DryRun   bool
}

type child struct {
	spec     ChildSpec
	proc     *process
	tail     *tail
	logFile  *os.File
	started  time.Time
	output   *os.File // read end of the child's stdout/stderr pipe
	pumpDone chan struct{}
	tempDir  string // removed once the child's group is gone (the Ray head's)
}

// drainGrace bounds how long output may keep flowing after a server's
// group is gone: a descendant that left the group (a daemon) may hold the
// pipe open forever, and must not hold gym up.
const drainGrace = time.Second

// drained waits for the child's output to end, closing the pipe if a
// stray holder keeps it open.
func (c *child) drained() {
	select {
	case <-c.pumpDone:
	case <-time.After(drainGrace):
		c.output.Close()
		<-c.pumpDone
	}
}

// CrashError is a server that exited on its own.
type CrashError struct {
	Instance string
	How      string
	Tail     []string
}

func (e *CrashError) Error() string {
	msg := fmt.Sprintf("server '%s' %s", e.Instance, e.How)
	if len(e.Tail) > 0 {
		msg += "; its last output:\n  " + strings.Join(e.Tail, "\n  ")
	}
	return msg
}

// ConfigYAMLSizeLimit is Linux's limit on one environment string
// (MAX_ARG_STRLEN), which NEMO_GYM_CONFIG_DICT must fit in.
const ConfigYAMLSizeLimit = 128*1024 - 1

// Start plans and starts every server, waits until each answers and the
// model endpoints answer, and returns the running launch. On any failure
// it stops whatever it had started before returning. With dry_run it sets
// every server up serially, runs each to completion, and returns a stopped
// launch.
func Start(ctx context.Context, opts Options) (*Launch, error) {
	res := opts.Result
	if len(res.Instances) == 0 {
		return nil, &config.Error{Class: config.ClassNoServerInstances, Msg: "No server instances are configured, so there is nothing to run. Pass one or more configs, e.g.:\n" +
			"  gym env start --config resources_servers/<env>/configs/<env>.yaml --config responses_api_models/<model>/configs/<model>.yaml"}
	}
	specs, err := planAndSay(opts)
	if err != nil {
		return nil, err
	}
	if err := becomeSubreaper(); err != nil {
		fmt.Fprintf(opts.Out, "warning: cannot become a child subreaper (%v); orphaned grandchildren are left to init\n", err)
	}
	headHost, headPort := HeadAddress(res)
	headListener, err := listenHead(headHost, headPort)
	if err != nil {
		return nil, err
	}
	if headPort == 0 {
		// Port 0 takes any free port (array tasks of one job may share a
		// node); the servers are told the one it got.
		if hs := res.Config.Get("head_server"); hs != nil && hs.Kind == tree.Map {
			hs.Set("port", tree.NewInt(int64(headListener.Addr().(*net.TCPAddr).Port)))
		}
	}
	// One more than the servers: the Ray head is watched too.
	l := &Launch{opts: opts, out: &syncWriter{w: opts.Out}, crashed: make(chan *child, len(specs)+1), stopping: make(chan struct{})}
	// Bad timeouts are refused before anything is built or started.
	if l.timeouts, err = l.readTimeouts(); err != nil {
		headListener.Close()
		return nil, err
	}
	if l.python, err = python.FromConfig(res.Value, opts.Cwd, opts.Environ, opts.LookPath); err != nil {
		headListener.Close()
		return nil, err
	}
	l.contain()
	py, err := l.setUpPython(ctx, specs)
	if err != nil {
		headListener.Close()
		l.Stop()
		return nil, err
	}
	yaml := config.Dump(res.Config)
	if len(yaml)+len(config.ConfigDictEnv)+1 > ConfigYAMLSizeLimit {
		headListener.Close()
		l.Stop()
		return nil, fmt.Errorf("the config is %d bytes as YAML, more than the %d bytes one environment variable can hold; trim unused blocks from it", len(yaml), ConfigYAMLSizeLimit)
	}
	if l.token, err = runToken(opts.Environ); err != nil {
		headListener.Close()
		l.Stop()
		return nil, err
	}
	if l.head, err = startHead(headListener, yaml, l.token); err != nil {
		l.Stop()
		return nil, err
	}
	dry, err := res.Value("dry_run")
	if err != nil {
		l.Stop()
		return nil, err
	}
	l.DryRun = dry != nil && dry.Kind == tree.Bool && dry.Bool
	for _, spec := range specs {
		c, err := l.startChild(spec, yaml, py)
		if err != nil {
			l.Stop()
			return nil, err
		}
		l.children = append(l.children, c)
		if l.DryRun {
			<-c.proc.exited
			c.drained()
		}
	}
	l.head.setInstances(l.infos())
	if l.DryRun {
		defer l.Stop()
		return l, l.dryRunResult()
	}
	for _, c := range l.children {
		go l.watch(c)
	}
	if l.ray != nil {
		go l.watch(l.ray)
	}
	if err := l.waitReady(ctx); err != nil {
		l.Stop()
		return nil, err
	}
	l.printReady()
	if err := l.waitModelEndpoints(ctx); err != nil {
		l.Stop()
		return nil, err
	}
	l.head.ready.Store(true)
	return l, nil
}

// HeadAddress is where the config puts the head server: head_server.host
// and .port, resolved (a port may come from ${oc.env:...} as a string),
// NeMo Gym's 127.0.0.1:11000 by default. Loading the config has already
// refused a head server it cannot resolve.
func HeadAddress(res *config.Result) (string, int) {
	hs, _ := res.Value("head_server")
	host, port := "127.0.0.1", 11000
	if h := stringField(hs, "host"); h != "" {
		host = h
	}
	switch p := hs.Get("port"); {
	case p == nil:
	case p.Kind == tree.Int:
		port = int(p.Int)
	case p.Kind == tree.String:
		if n, err := strconv.Atoi(strings.TrimSpace(p.Str)); err == nil {
			port = n
		}
	}
	return host, port
}

// setting is a top-level string setting, resolved; "" when unset or not
// a string.
func (l *Launch) setting(key string) string {
	v, err := l.opts.Result.Value(key)
	if err != nil || v == nil || v.Kind != tree.String {
		return ""
	}
	return v.Str
}

// childEnv is the parent's environment plus the child contract: the whole
// config, the instance name, PYTHONPATH with the component dir first, uv's
// cache and lock timeout, and for a Python server what it needs to use the
// run's Ray cluster. Secrets travel here, never on a command line.
func (l *Launch) childEnv(spec ChildSpec, yaml string) []string {
	drop := map[string]bool{config.ConfigDictEnv: true, config.ConfigPathEnv: true, "PYTHONPATH": true, server.RunTokenEnv: true}
	var env []string
	pythonPath := ""
	for _, kv := range l.opts.Environ {
		k, v, _ := strings.Cut(kv, "=")
		if k == "PYTHONPATH" {
			pythonPath = v
		}
		if !drop[k] {
			env = append(env, kv)
		}
	}
	if spec.Dir != "" {
		if pythonPath != "" {
			pythonPath = spec.Dir + string(os.PathListSeparator) + pythonPath
		} else {
			pythonPath = spec.Dir
		}
	}
	if pythonPath != "" {
		env = append(env, "PYTHONPATH="+pythonPath)
	}
	env = python.ReplaceEnv(env, l.python.UVEnv()...)
	if spec.kind == runPython {
		env = append(env, l.rayEnv...)
	}
	return append(env, config.ConfigDictEnv+"="+yaml, config.ConfigPathEnv+"="+spec.Instance, server.RunTokenEnv+"="+l.token)
}

// runToken is the run's token: the one GYM_RUN_TOKEN gives, so that the
// steps of one job on several machines trust each other, or else 256 new
// random bits, in hex so that it fits a header and an environment variable
// as it is.
func runToken(environ []string) (string, error) {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, server.RunTokenEnv+"="); ok && v != "" {
			return v, nil
		}
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("cannot make the run token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func (l *Launch) startChild(spec ChildSpec, yaml string, py *pythonServers) (*child, error) {
	c := &child{spec: spec, tail: &tail{max: 40}, pumpDone: make(chan struct{})}
	if dir := l.setting("nemo_gym_log_dir"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("nemo_gym_log_dir: %w", err)
		}
		f, err := os.OpenFile(filepath.Join(dir, strings.ReplaceAll(spec.Instance, "/", "_")+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("nemo_gym_log_dir: %w", err)
		}
		c.logFile = f
	}
	env := l.childEnv(spec, yaml)
	var path string
	var argv []string
	switch spec.kind {
	case runPython:
		if venv, ok := py.venv(spec.Dir); ok {
			path, env = venv.Python(), venv.Activate(env)
		} else if system := python.System(l.opts.LookPath); system != "" {
			path = system
		} else {
			return nil, fmt.Errorf("server '%s' has a Python entrypoint (%s) but neither uv nor python3 is on PATH; install uv (recommended) or Python 3", spec.Instance, spec.Entrypoint)
		}
		argv = []string{path, spec.Entrypoint}
	case runExecutable:
		path = filepath.Join(spec.Dir, spec.Entrypoint)
		argv = []string{path}
	case runGo:
		// argv[0] is the command's name, not the resolved binary path,
		// so a multi-call binary (such as the test binary) knows what to run.
		path, argv = l.opts.Self, []string{"gym", "serve"}
	}
	dir := spec.Dir
	if dir == "" {
		dir = l.opts.Cwd
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cg, err := l.leafCgroup(spec.Instance)
	if err != nil {
		pw.Close()
		pr.Close()
		return nil, err
	}
	proc, err := startProcess(path, argv, dir, env, pw, syscall.SIGKILL, cg)
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, fmt.Errorf("cannot start server '%s' (%s): %w", spec.Instance, strings.Join(argv, " "), err)
	}
	c.proc, c.started, c.output = proc, time.Now(), pr
	go func() {
		defer close(c.pumpDone)
		pumpLines(pr, spec.Instance, l.opts.Color, l.out, c.tail, c.logFile, nil)
	}()
	return c, nil
}

// watch reports a child that exits while it should be running.
func (l *Launch) watch(c *child) {
	select {
	case <-c.proc.exited:
		select {
		case <-l.stopping:
		default:
			c.drained()
			l.crashed <- c
		}
	case <-l.stopping:
	}
}

func (c *child) crashError() *CrashError {
	return &CrashError{Instance: c.spec.Instance, How: c.proc.exitDescription(), Tail: c.tail.get()}
}

func (l *Launch) dryRunResult() error {
	var failed []string
	for _, c := range l.children {
		if ws := c.proc.exitState; !ws.Exited() || ws.ExitStatus() != 0 {
			failed = append(failed, fmt.Sprintf("  `%s` %s", c.spec.Instance, c.proc.exitDescription()))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("Dry run failed to set up %d server(s). Each server's output is above, prefixed with its name:\n%s", len(failed), strings.Join(failed, "\n"))
	}
	fmt.Fprintf(l.opts.Out, "Dry run: all %d server(s) set up.\n", len(l.children))
	return nil
}

// Wait blocks until ctx is cancelled (a clean stop: nil) or a server exits
// on its own (its CrashError). The caller then calls Stop.
func (l *Launch) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case c := <-l.crashed:
		return c.crashError()
	}
}

// Stop ends every server: each process group gets SIGTERM, then SIGKILL
// after the grace period, and Stop returns only when no process of any
// group is left. It is safe to call more than once.
func (l *Launch) Stop() {
	l.stopOnce.Do(func() {
		close(l.stopping)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var killed []string
		for _, c := range l.children {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if c.proc.stop(l.opts.Grace) {
					mu.Lock()
					killed = append(killed, c.spec.Instance)
					mu.Unlock()
				}
				c.drained()
				c.output.Close()
				if c.logFile != nil {
					c.logFile.Close()
				}
			}()
		}
		wg.Wait()
		// The Ray head goes last: the servers are its drivers.
		if l.ray != nil {
			if grace := max(l.opts.Grace, rayStopGrace); l.ray.proc.stop(grace) {
				fmt.Fprintf(l.opts.Out, "Killed after %s without stopping: %s\n", grace, python.RayHeadName)
			}
			l.ray.drained()
			l.ray.output.Close()
			os.RemoveAll(l.ray.tempDir)
		}
		if l.cgroup != nil {
			l.cgroup.close()
		}
		if l.head != nil {
			l.head.close()
		}
		if len(killed) > 0 {
			fmt.Fprintf(l.opts.Out, "Killed after %s without stopping: %s\n", l.opts.Grace, strings.Join(killed, ", "))
		}
	})
}

// contain makes the cgroup every process of the run starts in, saying
// what holds the run where there is none.
func (l *Launch) contain() {
	g, watchdogErr, err := newRunCgroup(l.opts.Self)
	if err != nil {
		fmt.Fprintf(l.opts.Out, "note: %v; a process that leaves its server's process group (setsid, a daemon) can outlive the run (README: Containment)\n", err)
		return
	}
	if watchdogErr != nil {
		fmt.Fprintf(l.opts.Out, "warning: %v; should gym be killed, its servers' grandchildren can outlive it\n", watchdogErr)
	}
	l.cgroup = g
}

// leafCgroup is the cgroup a child of the run starts in, or nil when the
// run has none.
func (l *Launch) leafCgroup(instance string) (*leafCgroup, error) {
	if l.cgroup == nil {
		return nil, nil
	}
	return l.cgroup.leaf(instance)
}

// infos describes the running servers for the head server's
// /server_instances.
func (l *Launch) infos() []InstanceInfo {
	infos := make([]InstanceInfo, 0, len(l.children))
	for _, c := range l.children {
		// NeMo Gym gives every server a directory; "." stands for none.
		dir := c.spec.Dir
		if dir == "" {
			dir = "."
		}
		infos = append(infos, InstanceInfo{
			ConfigPath:  c.spec.Instance,
			DirPath:     dir,
			Entrypoint:  c.spec.Entrypoint,
			Host:        c.spec.Host,
			Name:        c.spec.Implementation,
			PID:         c.proc.pid,
			Port:        c.spec.Port,
			ProcessName: c.spec.Instance,
			ServerType:  c.spec.ServerType,
			StartTime:   float64(c.started.UnixNano()) / 1e9,
			URL:         c.spec.URL(),
		})
	}
	return infos
}

func (l *Launch) printReady() {
	var b strings.Builder
	fmt.Fprintf(&b, "All %d / %d servers ready\n", len(l.children), len(l.children))
	rows := [][]string{{"NAME", "SERVER", "URL", "PID"}}
	for _, c := range l.children {
		impl := c.spec.Kind()
		if c.spec.kind == runGo {
			impl += " (go)"
		} else {
			impl += " (" + c.spec.kind.String() + ")"
		}
		rows = append(rows, []string{c.spec.Instance, impl, c.spec.URL(), strconv.Itoa(c.proc.pid)})
	}
	table.Write(&b, rows)
	l.out.writeLine(b.String())
}
