// Package progress shows how far rollout collection has got: a live bar on a terminal,
// sparse plain lines in CI logs, or JSON lines for tools that watch a run.
//
// Every mode reports the same figures: done/total, this run's rate and ETA, the mean reward
// of the rollouts that have one, and the number of failed rollouts. Rollouts finished by an
// earlier run (resume) count toward done but not toward the rate, so the ETA is not flattered
// by work that took no time in this run.
package progress

import (
	"io"
	"math"
	"strconv"
	"time"
)

// Outcome is the result of one finished rollout.
type Outcome struct {
	Reward    float64
	HasReward bool
	// Failed rollouts count as failures and never toward the mean reward, even with a reward.
	Failed bool
}

// Reporter receives the progress of one collection run. All methods are safe for concurrent
// use. Start comes first; Add and Finish before Start do nothing, so a Reporter can be
// created and its Finish deferred before the run knows its size.
type Reporter interface {
	// Start begins a run of total rollouts of which alreadyDone were finished by an earlier
	// run. Calls after the first are ignored.
	Start(total, alreadyDone int)
	// Add records one finished rollout. It is cheap enough to call for every rollout.
	Add(o Outcome)
	// Finish writes the final state and stops the terminal bar's refresher, so every
	// started Reporter needs it. Later calls, and Adds after it, do nothing.
	Finish()
}

// Mode selects how progress is shown.
type Mode int

const (
	// Plain writes a line every Interval or at every 5 % of the total, whichever comes first.
	// It is the zero value because it reads well anywhere, terminal or log file.
	Plain Mode = iota
	// Terminal draws a live bar that redraws in place.
	Terminal
	// JSON writes one JSON object per line, at most once a second, every Interval or at
	// every 1 % of the total.
	JSON
	// None writes nothing.
	None
)

func (m Mode) String() string {
	switch m {
	case Plain:
		return "plain"
	case Terminal:
		return "terminal"
	case JSON:
		return "json"
	case None:
		return "none"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Options configures New.
type Options struct {
	// Out receives the display; nil means None. A terminal bar drawn on a
	// *Screen shares it with the Screen's other writers.
	Out  io.Writer
	Mode Mode
	// Title prefixes plain lines, e.g. "Collecting rollouts". The terminal bar leaves it out
	// to fit an 80-column line; JSON has no place for it.
	Title string
	// Now is the clock; nil means time.Now. It may be called from several goroutines.
	Now func() time.Time
	// Interval is the longest gap between plain or JSON lines while rollouts keep finishing;
	// zero or less means 10s.
	Interval time.Duration
}

const (
	defaultInterval = 10 * time.Second
	// jsonMinGap keeps a fast run from flooding a consumer with an object per 1 % step.
	jsonMinGap = time.Second
)

// timing is o's clock and interval between plain lines, defaulted.
func (o Options) timing() (func() time.Time, time.Duration) {
	now, interval := o.Now, o.Interval
	if now == nil {
		now = time.Now
	}
	if interval <= 0 {
		interval = defaultInterval
	}
	return now, interval
}

// New returns the Reporter for o.Mode writing to o.Out.
func New(o Options) Reporter {
	if o.Out == nil || o.Mode == None {
		return silent{}
	}
	now, interval := o.timing()
	switch o.Mode {
	case Terminal:
		out := o.Out
		if s, ok := out.(*Screen); ok {
			out = statusWriter{s}
		}
		return &barReporter{out: out, now: now, title: o.Title}
	case JSON:
		return &lineReporter{out: o.Out, now: now, json: true, steps: 100, interval: interval, minGap: jsonMinGap}
	default:
		return &lineReporter{out: o.Out, now: now, title: o.Title, steps: 20, interval: interval}
	}
}

type silent struct{}

func (silent) Start(int, int) {}
func (silent) Add(Outcome)    {}
func (silent) Finish()        {}

// tally holds the counts every mode shows; its owner guards it.
type tally struct {
	total, already, done int
	failed, rewarded     int
	rewardSum            float64
	start                time.Time
}

func (t *tally) add(o Outcome) {
	t.done++
	switch {
	case o.Failed:
		t.failed++
	case o.HasReward:
		t.rewarded++
		t.rewardSum += o.Reward
	}
}

// figures are the derived numbers of a tally at one instant.
type figures struct {
	elapsed   time.Duration
	rate      float64 // rollouts per second finished by this run
	etaS      float64 // seconds; meaningful when etaKnown
	etaKnown  bool
	mean      float64
	meanKnown bool
}

func (t *tally) figures(now time.Time) figures {
	f := figures{elapsed: now.Sub(t.start)}
	if s := f.elapsed.Seconds(); s > 0 {
		f.rate = float64(t.done-t.already) / s
	}
	switch remaining := t.total - t.done; {
	case remaining <= 0:
		f.etaKnown = true
	case f.rate > 0:
		f.etaS = float64(remaining) / f.rate
		f.etaKnown = true
	}
	if t.rewarded > 0 {
		f.mean = t.rewardSum / float64(t.rewarded)
		f.meanKnown = true
	}
	return f
}

func (t *tally) percent() float64 {
	if t.total <= 0 {
		return 100 // nothing to do is all done
	}
	return 100 * float64(t.done) / float64(t.total)
}

// appendPlain appends a plain line such as
// "Collecting rollouts: 500/10000 (5.0%) | 123.4 rollouts/s | ETA 1m17s | mean reward 0.734 | 3 failed".
// The final line shows the elapsed time instead of the ETA.
func appendPlain(b []byte, title string, t *tally, f figures, final bool) []byte {
	if title != "" {
		b = append(b, title...)
		b = append(b, ": "...)
	}
	b = appendCount(b, t)
	b = append(b, " ("...)
	b = strconv.AppendFloat(b, t.percent(), 'f', 1, 64)
	b = append(b, "%)"...)
	b = appendStats(b, t, f, final, " rollouts/s")
	return append(b, '\n')
}

func appendCount(b []byte, t *tally) []byte {
	b = strconv.AppendInt(b, int64(t.done), 10)
	b = append(b, '/')
	return strconv.AppendInt(b, int64(t.total), 10)
}

func appendStats(b []byte, t *tally, f figures, final bool, rateUnit string) []byte {
	b = append(b, " | "...)
	b = strconv.AppendFloat(b, f.rate, 'f', 1, 64)
	b = append(b, rateUnit...)
	if final {
		b = append(b, " | elapsed "...)
		b = appendDuration(b, f.elapsed.Seconds())
	} else {
		b = append(b, " | ETA "...)
		if f.etaKnown {
			b = appendDuration(b, f.etaS)
		} else {
			b = append(b, '-')
		}
	}
	b = append(b, " | mean reward "...)
	if f.meanKnown {
		b = strconv.AppendFloat(b, f.mean, 'f', 3, 64)
	} else {
		b = append(b, '-')
	}
	b = append(b, " | "...)
	b = strconv.AppendInt(b, int64(t.failed), 10)
	return append(b, " failed"...)
}

// maxShownSeconds caps a displayed duration: a stalled run's ETA would overflow
// time.Duration, and decades already say "stalled".
const maxShownSeconds = 1e9

func appendDuration(b []byte, seconds float64) []byte {
	d := time.Duration(math.Min(seconds, maxShownSeconds) * float64(time.Second))
	return append(b, d.Round(time.Second).String()...)
}

// appendJSON appends one JSON object and a newline. Keys are written by hand so their order
// is fixed: done, total, failed, elapsed_s, rollouts_per_s, eta_s, mean_reward, final.
func appendJSON(b []byte, t *tally, f figures, final bool) []byte {
	b = append(b, `{"done":`...)
	b = strconv.AppendInt(b, int64(t.done), 10)
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, int64(t.total), 10)
	b = append(b, `,"failed":`...)
	b = strconv.AppendInt(b, int64(t.failed), 10)
	b = append(b, `,"elapsed_s":`...)
	b = appendJSONNumber(b, f.elapsed.Seconds(), 3, true)
	b = append(b, `,"rollouts_per_s":`...)
	b = appendJSONNumber(b, f.rate, 3, true)
	b = append(b, `,"eta_s":`...)
	b = appendJSONNumber(b, f.etaS, 3, f.etaKnown)
	b = append(b, `,"mean_reward":`...)
	b = appendJSONNumber(b, f.mean, -1, f.meanKnown)
	b = append(b, `,"final":`...)
	b = strconv.AppendBool(b, final)
	return append(b, "}\n"...)
}

// appendJSONNumber writes null for unknown values and for NaN or infinities, which JSON
// cannot carry (a reward computed by a buggy server can be NaN).
func appendJSONNumber(b []byte, v float64, prec int, known bool) []byte {
	if !known || math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, v, 'f', prec, 64)
}
