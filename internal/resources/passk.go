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
//
// The tasks are read twice: first for the largest task and the score names,
// then for the metrics, a task at a time.
func PassMajorityMetrics(tasks Tasks, score ScoreFunc, answerKey string) (*Metrics, error) {
	m := NewMetrics()
	if score == nil {
		score = RewardAccuracy
	}
	// A task's scores per rollout, with no_answer, and its answers.
	scoresOf := func(rollouts []Rollout) ([]map[string]float64, []*string) {
		var scores []map[string]float64
		var answers []*string
		for _, r := range rollouts {
			s := map[string]float64{}
			for _, sc := range score(r) {
				s[sc.Name] = sc.Value
			}
			if answerKey != "" {
				a := answerOf(r, answerKey)
				answers = append(answers, a)
				s["no_answer"] = b2f(a == nil)
			}
			scores = append(scores, s)
		}
		return scores, answers
	}
	numTasks, maxK := 0, 0
	names := map[string]bool{}
	err := tasks(func(rollouts []Rollout) error {
		numTasks++
		maxK = max(maxK, len(rollouts))
		scores, _ := scoresOf(rollouts)
		for _, s := range scores {
			for n := range s {
				names[n] = true
			}
		}
		return nil
	})
	if err != nil || numTasks == 0 {
		return m, err
	}
	scoreNames := make([]string, 0, len(names))
	for n := range names {
		scoreNames = append(scoreNames, n)
	}
	slices.Sort(scoreNames)

	// Each metric is a mean over tasks. Per-task values are added to their
	// accumulators in task order, as Python's sum() adds its list, so the
	// results agree to the last bit.
	type mean struct {
		sum float64
		n   int
	}
	type perK struct{ pass, avg, majority mean }
	acc := make(map[string][]perK, len(scoreNames))
	runs := make(map[string][]mean, len(scoreNames))
	for _, name := range scoreNames {
		acc[name] = make([]perK, maxK)
		runs[name] = make([]mean, maxK)
	}
	combs := combRatios{}
	var prefixSum, prefixMax []float64
	var present []int
	var votes []vote
	err = tasks(func(rollouts []Rollout) error {
		ts, answers := scoresOf(rollouts)
		if len(ts) == 0 {
			// A task without rollouts votes for nothing: majority 0.
			for _, name := range scoreNames {
				for k := range maxK {
					if answerKey != "" {
						acc[name][k].majority.n++
					}
				}
			}
			return nil
		}
		for _, name := range scoreNames {
			// The task's values of this score in rollout order, as running
			// sums and maxima, and how many of the first i+1 rollouts have
			// one (present[i]).
			prefixSum, prefixMax, present = prefixSum[:0], prefixMax[:0], present[:0]
			incorrect, isBinary := 0, true
			for i, s := range ts {
				if v, ok := s[name]; ok {
					sum, best := v, v
					if n := len(prefixSum); n > 0 {
						sum, best = prefixSum[n-1]+v, max(prefixMax[n-1], v)
					}
					prefixSum, prefixMax = append(prefixSum, sum), append(prefixMax, best)
					if v == 0 {
						incorrect++
					}
					if v != 0 && v != 1 {
						isBinary = false
					}
					runs[name][i].sum += v
					runs[name][i].n++
				}
				present = append(present, len(prefixSum))
			}
			n := len(prefixSum)
			votes = votes[:0]
			for k := 1; k <= maxK; k++ {
				a := &acc[name][k-1]
				if n > 0 && k <= n {
					switch {
					case !isBinary:
						a.pass.sum += prefixMax[k-1]
					case incorrect < k:
						a.pass.sum++
					default:
						a.pass.sum += 1 - combs.ratio(incorrect, n, k)
					}
					a.pass.n++
				}
				if j := present[min(k, len(ts))-1]; j > 0 {
					a.avg.sum += prefixSum[j-1] / float64(j)
					a.avg.n++
				}
				if answerKey != "" {
					if k <= len(ts) {
						if v, ok := ts[k-1][name]; ok && answers[k-1] != nil {
							votes = addVote(votes, vote{answer: *answers[k-1], score: v})
						}
					}
					a.majority.sum += majority(votes)
					a.majority.n++
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for k := 1; k <= maxK; k++ {
		for _, name := range scoreNames {
			a := acc[name][k-1]
			if a.pass.n > 0 {
				m.Set("pass@"+strconv.Itoa(k)+"/"+name, 100*a.pass.sum/float64(a.pass.n))
			}
			if a.avg.n > 0 {
				m.Set("pass@1[avg-of-"+strconv.Itoa(k)+"]/"+name, 100*a.avg.sum/float64(a.avg.n))
			}
			if answerKey != "" {
				m.Set("majority@"+strconv.Itoa(k)+"/"+name, 100*a.majority.sum/float64(a.majority.n))
			}
		}
	}

	perSample := NewMetrics()
	runAverages := map[string][]float64{}
	for run := range maxK {
		for _, name := range scoreNames {
			if r := runs[name][run]; r.n > 0 {
				runAverages[name] = append(runAverages[name], 100*r.sum/float64(r.n))
			}
		}
	}
	for _, name := range scoreNames {
		if len(runAverages[name]) > 0 {
			perSample.Set(name, runAverages[name])
		}
	}
	m.Set("per_sample_aggregate", perSample)

	for k := 2; k <= maxK; k++ {
		for _, name := range scoreNames {
			avgs := runAverages[name][:min(k, len(runAverages[name]))]
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
	return m, nil
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

// vote is an (answer, score) pair of majority@k, with its count.
type vote struct {
	answer string
	score  float64
	count  int
}

func addVote(votes []vote, v vote) []vote {
	for i := range votes {
		if votes[i].answer == v.answer && votes[i].score == v.score {
			votes[i].count++
			return votes
		}
	}
	v.count = 1
	return append(votes, v)
}

// majority is the mean score of the most frequent (answer, score) pairs,
// or 0 when no rollout gave an answer.
func majority(votes []vote) float64 {
	best := 0
	for _, v := range votes {
		best = max(best, v.count)
	}
	var sum float64
	n := 0
	for _, v := range votes {
		if v.count == best {
			sum += v.score
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
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
func SubsetMetrics(tasks Tasks, subsetKey string, score ScoreFunc, answerKey string) (*Metrics, error) {
	subsetOf := func(t []Rollout) (string, bool) {
		if len(t) == 0 {
			return "", false
		}
		return pyStrIfTruthy(t[0].get(subsetKey))
	}
	var order []string
	seen := map[string]bool{}
	err := tasks(func(t []Rollout) error {
		if name, ok := subsetOf(t); ok && !seen[name] {
			seen[name] = true
			order = append(order, name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	m := NewMetrics()
	for _, name := range order {
		subset := func(yield func([]Rollout) error) error {
			return tasks(func(t []Rollout) error {
				if n, ok := subsetOf(t); ok && n == name {
					return yield(t)
				}
				return nil
			})
		}
		sub, err := PassMajorityMetrics(subset, score, answerKey)
		if err != nil {
			return nil, err
		}
		for _, k := range sub.Keys() {
			if k == "per_sample_aggregate" {
				continue
			}
			v, _ := sub.Get(k)
			m.Set(name+"/"+k, v)
		}
	}
	return m, nil
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
