package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"

	"github.com/nemo-gym-go/gym/internal/cpuprofile"
	"github.com/nemo-gym-go/gym/internal/jsonl"
)

// serverProfiler is profiling_enabled for a Go server: a CPU profile from
// the moment the server listens to its shutdown. NeMo Gym's Python servers
// write yappi's statistics; a Go server writes its CPU profile in pprof's
// format (`go tool pprof`), and beside it <name>.log, a table of CPU time
// per function in the layout of yappi's, over the whole run so far. GET
// /stats writes both, as NeMo Gym's does; since Go writes a CPU profile
// only when it stops, each write ends a period and the period's profile
// goes to a file of its own: <name>-1.pprof, <name>-2.pprof and so on,
// which `go tool pprof` reads together as one profile.
type serverProfiler struct {
	dir, name string
	out       io.Writer // the server's standard output, where NeMo Gym prints its profiler's lines

	mu      sync.Mutex
	periods int           // started so far
	running *bytes.Buffer // the running period's profile; nil between a failed start and the next
	stopped bool
	tally   cpuprofile.Tally
	lost    error // why a period could not start, said again as the server stops
}

// startProfiling makes dir, takes the place of a previous run's files (as
// NeMo Gym's first write overwrites its) and starts the first period.
func startProfiling(dir, name string, out io.Writer) (*serverProfiler, error) {
	// The absolute path is for the line that says where the profile is;
	// the relative one works as well if there is none.
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", profilingDirKey, err)
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

// begin starts the next period's profile, in memory until it ends.
func (p *serverProfiler) begin() error {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return fmt.Errorf("profiling %s: another CPU profile is already running in this process: %w", p.name, err)
	}
	p.periods++
	p.running = &buf
	return nil
}

// end writes the running period's profile and the log of all periods,
// making the directory again if it went, as NeMo Gym's profiler makes it
// at each write. The period counts in the log even when its file could not
// be written.
func (p *serverProfiler) end() error {
	if p.running == nil {
		return nil
	}
	pprof.StopCPUProfile()
	data := p.running.Bytes()
	p.running = nil
	var errs []error
	if err := p.tally.Add(data); err != nil {
		errs = append(errs, fmt.Errorf("reading period %d's profile for %s.log: %w", p.periods, p.name, err))
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		errs = append(errs, fmt.Errorf("period %d's profile was not written: %s: %w", p.periods, profilingDirKey, err))
		return errors.Join(errs...)
	}
	if err := p.write(p.name+"-"+strconv.Itoa(p.periods)+".pprof", data); err != nil {
		errs = append(errs, fmt.Errorf("period %d's profile was not written: %w", p.periods, err))
	}
	var table bytes.Buffer
	p.tally.WriteTable(&table)
	if err := p.write(p.name+".log", table.Bytes()); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// write puts one of the profiler's files in its directory whole
// (jsonl.WriteFileAtomic), so that another server writing the same names
// (a second run given the same directory) never mixes its bytes in.
func (p *serverProfiler) write(name string, data []byte) error {
	err := jsonl.WriteFileAtomic(filepath.Join(p.dir, name), func(w *bufio.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: writing %s: %w", profilingDirKey, name, err)
	}
	return nil
}

// dump writes the profile so far and goes on profiling into the next
// period. A period that could not start is tried again here.
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
