package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"sync"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// NeMo Gym's server profiling switches, top-level keys of the config.
const (
	profilingEnabledKey = "profiling_enabled"
	profilingDirKey     = "profiling_results_dirpath"
)

// profilingDir reads profiling_enabled and profiling_results_dirpath as
// NeMo Gym's servers read them (pydantic's bool, an optional string):
// whether profiling is on, and the directory the server's profile goes
// under (relative to the server's own). NeMo Gym fails on a missing
// directory only when it first joins it to a path; gym says so before the
// server starts.
func profilingDir(global *tree.Node, lookupEnv func(string) (string, bool)) (dir string, on bool, err error) {
	enabled, err := config.ResolveGlobal(global, profilingEnabledKey, lookupEnv)
	if err != nil {
		return "", false, err
	}
	if on, err = config.LaxBool(enabled); err != nil {
		return "", false, fmt.Errorf("%s: %w", profilingEnabledKey, err)
	}
	if !on {
		return "", false, nil
	}
	n, err := config.ResolveGlobal(global, profilingDirKey, lookupEnv)
	switch {
	case err != nil:
		return "", false, err
	case n == nil || n.Kind == tree.Null:
		return "", false, fmt.Errorf("%s is true but %s is not set: name the directory the servers' profiles go under (+%s=profiles, say)", profilingEnabledKey, profilingDirKey, profilingDirKey)
	case n.Kind != tree.String:
		return "", false, fmt.Errorf("%s: Input should be a valid string, got %s", profilingDirKey, describe(n))
	}
	return n.Str, true, nil
}

// serverProfiler is profiling_enabled for a Go server: a CPU profile from
// the moment the server listens to its shutdown, in pprof's format (`go
// tool pprof`), where NeMo Gym's Python servers write yappi's statistics.
// GET /stats writes what was profiled so far, as NeMo Gym's does; since
// Go's CPU profile is written only when it stops, each write ends a period
// and the next period goes to the next file: <name>-1.pprof, <name>-2.pprof
// and so on, which `go tool pprof` reads together as one profile.
type serverProfiler struct {
	dir, name string
	out       io.Writer // the server's standard output, where NeMo Gym prints its profiler's lines

	mu      sync.Mutex
	periods int
	file    *os.File // the running period's; nil once stopped
}

// startProfiling makes dir and starts the first period's profile.
func startProfiling(dir, name string, out io.Writer) (*serverProfiler, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", profilingDirKey, err)
	}
	p := &serverProfiler{dir: dir, name: name, out: out}
	if err := p.begin(); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "🔍 Enabled profiling for %s\n", name)
	return p, nil
}

func (p *serverProfiler) begin() error {
	p.periods++
	path := filepath.Join(p.dir, p.name+"-"+strconv.Itoa(p.periods)+".pprof")
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s: %w", profilingDirKey, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("profiling %s: %w", p.name, err)
	}
	p.file = f
	return nil
}

// end writes the running period's profile.
func (p *serverProfiler) end() error {
	pprof.StopCPUProfile()
	err := p.file.Close()
	p.file = nil
	return err
}

// dump writes the profile so far and goes on profiling into the next file.
func (p *serverProfiler) dump() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.file == nil {
		return errors.New("the profiler has stopped")
	}
	if err := p.end(); err != nil {
		return err
	}
	return p.begin()
}

// stop writes the last period's profile; a nil profiler (profiling off)
// has none.
func (p *serverProfiler) stop() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.file == nil {
		return nil
	}
	fmt.Fprintf(p.out, "🛑 Stopping profiler for %s. Check %s for the metrics!\n", p.name, p.dir)
	if err := p.end(); err != nil {
		return fmt.Errorf("writing the profile: %w", err)
	}
	return nil
}

// handler serves GET /stats as NeMo Gym's profiling route does (an empty
// 200 once the profile is written; FastAPI's 405 for another method) and
// hands every other request to next.
func (p *serverProfiler) handler(next http.Handler, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stats" {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeJSON(w, http.StatusMethodNotAllowed, []byte(`{"detail":"Method Not Allowed"}`))
			return
		}
		if err := p.dump(); err != nil {
			logger.Error("writing the profile", "error", err)
			writeJSON(w, http.StatusInternalServerError, jsonString("An unknown error occurred"))
			return
		}
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	})
}
