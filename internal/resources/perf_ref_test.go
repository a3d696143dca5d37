package resources

import (
	"encoding/json"
	"math"
	"math/big"
	"sort"
	"strconv"

	"github.com/tidwall/gjson"
)

// perfSummaryRef is the in-memory PerfSummary that held every value, the
// reference the streamed one is held equal to.
//
// PerfSummary was NeMo Gym's compute_perf_summary over the ng_perf of the
// rollouts that carry one, out of total: observability coverage, the
// token counts' mean, median and total, the turns' distribution, tokens
// per turn and the /run latency's percentiles; nil when no rollout has
// ng_perf.
func perfSummaryRef(perfs []gjson.Result, total int) json.RawMessage {
	if total <= 0 || len(perfs) == 0 {
		return nil
	}
	values := func(key string) []perfNumber {
		var out []perfNumber
		for _, p := range perfs {
			if n, ok := perfValue(p.Get(gjson.Escape(key))); ok {
				out = append(out, n)
			}
		}
		return out
	}
	m := NewMetrics()
	m.Set("overall_observability_coverage", rawFloat(float64(len(perfs))/float64(total)))
	covered := 0
	for _, p := range perfs {
		if n, ok := perfValue(p.Get("token_observability_coverage")); ok && n.f > 0 {
			covered++
		}
	}
	m.Set("token_observability_coverage", rawFloat(float64(covered)/float64(total)))
	for _, field := range []string{"prompt_tokens", "cached_prompt_tokens", "completion_tokens", "reasoning_tokens"} {
		if vs := values(field); len(vs) > 0 {
			for _, stat := range []string{"mean", "median", "total"} {
				m.Set(stat+"_"+field, perfStatRef(vs, stat))
			}
		}
	}
	if vs := values("num_turns"); len(vs) > 0 {
		for _, stat := range []string{"mean", "median", "std", "min", "p90", "max"} {
			m.Set(stat+"_num_turns", perfStatRef(vs, stat))
		}
	}
	var perTurn []perfNumber
	for _, p := range perfs {
		c, cok := perfValue(p.Get("completion_tokens"))
		t, tok := perfValue(p.Get("num_turns"))
		if cok && tok && t.f > 0 {
			perTurn = append(perTurn, perfNumber{f: divide(c, t)})
		}
	}
	if len(perTurn) > 0 {
		m.Set("mean_tokens_per_turn", perfStatRef(perTurn, "mean"))
		m.Set("median_tokens_per_turn", perfStatRef(perTurn, "median"))
	}
	if vs := values("total_latency_ms"); len(vs) > 0 {
		for _, stat := range []string{"p50", "p90", "p99", "mean"} {
			m.Set("total_latency_"+stat+"_ms", perfStatRef(vs, stat))
		}
	}
	b, _ := m.MarshalJSON()
	return b
}

// perfStat is _stat: statistics.fmean, statistics.median, sum,
// statistics.pstdev, min, max, or pandas' linear quantile.
func perfStatRef(vs []perfNumber, stat string) json.RawMessage {
	sorted := append([]perfNumber(nil), vs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].f < sorted[j].f })
	n := len(vs)
	finite := true
	for _, v := range vs {
		finite = finite && !math.IsInf(v.f, 0) && !math.IsNaN(v.f)
	}
	if !finite && (stat == "mean" || stat == "std") {
		// Beyond a float's range Python's statistics fail; gym gives the
		// float arithmetic's answer (written as null).
		return rawFloat(math.NaN())
	}
	switch stat {
	case "mean":
		// math.fsum: each value as a float, summed exactly.
		sum := new(big.Rat)
		for _, v := range vs {
			sum.Add(sum, new(big.Rat).SetFloat64(v.f))
		}
		f, _ := sum.Float64()
		return rawFloat(f / float64(n))
	case "median":
		if n%2 == 1 {
			return json.RawMessage(sorted[n/2].text())
		}
		return rawFloat(halfSum(sorted[n/2-1], sorted[n/2]))
	case "total":
		return json.RawMessage(totalRef(vs).text())
	case "std":
		mean := new(big.Rat)
		for _, v := range vs {
			mean.Add(mean, v.rat())
		}
		mean.Quo(mean, big.NewRat(int64(n), 1))
		ss := new(big.Rat)
		for _, v := range vs {
			d := new(big.Rat).Sub(v.rat(), mean)
			ss.Add(ss, d.Mul(d, d))
		}
		ss.Quo(ss, big.NewRat(int64(n), 1))
		root := new(big.Float).SetPrec(256).SetRat(ss)
		f, _ := root.Sqrt(root).Float64()
		return rawFloat(f)
	case "min":
		return json.RawMessage(sorted[0].text())
	case "max":
		return json.RawMessage(sorted[n-1].text())
	}
	q, _ := strconv.Atoi(stat[1:])
	return rawFloat(linearQuantileRef(sorted, float64(q)/100))
}

// total is CPython's sum(): ints exactly; from the first float on, a
// float sum compensated over the floats (Neumaier), ints added plainly.
func totalRef(vs []perfNumber) perfNumber {
	sum := new(big.Int)
	i := 0
	for ; i < len(vs) && vs[i].isInt; i++ {
		sum.Add(sum, vs[i].i)
	}
	if i == len(vs) {
		return perfNumber{isInt: true, i: sum}
	}
	start, _ := new(big.Float).SetInt(sum).Float64()
	f, c := start+vs[i].f, 0.0
	for _, v := range vs[i+1:] {
		if v.isInt {
			f += v.f
			continue
		}
		t := f + v.f
		if math.Abs(f) >= math.Abs(v.f) {
			c += (f - t) + v.f
		} else {
			c += (v.f - t) + f
		}
		f = t
	}
	if c != 0 && !math.IsInf(c, 0) && !math.IsNaN(c) {
		f += c
	}
	return perfNumber{f: f}
}

// linearQuantile is numpy's default ("linear") quantile of sorted values.
func linearQuantileRef(sorted []perfNumber, q float64) float64 {
	n := len(sorted)
	vi := float64(n-1) * q
	if vi >= float64(n-1) {
		return sorted[n-1].f
	}
	lo := int(math.Floor(vi))
	g := vi - float64(lo)
	a, b := sorted[lo].f, sorted[lo+1].f
	diff := b - a
	if allInt64Ref(sorted) {
		// pandas keeps integers as int64, so numpy subtracts them exactly.
		d, _ := new(big.Float).SetInt(new(big.Int).Sub(sorted[lo+1].i, sorted[lo].i)).Float64()
		diff = d
	}
	if g >= 0.5 {
		return b - diff*(1-g)
	}
	return a + diff*g
}

func allInt64Ref(vs []perfNumber) bool {
	for _, v := range vs {
		if !v.isInt || !v.i.IsInt64() {
			return false
		}
	}
	return true
}
