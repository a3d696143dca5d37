package rollout

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// sortedByRefSorter is what a refSorter holding chunk locations gives for
// refs.
func sortedByRefSorter(t testing.TB, refs []rowRef, chunk int) []rowRef {
	defer func(n int) { sortChunk = n }(sortChunk)
	sortChunk = chunk
	s := newRefSorter(t.TempDir())
	defer s.Close()
	for _, r := range refs {
		if err := s.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	var out []rowRef
	for range 2 { // a second reading gives the same
		out = out[:0]
		if err := s.Each(func(r rowRef) error { out = append(out, r); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// A refSorter sorts as sort.SliceStable over the whole list did, whether
// it spills runs or not: equal keys keep the order they came in, and
// offsets and sizes past 4 GiB come back from a spill as they went.
func TestRefSorterIsAStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ n, keys, chunk int }{
		{0, 1, 4}, {1, 1, 4}, {3, 2, 4}, {4, 2, 4}, {5, 3, 4}, {100, 10, 7}, {1000, 50, 64}, {1000, 2000, 1 << 17}, {5000, 3, 100},
	} {
		refs := make([]rowRef, tc.n)
		for i := range refs {
			refs[i] = rowRef{k: key{int64(rng.IntN(tc.keys)) - 2, int64(rng.IntN(3))}, file: rng.IntN(3), off: int64(i) << 33, size: i << 30}
		}
		want := slices.Clone(refs)
		sort.SliceStable(want, func(i, j int) bool { return less(want[i].k, want[j].k) })
		if got := sortedByRefSorter(t, refs, tc.chunk); !slices.Equal(got, want) && len(want) > 0 {
			t.Errorf("n=%d keys=%d chunk=%d: the sort differs from sort.SliceStable", tc.n, tc.keys, tc.chunk)
		}
	}
}

// FuzzRefSorter: any keys, any chunk size, sort.SliceStable's order.
func FuzzRefSorter(f *testing.F) {
	f.Add([]byte{3, 1, 2, 1, 0, 9, 3}, uint8(2))
	f.Fuzz(func(t *testing.T, keys []byte, chunk uint8) {
		refs := make([]rowRef, len(keys))
		for i, k := range keys {
			refs[i] = rowRef{k: key{int64(k >> 4), int64(k & 15)}, file: i%5 - 1, off: int64(i), size: i}
		}
		want := slices.Clone(refs)
		sort.SliceStable(want, func(i, j int) bool { return less(want[i].k, want[j].k) })
		got := sortedByRefSorter(t, refs, int(chunk)+1)
		if len(want) > 0 && !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}
