package progress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a fake time source that several goroutines may read.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncBuffer lets the terminal refresher and the test share a buffer under -race.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// plainDone extracts done from "Title: done/total (...".
func plainDone(t *testing.T, line string) int {
	t.Helper()
	_, rest, _ := strings.Cut(line, ": ")
	count, _, _ := strings.Cut(rest, "/")
	n, err := strconv.Atoi(count)
	if err != nil {
		t.Fatalf("no done count in %q", line)
	}
	return n
}

// burst is one step of a scripted run: wait, then finish adds rollouts.
type burst struct {
	wait time.Duration
	adds int
}

func every(wait time.Duration, n int) []burst {
	bs := make([]burst, n)
	for i := range bs {
		bs[i] = burst{wait: wait, adds: 1}
	}
	return bs
}

func seq(from, to, step int) []int {
	var s []int
	for i := from; i <= to; i += step {
		s = append(s, i)
	}
	return s
}

func TestPlainCadence(t *testing.T) {
	tests := []struct {
		name     string
		total    int
		already  int
		interval time.Duration
		run      []burst
		want     []int // done counts of the lines before the final one
	}{
		{"5% steps when faster than the interval", 100, 0, 0, every(time.Second, 100), seq(5, 95, 5)},
		{"a burst at one instant still one line per step", 100, 0, 0, []burst{{0, 100}}, seq(5, 95, 5)},
		{"10s interval when slower than the steps", 1000, 0, 0, every(time.Second, 45), seq(10, 40, 10)},
		{"interval and step together make one line", 1000, 0, 0, every(time.Second, 60), seq(10, 60, 10)},
		{"custom interval", 1000, 0, 3 * time.Second, every(time.Second, 10), seq(3, 9, 3)},
		{"resume steps from the already done count", 100, 42, 0, every(0, 20), []int{45, 50, 55, 60}},
		{"no line for completion before Finish", 20, 0, 0, every(0, 20), seq(1, 19, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			var out bytes.Buffer
			r := New(Options{Out: &out, Mode: Plain, Title: "Collecting rollouts", Now: c.Now, Interval: tt.interval})
			r.Start(tt.total, tt.already)
			done := tt.already
			for _, b := range tt.run {
				c.Advance(b.wait)
				for range b.adds {
					r.Add(Outcome{Reward: 1, HasReward: true})
					done++
				}
			}
			if got := out.String(); got != "" && !strings.HasSuffix(got, "\n") {
				t.Fatalf("partial line before Finish: %q", got)
			}
			r.Finish()
			r.Finish()
			r.Add(Outcome{})

			ls := lines(out.String())
			var got []int
			for _, l := range ls[:len(ls)-1] {
				got = append(got, plainDone(t, l))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("lines at %v, want %v\n%s", got, tt.want, out.String())
			}
			final := ls[len(ls)-1]
			if plainDone(t, final) != done || !strings.Contains(final, "| elapsed ") {
				t.Errorf("final line %q, want done %d and the elapsed time", final, done)
			}
		})
	}
}

func TestPlainLineFormat(t *testing.T) {
	tests := []struct {
		name     string
		title    string
		outcomes []Outcome
		wait     time.Duration
		want     string
	}{
		{
			name:  "rewards and a failure",
			title: "Collecting rollouts",
			outcomes: []Outcome{
				{Reward: 1, HasReward: true}, {Reward: 0, HasReward: true}, {Reward: 1, HasReward: true},
				{Reward: 5, HasReward: true, Failed: true}, {},
			},
			wait: 2 * time.Second,
			want: "Collecting rollouts: 5/100 (5.0%) | 2.5 rollouts/s | ETA 38s | mean reward 0.667 | 1 failed\n",
		},
		{
			name:     "no reward yet and no rate at the start instant",
			outcomes: make([]Outcome, 5),
			want:     "5/100 (5.0%) | 0.0 rollouts/s | ETA - | mean reward - | 0 failed\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			var out bytes.Buffer
			r := New(Options{Out: &out, Mode: Plain, Title: tt.title, Now: c.Now})
			r.Start(100, 0)
			c.Advance(tt.wait)
			for _, o := range tt.outcomes {
				r.Add(o)
			}
			if out.String() != tt.want {
				t.Errorf("got  %q\nwant %q", out.String(), tt.want)
			}
		})
	}
}

var jsonKeys = []string{"done", "total", "failed", "elapsed_s", "rollouts_per_s", "eta_s", "mean_reward", "final"}

// decodeJSONLine checks the key order and returns the object.
func decodeJSONLine(t *testing.T, line string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%q: not an object", line)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		keys = append(keys, tok.(string))
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
	}
	if fmt.Sprint(keys) != fmt.Sprint(jsonKeys) {
		t.Fatalf("%q: keys %v, want %v", line, keys, jsonKeys)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return m
}

func TestJSONLines(t *testing.T) {
	tests := []struct {
		name string
		run  []burst
		want []int
	}{
		{"every 1% step", every(200*time.Millisecond, 30), seq(10, 30, 10)},
		{"at most once a second", every(10*time.Millisecond, 1000), seq(100, 900, 100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			var out bytes.Buffer
			r := New(Options{Out: &out, Mode: JSON, Now: c.Now})
			r.Start(1000, 0)
			for _, b := range tt.run {
				c.Advance(b.wait)
				for range b.adds {
					r.Add(Outcome{Reward: 0.5, HasReward: true})
				}
			}
			r.Finish()
			ls := lines(out.String())
			var got []int
			for _, l := range ls[:len(ls)-1] {
				m := decodeJSONLine(t, l)
				got = append(got, int(m["done"].(float64)))
				if m["final"] != false {
					t.Errorf("%q: final should be false", l)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("objects at %v, want %v\n%s", got, tt.want, out.String())
			}
			if m := decodeJSONLine(t, ls[len(ls)-1]); m["final"] != true || m["mean_reward"] != 0.5 {
				t.Errorf("final object %v", m)
			}
		})
	}
}

func TestJSONNulls(t *testing.T) {
	c := newClock()
	var out bytes.Buffer
	r := New(Options{Out: &out, Mode: JSON, Now: c.Now})
	r.Start(100, 0)
	c.Advance(time.Second)
	r.Add(Outcome{Reward: 1, HasReward: true, Failed: true})
	r.Finish()
	ls := lines(out.String())
	if len(ls) != 2 {
		t.Fatalf("want one progress and one final object, got\n%s", out.String())
	}
	if m := decodeJSONLine(t, ls[0]); m["eta_s"] != 99.0 || m["mean_reward"] != nil || m["failed"] != 1.0 {
		t.Errorf("a failed rollout's reward must not count: %v", m)
	}

	out.Reset()
	r = New(Options{Out: &out, Mode: JSON, Now: c.Now})
	r.Start(100, 0)
	c.Advance(time.Second)
	r.Finish()
	if m := decodeJSONLine(t, out.String()); m["eta_s"] != nil || m["mean_reward"] != nil || m["rollouts_per_s"] != 0.0 {
		t.Errorf("nothing done: want eta_s and mean_reward null, got %v", m)
	}
}

func TestResume(t *testing.T) {
	for _, mode := range []Mode{Plain, JSON} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			c := newClock()
			var out bytes.Buffer
			r := New(Options{Out: &out, Mode: mode, Title: "Collecting rollouts", Now: c.Now})
			r.Start(100, 40)
			c.Advance(10 * time.Second)
			for range 20 {
				r.Add(Outcome{Reward: 1, HasReward: true})
			}
			r.Finish()
			// Done 60 after 10s: 20 of them this run's, so 2/s, and the 40 left take 20s.
			ls := lines(out.String())
			switch mode {
			case Plain:
				if last, want := ls[len(ls)-2], "Collecting rollouts: 60/100 (60.0%) | 2.0 rollouts/s | ETA 20s | mean reward 1.000 | 0 failed"; last != want {
					t.Errorf("got  %q\nwant %q", last, want)
				}
			case JSON:
				m := decodeJSONLine(t, ls[len(ls)-1])
				if m["done"] != 60.0 || m["rollouts_per_s"] != 2.0 || m["eta_s"] != 20.0 || m["elapsed_s"] != 10.0 {
					t.Errorf("got %v", m)
				}
			}
		})
	}
}

func TestZeroTotal(t *testing.T) {
	tests := []struct {
		mode Mode
		want string
	}{
		{Plain, "Collecting rollouts: 0/0 (100.0%) | 0.0 rollouts/s | elapsed 0s | mean reward - | 0 failed\n"},
		{Terminal, "Collecting rollouts: 0/0 (100.0%) | 0.0 rollouts/s | elapsed 0s | mean reward - | 0 failed\n"},
		{JSON, `{"done":0,"total":0,"failed":0,"elapsed_s":0.000,"rollouts_per_s":0.000,"eta_s":0.000,"mean_reward":null,"final":true}` + "\n"},
		{None, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.mode), func(t *testing.T) {
			var out bytes.Buffer
			r := New(Options{Out: &out, Mode: tt.mode, Title: "Collecting rollouts", Now: newClock().Now})
			r.Start(0, 0)
			r.Finish()
			if out.String() != tt.want {
				t.Errorf("got  %q\nwant %q", out.String(), tt.want)
			}
		})
	}
}

func TestNothingBeforeStart(t *testing.T) {
	for _, mode := range []Mode{Plain, Terminal, JSON} {
		var out bytes.Buffer
		r := New(Options{Out: &out, Mode: mode})
		r.Add(Outcome{})
		r.Finish()
		if out.Len() != 0 {
			t.Errorf("mode %v wrote %q before Start", mode, out.String())
		}
	}
}

func TestTerminal(t *testing.T) {
	c := newClock()
	var out syncBuffer
	r := New(Options{Out: &out, Mode: Terminal, Now: c.Now})
	r.Start(10, 2)
	c.Advance(2 * time.Second)
	r.Add(Outcome{Reward: 1, HasReward: true})
	r.Add(Outcome{Reward: 0, HasReward: true})
	r.Add(Outcome{Failed: true})
	c.Advance(time.Second)
	r.Add(Outcome{Reward: 0.5, HasReward: true})
	if got, want := out.String(), "6/10 | 1.3/s | ETA 3s | mean reward 0.500 | 1 failed"; !strings.Contains(got, want) {
		t.Errorf("bar %q does not show %q", got, want)
	}
	for range 4 {
		r.Add(Outcome{Reward: 0.5, HasReward: true})
	}
	r.Finish()
	got := out.String()
	if want := "10/10 | 2.7/s | elapsed 3s | mean reward 0.500 | 1 failed"; !strings.Contains(got, want) {
		t.Errorf("final bar %q does not show %q", got, want)
	}
	if !strings.Contains(got, "100%") || !strings.HasSuffix(got, "\n") {
		t.Errorf("final bar %q should be full and end its line", got)
	}
}

func TestNone(t *testing.T) {
	var out bytes.Buffer
	for _, o := range []Options{{Out: &out, Mode: None}, {Mode: Plain}} {
		r := New(o)
		r.Start(10, 0)
		r.Add(Outcome{})
		r.Finish()
	}
	if out.Len() != 0 {
		t.Errorf("wrote %q", out.String())
	}
}

func TestConcurrentAdds(t *testing.T) {
	const workers, each = 8, 500
	for _, mode := range []Mode{Plain, Terminal, JSON} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			var out syncBuffer
			r := New(Options{Out: &out, Mode: mode, Title: "Collecting rollouts"})
			r.Start(workers*each, 0)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for i := range each {
						r.Add(Outcome{Reward: float64(w), HasReward: true, Failed: i == 0})
					}
				})
			}
			wg.Wait()
			var fin sync.WaitGroup
			for range 3 {
				fin.Go(r.Finish)
			}
			fin.Wait()

			got := out.String()
			switch mode {
			case Plain:
				ls := lines(got)
				prev := -1
				for _, l := range ls[:len(ls)-1] {
					n := plainDone(t, l)
					if n <= prev {
						t.Errorf("done %d after %d", n, prev)
					}
					prev = n
				}
				if want := "Collecting rollouts: 4000/4000 (100.0%)"; !strings.HasPrefix(ls[len(ls)-1], want) ||
					!strings.HasSuffix(got, "| mean reward 3.500 | 8 failed\n") {
					t.Errorf("final line %q", ls[len(ls)-1])
				}
			case JSON:
				ls := lines(got)
				finals := 0
				for _, l := range ls {
					if decodeJSONLine(t, l)["final"] == true {
						finals++
					}
				}
				if finals != 1 || !strings.Contains(ls[len(ls)-1], `{"done":4000,"total":4000,"failed":8,`) {
					t.Errorf("%d final objects, last %q", finals, ls[len(ls)-1])
				}
			case Terminal:
				if !strings.Contains(got, "4000/4000") || strings.Count(got, "\n") != 1 {
					t.Errorf("final bar %q", got)
				}
			}
		})
	}
}

func BenchmarkAdd(b *testing.B) {
	o := Outcome{Reward: 0.5, HasReward: true}
	for _, mode := range []Mode{Plain, Terminal} {
		b.Run(fmt.Sprint(mode), func(b *testing.B) {
			r := New(Options{Out: io.Discard, Mode: mode, Title: "Collecting rollouts"})
			r.Start(b.N, 0)
			b.ReportAllocs()
			for range b.N {
				r.Add(o)
			}
			r.Finish()
		})
		b.Run(fmt.Sprint(mode)+"/parallel", func(b *testing.B) {
			r := New(Options{Out: io.Discard, Mode: mode, Title: "Collecting rollouts"})
			r.Start(b.N, 0)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r.Add(o)
				}
			})
			r.Finish()
		})
	}
}
