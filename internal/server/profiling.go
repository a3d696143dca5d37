package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/cpuprofile"
)

// NeMo Gym's server profiling switches, top-level keys of the config.
const (
	profilingEnabledKey = "profiling_enabled"
	profilingDirKey     = "profiling_results_dirpath"
)

// profilingSettings are the two keys as a server read them: on, the
// directory its profile goes under (relative to the server's own), and
// what was wrong with them, which Serve reports: a handler built in
// process (gym eval aggregate's metrics) profiles nothing and need not
// fail on it.
type profilingSettings struct {
	on  bool
	dir string
	err error
}

// readProfiling reads profiling_enabled and profiling_results_dirpath as
// NeMo Gym's servers validate them, a bool and an optional string, both
// checked whether profiling is on or not; only the missing directory of a
// profiling server, which NeMo Gym fails on with a TypeError, gets gym's
// own words.
func readProfiling(global *tree.Node, lookupEnv func(string) (string, bool)) profilingSettings {
	enabled, err := config.ResolveGlobal(global, profilingEnabledKey, lookupEnv)
	if err != nil {
		return profilingSettings{err: err}
	}
	var on bool
	if enabled != nil {
		var ok bool
		if on, ok = config.LaxBoolOK(enabled); !ok {
			_, err := config.LaxBool(enabled)
			if err == nil { // null, which LaxBool reads as false
				err = errors.New("Input should be a valid boolean")
			}
			return profilingSettings{err: fmt.Errorf("%s: %w", profilingEnabledKey, err)}
		}
	}
	dir, err := config.ResolveGlobal(global, profilingDirKey, lookupEnv)
	switch {
	case err != nil:
		return profilingSettings{err: err}
	case dir != nil && dir.Kind != tree.Null && dir.Kind != tree.String:
		return profilingSettings{err: fmt.Errorf("%s: Input should be a valid string, got %s", profilingDirKey, describe(dir))}
	case on && (dir == nil || dir.Kind == tree.Null):
		return profilingSettings{err: fmt.Errorf("%s is true but %s is not set: name the directory the servers' profiles go under (+%s=profiles, say)", profilingEnabledKey, profilingDirKey, profilingDirKey)}
	case !on:
		return profilingSettings{}
	}
	return profilingSettings{on: true, dir: dir.Str}
}

// serverProfiler is profiling_enabled for a Go server: a CPU profile from
// the moment the server listens to its shutdown. NeMo Gym's Python servers
// write yappi's statistics; a Go server writes its CPU profile in pprof's
// format (`go tool pprof`), and beside it <name>.log, the table of CPU
// time per function NeMo Gym's log has, over the whole run so far. GET
// /stats writes both, as NeMo Gym's does; since Go writes a CPU profile
// only when it stops, each write ends a period and the next period goes to
// the next file: <name>-1.pprof, <name>-2.pprof and so on, which `go tool
// pprof` reads together as one profile.
type serverProfiler struct {
	dir, name string
	out       io.Writer // the server's standard output, where NeMo Gym prints its profiler's lines

	mu      sync.Mutex
	periods int
	running *os.File // the running period's file; nil between a failed start and the next
	stopped bool
	tally   cpuprofile.Tally
	lost    error // why a period could not start, said again as the server stops
}

// startProfiling starts the first period's profile in dir, taking the
// place of a previous run's files, as NeMo Gym's overwrite theirs.
func startProfiling(dir, name string, out io.Writer) (*serverProfiler, error) {
	// The absolute path is for the line that says where the profile is;
	// the relative one works as well if there is none.
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	p := &serverProfiler{dir: dir, name: name, out: out}
	if err := p.removePrevious(); err != nil {
		return nil, err
	}
	if err := p.begin(); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "🔍 Enabled profiling for %s\n", name)
	return p, nil
}

// removePrevious removes the files a previous run of this server left, so
// that what the directory holds is this run's.
func (p *serverProfiler) removePrevious() error {
	entries, err := os.ReadDir(p.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", profilingDirKey, err)
	}
	for _, e := range entries {
		if p.isOwnFile(e.Name()) {
			if err := os.Remove(filepath.Join(p.dir, e.Name())); err != nil {
				return fmt.Errorf("%s: removing a previous run's profile: %w", profilingDirKey, err)
			}
		}
	}
	return nil
}

// isOwnFile is whether name is <name>.log or <name>-<k>.pprof.
func (p *serverProfiler) isOwnFile(name string) bool {
	if name == p.name+".log" {
		return true
	}
	k, ok := strings.CutPrefix(name, p.name+"-")
	if k, ok = strings.CutSuffix(k, ".pprof"); !ok {
		return false
	}
	n, err := strconv.Atoi(k)
	return err == nil && n > 0 && strconv.Itoa(n) == k
}

// begin starts the next period, making the directory again if it went.
func (p *serverProfiler) begin() error {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", profilingDirKey, err)
	}
	path := filepath.Join(p.dir, p.name+"-"+strconv.Itoa(p.periods+1)+".pprof")
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s: %w", profilingDirKey, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("profiling %s: another CPU profile is already running in this process: %w", p.name, err)
	}
	p.periods++
	p.running = f
	return nil
}

// end writes the running period's profile and the log of all periods.
func (p *serverProfiler) end() error {
	if p.running == nil {
		return nil
	}
	pprof.StopCPUProfile()
	f := p.running
	p.running = nil
	// Read back through the descriptor: the file may have gone with its
	// directory during the period.
	_, err := f.Seek(0, io.SeekStart)
	var data []byte
	if err == nil {
		data, err = io.ReadAll(f)
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	if _, err := os.Stat(f.Name()); errors.Is(err, fs.ErrNotExist) {
		if err := p.write(filepath.Base(f.Name()), data); err != nil {
			return err
		}
	}
	if err := p.tally.Add(data); err != nil {
		return fmt.Errorf("reading back %s: %w", f.Name(), err)
	}
	var table bytes.Buffer
	p.tally.WriteTable(&table)
	return p.write(p.name+".log", table.Bytes())
}

// write writes one of the profiler's files, making the directory again if
// it went, as NeMo Gym's profiler does at each write.
func (p *serverProfiler) write(name string, data []byte) error {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", profilingDirKey, err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, name), data, 0o644); err != nil {
		return fmt.Errorf("%s: %w", profilingDirKey, err)
	}
	return nil
}

// dump writes the profile so far and goes on profiling into the next file.
// A period that could not start is tried again here.
func (p *serverProfiler) dump() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return errors.New("the server is stopping: its profile is written as it stops")
	}
	err := p.end()
	if startErr := p.begin(); startErr != nil {
		p.lost = startErr
		err = errors.Join(err, fmt.Errorf("%w; the server runs unprofiled until the next GET /stats starts a profile", startErr))
	}
	return err
}

// stop writes the last period's profile; a nil profiler (profiling off)
// has none.
func (p *serverProfiler) stop() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return nil
	}
	p.stopped = true
	fmt.Fprintf(p.out, "🛑 Stopping profiler for %s. Check %s for the metrics!\n", p.name, p.dir)
	if p.lost != nil {
		fmt.Fprintf(p.out, "Part of the run went unprofiled: %v\n", p.lost)
	}
	if err := p.end(); err != nil {
		return fmt.Errorf("writing the profile: %w", err)
	}
	return nil
}

// handler serves GET /stats as NeMo Gym's profiling route does (an empty
// 200 once the profile is written, FastAPI's 405 for another method, an
// error as any handler's) and hands every other request to next.
func (p *serverProfiler) handler(next http.Handler) http.Handler {
	stats := Handle(func(w http.ResponseWriter, r *http.Request) error {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			writeJSON(w, http.StatusMethodNotAllowed, []byte(`{"detail":"Method Not Allowed"}`))
			return nil
		}
		if err := p.dump(); err != nil {
			return err
		}
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
		return nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stats" {
			stats.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
