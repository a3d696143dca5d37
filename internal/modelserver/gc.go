package modelserver

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// gcHeapBudget is the heap a model server may grow to between collections
// while what it holds live is small. A proxy's live heap is a few MiB (the
// requests in flight), so at GOGC's default it collects every few MiB of
// garbage — every few hundred requests — and each collection scans the
// stacks of every connection's goroutines. With the budget it collects an
// order of magnitude less often. Once the live heap passes half the budget
// (thousands of requests in flight) GOGC's default applies again, so the
// peak memory of a large burst is what it was.
const gcHeapBudget = 64 << 20

var tuneGCOnce sync.Once

// tuneGC keeps the process's heap target at gcHeapBudget while the live
// heap is small, by setting GOGC after every collection from the live heap
// it found. A GOGC in the environment is the user's choice and is left as
// it is.
func tuneGC() {
	tuneGCOnce.Do(func() {
		if _, set := os.LookupEnv("GOGC"); set {
			return
		}
		t := &gcTuner{budget: gcHeapBudget, percent: 100, live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, set: debug.SetGCPercent}
		t.adjust()
		t.arm()
	})
}

type gcTuner struct {
	budget  uint64
	percent int
	live    []metrics.Sample
	set     func(percent int) int // debug.SetGCPercent
}

// gcSentinel is garbage the moment it is made; its finalizer runs after
// the collection that finds it, and arms the next one. It holds a pointer
// so that it is not batched with other tiny objects, whose finalizers may
// never run.
type gcSentinel struct{ _ *byte }

func (t *gcTuner) arm() {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		t.adjust()
		t.arm()
	})
}

// adjust sets GOGC from the live heap the last collection found.
// Finalizers run one at a time, so t needs no lock.
func (t *gcTuner) adjust() {
	metrics.Read(t.live)
	if percent := gcPercentFor(t.live[0].Value.Uint64(), t.budget); percent != t.percent {
		t.set(percent)
		t.percent = percent
	}
}

// gcPercentFor is the GOGC that puts the next collection at budget for a
// live heap of live bytes (counted as at least 1 MiB), and GOGC's default
// of 100 from half the budget on.
func gcPercentFor(live, budget uint64) int {
	if live >= budget/2 {
		return 100
	}
	return int(budget*100/max(live, 1<<20)) - 100
}
