package progress

import (
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

const (
	// redrawEvery throttles redraws driven by Add: faster is invisible and costs CPU.
	redrawEvery = 100 * time.Millisecond
	// refreshEvery keeps the rate and ETA current while no rollout finishes, which with
	// minutes-long rollouts is most of the time.
	refreshEvery = time.Second
	// barWidth leaves room for the description on an 80-column terminal; the library
	// narrows the bar further on smaller ones.
	barWidth = 20
)

// barReporter draws a progressbar.ProgressBar whose description carries the figures. The
// library's own rate and ETA are off: they would count resumed rollouts as this run's.
type barReporter struct {
	out   io.Writer
	now   func() time.Time
	title string // only for the line written instead of an empty bar

	mu                sync.Mutex
	t                 tally
	started, finished bool
	bar               *progressbar.ProgressBar // nil when total is 0: an empty bar says nothing a line cannot
	drawnAt           time.Time
	buf               []byte
	stop, stopped     chan struct{}
}

func (r *barReporter) Start(total, alreadyDone int) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return
	}
	r.started = true
	r.t = tally{total: total, already: alreadyDone, done: alreadyDone, start: now}
	if total <= 0 {
		return
	}
	r.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(r.out),
		progressbar.OptionSetWidth(barWidth),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionShowDescriptionAtLineEnd(),
	)
	r.draw(now, false)
	r.stop, r.stopped = make(chan struct{}), make(chan struct{})
	go r.refresh(r.stop, r.stopped)
}

func (r *barReporter) Add(o Outcome) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started || r.finished {
		return
	}
	r.t.add(o)
	if r.bar != nil && now.Sub(r.drawnAt) >= redrawEvery {
		r.draw(now, false)
	}
}

func (r *barReporter) Finish() {
	now := r.now()
	r.mu.Lock()
	if !r.started || r.finished {
		r.mu.Unlock()
		return
	}
	r.finished = true
	if r.bar == nil {
		r.buf = appendPlain(r.buf[:0], r.title, &r.t, r.t.figures(now), true)
		_, _ = r.out.Write(r.buf)
	} else {
		r.draw(now, true)
		_ = r.bar.Exit()
		// The bar leaves the cursor on its own line; later output starts below it.
		_, _ = io.WriteString(r.out, "\n")
	}
	stop := r.stop
	r.mu.Unlock()
	if stop != nil {
		close(stop)
		<-r.stopped
	}
}

// draw updates the bar and its description; r.mu is held.
func (r *barReporter) draw(now time.Time, final bool) {
	r.drawnAt = now
	// Set first: it renders only when the percentage changes, and Describe always renders,
	// so the screen ends with both new.
	_ = r.bar.Set(min(r.t.done, r.t.total))
	b := appendCount(r.buf[:0], &r.t)
	r.buf = appendStats(b, &r.t, r.t.figures(now), final, "/s")
	r.bar.Describe(string(r.buf))
}

func (r *barReporter) refresh(stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	tick := time.NewTicker(refreshEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			now := r.now()
			r.mu.Lock()
			if !r.finished && now.Sub(r.drawnAt) >= redrawEvery {
				r.draw(now, false)
			}
			r.mu.Unlock()
		}
	}
}
