package server

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	const budget = 64 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 1500},       // counted as 4 MiB: the first collection at 64 MiB, not 4 MiB × 63
		{1 << 20, 1500}, // 1 MiB live: likewise
		{4 << 20, 1500},
		{16 << 20, 300},
		{31 << 20, 106},
		{32 << 20, 100}, // half the budget: GOGC's default from here on
		{1 << 30, 100},
	} {
		if got := gcPercentFor(tc.live, budget); got != tc.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", tc.live>>20, got, tc.want)
		}
	}
	// A budget under twice the heap minimum never turns collection down.
	if got := gcPercentFor(1<<20, 6<<20); got != 100 {
		t.Errorf("gcPercentFor(1 MiB) under a 6 MiB budget = %d, want 100", got)
	}
}

// TestGCTunerFollowsCollections checks the tuner's chain of finalizers: a
// collection runs it, it sets GOGC from the live heap that collection
// found, and it stays armed for the next one.
func TestGCTunerFollowsCollections(t *testing.T) {
	set := make(chan int, 1)
	tuner := &gcTuner{budget: 1 << 40, percent: 100, live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}},
		set: func(p int) int {
			select {
			case set <- p:
			default:
			}
			return 0
		}}
	tuner.arm()
	wait := func() int {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			runtime.GC()
			select {
			case p := <-set:
				return p
			case <-time.After(10 * time.Millisecond):
			}
		}
		t.Fatal("no collection ran the tuner within 10 s")
		return 0
	}
	// This test binary's live heap is far below a 1 TiB budget.
	if p := wait(); p < 1000 {
		t.Fatalf("GOGC set to %d, want the budget's (thousands)", p)
	}
	// Still armed: a smaller budget gets a new GOGC at a later collection.
	tuner.budget = 2 << 20
	if p := wait(); p != 100 {
		t.Fatalf("GOGC set to %d, want the default 100 once the live heap passes half the budget", p)
	}
}
