// Package cpuprofile reads the CPU profiles Go's runtime/pprof writes
// (gzipped protobuf, pprof's profile.proto) as far as a table of CPU time
// per function needs, and writes that table as NeMo Gym's profiled servers
// write theirs: the text a user reads without `go tool pprof`.
package cpuprofile

import (
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
	sampled   time.Duration
	period    int64 // nanoseconds between samples, as the last profile said
}

// cost is a function's CPU time: in itself (the innermost frame of a
// sample) and in all (anywhere on the sample's stack, once a sample).
type cost struct {
	self, total time.Duration
}

// Add tallies one profile, gzipped as runtime/pprof writes it or not.
func (t *Tally) Add(profile []byte) error {
	if bytes.HasPrefix(profile, []byte{0x1f, 0x8b}) {
		r, err := gzip.NewReader(bytes.NewReader(profile))
		if err != nil {
			return fmt.Errorf("reading the profile: %w", err)
		}
		if profile, err = io.ReadAll(r); err != nil {
			return fmt.Errorf("reading the profile: %w", err)
		}
	}
	p, err := decode(profile)
	if err != nil {
		return fmt.Errorf("reading the profile: %w", err)
	}
	return t.add(p)
}

func (t *Tally) add(p *profile) error {
	if t.functions == nil {
		t.functions = map[string]*cost{}
	}
	valueAt, err := p.cpuValue()
	if err != nil {
		return err
	}
	// A location may list many functions and a sample name a location
	// many times, so a few damaged bytes could stand for stacks without
	// end; a real profile's come to a few frames a byte at most.
	budget := 64*p.size + 4096
	for _, s := range p.samples {
		if valueAt >= len(s.values) {
			return fmt.Errorf("reading the profile: a sample has %d values, not the %d its types name", len(s.values), len(p.sampleTypes))
		}
		stack := p.stack(s, budget)
		if budget -= len(stack); budget < 0 {
			return fmt.Errorf("reading the profile: its samples' stacks come to more frames than a profile of %d bytes can hold", p.size)
		}
		spent := time.Duration(s.values[valueAt])
		t.sampled += spent
		seen := map[string]bool{}
		for i, name := range stack {
			c := t.functions[name]
			if c == nil {
				c = &cost{}
				t.functions[name] = c
			}
			if i == 0 {
				c.self += spent
			}
			if !seen[name] {
				seen[name] = true
				c.total += spent
			}
		}
	}
	if p.period > 0 {
		t.period = p.period
	}
	return nil
}

// WriteTable writes the functions by their total time, longest first, a
// line each: the name, then the seconds in the function itself (tsub)
// and in it and what it called (ttot), NeMo Gym's column names for the
// same two times (it also counts calls, which a sampling profile cannot).
func (t *Tally) WriteTable(w io.Writer) error {
	names := make([]string, 0, len(t.functions))
	width := len("name")
	for name := range t.functions {
		names = append(names, name)
		width = max(width, len(name))
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(t.functions[b].total, t.functions[a].total); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "Clock type: CPU, sampled every %v (%.2fs in all)\nOrdered by: totaltime, desc\n\n", time.Duration(t.period), t.sampled.Seconds())
	fmt.Fprintf(&b, "%-*s  %10s  %10s\n", width, "name", "tsub", "ttot")
	for _, name := range names {
		c := t.functions[name]
		fmt.Fprintf(&b, "%-*s  %10.6f  %10.6f\n", width, name, c.self.Seconds(), c.total.Seconds())
	}
	_, err := w.Write(b.Bytes())
	return err
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
	return 0, errors.New("reading the profile: it has no cpu/nanoseconds values: not a CPU profile")
}

func (p *profile) str(i int64) string {
	if i < 0 || i >= int64(len(p.strings)) {
		return ""
	}
	return p.strings[i]
}

// stack is a sample's function names, innermost first, up to limit + 1 of
// them; a location or function the profile does not define reads as "?".
func (p *profile) stack(s sample, limit int) []string {
	var names []string
	for _, id := range s.locations {
		if len(names) > limit {
			break
		}
		fns, ok := p.locations[id]
		if !ok {
			names = append(names, "?")
			continue
		}
		for _, fn := range fns {
			name := "?"
			if i, ok := p.functions[fn]; ok && p.str(i) != "" {
				name = p.str(i)
			}
			names = append(names, name)
		}
	}
	return names
}
