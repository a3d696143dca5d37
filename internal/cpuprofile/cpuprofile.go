// Package cpuprofile reads the CPU profiles Go's runtime/pprof writes
// (gzipped protobuf, pprof's profile.proto) as far as a table of CPU time
// per function needs, and writes that table in the layout of the yappi
// table NeMo Gym's documentation shows for a profiled server's log: the
// text a user reads without `go tool pprof`.
package cpuprofile

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// Tally is CPU time per function over the profiles added to it.
type Tally struct {
	functions map[string]*cost
	samples   int // tallied so far, each sample's number its stamp
	sampled   time.Duration
	period    int64 // nanoseconds between samples, as the last profile said
}

// cost is a function's CPU time: in itself (the innermost frame of a
// sample) and in all (anywhere on the sample's stack, once a sample).
type cost struct {
	self, total time.Duration
	lastSample  int // the stamp of the sample that last added to total, so a recursion counts once
}

// maxUnzipped bounds a profile's size unzipped; runtime/pprof's are a few
// megabytes at most.
const maxUnzipped = 256 << 20

// framesPerByte bounds the frames a profile's samples may come to, for its
// size: a location may list many functions and a sample name a location
// many times, so a few damaged bytes could stand for stacks without end,
// where runtime/pprof's come to about a frame a byte.
const framesPerByte = 16

// Add tallies one profile, gzipped as runtime/pprof writes it or not. A
// profile it cannot read changes nothing.
func (t *Tally) Add(profile []byte) error {
	if bytes.HasPrefix(profile, []byte{0x1f, 0x8b}) {
		r, err := gzip.NewReader(bytes.NewReader(profile))
		if err != nil {
			return err
		}
		if profile, err = io.ReadAll(io.LimitReader(r, maxUnzipped+1)); err != nil {
			return err
		}
		if len(profile) > maxUnzipped {
			return fmt.Errorf("it is over %d MiB unzipped", maxUnzipped>>20)
		}
	}
	p, err := decode(profile)
	if err != nil {
		return err
	}
	return t.add(p)
}

// add checks p whole before it tallies any of it.
func (t *Tally) add(p *profile) error {
	valueAt, err := p.cpuValue()
	if err != nil {
		return err
	}
	budget := framesPerByte*p.size + 4096
	for _, s := range p.samples {
		if valueAt >= len(s.values) {
			return fmt.Errorf("a sample has %d values, not the %d its types name", len(s.values), len(p.sampleTypes))
		}
		if s.values[valueAt] < 0 {
			return fmt.Errorf("a sample has a negative CPU time (%d ns)", s.values[valueAt])
		}
		if budget -= p.frames(s); budget < 0 {
			return fmt.Errorf("its samples' stacks come to more frames than a profile of %d bytes can hold", p.size)
		}
	}
	if t.functions == nil {
		t.functions = map[string]*cost{}
	}
	for _, s := range p.samples {
		t.samples++
		stamp := t.samples
		spent := time.Duration(s.values[valueAt])
		t.sampled += spent
		leaf := true
		p.eachFrame(s, func(name string) {
			c := t.functions[name]
			if c == nil {
				c = &cost{}
				t.functions[name] = c
			}
			if leaf {
				c.self += spent
				leaf = false
			}
			if c.lastSample != stamp {
				c.lastSample = stamp
				c.total += spent
			}
		})
	}
	if p.period > 0 {
		t.period = p.period
	}
	return nil
}

// nameWidth is the name column's width, as NeMo Gym's yappi table has it:
// a longer name runs into the columns after it.
const nameWidth = 200

// WriteTable writes the functions by their total time, longest first, a
// line each: the name, then the seconds in the function itself (tsub)
// and in it and what it called (ttot), the two times of yappi's table
// that a sampling profile has (not its call counts).
func (t *Tally) WriteTable(w io.Writer) error {
	names := make([]string, 0, len(t.functions))
	width := len("name")
	for name := range t.functions {
		names = append(names, name)
		width = max(width, min(len(name), nameWidth))
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(t.functions[b].total, t.functions[a].total); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "Clock type: CPU, sampled every %v (%.2fs in all)\nOrdered by: totaltime, desc\n\n", time.Duration(t.period), t.sampled.Seconds())
	fmt.Fprintf(bw, "%-*s  %10s  %10s\n", width, "name", "tsub", "ttot")
	for _, name := range names {
		c := t.functions[name]
		fmt.Fprintf(bw, "%-*s  %10.6f  %10.6f\n", width, name, c.self.Seconds(), c.total.Seconds())
	}
	return bw.Flush()
}

// profile is what the table needs of a profile.proto message.
type profile struct {
	size        int   // bytes, unzipped
	period      int64 // nanoseconds between samples
	sampleTypes []valueType
	samples     []sample
	locations   map[uint64][]uint64 // id → the function ids of its lines, innermost first
	functions   map[uint64]int64    // id → its name's index in strings
	strings     []string
}

type valueType struct{ typ, unit int64 }

type sample struct {
	locations []uint64 // innermost first
	values    []int64
}

// cpuValue is the index of a sample's CPU time in nanoseconds among its
// values, as runtime/pprof names it.
func (p *profile) cpuValue() (int, error) {
	for i, vt := range p.sampleTypes {
		if p.str(vt.typ) == "cpu" && p.str(vt.unit) == "nanoseconds" {
			return i, nil
		}
	}
	return 0, errors.New("it has no cpu/nanoseconds values: not a CPU profile")
}

func (p *profile) str(i int64) string {
	if i < 0 || i >= int64(len(p.strings)) {
		return ""
	}
	return p.strings[i]
}

// frames is how many frames eachFrame gives s.
func (p *profile) frames(s sample) int {
	n := 0
	for _, id := range s.locations {
		n += max(len(p.locations[id]), 1)
	}
	return n
}

// eachFrame gives a sample's function names, innermost first; a location
// or function the profile does not name reads as "?".
func (p *profile) eachFrame(s sample, frame func(name string)) {
	for _, id := range s.locations {
		fns := p.locations[id]
		if len(fns) == 0 {
			frame("?")
			continue
		}
		for _, fn := range fns {
			name := "?"
			if i, ok := p.functions[fn]; ok && p.str(i) != "" {
				name = p.str(i)
			}
			frame(name)
		}
	}
}
