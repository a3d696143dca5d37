package resources

import (
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Score is one named score of a rollout, e.g. accuracy = reward.
type Score struct {
	Name  string
	Value float64
}

// ScoreFunc names the scores of a rollout that pass@k and majority@k are
// computed over.
type ScoreFunc func(r Rollout) []Score

// RewardAccuracy is NeMo Gym's default score: accuracy = reward.
func RewardAccuracy(r Rollout) []Score {
	if v, ok := r.Number("reward"); ok {
		return []Score{{"accuracy", v}}
	}
	return nil
}

// PassMajorityMetrics is NeMo Gym's compute_pass_majority_metrics. For
// every k up to the largest task and every score name: pass@k (combinatorial
// for 0/1 scores, else the max of the first k), pass@1[avg-of-k] and, with
// answerKey, majority@k over the first k rollouts with a non-null answer,
// plus a no_answer score; then per_sample_aggregate and the across-run
// std dev and std err. Values are percentages.
func PassMajorityMetrics(tasks [][]Rollout, score ScoreFunc, answerKey string) *Metrics {
	m := NewMetrics()
	if len(tasks) == 0 {
		return m
	}
	if score == nil {
		score = RewardAccuracy
	}
	maxK := 0
	scores := make([][]map[string]float64, len(tasks))
	answers := make([][]*string, len(tasks))
	names := map[string]bool{}
	for t, rollouts := range tasks {
		maxK = max(maxK, len(rollouts))
		for _, r := range rollouts {
			s := map[string]float64{}
			for _, sc := range score(r) {
				s[sc.Name] = sc.Value
			}
			if answerKey != "" {
				a := answerOf(r, answerKey)
				answers[t] = append(answers[t], a)
				s["no_answer"] = b2f(a == nil)
			}
			for n := range s {
				names[n] = true
			}
			scores[t] = append(scores[t], s)
		}
	}
	scoreNames := make([]string, 0, len(names))
	for n := range names {
		scoreNames = append(scoreNames, n)
	}
	slices.Sort(scoreNames)

	combs := combRatios{}
	for k := 1; k <= maxK; k++ {
		for _, name := range scoreNames {
			var passValues []float64
			for _, ts := range scores {
				vals := valuesOf(ts, name)
				if len(vals) == 0 || k > len(vals) {
					continue
				}
				if binary(vals) {
					incorrect := 0
					for _, v := range vals {
						if v == 0 {
							incorrect++
						}
					}
					if incorrect < k {
						passValues = append(passValues, 1)
					} else {
						passValues = append(passValues, 1-combs.ratio(incorrect, len(vals), k))
					}
				} else {
					passValues = append(passValues, slices.Max(vals[:k]))
				}
			}
			if len(passValues) > 0 {
				m.Set("pass@"+strconv.Itoa(k)+"/"+name, 100*pySum(passValues)/float64(len(passValues)))
			}

			var avgValues []float64
			for _, ts := range scores {
				if vals := valuesOf(ts[:min(k, len(ts))], name); len(vals) > 0 {
					avgValues = append(avgValues, pySum(vals)/float64(len(vals)))
				}
			}
			if len(avgValues) > 0 {
				m.Set("pass@1[avg-of-"+strconv.Itoa(k)+"]/"+name, 100*pySum(avgValues)/float64(len(avgValues)))
			}

			if answerKey != "" {
				majority := make([]float64, 0, len(scores))
				for t, ts := range scores {
					majority = append(majority, majorityVote(answers[t], ts, k, name))
				}
				m.Set("majority@"+strconv.Itoa(k)+"/"+name, 100*pySum(majority)/float64(len(majority)))
			}
		}
	}

	perSample := NewMetrics()
	runs := map[string][]float64{}
	for run := range maxK {
		for _, name := range scoreNames {
			var vals []float64
			for _, ts := range scores {
				if run < len(ts) {
					if v, ok := ts[run][name]; ok {
						vals = append(vals, v)
					}
				}
			}
			if len(vals) > 0 {
				runs[name] = append(runs[name], 100*pySum(vals)/float64(len(vals)))
			}
		}
	}
	for _, name := range scoreNames {
		if len(runs[name]) > 0 {
			perSample.Set(name, runs[name])
		}
	}
	m.Set("per_sample_aggregate", perSample)

	for k := 2; k <= maxK; k++ {
		for _, name := range scoreNames {
			avgs := runs[name][:min(k, len(runs[name]))]
			if len(avgs) < 2 {
				continue
			}
			mean := pySum(avgs) / float64(len(avgs))
			var sq float64
			for _, x := range avgs {
				sq += (x - mean) * (x - mean)
			}
			std := math.Sqrt(sq / float64(len(avgs)-1))
			prefix := "pass@1[avg-of-" + strconv.Itoa(k) + "]/" + name
			m.Set(prefix+"/std_dev_across_runs", std)
			m.Set(prefix+"/std_err_across_runs", std/math.Sqrt(float64(len(avgs))))
		}
	}
	return m
}

// answerOf is a rollout's answer as majority@k compares it, or nil when it
// is null or absent. Numbers compare by value (Python's 1 == 1.0).
func answerOf(r Rollout, key string) *string {
	v := r.get(key)
	var s string
	switch v.Type {
	case gjson.Null:
		return nil
	case gjson.Number:
		s = "n:" + tree.PythonFloatRepr(v.Num)
	case gjson.True:
		s = "n:1.0"
	case gjson.False:
		s = "n:0.0"
	default:
		s = v.Raw
	}
	return &s
}

func majorityVote(answers []*string, ts []map[string]float64, k int, name string) float64 {
	type vote struct {
		answer string
		score  float64
	}
	counts := map[vote]int{}
	var order []vote
	for i := 0; i < min(k, len(ts)); i++ {
		s, ok := ts[i][name]
		if answers[i] == nil || !ok {
			continue
		}
		v := vote{*answers[i], s}
		if counts[v] == 0 {
			order = append(order, v)
		}
		counts[v]++
	}
	if len(order) == 0 {
		return 0
	}
	best := 0
	for _, v := range order {
		best = max(best, counts[v])
	}
	var tied []float64
	for _, v := range order {
		if counts[v] == best {
			tied = append(tied, v.score)
		}
	}
	return pySum(tied) / float64(len(tied))
}

func valuesOf(ts []map[string]float64, name string) []float64 {
	vals := make([]float64, 0, len(ts))
	for _, s := range ts {
		if v, ok := s[name]; ok {
			vals = append(vals, v)
		}
	}
	return vals
}

func binary(vals []float64) bool {
	for _, v := range vals {
		if v != 0 && v != 1 {
			return false
		}
	}
	return true
}

// pySum adds left to right, as Python's sum() does, so averages agree to
// the last bit.
func pySum(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// combRatios caches C(incorrect,k)/C(n,k), computed exactly and rounded
// once as Python's int/int division is.
type combRatios map[[3]int]float64

func (c combRatios) ratio(incorrect, n, k int) float64 {
	key := [3]int{incorrect, n, k}
	if r, ok := c[key]; ok {
		return r
	}
	num := new(big.Int).Binomial(int64(incorrect), int64(k))
	den := new(big.Int).Binomial(int64(n), int64(k))
	r, _ := new(big.Rat).SetFrac(num, den).Float64()
	c[key] = r
	return r
}

// SubsetMetrics is NeMo Gym's compute_subset_metrics: PassMajorityMetrics
// per value of subsetKey (read from each task's first rollout; falsy values
// are skipped), keys prefixed "<value>/", per_sample_aggregate left out.
func SubsetMetrics(tasks [][]Rollout, subsetKey string, score ScoreFunc, answerKey string) *Metrics {
	var order []string
	subsets := map[string][][]Rollout{}
	for _, t := range tasks {
		if len(t) == 0 {
			continue
		}
		name, ok := pyStrIfTruthy(t[0].get(subsetKey))
		if !ok {
			continue
		}
		if _, seen := subsets[name]; !seen {
			order = append(order, name)
		}
		subsets[name] = append(subsets[name], t)
	}
	m := NewMetrics()
	for _, name := range order {
		sub := PassMajorityMetrics(subsets[name], score, answerKey)
		for _, k := range sub.Keys() {
			if k == "per_sample_aggregate" {
				continue
			}
			v, _ := sub.Get(k)
			m.Set(name+"/"+k, v)
		}
	}
	return m
}

// pyStrIfTruthy renders a JSON scalar as Python's str() would, when Python
// would find it truthy; containers are unhashable as dict keys upstream
// and are skipped.
func pyStrIfTruthy(v gjson.Result) (string, bool) {
	switch v.Type {
	case gjson.String:
		return v.Str, v.Str != ""
	case gjson.True:
		return "True", true
	case gjson.Number:
		if v.Num == 0 {
			return "", false
		}
		if isIntLiteral(v.Raw) {
			return v.Raw, true
		}
		return tree.PythonFloatRepr(v.Num), true
	}
	return "", false
}

// Suffixes of across-run statistics, which highest-k selection skips.
var statSuffixes = []string{"std_dev_across_runs", "std_err_across_runs", "avg_sample_std_dev"}

// HighestKMetrics is NeMo Gym's highest_k_metrics: the entries of m whose
// key matches pattern ("pass@{k}", "pass@1[avg-of-{k}]", ...) followed by
// "/<score>", at the largest k present. include, when not nil, keeps only
// those score names; exclude drops names after that.
func HighestKMetrics(m *Metrics, pattern string, include, exclude []string) *Metrics {
	re := regexp.MustCompile("^" + strings.Replace(regexp.QuoteMeta(pattern), `\{k\}`, `(\d+)`, 1) + "/(.+)$")
	type match struct {
		k   int
		key string
	}
	var matches []match
	for _, key := range m.Keys() {
		sm := re.FindStringSubmatch(key)
		if sm == nil {
			continue
		}
		k, err := strconv.Atoi(sm[1])
		if err != nil {
			continue
		}
		name := sm[2]
		if slices.ContainsFunc(statSuffixes, func(s string) bool { return strings.HasSuffix(name, s) }) {
			continue
		}
		if include != nil && !slices.Contains(include, name) {
			continue
		}
		if slices.Contains(exclude, name) {
			continue
		}
		matches = append(matches, match{k, key})
	}
	out := NewMetrics()
	if len(matches) == 0 {
		return out
	}
	best := 0
	for _, mt := range matches {
		best = max(best, mt.k)
	}
	for _, mt := range matches {
		if mt.k == best {
			v, _ := m.Get(mt.key)
			out.Set(mt.key, v)
		}
	}
	return out
}
