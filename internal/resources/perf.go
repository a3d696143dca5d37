package resources

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/extsort"
)

// perfNumber is one ng_perf value as Python holds it: an int (a JSON
// integer or a boolean) or a float.
type perfNumber struct {
	f      float64
	isInt  bool
	isBool bool // True or False, which Python keeps as they are
	i      *big.Int
}

func (n perfNumber) text() string {
	switch {
	case n.isBool:
		return strconv.FormatBool(n.f == 1)
	case n.isInt:
		return n.i.String()
	}
	return string(tree.AppendOrjsonFloat(nil, n.f))
}

func (n perfNumber) rat() *big.Rat {
	if n.isInt {
		return new(big.Rat).SetInt(n.i)
	}
	return new(big.Rat).SetFloat64(n.f)
}

// perfValue reads a value isinstance(v, (int, float)) would accept.
func perfValue(v gjson.Result) (perfNumber, bool) {
	switch v.Type {
	case gjson.True:
		return perfNumber{f: 1, isInt: true, isBool: true, i: big.NewInt(1)}, true
	case gjson.False:
		return perfNumber{f: 0, isInt: true, isBool: true, i: big.NewInt(0)}, true
	case gjson.Number:
		if i, ok := new(big.Int).SetString(v.Raw, 10); ok {
			f, _ := new(big.Float).SetInt(i).Float64()
			return perfNumber{f: f, isInt: true, i: i}, true
		}
		return perfNumber{f: v.Num}, true
	}
	return perfNumber{}, false
}

// PerfSummary is NeMo Gym's compute_perf_summary over the ng_perf of the
// rollouts that carry one, out of total: observability coverage, the
// token counts' mean, median and total, the turns' distribution, tokens
// per turn and the /run latency's percentiles; nil when no rollout has
// ng_perf.
func PerfSummary(perfs []gjson.Result, total int) (json.RawMessage, error) {
	// Held already, the values are not spilled.
	s := newPerfSummarizer("", max(len(perfs), 1))
	defer s.close()
	for _, p := range perfs {
		if err := s.add(p); err != nil {
			return nil, err
		}
	}
	return s.summary(total)
}

// perfFields are the summary's series, in its order, with their
// statistics. Each series is a field of ng_perf but tokens_per_turn,
// completion_tokens / num_turns.
var perfFields = []struct {
	name, prefix, suffix string
	stats                []string
}{
	{"prompt_tokens", "", "_prompt_tokens", []string{"mean", "median", "total"}},
	{"cached_prompt_tokens", "", "_cached_prompt_tokens", []string{"mean", "median", "total"}},
	{"completion_tokens", "", "_completion_tokens", []string{"mean", "median", "total"}},
	{"reasoning_tokens", "", "_reasoning_tokens", []string{"mean", "median", "total"}},
	{"num_turns", "", "_num_turns", []string{"mean", "median", "std", "min", "p90", "max"}},
	{"tokens_per_turn", "", "_tokens_per_turn", []string{"mean", "median"}},
	{"total_latency_ms", "total_latency_", "_ms", []string{"p50", "p90", "p99", "mean"}},
}

// perfSummarizer is PerfSummary fed one ng_perf at a time: each series
// keeps exact sums, and spills its values for the order statistics, so
// that a run's summary takes the same memory at any size.
type perfSummarizer struct {
	perfs, covered int
	series         []*perfSeries // as perfFields
}

// newPerfSummarizer spills a series' values into dir past chunk of them.
func newPerfSummarizer(dir string, chunk int) *perfSummarizer {
	s := &perfSummarizer{}
	for _, f := range perfFields {
		s.series = append(s.series, newPerfSeries(dir, chunk, f.stats))
	}
	return s
}

func (s *perfSummarizer) close() {
	for _, se := range s.series {
		se.close()
	}
}

func (s *perfSummarizer) add(perf gjson.Result) error {
	s.perfs++
	if n, ok := perfValue(perf.Get("token_observability_coverage")); ok && n.f > 0 {
		s.covered++
	}
	for i, f := range perfFields {
		var v perfNumber
		var ok bool
		if f.name == "tokens_per_turn" {
			c, cok := perfValue(perf.Get("completion_tokens"))
			t, tok := perfValue(perf.Get("num_turns"))
			if ok = cok && tok && t.f > 0; ok {
				v = perfNumber{f: divide(c, t)}
			}
		} else {
			v, ok = perfValue(perf.Get(f.name))
		}
		if ok {
			if err := s.series[i].add(v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *perfSummarizer) summary(total int) (json.RawMessage, error) {
	if total <= 0 || s.perfs == 0 {
		return nil, nil
	}
	m := NewMetrics()
	m.Set("overall_observability_coverage", rawFloat(float64(s.perfs)/float64(total)))
	m.Set("token_observability_coverage", rawFloat(float64(s.covered)/float64(total)))
	for i, f := range perfFields {
		se := s.series[i]
		if se.n == 0 {
			continue
		}
		order, err := se.orderStats()
		if err != nil {
			return nil, err
		}
		for _, stat := range f.stats {
			m.Set(f.prefix+stat+f.suffix, se.stat(stat, order))
		}
	}
	return m.MarshalJSON()
}

// perfSeries is one series' values as _stat needs them: statistics.fmean
// (each value as a float, summed exactly), CPython's sum(),
// statistics.pstdev (exact), and the order statistics — median, min, max,
// pandas' linear quantiles — from the values sorted on disk.
type perfSeries struct {
	stats            []string
	n                int
	finite, allInt64 bool
	fsum, rsum, rsq  *big.Rat // nil unless mean, resp. std, is asked
	sum              *perfTotal
	sorted           *extsort.Sorter[perfNumber]
}

// perfChunk is how many values a streamed series holds before it spills
// them; a variable only so that tests can make it spill.
var perfChunk = 1 << 14

func newPerfSeries(dir string, chunk int, stats []string) *perfSeries {
	se := &perfSeries{stats: stats, finite: true, allInt64: true}
	for _, st := range stats {
		switch st {
		case "mean":
			se.fsum = new(big.Rat)
		case "std":
			se.rsum, se.rsq = new(big.Rat), new(big.Rat)
		case "total":
			se.sum = &perfTotal{ints: new(big.Int)}
		default:
			if se.sorted == nil {
				se.sorted = extsort.New(dir, ".perf-*.bin", chunk, comparePerf, perfCodec)
			}
		}
	}
	return se
}

func (se *perfSeries) close() {
	if se.sorted != nil {
		se.sorted.Close()
	}
}

func (se *perfSeries) add(v perfNumber) error {
	se.n++
	se.allInt64 = se.allInt64 && v.isInt && v.i.IsInt64()
	finite := !math.IsInf(v.f, 0) && !math.IsNaN(v.f)
	se.finite = se.finite && finite
	// Past a value beyond a float's range, the mean and std are NaN: the
	// sums stop.
	if se.finite {
		if se.fsum != nil {
			se.fsum.Add(se.fsum, new(big.Rat).SetFloat64(v.f))
		}
		if se.rsum != nil {
			r := v.rat()
			se.rsum.Add(se.rsum, r)
			se.rsq.Add(se.rsq, r.Mul(r, r))
		}
	}
	if se.sum != nil {
		se.sum.add(v)
	}
	if se.sorted != nil {
		return se.sorted.Add(v)
	}
	return nil
}

// orderStats reads, of the sorted values, those at the places the order
// statistics asked for need.
func (se *perfSeries) orderStats() (map[int]perfNumber, error) {
	at := map[int]perfNumber{}
	if se.sorted == nil {
		return at, nil
	}
	n := se.n
	for _, st := range se.stats {
		switch st {
		case "median":
			at[n/2] = perfNumber{}
			if n%2 == 0 {
				at[n/2-1] = perfNumber{}
			}
		case "min":
			at[0] = perfNumber{}
		case "max":
			at[n-1] = perfNumber{}
		case "mean", "std", "total":
		default:
			lo, _ := quantilePlace(n, st)
			at[lo] = perfNumber{}
			at[min(lo+1, n-1)] = perfNumber{}
		}
	}
	last := 0
	for i := range at {
		last = max(last, i)
	}
	i := 0
	err := se.sorted.Each(func(v perfNumber) error {
		if _, ok := at[i]; ok {
			at[i] = v
		}
		if i++; i > last {
			return errEnough
		}
		return nil
	})
	if err != nil && err != errEnough {
		return nil, err
	}
	return at, nil
}

var errEnough = errors.New("enough values read")

// quantilePlace is where numpy's linear quantile "pNN" of n sorted values
// falls: between lo and lo+1, g of the way.
func quantilePlace(n int, stat string) (lo int, g float64) {
	q, _ := strconv.Atoi(stat[1:])
	vi := float64(n-1) * (float64(q) / 100)
	if vi >= float64(n-1) {
		return n - 1, 0
	}
	lo = int(math.Floor(vi))
	return lo, vi - float64(lo)
}

// stat is _stat: statistics.fmean, statistics.median, sum,
// statistics.pstdev, min, max, or pandas' linear quantile.
func (se *perfSeries) stat(stat string, order map[int]perfNumber) json.RawMessage {
	n := se.n
	if !se.finite && (stat == "mean" || stat == "std") {
		// Beyond a float's range Python's statistics fail; gym gives the
		// float arithmetic's answer (written as null).
		return rawFloat(math.NaN())
	}
	switch stat {
	case "mean":
		f, _ := se.fsum.Float64()
		return rawFloat(f / float64(n))
	case "median":
		if n%2 == 1 {
			return json.RawMessage(order[n/2].text())
		}
		return rawFloat(halfSum(order[n/2-1], order[n/2]))
	case "total":
		return json.RawMessage(se.sum.value().text())
	case "std":
		// The population variance, exactly: (Σv² − (Σv)²/n) / n.
		nn := big.NewRat(int64(n), 1)
		mean2 := new(big.Rat).Mul(se.rsum, se.rsum)
		ss := new(big.Rat).Sub(se.rsq, mean2.Quo(mean2, nn))
		ss.Quo(ss, nn)
		root := new(big.Float).SetPrec(256).SetRat(ss)
		f, _ := root.Sqrt(root).Float64()
		return rawFloat(f)
	case "min":
		return json.RawMessage(order[0].text())
	case "max":
		return json.RawMessage(order[n-1].text())
	}
	lo, g := quantilePlace(n, stat)
	if lo == n-1 {
		return rawFloat(order[n-1].f)
	}
	a, b := order[lo], order[lo+1]
	diff := b.f - a.f
	if se.allInt64 {
		// pandas keeps integers as int64, so numpy subtracts them exactly.
		diff, _ = new(big.Float).SetInt(new(big.Int).Sub(b.i, a.i)).Float64()
	}
	if g >= 0.5 {
		return rawFloat(b.f - diff*(1-g))
	}
	return rawFloat(a.f + diff*g)
}

// comparePerf is the order sort.SliceStable(…, a.f < b.f) gave.
func comparePerf(a, b perfNumber) int {
	switch {
	case a.f < b.f:
		return -1
	case b.f < a.f:
		return 1
	}
	return 0
}

// perfCodec spills a value: its kind (0 float, 1 int, 2 bool), the float,
// and an int in hexadecimal.
var perfCodec = extsort.Codec[perfNumber]{
	Append: func(b []byte, v perfNumber) []byte {
		kind := byte(0)
		switch {
		case v.isBool:
			kind = 2
		case v.isInt:
			kind = 1
		}
		b = append(b, kind)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.f))
		if v.isInt {
			b = v.i.Append(b, 16)
		}
		return b
	},
	Decode: func(b []byte) (perfNumber, error) {
		if len(b) < 9 {
			return perfNumber{}, errors.New("a spilled ng_perf value is cut short")
		}
		v := perfNumber{f: math.Float64frombits(binary.LittleEndian.Uint64(b[1:]))}
		if b[0] == 0 {
			return v, nil
		}
		v.isInt, v.isBool = true, b[0] == 2
		i, ok := new(big.Int).SetString(string(b[9:]), 16)
		if !ok {
			return perfNumber{}, errors.New("a spilled ng_perf integer is unreadable")
		}
		v.i = i
		return v, nil
	},
}

// rawFloat is f as orjson writes it, which NeMo Gym's summary goes through.
func rawFloat(f float64) json.RawMessage { return tree.AppendOrjsonFloat(nil, f) }

// divide is Python's a / b: true division, correctly rounded.
func divide(a, b perfNumber) float64 {
	if a.isInt && b.isInt {
		f, _ := new(big.Rat).SetFrac(a.i, b.i).Float64()
		return f
	}
	return a.f / b.f
}

// halfSum is Python's (a + b) / 2.
func halfSum(a, b perfNumber) float64 {
	if a.isInt && b.isInt {
		f, _ := new(big.Rat).SetFrac(new(big.Int).Add(a.i, b.i), big.NewInt(2)).Float64()
		return f
	}
	return (a.f + b.f) / 2
}

// perfTotal is CPython's sum() as values come: ints exactly; from the
// first float on, a float sum compensated over the floats (Neumaier), ints
// added plainly.
type perfTotal struct {
	ints      *big.Int
	floats    bool
	sum, comp float64
}

func (t *perfTotal) add(v perfNumber) {
	switch {
	case !t.floats && v.isInt:
		t.ints.Add(t.ints, v.i)
	case !t.floats:
		start, _ := new(big.Float).SetInt(t.ints).Float64()
		t.sum, t.floats = start+v.f, true
	case v.isInt:
		t.sum += v.f
	default:
		x := t.sum + v.f
		if math.Abs(t.sum) >= math.Abs(v.f) {
			t.comp += (t.sum - x) + v.f
		} else {
			t.comp += (v.f - x) + t.sum
		}
		t.sum = x
	}
}

func (t *perfTotal) value() perfNumber {
	if !t.floats {
		return perfNumber{isInt: true, i: t.ints}
	}
	f := t.sum
	if t.comp != 0 && !math.IsInf(t.comp, 0) && !math.IsNaN(t.comp) {
		f += t.comp
	}
	return perfNumber{f: f}
}
