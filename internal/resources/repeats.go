package resources

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strings"
)

// repeatStats are the statistics of one repeat's column, in the order
// RewardProfiler writes them (nemo-gym 0.7.0's _compute_repeat_level_metrics).
var repeatStats = [...]string{"mean", "median", "std", "sem", "min", "max", "p25", "p75"}

// acrossStats are the statistics over repeats of one per-repeat estimate
// (_aggregate_repeat_level_metrics).
var acrossStats = [...]string{"mean", "median", "std", "min", "max", "se"}

// repeatLevel is RewardProfiler's repeat-level metrics of one agent's rows:
// per rollout index (ascending), how many tasks it has and lacks, and each
// numeric column's statistics over its tasks. An agent with a single
// rollout index has none. agentRef is the entry's agent_ref.
func (p *profiler) repeatLevel(rows []int, agentRef json.RawMessage) []*Metrics {
	byRepeat := map[int64][]int{}
	tasks := map[int64]bool{}
	for _, ri := range rows {
		r := p.rows[ri].rollout
		byRepeat[r.RolloutIndex] = append(byRepeat[r.RolloutIndex], ri)
		tasks[r.TaskIndex] = true
	}
	if len(byRepeat) < 2 {
		return nil
	}
	repeats := make([]repeatRows, 0, len(byRepeat))
	for k, group := range byRepeat {
		present := map[int64]bool{}
		for _, ri := range group {
			present[p.rows[ri].rollout.TaskIndex] = true
		}
		repeats = append(repeats, repeatRows{key: k, tasks: len(present), rows: group})
	}
	vals := make([][]float64, len(p.cols))
	filled := int64(-1)
	return p.repeatMetrics(repeats, len(tasks), agentRef, func(r repeatRows, c int) (repeatColumn, bool) {
		if filled != r.key {
			for c := range vals {
				vals[c] = vals[c][:0]
			}
			for _, ri := range r.rows {
				for _, c := range p.rows[ri].cells {
					vals[c.col] = append(vals[c.col], c.value)
				}
			}
			filled = r.key
		}
		return summarizeRepeat(vals[c])
	})
}

// repeatRows are one rollout index's rollouts: the distinct tasks among
// them, and their rows (none when streamed).
type repeatRows struct {
	key   int64
	tasks int
	rows  []int
}

// repeatColumn is one column's statistics over one repeat's rollouts.
type repeatColumn struct {
	summary
	p25, p75 float64
	n        int
}

// summarizeRepeat is a repeat's statistics of a column's values; none when
// the repeat has no value there.
func summarizeRepeat(v []float64) (repeatColumn, bool) {
	if len(v) == 0 {
		return repeatColumn{}, false
	}
	s := summarize(v)
	r := repeatColumn{summary: s, p25: quantile(s.sorted, 0.25), p75: quantile(s.sorted, 0.75), n: len(v)}
	r.sorted = nil
	return r, true
}

// repeatMetrics is repeatLevel from each repeat's rollouts, of tasks
// distinct tasks in all; column gives a repeat's statistics of a column.
func (p *profiler) repeatMetrics(repeats []repeatRows, tasks int, agentRef json.RawMessage, column func(r repeatRows, c int) (repeatColumn, bool)) []*Metrics {
	if len(repeats) < 2 {
		return nil
	}
	slices.SortFunc(repeats, func(a, b repeatRows) int { return cmp.Compare(a.key, b.key) })
	// pandas' Index.difference sorts the numeric columns by name.
	cols := make([]int, len(p.cols))
	for c := range cols {
		cols[c] = c
	}
	slices.SortFunc(cols, func(a, b int) int { return strings.Compare(p.cols[a].name, p.cols[b].name) })

	var out []*Metrics
	for _, r := range repeats {
		m := NewMetrics()
		m.Set("agent_ref", agentRef)
		m.Set(RolloutIndexKey, r.key)
		m.Set("sample_count", int64(r.tasks))
		m.Set("missing_count", int64(tasks-r.tasks))
		for _, c := range cols {
			s, ok := column(r, c)
			if !ok {
				continue
			}
			name := p.cols[c].name
			for i, x := range [...]float64{s.mean, s.median, s.std, s.se, s.min, s.max, s.p25, s.p75} {
				m.Set(repeatStats[i]+"/"+name, x)
			}
			if lo, hi, ok := confidenceInterval(s.mean, s.se, s.n); ok {
				m.Set("ci_low_95/"+name, lo)
				m.Set("ci_high_95/"+name, hi)
			}
		}
		out = append(out, m)
	}
	return out
}

// acrossRepeats sets into agent the statistics across repeats of each
// per-repeat point estimate (each mean/… of repeats, in the order the
// entries first have them): mean_across_repeats/mean/reward and the like.
func acrossRepeats(repeats []*Metrics, agent *Metrics) {
	var names []string
	seen := map[string]bool{}
	for _, r := range repeats {
		for _, k := range r.Keys() {
			if !seen[k] && PrimaryMetric(k) {
				if _, isNum := r.Float(k); isNum {
					seen[k] = true
					names = append(names, k)
				}
			}
		}
	}
	for _, name := range names {
		var v []float64
		for _, r := range repeats {
			if x, ok := r.Float(name); ok && !math.IsNaN(x) {
				v = append(v, x)
			}
		}
		if len(v) == 0 {
			continue
		}
		s := summarize(v)
		for i, x := range [...]float64{s.mean, s.median, s.std, s.min, s.max, s.se} {
			agent.Set(acrossStats[i]+"_across_repeats/"+name, x)
		}
		if lo, hi, ok := confidenceInterval(s.mean, s.se, len(v)); ok {
			agent.Set("ci_low_95_across_repeats/"+name, lo)
			agent.Set("ci_high_95_across_repeats/"+name, hi)
		}
	}
}

// PrimaryMetric is nemo-gym's is_primary_metric: a point estimate, fit
// to aggregate across repeats and to compare between runs, not a
// statistic of one, an uncertainty or bookkeeping.
func PrimaryMetric(name string) bool {
	switch name {
	case TaskIndexKey, RolloutIndexKey, "_ng_attempt_index", "sample_count", "missing_count", "num_repeats", "token_usage_version":
		return false
	}
	for _, p := range []string{"max/", "min/", "median/", "std/", "sem/", "se/", "p25/", "p75/", "ci_low_95/", "ci_high_95/", "histogram/"} {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	for _, s := range []string{"/max", "/min", "/median", "/p5", "/p25", "/p75", "/p95", "/ci_low_95", "/ci_high_95",
		"/ci_lower", "/ci_upper", "_ci_lower", "_ci_upper", "_ci95_lower", "_ci95_upper", "/_ng_attempt_index",
		"/std_dev_across_runs", "/std_err_across_runs", "/avg_sample_std_dev"} {
		if strings.HasSuffix(name, s) {
			return false
		}
	}
	return !strings.Contains(name, "_across_repeats/")
}

type summary struct {
	mean, median, std, se, min, max float64
	sorted                          []float64
}

// summarize is pandas' mean, median, sample std (0 for one value), its
// standard error, min and max of v.
func summarize(v []float64) summary {
	var sum float64
	for _, x := range v {
		sum += x
	}
	n := float64(len(v))
	s := summary{mean: sum / n, sorted: slices.Sorted(slices.Values(v))}
	if len(v) > 1 {
		var sq float64
		for _, x := range v {
			sq += (x - s.mean) * (x - s.mean)
		}
		s.std = math.Sqrt(sq / (n - 1))
	}
	s.se = s.std / math.Sqrt(n)
	s.min, s.max = s.sorted[0], s.sorted[len(v)-1]
	s.median = sortedMedian(s.sorted)
	return s
}

// quantile is numpy's linear quantile of sorted values.
func quantile(sorted []float64, q float64) float64 {
	return quantileAt(len(sorted), sliceAt(sorted), q)
}

// quantileAt is quantile of n values whose i-th smallest is at(i).
func quantileAt(n int, at func(int) float64, q float64) float64 {
	lo, last := quantileRank(n, q)
	if last {
		return at(n - 1)
	}
	g := float64(n-1)*q - float64(lo)
	a, b := at(lo), at(lo+1)
	if g >= 0.5 {
		return b - (b-a)*(1-g)
	}
	return a + (b-a)*g
}

// quantileRank is the lower rank quantileAt reads (and the one after it),
// or last when it reads only the largest value.
func quantileRank(n int, q float64) (lo int, last bool) {
	lo = int(math.Floor(float64(n-1) * q))
	return lo, lo >= n-1
}

// confidenceInterval is scipy's 95 % Student-t interval around mean with
// standard error se over n values; none for one value, and the point
// itself when every value is the same.
func confidenceInterval(mean, se float64, n int) (lo, hi float64, ok bool) {
	if n <= 1 {
		return 0, 0, false
	}
	if se == 0 {
		return mean, mean, true
	}
	t := studentTQuantile(0.975, float64(n-1))
	return mean + se*-t, mean + se*t, true
}

// studentTQuantile is the p-quantile (p > 0.5) of Student's t with df
// degrees of freedom: the t where the CDF reaches p, found by bisection to
// the last representable digit.
func studentTQuantile(p, df float64) float64 {
	lo, hi := 0.0, 1.0
	for studentTCDF(hi, df) < p {
		hi *= 2
	}
	for {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			return mid
		}
		if studentTCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
}

// studentTCDF is P(T <= t) for t >= 0.
func studentTCDF(t, df float64) float64 {
	x := df / (df + t*t)
	return 1 - 0.5*regIncBeta(df/2, 0.5, x)
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by its
// continued fraction (modified Lentz), on the side where it converges fast.
func regIncBeta(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaContinuedFraction(a, b, x) / a
	}
	return 1 - front*betaContinuedFraction(b, a, 1-x)/b
}

func betaContinuedFraction(a, b, x float64) float64 {
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < lentzTiny {
		d = lentzTiny
	}
	d = 1 / d
	f := d
	for m := 1.0; m < 10000; m++ {
		// The even step, then the odd one.
		f *= lentzStep(m*(b-m)*x/((a+2*m-1)*(a+2*m)), &c, &d)
		delta := lentzStep(-(a+m)*(a+b+m)*x/((a+2*m)*(a+2*m+1)), &c, &d)
		f *= delta
		if math.Abs(delta-1) < 1e-16 {
			break
		}
	}
	return f
}

const lentzTiny = 1e-300

// lentzStep advances the modified Lentz recurrence by one partial
// numerator and returns the factor it multiplies the fraction by.
func lentzStep(num float64, c, d *float64) float64 {
	*d = 1 + num**d
	if math.Abs(*d) < lentzTiny {
		*d = lentzTiny
	}
	*c = 1 + num/(*c)
	if math.Abs(*c) < lentzTiny {
		*c = lentzTiny
	}
	*d = 1 / *d
	return *d * *c
}
