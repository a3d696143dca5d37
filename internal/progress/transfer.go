package progress

import (
	"io"
	"strconv"
	"sync"
	"time"
)

// Meter follows one file transfer in bytes. Add may be called from the
// goroutine moving the bytes while another calls Finish; a negative n
// takes back bytes a failed try had counted.
type Meter interface {
	Add(n int64)
	// Finish ends the display; later calls do nothing.
	Finish()
}

// NoMeter shows nothing.
var NoMeter Meter = noMeter{}

type noMeter struct{}

func (noMeter) Add(int64) {}
func (noMeter) Finish()   {}

// NewMeter shows a transfer of total bytes (negative: unknown) under
// label. Plain mode writes a line at most every Interval (default 10 s),
// and a closing line only when it wrote one before, so a quick transfer
// adds nothing to a log; Terminal redraws one line in place; JSON and
// None show nothing (a transfer is not a run's progress).
func NewMeter(o Options, label string, total int64) Meter {
	if o.Out == nil || (o.Mode != Plain && o.Mode != Terminal) {
		return NoMeter
	}
	now, interval := o.timing()
	if o.Mode == Terminal {
		interval = 200 * time.Millisecond
	}
	t := now()
	return &meter{out: o.Out, now: now, label: label, total: total, terminal: o.Mode == Terminal,
		interval: interval, start: t, last: t}
}

type meter struct {
	mu             sync.Mutex
	out            io.Writer
	now            func() time.Time
	label          string
	total, done    int64
	terminal       bool
	interval       time.Duration
	start, last    time.Time
	wrote, stopped bool
}

func (m *meter) Add(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	m.done = max(m.done+n, 0)
	if t := m.now(); t.Sub(m.last) >= m.interval {
		m.last = t
		m.write(t, false)
	}
}

func (m *meter) Finish() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	m.stopped = true
	if m.wrote {
		m.write(m.now(), true)
	}
}

// write draws "label: 12.0 MiB/50.0 MiB (24.0%) | 3.1 MiB/s".
func (m *meter) write(t time.Time, final bool) {
	m.wrote = true
	var b []byte
	if m.terminal {
		b = append(b, "\r\x1b[K"...)
	}
	b = append(b, m.label...)
	b = append(b, ": "...)
	b = appendBytes(b, m.done)
	if m.total >= 0 {
		b = append(b, '/')
		b = appendBytes(b, m.total)
		pct := 100.0
		if m.total > 0 {
			pct = 100 * float64(m.done) / float64(m.total)
		}
		b = append(b, " ("...)
		b = strconv.AppendFloat(b, pct, 'f', 1, 64)
		b = append(b, "%)"...)
	}
	if s := t.Sub(m.start).Seconds(); s > 0 {
		b = append(b, " | "...)
		b = appendBytes(b, int64(float64(m.done)/s))
		b = append(b, "/s"...)
	}
	if !m.terminal || final {
		b = append(b, '\n')
	}
	m.out.Write(b)
}

// appendBytes writes n in binary units with one decimal: 512 B, 1.5 KiB.
func appendBytes(b []byte, n int64) []byte {
	if n < 1024 {
		b = strconv.AppendInt(b, n, 10)
		return append(b, " B"...)
	}
	f := float64(n)
	unit := 0
	for f >= 1024 && unit < 4 {
		f /= 1024
		unit++
	}
	b = strconv.AppendFloat(b, f, 'f', 1, 64)
	return append(b, [...]string{"", " KiB", " MiB", " GiB", " TiB"}[unit]...)
}

// Reader counts into Meter the bytes read through it; N is their sum,
// for a failed try to take back.
type Reader struct {
	R     io.Reader
	Meter Meter
	N     int64
}

func (r *Reader) Read(p []byte) (int, error) {
	n, err := r.R.Read(p)
	r.N += int64(n)
	r.Meter.Add(int64(n))
	return n, err
}
