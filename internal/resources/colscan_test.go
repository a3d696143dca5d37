package resources

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func scanOf(v []float64) columnScan {
	return func(fn func(float64)) error {
		for _, x := range v {
			fn(x)
		}
		return nil
	}
}

// checkScanned: the scanned statistics of v are, bit for bit, the ones
// computed over v in memory.
func checkScanned(t *testing.T, v []float64) {
	t.Helper()
	got, err := scanDescribe(scanOf(v))
	if err != nil {
		t.Fatal(err)
	}
	want := describeColumn(slices.Clone(v))
	if fmt.Sprintf("%v %x", got.n, bitsOf(got.s[:])) != fmt.Sprintf("%v %x", want.n, bitsOf(want.s[:])) {
		t.Errorf("describe %v: scanned %v, in memory %v", v, got, want)
	}
	gotR, gotOK, err := scanSummarizeRepeat(scanOf(v))
	if err != nil {
		t.Fatal(err)
	}
	wantR, wantOK := summarizeRepeat(slices.Clone(v))
	g := []float64{gotR.mean, gotR.median, gotR.std, gotR.se, gotR.min, gotR.max, gotR.p25, gotR.p75}
	w := []float64{wantR.mean, wantR.median, wantR.std, wantR.se, wantR.min, wantR.max, wantR.p25, wantR.p75}
	if gotOK != wantOK || gotR.n != wantR.n || fmt.Sprintf("%x", bitsOf(g)) != fmt.Sprintf("%x", bitsOf(w)) {
		t.Errorf("summarize %v: scanned %v, in memory %v", v, g, w)
	}
}

func bitsOf(v []float64) []uint64 {
	out := make([]uint64, len(v))
	for i, x := range v {
		out[i] = math.Float64bits(x)
	}
	return out
}

func TestScannedStatisticsAreInMemoryOnes(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, v := range [][]float64{
		nil, {1}, {2, 1}, {3, 1, 2}, {0, 1, 1, 0, 1}, {-1.5, 2.25, -1.5, 1e300, -1e-300, 7},
		{negZero, 1, negZero}, {negZero, 0, 1, -1}, {0, negZero}, {math.Inf(1), 1, math.Inf(-1), 2},
		{5, 5, 5, 5}, {0.1, 0.2, 0.30000000000000004, 0.3},
	} {
		checkScanned(t, v)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		v := make([]float64, rng.IntN(300))
		for i := range v {
			switch rng.IntN(3) {
			case 0:
				v[i] = float64(rng.IntN(5))
			case 1:
				v[i] = rng.NormFloat64() * 1000
			default:
				v[i] = -float64(rng.IntN(3)) / 4
			}
		}
		checkScanned(t, v)
	}
}

// FuzzScannedStatistics: any values, the in-memory statistics.
func FuzzScannedStatistics(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f})
	f.Fuzz(func(t *testing.T, b []byte) {
		var v []float64
		for ; len(b) >= 8; b = b[8:] {
			x := math.Float64frombits(binary.LittleEndian.Uint64(b))
			if !math.IsNaN(x) { // JSON has no NaN
				v = append(v, x)
			}
		}
		checkScanned(t, v)
	})
}
