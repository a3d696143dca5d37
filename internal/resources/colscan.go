package resources

import (
	"math"
	"slices"
)

// columnScan reads a column's values in row order, each time it is called:
// the statistics of a column spilled to disk are computed in a few passes
// over it instead of holding its values.
type columnScan func(fn func(x float64)) error

// scanDescribe is describeColumn over a scanned column.
func scanDescribe(read columnScan) (columnStats, error) {
	m, err := scanMoments(read)
	if err != nil || m.n == 0 {
		return describeColumn(nil), err
	}
	if m.mixedZeros {
		v, err := m.load(read)
		return describeColumn(v), err
	}
	mean := m.sum / float64(m.n)
	std := math.NaN()
	if m.n > 1 {
		sq, err := scanSquares(read, mean)
		if err != nil {
			return columnStats{}, err
		}
		std = math.Sqrt(sq / float64(m.n-1))
	}
	at, err := selectRanks(read, medianRanks(m.n), m.negZeros)
	if err != nil {
		return columnStats{}, err
	}
	return columnStats{s: [5]float64{mean, m.hi, m.lo, medianAt(m.n, at), std}, n: m.n}, nil
}

// scanSummarizeRepeat is summarizeRepeat over a scanned column.
func scanSummarizeRepeat(read columnScan) (repeatColumn, bool, error) {
	m, err := scanMoments(read)
	if err != nil || m.n == 0 {
		return repeatColumn{}, false, err
	}
	if m.mixedZeros {
		v, err := m.load(read)
		r, ok := summarizeRepeat(v)
		return r, ok, err
	}
	n := float64(m.n)
	r := repeatColumn{n: m.n}
	r.mean = m.sum / n
	if m.n > 1 {
		sq, err := scanSquares(read, r.mean)
		if err != nil {
			return r, false, err
		}
		r.std = math.Sqrt(sq / (n - 1))
	}
	r.se = r.std / math.Sqrt(n)
	ranks := medianRanks(m.n)
	for _, q := range []float64{0.25, 0.75} {
		if lo, last := quantileRank(m.n, q); !last {
			ranks = append(ranks, lo, lo+1)
		}
	}
	at, err := selectRanks(read, ranks, m.negZeros)
	if err != nil {
		return r, false, err
	}
	// The first pass's running extremes: no selection needed for them.
	r.min, r.max = m.lo, m.hi
	r.median = medianAt(m.n, at)
	r.p25, r.p75 = quantileAt(m.n, at, 0.25), quantileAt(m.n, at, 0.75)
	return r, true, nil
}

// moments are what one pass over a column finds: its count, its sum and
// running min and max in row order (as describeColumn takes them), and
// whether it holds both zeros. -0 and 0 are equal to a sort, which may put
// either first; only sorting the values themselves says which a median
// or minimum is, so such a column is loaded and sorted.
type moments struct {
	n          int
	sum        float64
	lo, hi     float64
	mixedZeros bool
	negZeros   bool // the zeros, if any, are -0
}

func scanMoments(read columnScan) (moments, error) {
	var m moments
	var negZero, posZero bool
	err := read(func(x float64) {
		if m.n == 0 {
			m.lo, m.hi = x, x
		}
		m.n++
		m.sum += x
		m.lo, m.hi = min(m.lo, x), max(m.hi, x)
		if x == 0 {
			if math.Signbit(x) {
				negZero = true
			} else {
				posZero = true
			}
		}
	})
	m.mixedZeros = negZero && posZero
	m.negZeros = negZero && !posZero
	return m, err
}

func (m moments) load(read columnScan) ([]float64, error) {
	v := make([]float64, 0, m.n)
	err := read(func(x float64) { v = append(v, x) })
	return v, err
}

// scanSquares is the sum of squared deviations from mean, in row order.
func scanSquares(read columnScan, mean float64) (float64, error) {
	var sq float64
	err := read(func(x float64) { sq += (x - mean) * (x - mean) })
	return sq, err
}

// selectRanks finds the values at ranks (0-based, in ascending order of
// value) of a column with no mixed zeros (negZeros: its zeros are -0), 16
// bits of each value's order key at a time: four passes, whatever the
// column's length.
func selectRanks(read columnScan, ranks []int, negZeros bool) (func(int) float64, error) {
	ranks = slices.Compact(slices.Sorted(slices.Values(ranks)))
	prefix := make([]uint64, len(ranks))
	below := make([]int, len(ranks)) // how many smaller values the prefix has passed
	hist := make([][1 << 16]uint32, len(ranks))
	for shift := 48; shift >= 0; shift -= 16 {
		for i := range hist {
			hist[i] = [1 << 16]uint32{}
		}
		err := read(func(x float64) {
			k := orderKey(x)
			for i := range ranks {
				if shift == 48 || k>>(shift+16) == prefix[i]>>(shift+16) {
					hist[i][(k>>shift)&0xffff]++
				}
			}
		})
		if err != nil {
			return nil, err
		}
		for i, rank := range ranks {
			seen := below[i]
			for d, count := range hist[i] {
				if seen+int(count) > rank {
					prefix[i] |= uint64(d) << shift
					below[i] = seen
					break
				}
				seen += int(count)
			}
		}
	}
	return func(rank int) float64 {
		i, _ := slices.BinarySearch(ranks, rank)
		x := fromOrderKey(prefix[i])
		if x == 0 && negZeros {
			return math.Copysign(0, -1)
		}
		return x
	}, nil
}

// orderKey maps a value to an unsigned integer in the same order (-0 as 0).
func orderKey(x float64) uint64 {
	if x == 0 {
		x = 0
	}
	b := math.Float64bits(x)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

func fromOrderKey(k uint64) float64 {
	if k>>63 == 1 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}
