package server

import (
	"fmt"
	"io"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Top-level keys of the config that change how Serve serves.
const (
	profilingEnabledKey = "profiling_enabled"
	profilingDirKey     = "profiling_results_dirpath"
	accessLogKey        = "uvicorn_logging_show_200_ok"
)

// serveSettings are those keys as a server read them, and what was wrong
// with them, which Serve reports: a handler built in process (gym eval
// aggregate's metrics) serves nothing and need not fail on them.
type serveSettings struct {
	profiling  bool
	profileDir string    // relative to the server's own directory
	accessLog  io.Writer // where the access log goes, the server's standard output; nil when off
	err        error
}

// readServeSettings reads the keys as NeMo Gym's servers validate them, the
// access log going to out when it is on:
// profiling_enabled and uvicorn_logging_show_200_ok as pydantic's bools,
// profiling_results_dirpath as an optional string, each checked whatever
// the others say; only the missing directory of a profiling server, which
// NeMo Gym fails on with a TypeError, gets gym's own words.
func readServeSettings(global *tree.Node, lookupEnv func(string) (string, bool), out io.Writer) serveSettings {
	var s serveSettings
	var err error
	if s.profiling, err = pydanticBool(global, profilingEnabledKey, lookupEnv); err != nil {
		return serveSettings{err: err}
	}
	accessLog, err := pydanticBool(global, accessLogKey, lookupEnv)
	if err != nil {
		return serveSettings{err: err}
	}
	if accessLog {
		s.accessLog = out
	}
	dir, err := config.ResolveGlobal(global, profilingDirKey, lookupEnv)
	switch {
	case err != nil:
		return serveSettings{err: err}
	case dir != nil && dir.Kind != tree.Null && dir.Kind != tree.String:
		return serveSettings{err: fmt.Errorf("%s: Input should be a valid string, got %s", profilingDirKey, describe(dir))}
	case s.profiling && (dir == nil || dir.Kind == tree.Null):
		return serveSettings{err: fmt.Errorf("%s is true but %s is not set: name the directory the servers' profiles go under (+%s=profiles, say)", profilingEnabledKey, profilingDirKey, profilingDirKey)}
	case s.profiling:
		s.profileDir = dir.Str
	}
	return s
}

// pydanticBool reads a top-level key as a pydantic bool field defaulting
// to false: absent is false, null is an error, as anything else pydantic
// will not read as a bool.
func pydanticBool(global *tree.Node, key string, lookupEnv func(string) (string, bool)) (bool, error) {
	n, err := config.ResolveGlobal(global, key, lookupEnv)
	switch {
	case err != nil || n == nil:
		return false, err
	case n.Kind == tree.Null: // which LaxBool reads as false
		return false, fmt.Errorf("%s: Input should be a valid boolean", key)
	}
	v, err := config.LaxBool(n)
	if err != nil {
		return false, fmt.Errorf("%s: %w", key, err)
	}
	return v, nil
}
