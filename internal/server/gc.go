package server

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// HeapBudget is the heap a server process (or rollout collection) may grow
// to between collections while what it holds live is small. Its live heap
// is a few MiB (the requests in flight), so at GOGC's default it collects
// every few MiB of garbage — every few hundred requests — and each
// collection scans the stacks of every connection's goroutines. With the
// budget it collects an order of magnitude less often. Once the live heap
// passes half the budget (thousands of requests in flight) GOGC's default
// applies again, so the peak memory of a large burst is what it was.
const HeapBudget = 64 << 20

// TunesGC is whether gym tunes the collector: not when the user chose with
// GOGC.
func TunesGC(lookupEnv func(string) (string, bool)) bool {
	_, set := lookupEnv("GOGC")
	return !set
}

var serverGCOnce sync.Once

// tuneServerGC keeps a server process's heap target at HeapBudget for the
// life of the process, unless GOGC is set.
func tuneServerGC(lookupEnv func(string) (string, bool)) {
	if TunesGC(lookupEnv) {
		serverGCOnce.Do(func() { StartGCBudget(HeapBudget) })
	}
}

// StartGCBudget keeps the process's heap target at budget while the live
// heap is small, by setting GOGC after every collection from the live heap
// it found, until stop; stop gives back the GOGC the process had.
func StartGCBudget(budget uint64) (stop func()) {
	return startGCBudget(budget, debug.SetGCPercent)
}

func startGCBudget(budget uint64, setGCPercent func(int) int) (stop func()) {
	t := &gcTuner{budget: budget, percent: -1, live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, set: setGCPercent}
	before := setGCPercent(100)
	setGCPercent(before)
	t.adjust()
	t.arm()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.stopped.Store(true)
		setGCPercent(before)
	}
}

type gcTuner struct {
	mu      sync.Mutex // an adjust racing stop must not set GOGC after it
	budget  uint64
	percent int
	live    []metrics.Sample
	set     func(percent int) int // debug.SetGCPercent
	stopped atomic.Bool
}

// gcSentinel is garbage the moment it is made; its finalizer runs after
// the collection that finds it, and arms the next one. It holds a pointer
// so that it is not batched with other tiny objects, whose finalizers may
// never run.
type gcSentinel struct{ _ *byte }

func (t *gcTuner) arm() {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		if t.stopped.Load() {
			return
		}
		t.adjust()
		t.arm()
	})
}

// adjust sets GOGC from the live heap the last collection found.
func (t *gcTuner) adjust() {
	t.mu.Lock()
	defer t.mu.Unlock()
	metrics.Read(t.live)
	if percent := gcPercentFor(t.live[0].Value.Uint64(), t.budget); percent != t.percent && !t.stopped.Load() {
		t.set(percent)
		t.percent = percent
	}
}

// gcPercentFor is the GOGC that puts the next collection at budget for a
// live heap of live bytes, and never less than GOGC's default of 100, which
// applies from half the budget on. The live heap is counted as at least the runtime's 4 MiB heap
// minimum, which GOGC scales too: counted smaller, the first collection of
// a process (nothing live yet) would wait for budget × budget/live.
func gcPercentFor(live, budget uint64) int {
	if live >= budget/2 {
		return 100
	}
	return max(100, int(budget*100/max(live, runtimeHeapMinimum))-100)
}

// runtimeHeapMinimum is the heap the runtime lets grow before its first
// collection at GOGC=100 (Go's defaultHeapMinimum).
const runtimeHeapMinimum = 4 << 20
