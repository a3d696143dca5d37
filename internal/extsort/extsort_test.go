package extsort

import (
	"cmp"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// item has a key to sort by and a sequence number that shows stability.
type item struct {
	key string
	seq int
}

var itemCodec = Codec[item]{
	Append: func(b []byte, v item) []byte {
		b = binary.AppendUvarint(b, uint64(v.seq))
		return append(b, v.key...)
	},
	Decode: func(b []byte) (item, error) {
		seq, n := binary.Uvarint(b)
		if n <= 0 {
			return item{}, errors.New("bad sequence number")
		}
		return item{key: string(b[n:]), seq: int(seq)}, nil
	},
}

func byKey(a, b item) int { return strings.Compare(a.key, b.key) }

// sorted is what a Sorter holding chunk values gives for items, read
// twice: both readings must agree.
func sorted(t testing.TB, items []item, chunk int) []item {
	s := New(t.TempDir(), ".test-*", chunk, byKey, itemCodec)
	defer s.Close()
	for _, v := range items {
		if err := s.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	if s.Len() != len(items) {
		t.Fatalf("Len() = %d, want %d", s.Len(), len(items))
	}
	var first []item
	for reading := range 2 {
		var out []item
		if err := s.Each(func(v item) error { out = append(out, v); return nil }); err != nil {
			t.Fatal(err)
		}
		if reading == 0 {
			first = out
		} else if !slices.Equal(first, out) {
			t.Fatal("a second reading differs from the first")
		}
	}
	return first
}

func stableSorted(items []item) []item {
	want := slices.Clone(items)
	slices.SortStableFunc(want, byKey)
	return want
}

// A Sorter sorts as a stable in-memory sort does, whether it spills or not:
// equal keys keep the order they were added in.
func TestSorterIsAStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ n, keys, chunk int }{
		{0, 1, 4}, {1, 1, 4}, {3, 2, 4}, {4, 2, 4}, {5, 3, 4}, {100, 10, 7}, {1000, 50, 1}, {1000, 2000, 1 << 17}, {5000, 3, 100},
	} {
		items := make([]item, tc.n)
		for i := range items {
			items[i] = item{key: strings.Repeat("k", rng.IntN(3)) + string(rune('a'+rng.IntN(tc.keys)%26)), seq: i}
		}
		if got, want := sorted(t, items, tc.chunk), stableSorted(items); !slices.Equal(got, want) {
			t.Errorf("n=%d keys=%d chunk=%d: the sort differs from a stable sort", tc.n, tc.keys, tc.chunk)
		}
	}
}

// Values of any size, including empty encodings and ones larger than a
// run reader's buffer, come back whole.
func TestSorterKeepsValuesWhole(t *testing.T) {
	items := []item{{strings.Repeat("z", 100_000), 0}, {"", 1}, {strings.Repeat("a", 40_000), 2}, {"m", 3}}
	if got, want := sorted(t, items, 1), stableSorted(items); !slices.Equal(got, want) {
		t.Error("long values did not come back as added")
	}
}

// Each stops at fn's error and returns it; Add after it is refused.
func TestSorterErrors(t *testing.T) {
	for _, chunk := range []int{1, 100} {
		s := New(t.TempDir(), ".test-*", chunk, byKey, itemCodec)
		for i := range 5 {
			s.Add(item{key: "k", seq: i})
		}
		stop := errors.New("stop")
		calls := 0
		if err := s.Each(func(item) error { calls++; return stop }); err != stop || calls != 1 {
			t.Errorf("chunk %d: Each returned %v after %d calls", chunk, err, calls)
		}
		if err := s.Add(item{}); err == nil {
			t.Errorf("chunk %d: Add after Each was accepted", chunk)
		}
		s.Close()
	}
}

// A budget spills by the values' size as well as by their number.
func TestSorterBudget(t *testing.T) {
	s := New(t.TempDir(), ".test-*", 1000, byKey, itemCodec).Budget(100, func(v item) int { return len(v.key) })
	defer s.Close()
	items := []item{{strings.Repeat("b", 60), 0}, {strings.Repeat("a", 60), 1}, {"c", 2}, {strings.Repeat("a", 60), 3}}
	for _, v := range items {
		s.Add(v)
	}
	if len(s.runs) != 1 || len(s.held) != 2 {
		t.Fatalf("%d runs spilled and %d values held; want the first two spilled", len(s.runs), len(s.held))
	}
	var got []item
	s.Each(func(v item) error { got = append(got, v); return nil })
	if !slices.Equal(got, stableSorted(items)) {
		t.Errorf("got %v", got)
	}
}

// A run that cannot be spilled fails the Add that spilled it, and every
// later call: no value is silently lost.
func TestSorterSpillErrorSticks(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "missing"), ".test-*", 1, byKey, itemCodec)
	defer s.Close()
	if err := s.Add(item{key: "a"}); err == nil {
		t.Fatal("Add spilled into a directory that does not exist")
	}
	if err := s.Finish(); err == nil {
		t.Error("Finish after a failed spill returned nil")
	}
	if err := s.Each(func(item) error { return nil }); err == nil {
		t.Error("Each after a failed spill returned nil")
	}
}

// A decoding error names itself instead of passing a wrong value on.
func TestSorterDecodeError(t *testing.T) {
	bad := errors.New("bad")
	codec := Codec[item]{Append: itemCodec.Append, Decode: func([]byte) (item, error) { return item{}, bad }}
	s := New(t.TempDir(), ".test-*", 1, byKey, codec)
	defer s.Close()
	s.Add(item{key: "a"})
	s.Add(item{key: "b"})
	if err := s.Each(func(item) error { return nil }); !errors.Is(err, bad) {
		t.Errorf("Each = %v, want the decoding error", err)
	}
}

// FuzzSorter: any keys, any chunk size, a stable sort's order.
func FuzzSorter(f *testing.F) {
	f.Add([]byte{3, 1, 2, 1, 0, 9, 3}, uint8(2))
	f.Fuzz(func(t *testing.T, keys []byte, chunk uint8) {
		items := make([]item, len(keys))
		for i, k := range keys {
			items[i] = item{key: string([]byte{k >> 5, k & 3}), seq: i}
		}
		if got, want := sorted(t, items, int(chunk)+1), stableSorted(items); !slices.Equal(got, want) && len(want) > 0 {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}

func BenchmarkSorter(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	items := make([]item, 100_000)
	for i := range items {
		items[i] = item{key: strings.Repeat("x", rng.IntN(20)), seq: i}
	}
	for b.Loop() {
		s := New(b.TempDir(), ".bench-*", 1<<14, func(a, b item) int { return cmp.Or(byKey(a, b), cmp.Compare(a.seq, b.seq)) }, itemCodec)
		for _, v := range items {
			s.Add(v)
		}
		s.Each(func(item) error { return nil })
		s.Close()
	}
}

// What a Sorter holds grows by doubling, never past the chunk: adding a
// chunk's worth of values allocates about log2(chunk) times (10 here),
// where append's growth by a quarter for long slices allocated (and
// copied all that was held) 16 times.
func TestSorterHeldGrowsByDoubling(t *testing.T) {
	const chunk = 1 << 12
	var s *Sorter[item]
	dir := t.TempDir()
	allocs := testing.AllocsPerRun(1, func() {
		s = New(dir, ".test-*", chunk, byKey, itemCodec)
		for i := range chunk - 1 {
			if err := s.Add(item{seq: i}); err != nil {
				t.Fatal(err)
			}
		}
	})
	defer s.Close()
	if allocs > 12 {
		t.Errorf("adding %d values allocated %v times", chunk-1, allocs)
	}
	if cap(s.held) > chunk {
		t.Errorf("held %d values in room for %d, past the chunk of %d", len(s.held), cap(s.held), chunk)
	}
}
