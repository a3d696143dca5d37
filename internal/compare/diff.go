package compare

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/nemo-gym-go/gym/internal/resources"
)

const (
	// flipField is the per-task field flips are computed from.
	flipField    = "reward"
	taskMeanKey  = "mean/" + flipField
	taskMinKey   = "min/" + flipField
	taskMaxKey   = "max/" + flipField
	taskIndexKey = "_ng_task_index"
	// passThreshold: a task passes when the mean of its repeats is above it.
	passThreshold = 0.5
	// maxFlipsShown per direction in the markdown; flips past it keep no
	// per-repeat rewards in the JSON either.
	maxFlipsShown = 10
)

// MetricValue is one side's reading of a metric and the uncertainty the
// run recorded for it.
type MetricValue struct {
	Value             float64
	CILow, CIHigh     *float64
	SEAcrossRepeats   *float64
	MeanAcrossRepeats *float64
	StdErrAcrossRuns  *float64
}

// point is what is displayed and diffed: the mean across repeats when
// recorded, else the value.
func (m *MetricValue) point() float64 {
	if m.MeanAcrossRepeats != nil {
		return *m.MeanAcrossRepeats
	}
	return m.Value
}

// CandidateValue is a candidate's reading and its movement from the
// baseline.
type CandidateValue struct {
	MetricValue
	Delta, DeltaPct         *float64
	DeltaCILow, DeltaCIHigh *float64
}

// MetricRow is one metric across the runs.
type MetricRow struct {
	Metric      string
	IsKeyMetric bool
	PresentIn   []string
	Baseline    *MetricValue
	Candidates  []*CandidateValue
}

// TaskFlip is one task that moved between the runs.
type TaskFlip struct {
	TaskIndex                         int64
	BaselineScore, CandidateScore     float64
	Delta                             float64
	Direction                         string // pass_to_fail, fail_to_pass or changed
	BaselineRewards, CandidateRewards []float64
}

// FlipSummary is the per-task movement against one candidate.
type FlipSummary struct {
	CandidateIndex                           int
	Mode                                     string // binary, continuous or unavailable
	Reason                                   *string
	CommonTasks, BaselineOnly, CandidateOnly int
	PassToFail, FailToPass, Tied, Unchanged  *int
	Net                                      *int
	Flips                                    []TaskFlip
}

// AgentComparison is one agent's comparison block.
type AgentComparison struct {
	BaselineAgent         string
	CandidateAgents       []string
	BaselineTaskCount     int
	CandidateTaskCounts   []int
	BaselineRepeatCount   *int
	CandidateRepeatCounts []*int
	Metrics               []MetricRow
	Flips                 []FlipSummary
	Notes                 []string
}

func ptr[T any](v T) *T { return &v }

func optNumber(o *object, key string) *float64 {
	if v, ok := o.number(key); ok {
		return &v
	}
	return nil
}

func metricValue(metrics *object, name string) *MetricValue {
	v, ok := metrics.number(name)
	if !ok {
		return nil
	}
	return &MetricValue{
		Value:             v,
		CILow:             optNumber(metrics, "ci_low_95_across_repeats/"+name),
		CIHigh:            optNumber(metrics, "ci_high_95_across_repeats/"+name),
		SEAcrossRepeats:   optNumber(metrics, "se_across_repeats/"+name),
		MeanAcrossRepeats: optNumber(metrics, "mean_across_repeats/"+name),
		StdErrAcrossRuns:  optNumber(metrics, name+"/std_err_across_runs"),
	}
}

// merged is key_metrics overlaid by agent_metrics: key metrics can name
// what agent_metrics lacks, and agent_metrics wins where both have it.
func merged(r *loadedRun) *object {
	o := newObject()
	for _, src := range []*object{r.keyMetrics, r.agentMetrics} {
		for _, k := range src.keys {
			o.set(k, src.vals[k])
		}
	}
	return o
}

// repeatValues are the finite values of one metric, one per repeat.
func repeatValues(r *loadedRun, name string) []float64 {
	var out []float64
	for _, e := range r.repeats {
		if e == nil {
			continue
		}
		if v, ok := e.number(name); ok && !math.IsInf(v, 0) && !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}

func warnUnequalRepeats(r *loadedRun, label string, warn io.Writer) {
	counts := map[string]bool{}
	missing := false
	for _, e := range r.repeats {
		if e == nil {
			continue
		}
		raw, ok := e.get("sample_count")
		if v, isNum := e.number("sample_count"); isNum {
			counts[fmt.Sprint(v)] = true
		} else if ok {
			counts[string(raw)] = true
		} else {
			counts["None"] = true
		}
		if v, ok := e.number("missing_count"); ok && v > 0 {
			missing = true
		}
	}
	if missing || len(counts) > 1 {
		fmt.Fprintf(warn, "Warning: %s agent '%s' has incomplete or unequal task coverage across repeats; "+
			"delta confidence intervals may mix task-difficulty differences with repeat variance.\n", label, r.agent)
	}
}

// welchInterval is scipy's two-sided 95 % Welch t-interval for candidate
// minus baseline over each run's repeat-level values of the metric; none
// unless both runs recorded mean_across_repeats/<metric> and have two
// finite repeat values each.
func welchInterval(baseline, candidate *loadedRun, name string) (lo, hi *float64) {
	for _, r := range []*loadedRun{baseline, candidate} {
		if _, ok := r.agentMetrics.number("mean_across_repeats/" + name); !ok {
			return nil, nil
		}
	}
	b, c := repeatValues(baseline, name), repeatValues(candidate, name)
	if len(b) < 2 || len(c) < 2 {
		return nil, nil
	}
	m1, v1 := meanVar(c)
	m2, v2 := meanVar(b)
	n1, n2 := float64(len(c)), float64(len(b))
	vn1, vn2 := v1/n1, v2/n2
	df := (vn1 + vn2) * (vn1 + vn2) / (vn1*vn1/(n1-1) + vn2*vn2/(n2-1))
	if math.IsNaN(df) {
		// Both variances are zero: any df gives the same zero-width interval.
		df = 1
	}
	se := math.Sqrt(vn1 + vn2)
	estimate := m1 - m2
	t := resources.StudentTQuantile(0.975, df)
	return ptr(-t*se + estimate), ptr(t*se + estimate)
}

// meanVar is numpy's mean and scipy's ddof=1 variance of v (the mean
// squared deviation, scaled by n/(n-1)), summed as numpy sums.
func meanVar(v []float64) (mean, variance float64) {
	n := float64(len(v))
	mean = pairwiseSum(v) / n
	dev := make([]float64, len(v))
	for i, x := range v {
		d := x - mean
		dev[i] = d * d
	}
	variance = pairwiseSum(dev) / n
	return mean, variance * (n / (n - 1))
}

// pairwiseSum is numpy's float64 add.reduce: blocks of up to 128 summed
// with eight interleaved accumulators, larger arrays split in halves.
func pairwiseSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		s := 0.0
		for _, x := range a {
			s += x
		}
		return s
	case n <= 128:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += a[i+j]
			}
		}
		s := (r[0] + r[1]) + (r[2] + r[3]) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			s += a[i]
		}
		return s
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSum(a[:n2]) + pairwiseSum(a[n2:])
	}
}

func candidateValue(metrics *object, name string, baselinePoint *float64, lo, hi *float64) *CandidateValue {
	base := metricValue(metrics, name)
	if base == nil {
		return nil
	}
	c := &CandidateValue{MetricValue: *base, DeltaCILow: lo, DeltaCIHigh: hi}
	if baselinePoint != nil {
		d := base.point() - *baselinePoint
		c.Delta = &d
		if *baselinePoint != 0 {
			c.DeltaPct = ptr(d / math.Abs(*baselinePoint) * 100.0)
		}
	}
	return c
}

func buildMetricRows(baseline *loadedRun, candidates []*loadedRun, warn io.Writer) []MetricRow {
	warnUnequalRepeats(baseline, "Baseline", warn)
	for i, c := range candidates {
		warnUnequalRepeats(c, fmt.Sprintf("Candidate[%d]", i), warn)
	}
	baseMetrics := merged(baseline)
	candMetrics := make([]*object, len(candidates))
	keyNames := map[string]bool{}
	for _, k := range baseline.keyMetrics.keys {
		keyNames[k] = true
	}
	for i, c := range candidates {
		candMetrics[i] = merged(c)
		for _, k := range c.keyMetrics.keys {
			keyNames[k] = true
		}
	}
	// Baseline order first (it is the reference), then what only the
	// candidates have.
	var names []string
	seen := map[string]bool{}
	for _, m := range append([]*object{baseMetrics}, candMetrics...) {
		for _, k := range m.keys {
			if _, ok := m.number(k); ok && !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	var rows []MetricRow
	for _, name := range names {
		if !resources.PrimaryMetric(name) {
			continue
		}
		bv := metricValue(baseMetrics, name)
		var bp *float64
		if bv != nil {
			bp = ptr(bv.point())
		}
		row := MetricRow{Metric: name, IsKeyMetric: keyNames[name], PresentIn: []string{}, Baseline: bv}
		if bv != nil {
			row.PresentIn = append(row.PresentIn, "baseline")
		}
		for i, c := range candidates {
			var lo, hi *float64
			if bv != nil {
				lo, hi = welchInterval(baseline, c, name)
			}
			cv := candidateValue(candMetrics[i], name, bp, lo, hi)
			row.Candidates = append(row.Candidates, cv)
			if cv != nil {
				row.PresentIn = append(row.PresentIn, fmt.Sprintf("candidate[%d]", i))
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// groupsByTask indexes a run's per-task metrics by task index.
func groupsByTask(r *loadedRun) (map[int64]*object, error) {
	out := map[int64]*object{}
	for _, g := range r.groups {
		if g == nil {
			continue
		}
		raw, ok := g.get(taskIndexKey)
		if !ok {
			continue
		}
		v, isNum := numberOf(raw)
		if !isNum || v != math.Trunc(v) || math.IsInf(v, 0) {
			return nil, errorf("'%s' agent '%s': a group's %s is %s, not an integer.", r.aggregatePath, r.agent, taskIndexKey, raw)
		}
		out[int64(v)] = g
	}
	return out, nil
}

// perRepeatRewards are a task's rewards in rollout order, from its
// rollout_infos; nil unless every one has a numeric reward.
func perRepeatRewards(g *object) []float64 {
	raw, _ := g.get("rollout_infos")
	infos, ok := objects(raw)
	if !ok || len(infos) == 0 {
		return nil
	}
	type info struct {
		index  float64
		reward float64
		ok     bool
	}
	list := make([]info, len(infos))
	for i, in := range infos {
		if in == nil {
			return nil
		}
		list[i].index, _ = in.number("_ng_rollout_index")
		list[i].reward, list[i].ok = in.number(flipField)
	}
	slices.SortStableFunc(list, func(a, b info) int { return cmp.Compare(a.index, b.index) })
	out := make([]float64, len(list))
	for i, in := range list {
		if !in.ok {
			return nil
		}
		out[i] = in.reward
	}
	return out
}

// looksBinary is whether every reward both sides observed on the tasks
// is exactly 0 or 1, by each task's min and max (its mean only when it
// recorded neither), so a task whose repeats disagree is still binary.
func looksBinary(tasks []int64, sides ...map[int64]*object) bool {
	for _, t := range tasks {
		for _, groups := range sides {
			g := groups[t]
			var observed [][]byte
			for _, k := range []string{taskMinKey, taskMaxKey} {
				if raw, ok := g.get(k); ok && string(raw) != "null" {
					observed = append(observed, raw)
				}
			}
			if len(observed) == 0 {
				raw, _ := g.get(taskMeanKey)
				observed = append(observed, raw)
			}
			for _, v := range observed {
				n, ok := numberOf(v)
				if !ok || (n != 0 && n != 1) {
					return false
				}
			}
		}
	}
	return true
}

// capRewardLists drops the per-repeat rewards of flips past the number
// the markdown shows per direction, so the JSON does not grow with
// tasks × repeats.
func capRewardLists(flips []TaskFlip) {
	counts := map[string]int{}
	for i := range flips {
		d := flips[i].Direction
		if counts[d] >= maxFlipsShown {
			flips[i].BaselineRewards, flips[i].CandidateRewards = nil, nil
		}
		counts[d]++
	}
}

func flipDirection(b, c float64) string {
	if b == passThreshold || c == passThreshold {
		return ""
	}
	switch bp, cp := b > passThreshold, c > passThreshold; {
	case bp && !cp:
		return "pass_to_fail"
	case cp && !bp:
		return "fail_to_pass"
	}
	return ""
}

// buildFlipSummary joins the runs' tasks on task index (the metrics carry
// no task identity, so this assumes the same dataset, split, limit and
// order) and counts the tasks that moved.
func buildFlipSummary(baseline, candidate *loadedRun, index int) (FlipSummary, error) {
	bg, err := groupsByTask(baseline)
	if err != nil {
		return FlipSummary{}, err
	}
	cg, err := groupsByTask(candidate)
	if err != nil {
		return FlipSummary{}, err
	}
	var common []int64
	s := FlipSummary{CandidateIndex: index, Flips: []TaskFlip{}}
	for t := range bg {
		if _, ok := cg[t]; ok {
			common = append(common, t)
		} else {
			s.BaselineOnly++
		}
	}
	for t := range cg {
		if _, ok := bg[t]; !ok {
			s.CandidateOnly++
		}
	}
	slices.Sort(common)
	s.CommonTasks = len(common)
	unavailable := func(reason string) (FlipSummary, error) {
		s.Mode, s.Reason = "unavailable", &reason
		return s, nil
	}
	if len(bg) == 0 || len(cg) == 0 {
		return unavailable("one or both runs recorded no per-task metrics.")
	}
	if len(common) == 0 {
		return unavailable(fmt.Sprintf("no overlapping task indices (baseline has %d, candidate has %d).", len(bg), len(cg)))
	}
	type scored struct {
		task int64
		b, c float64
	}
	var all []scored
	var tasks []int64
	for _, t := range common {
		b, bok := bg[t].number(taskMeanKey)
		c, cok := cg[t].number(taskMeanKey)
		if bok && cok {
			all = append(all, scored{t, b, c})
			tasks = append(tasks, t)
		}
	}
	if len(all) == 0 {
		return unavailable(fmt.Sprintf("no `%s` recorded for the overlapping tasks.", taskMeanKey))
	}
	flip := func(x scored, dir string) TaskFlip {
		return TaskFlip{TaskIndex: x.task, BaselineScore: x.b, CandidateScore: x.c, Delta: x.c - x.b, Direction: dir,
			BaselineRewards: perRepeatRewards(bg[x.task]), CandidateRewards: perRepeatRewards(cg[x.task])}
	}
	if !looksBinary(tasks, bg, cg) {
		for _, x := range all {
			if x.c != x.b {
				s.Flips = append(s.Flips, flip(x, "changed"))
			}
		}
		slices.SortStableFunc(s.Flips, func(a, b TaskFlip) int {
			return cmp.Or(cmp.Compare(math.Abs(b.Delta), math.Abs(a.Delta)), cmp.Compare(a.TaskIndex, b.TaskIndex))
		})
		capRewardLists(s.Flips)
		s.Mode = "continuous"
		s.Unchanged = ptr(len(all) - len(s.Flips))
		return s, nil
	}
	tied, unchanged := 0, 0
	for _, x := range all {
		dir := flipDirection(x.b, x.c)
		if dir == "" {
			if x.b == passThreshold || x.c == passThreshold {
				tied++
			} else {
				unchanged++
			}
			continue
		}
		s.Flips = append(s.Flips, flip(x, dir))
	}
	// Regressions first, then by how far the task moved.
	slices.SortStableFunc(s.Flips, func(a, b TaskFlip) int {
		ar, br := a.Direction != "pass_to_fail", b.Direction != "pass_to_fail"
		if ar != br {
			if !ar {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(math.Abs(b.Delta), math.Abs(a.Delta)), cmp.Compare(a.TaskIndex, b.TaskIndex))
	})
	capRewardLists(s.Flips)
	p2f := 0
	for _, f := range s.Flips {
		if f.Direction == "pass_to_fail" {
			p2f++
		}
	}
	f2p := len(s.Flips) - p2f
	s.Mode = "binary"
	s.PassToFail, s.FailToPass, s.Tied, s.Unchanged, s.Net = &p2f, &f2p, &tied, &unchanged, ptr(f2p-p2f)
	return s, nil
}

// compareRuns builds one agent's block: metric rows, flips, and what is
// worth a note.
func compareRuns(baseline *loadedRun, candidates []*loadedRun, warn io.Writer) (*AgentComparison, error) {
	rows := buildMetricRows(baseline, candidates, warn)
	shared := false
	for _, r := range rows {
		if r.Baseline != nil && slices.ContainsFunc(r.Candidates, func(c *CandidateValue) bool { return c != nil }) {
			shared = true
		}
	}
	if !shared {
		var bOnly, cOnly []string
		for _, r := range rows {
			if r.Baseline != nil {
				bOnly = append(bOnly, r.Metric)
			} else {
				cOnly = append(cOnly, r.Metric)
			}
		}
		first5 := func(s []string) string {
			slices.Sort(s)
			if len(s) > 5 {
				s = s[:5]
			}
			if len(s) == 0 {
				return "none"
			}
			return strings.Join(s, ", ")
		}
		return nil, errorf("Baseline and candidate share no metric keys, so there is nothing to compare.\n"+
			"  baseline-only (first 5): %s\n  candidate-only (first 5): %s\n"+
			"Runs collected with different --num-repeats produce different pass@k metric names.", first5(bOnly), first5(cOnly))
	}
	ac := &AgentComparison{BaselineAgent: baseline.agent, BaselineTaskCount: baseline.numTasks, BaselineRepeatCount: baseline.numRepeats, Metrics: rows, Notes: []string{}}
	differ, anyCIs := false, baseline.hasRepeatCIs
	var counts []string
	for _, c := range candidates {
		ac.CandidateAgents = append(ac.CandidateAgents, c.agent)
		ac.CandidateTaskCounts = append(ac.CandidateTaskCounts, c.numTasks)
		ac.CandidateRepeatCounts = append(ac.CandidateRepeatCounts, c.numRepeats)
		if baseline.numRepeats != nil && c.numRepeats != nil && *c.numRepeats != *baseline.numRepeats {
			differ = true
		}
		if c.numRepeats != nil {
			counts = append(counts, fmt.Sprint(*c.numRepeats))
		} else {
			counts = append(counts, "None")
		}
		anyCIs = anyCIs || c.hasRepeatCIs
	}
	if differ {
		ac.Notes = append(ac.Notes, fmt.Sprintf("Repeat counts differ (baseline %d, candidate %s). Metric names that embed k "+
			"(e.g. pass@1[avg-of-k]) will not line up across the runs.", *baseline.numRepeats, strings.Join(counts, ", ")))
	}
	if !anyCIs {
		ac.Notes = append(ac.Notes, "Neither run recorded per-run cross-repeat confidence intervals, so every baseline/candidate "+
			"CI cell is empty. They are written for repeat-aggregated metrics when a run has 2 or more repeats.")
	}
	oneSided := 0
	for _, r := range rows {
		if len(r.PresentIn) < 1+len(candidates) {
			oneSided++
		}
	}
	if oneSided > 0 {
		ac.Notes = append(ac.Notes, fmt.Sprintf("%d metric(s) were reported by only one of the runs.", oneSided))
	}
	for i, c := range candidates {
		fs, err := buildFlipSummary(baseline, c, i)
		if err != nil {
			return nil, err
		}
		ac.Flips = append(ac.Flips, fs)
	}
	return ac, nil
}
