package progress

import (
	"io"
	"sync"
	"time"
)

// lineReporter writes plain or JSON lines, deciding on each Add whether one is due, so it
// needs no goroutine of its own.
type lineReporter struct {
	out      io.Writer
	now      func() time.Time
	title    string
	json     bool
	steps    int // a line is due each time done crosses total/steps
	interval time.Duration
	minGap   time.Duration

	mu                sync.Mutex
	t                 tally
	started, finished bool
	lastAt            time.Time
	lastStep          int
	buf               []byte
}

func (r *lineReporter) Start(total, alreadyDone int) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return
	}
	r.started = true
	r.t = tally{total: total, already: alreadyDone, done: alreadyDone, start: now}
	r.lastAt = now
	r.lastStep = r.step(alreadyDone)
}

func (r *lineReporter) Add(o Outcome) {
	// Read the clock before locking to keep the critical section short; an Add that reads an
	// earlier time than the last line only finds no line due.
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started || r.finished {
		return
	}
	r.t.add(o)
	if r.due(now) {
		r.write(now, false)
	}
}

func (r *lineReporter) Finish() {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started || r.finished {
		return
	}
	r.finished = true
	r.write(now, true)
}

func (r *lineReporter) step(done int) int {
	if r.t.total <= 0 {
		return 0
	}
	return int(int64(done) * int64(r.steps) / int64(r.t.total))
}

// due reports whether a line is owed for the current done count. Every Add raises done by
// one and writes at most one line, so no count is ever written twice. Completion is left to
// Finish, whose final line would otherwise repeat the last one.
func (r *lineReporter) due(now time.Time) bool {
	if r.t.done >= r.t.total {
		return false
	}
	since := now.Sub(r.lastAt)
	if since < r.minGap {
		return false
	}
	return since >= r.interval || r.step(r.t.done) > r.lastStep
}

func (r *lineReporter) write(now time.Time, final bool) {
	f := r.t.figures(now)
	if r.json {
		r.buf = appendJSON(r.buf[:0], &r.t, f, final)
	} else {
		r.buf = appendPlain(r.buf[:0], r.title, &r.t, f, final)
	}
	// A display that cannot be written must not fail the run it describes.
	_, _ = r.out.Write(r.buf)
	r.lastAt = now
	r.lastStep = r.step(r.t.done)
}
