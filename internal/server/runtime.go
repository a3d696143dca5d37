package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Uvicorn's settings in NeMo Gym (spec §3.4). The keep-alive outlives the
// client's 15 s so a server never closes a connection a client is about to
// reuse.
const (
	shutdownGrace    = 500 * time.Millisecond
	serverKeepAlive  = 30 * time.Second
	wantedFileLimit  = 65535
	perHostLimitKey  = "global_aiohttp_connector_limit_per_host"
	verboseKey       = "verbose"
	dryRunKey        = "dry_run"
	hostKey, portKey = "host", "port"
)

// Runtime is what a component knows about the process it runs in.
type Runtime struct {
	Instance       string // the instance name (NEMO_GYM_CONFIG_PATH), e.g. policy_model
	ServerType     string // e.g. responses_api_models
	Implementation string // e.g. openai_model
	// ClassName is the NeMo Gym class name the kind registered with; empty
	// when the kind is not registered.
	ClassName string
	Global    *tree.Node // the whole config, unresolved, exactly as received
	Config    *tree.Node // the instance's own section, resolved, with name
	Host      string
	Port      int
	DryRun    bool
	Verbose   bool
	// serving is what the config's profiling and access-log keys ask of
	// Serve, and of every Wrap of the server's (the agent's in-process
	// self-call's included).
	serving serveSettings
	// RunToken is the run's token from GYM_RUN_TOKEN, empty when the
	// server was started outside gym: Wrap then trusts every client.
	RunToken string
	Logger   *slog.Logger
	Client   *Client
}

// Kind is `<server_type>/<implementation>`, the registry key.
func (rt *Runtime) Kind() string { return rt.ServerType + "/" + rt.Implementation }

// ServerName is `<ClassName>___<instance>`: the session cookie's name and
// the name error messages give this server, as NeMo Gym spells them.
func (rt *Runtime) ServerName() string { return rt.ClassName + "___" + rt.Instance }

// FromEnv builds the runtime of a server process started by `gym env start`
// from NEMO_GYM_CONFIG_DICT (the whole config) and NEMO_GYM_CONFIG_PATH (the
// instance name). Logs go to standard output, where the launcher prefixes
// them.
func FromEnv(lookupEnv func(string) (string, bool)) (*Runtime, error) {
	return fromEnv(lookupEnv, os.Stdout)
}

func fromEnv(lookupEnv func(string) (string, bool), logOut io.Writer) (*Runtime, error) {
	dict, ok := lookupEnv(config.ConfigDictEnv)
	if !ok || dict == "" {
		return nil, fmt.Errorf("%s is not set: a Gym server reads the whole config from it; start servers with `gym env start`", config.ConfigDictEnv)
	}
	instance, ok := lookupEnv(config.ConfigPathEnv)
	if !ok || instance == "" {
		return nil, fmt.Errorf("%s is not set: a Gym server finds its own config section by the instance name in it; start servers with `gym env start`", config.ConfigPathEnv)
	}
	// Upstream children take the config as given (T69): no merge, defaults
	// or validation, since the parent already did all of that.
	global, err := config.ParseChildConfig(dict)
	if err != nil {
		return nil, err
	}
	section, typ, impl, err := config.InstanceSection(global, instance, lookupEnv)
	if err != nil {
		return nil, err
	}
	host, port, err := hostPort(section, instance)
	if err != nil {
		return nil, err
	}
	// The switches are read as NeMo Gym reads them: resolved in this
	// process's environment, then by Python truthiness.
	var flags [2]bool
	for i, key := range []string{dryRunKey, verboseKey} {
		v, err := config.ResolveGlobal(global, key, lookupEnv)
		if err != nil {
			return nil, err
		}
		flags[i] = config.Truthy(v)
	}
	rt := &Runtime{
		Instance:       instance,
		ServerType:     typ,
		Implementation: impl,
		Global:         global,
		Config:         section,
		Host:           host,
		Port:           port,
		DryRun:         flags[0],
		Verbose:        flags[1],
		serving:        readServeSettings(global, lookupEnv, logOut),
	}
	rt.RunToken, _ = lookupEnv(RunTokenEnv)
	if reg, ok := lookup(rt.Kind()); ok {
		rt.ClassName = reg.className
	}
	level := slog.LevelInfo
	if rt.Verbose {
		level = slog.LevelDebug
	}
	rt.Logger = slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	opts := ClientOptions{Logger: rt.Logger, RunToken: rt.RunToken}
	if rt.RunToken != "" {
		opts.RunServers = RunServers(global, lookupEnv)
	}
	if n := global.Get(perHostLimitKey); n != nil && n.Kind == tree.Int && n.Int > 0 {
		opts.MaxConnsPerHost = int(n.Int)
	}
	rt.Client = NewClient(opts)
	return rt, nil
}

// hostPort reads the address a section names; parse-time defaults have
// filled both for every instance the launcher starts.
func hostPort(section *tree.Node, instance string) (string, int, error) {
	h := section.Get(hostKey)
	if h == nil || h.Kind != tree.String || h.Str == "" {
		return "", 0, fmt.Errorf("server instance '%s' has no host: expected a string at %s.host, got %s", instance, instance, describe(h))
	}
	p := section.Get(portKey)
	port, ok := portNumber(p)
	if !ok {
		return "", 0, fmt.Errorf("server instance '%s' has no usable port: expected an integer 0-65535 at %s.port, got %s", instance, instance, describe(p))
	}
	return h.Str, port, nil
}

// portNumber accepts what NeMo Gym's config model accepts for a port: an
// int, or a string of digits such as ${oc.env:PORT} resolves to.
func portNumber(n *tree.Node) (int, bool) {
	var v int64
	switch {
	case n == nil:
		return 0, false
	case n.Kind == tree.Int:
		v = n.Int
	case n.Kind == tree.String:
		i, err := strconv.ParseInt(strings.TrimSpace(n.Str), 10, 32)
		if err != nil {
			return 0, false
		}
		v = i
	default:
		return 0, false
	}
	return int(v), v >= 0 && v <= 65535
}

func describe(n *tree.Node) string {
	if n == nil {
		return "nothing"
	}
	return n.Kind.String() + " " + n.GoString()
}

// Main is the body of the hidden `gym serve` command that the launcher runs
// for a Go implementation: read the runtime, build the registered
// component's handler and serve it until ctx ends.
func Main(ctx context.Context, lookupEnv func(string) (string, bool), stdout io.Writer) error {
	rt, err := fromEnv(lookupEnv, stdout)
	if err != nil {
		return err
	}
	factory, ok := Lookup(rt.Kind())
	if !ok {
		known := strings.Join(Kinds(), ", ")
		if known == "" {
			known = "none"
		}
		return fmt.Errorf("server instance '%s' is %s, which has no Go implementation in this binary (registered: %s)", rt.Instance, rt.Kind(), known)
	}
	h, err := factory(rt)
	if err != nil {
		return fmt.Errorf("%s '%s': %w", rt.Kind(), rt.Instance, err)
	}
	return Serve(ctx, rt, h, stdout)
}

// Serve runs h behind the common middleware on rt's host and port until ctx
// ends, then gives in-flight requests 0.5 s (uvicorn's graceful timeout in
// NeMo Gym) before cutting them off, and returns nil. A dry run returns at
// once without listening, as upstream children exit 0 after construction.
// Connections are served by gym's own HTTP/1.1 loop (h1Server), which hands
// the unusual ones to net/http's server.
func Serve(ctx context.Context, rt *Runtime, h http.Handler, stdout io.Writer) error {
	// Checked in a dry run too (NeMo Gym's reads them only after), since
	// a dry run is for finding such mistakes.
	if rt.serving.err != nil {
		return fmt.Errorf("%s '%s': %w", rt.Kind(), rt.Instance, rt.serving.err)
	}
	if rt.DryRun {
		return nil
	}
	tuneServerGC(os.LookupEnv)
	if !validCookieName(rt.ServerName()) {
		return fmt.Errorf("server name %q is not a valid cookie name: instance names must be HTTP tokens (letters, digits, _ - . and the like)", rt.ServerName())
	}
	logger := loggerOf(rt)
	files, err := raiseFileLimit(wantedFileLimit)
	if err != nil {
		logger.Warn("could not raise the open-file limit", "error", err)
	} else if files < wantedFileLimit {
		logger.Warn("the open-file limit is low for thousands of concurrent rollouts; raise the hard limit (ulimit -Hn)", "limit", files, "wanted", wantedFileLimit)
	}
	addr := net.JoinHostPort(rt.Host, strconv.Itoa(rt.Port))
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("%s '%s': listening on %s: %w", rt.Kind(), rt.Instance, addr, err)
	}
	var profiler *serverProfiler
	if rt.serving.profiling {
		// Under <Class>___<instance>, NeMo Gym's session key: the class is
		// known only now for a component built on gymserver.
		dir := filepath.Join(rt.serving.profileDir, rt.ServerName())
		if profiler, err = startProfiling(dir, rt.Instance, stdout); err != nil {
			ln.Close()
			return fmt.Errorf("%s '%s': %w", rt.Kind(), rt.Instance, err)
		}
		h = profiler.handler(h)
	}
	srv := &http.Server{
		Handler:  Wrap(rt, h),
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		// Request contexts outlive ctx's cancellation so in-flight requests
		// get their grace period instead of being cancelled at once.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	maxConns := connLimit(files)
	logger.Debug("connection limit", "max_conns", maxConns, "open_file_limit", files)
	port := ln.Addr().(*net.TCPAddr).Port
	ln = Harden(srv, ServeListener(ln, logger), maxConns)
	fmt.Fprintf(stdout, "%s '%s' listening on http://%s\n", rt.Kind(), rt.Instance, net.JoinHostPort(rt.Host, strconv.Itoa(port)))

	h1 := newH1Server(srv)
	served := make(chan error, 1)
	go func() { served <- h1.Serve(ln) }()
	select {
	case err := <-served:
		if stopErr := profiler.stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return fmt.Errorf("%s '%s': %w", rt.Kind(), rt.Instance, err)
	case <-ctx.Done():
	}
	graceCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := h1.Shutdown(graceCtx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			logger.Info("cutting off requests still running after the shutdown grace period", "grace", shutdownGrace)
		}
		h1.Close()
	}
	<-served
	if err := profiler.stop(); err != nil {
		return fmt.Errorf("%s '%s': %w", rt.Kind(), rt.Instance, err)
	}
	return nil
}

// ServeBare serves h on ln over the HTTP/1.1 loop Serve uses, with nothing
// around it (no middleware, session, connection limit or grace period),
// until ctx ends. It is the floor of gym's HTTP stack, for benchmarks that
// measure what a server's own work costs on top of it.
func ServeBare(ctx context.Context, ln net.Listener, h http.Handler) error {
	h1 := newH1Server(&http.Server{Handler: h})
	stop := context.AfterFunc(ctx, func() { h1.Close() })
	defer stop()
	err := h1.Serve(ln)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func loggerOf(rt *Runtime) *slog.Logger {
	if rt.Logger != nil {
		return rt.Logger
	}
	return slog.Default()
}

// ServerURL is http://host:port of another server instance, read from the
// global config the way a NeMo Gym ServerClient reads it: only host and port
// of <instance>.<type>.<impl> are resolved (in this process's environment),
// so an unrelated unresolvable value in that instance does not matter.
func ServerURL(global *tree.Node, instance string) (string, error) {
	section, _, _, err := config.InstanceSection(addressOnly(global, instance), instance, os.LookupEnv)
	if err != nil {
		return "", err
	}
	host, port, err := hostPort(section, instance)
	if err != nil {
		return "", err
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// addressOnly returns global with instance's implementation block cut down
// to host and port. It copies only the spine it changes, so global is left
// untouched; anything that is not a server block is returned as is, for
// InstanceSection to report.
func addressOnly(global *tree.Node, instance string) *tree.Node {
	block := global.Get(instance)
	if block == nil || block.Kind != tree.Map || block.Len() == 0 {
		return global
	}
	typ := block.Entries[0]
	if typ.Value.Kind != tree.Map || typ.Value.Len() == 0 {
		return global
	}
	impl := typ.Value.Entries[0]
	if impl.Value.Kind != tree.Map {
		return global
	}
	addr := tree.NewMap()
	for _, k := range []string{hostKey, portKey} {
		if v := impl.Value.Get(k); v != nil {
			addr.Set(k, v)
		}
	}
	implMap := tree.NewMap()
	implMap.SetEntry(tree.Entry{Key: impl.Key, KeyKind: impl.KeyKind, Value: addr})
	typeMap := tree.NewMap()
	typeMap.SetEntry(tree.Entry{Key: typ.Key, KeyKind: typ.KeyKind, Value: implMap})
	g := tree.NewMap()
	for _, e := range global.Entries {
		g.SetEntry(e)
	}
	g.SetEntry(tree.Entry{Key: instance, KeyKind: tree.String, Value: typeMap})
	return g
}
