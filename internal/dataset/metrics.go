package dataset

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/pyjson"
)

// avgMinMax is NeMo Gym's AvgMinMax: a running count, mean and sum of
// squared differences (Welford), merged pairwise (Chan et al.) in the same
// floating-point steps, so the rounded results are Python's to the bit.
type avgMinMax struct {
	total    int
	mean, m2 float64
	min, max float64
}

func newAvgMinMax() *avgMinMax { return &avgMinMax{min: math.Inf(1), max: math.Inf(-1)} }

func (a *avgMinMax) observe(x float64) {
	if x < a.min {
		a.min = x
	}
	if x > a.max {
		a.max = x
	}
	a.total++
	delta := x - a.mean
	a.mean += delta / float64(a.total)
	a.m2 += delta * (x - a.mean)
}

func (a *avgMinMax) add(o *avgMinMax) {
	if o.total == 0 {
		return
	}
	if a.total == 0 {
		*a = *o
		return
	}
	n1, n2 := a.total, o.total
	delta := o.mean - a.mean
	n := n1 + n2
	a.mean = a.mean + delta*(float64(n2)/float64(n))
	a.m2 = a.m2 + o.m2 + (delta*delta)*(float64(n1*n2)/float64(n))
	a.total = n
	if o.min < a.min {
		a.min = o.min
	}
	if o.max > a.max {
		a.max = o.max
	}
}

// dump is the aggregated form NeMo Gym writes: rounded to 2 decimals at
// magnitude 1 and above, else 3; zeros when nothing was observed.
func (a *avgMinMax) dump() pyjson.Object {
	mean, lo, hi, sd := 0.0, 0.0, 0.0, 0.0
	if a.total > 0 {
		mean, lo, hi = a.mean, a.min, a.max
	}
	if a.total > 1 {
		sd = math.Sqrt(a.m2 / float64(a.total-1))
	}
	return pyjson.Object{
		{Key: "Total # non-null values", Value: a.total},
		{Key: "Average", Value: roundMetric(mean)},
		{Key: "Min", Value: roundMetric(lo)},
		{Key: "Max", Value: roundMetric(hi)},
		{Key: "Standard deviation", Value: roundMetric(sd)},
	}
}

// roundMetric is Python's round(x, 2) or round(x, 3): correctly rounded
// from x's exact binary value, ties to even.
func roundMetric(x float64) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	digits := 3
	if x >= 1 || x <= -1 {
		digits = 2
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', digits, 64), 64)
	return r
}

// stringCounts is what NeMo Gym keeps of a string-valued row key.
type stringCounts struct {
	counts map[string]int
	total  int
}

// maxCategories bounds the labels of a categorical task metric, as NeMo
// Gym's MAX_CATEGORICAL_LABELS does; the rest count as "Other".
const maxCategories = 100

// categorical is NeMo Gym's CategoricalMetrics: the counts of up to 100
// labels in first-seen order, and how many more there were.
type categorical struct {
	labels []string
	counts map[string]int
	other  int
	total  int
}

func newCategorical() *categorical { return &categorical{counts: map[string]int{}} }

func (c *categorical) observe(label string, n int) {
	switch {
	case c.counts[label] > 0:
		c.counts[label] += n
	case len(c.labels) < maxCategories:
		c.labels = append(c.labels, label)
		c.counts[label] = n
	default:
		c.other += n
	}
}

func (c *categorical) add(o *categorical) {
	for _, l := range o.labels {
		c.observe(l, o.counts[l])
	}
	c.other += o.other
	c.total += o.total
}

func (c *categorical) dump() pyjson.Object {
	labels := slices.Clone(c.labels)
	slices.Sort(labels)
	counts := pyjson.Object{}
	for _, l := range labels {
		counts = append(counts, pyjson.Member{Key: l, Value: c.counts[l]})
	}
	if c.other > 0 {
		label := "Other"
		if _, ok := c.counts[label]; ok {
			label = "Other (overflow)"
		}
		counts = append(counts, pyjson.Member{Key: label, Value: c.other})
	}
	return pyjson.Object{{Key: "counts", Value: counts}, {Key: "unique_count", Value: len(counts)}, {Key: "total_count", Value: c.total}}
}

// extra is one summary beside the fixed metrics: of a row key (numbers or
// strings), or of the tasks (categories).
type extra struct {
	key        string
	numbers    *avgMinMax
	strings    *stringCounts
	categories *categorical
}

func (e *extra) dump() any {
	switch {
	case e.numbers != nil:
		return e.numbers.dump()
	case e.categories != nil:
		return e.categories.dump()
	}
	return pyjson.Object{{Key: "unique_count", Value: len(e.strings.counts)}, {Key: "total_count", Value: e.strings.total}}
}

// tasksetsKey is the task metric NeMo Gym keeps of materialized tasks.
const tasksetsKey = "Tasksets"

// datasetMetrics is NeMo Gym's DatasetMetrics of one dataset or of every
// dataset of a type.
type datasetMetrics struct {
	examples, tasks                             int
	tools, words, taskWords, turns, temperature *avgMinMax
	// extras are the summaries in NeMo Gym's order: the task metrics as
	// first observed, then (when a dataset is done) the row keys.
	extras     []*extra
	extraIndex map[string]int
	// others gather a dataset's row-key summaries until it is done.
	others     []*extra
	otherIndex map[string]int
}

func newDatasetMetrics() *datasetMetrics {
	return &datasetMetrics{tools: newAvgMinMax(), words: newAvgMinMax(), taskWords: newAvgMinMax(), turns: newAvgMinMax(), temperature: newAvgMinMax(),
		extraIndex: map[string]int{}, otherIndex: map[string]int{}}
}

// addSample adds one valid row's response metrics, as NeMo Gym adds the
// metrics of a single sample: each of one observation, merged.
func (m *datasetMetrics) addSample(s sampleMetrics) {
	m.examples++
	for _, p := range []struct {
		dst *avgMinMax
		v   *float64
	}{{m.tools, s.tools}, {m.words, s.words}, {m.turns, s.turns}, {m.temperature, s.temperature}} {
		if p.v != nil {
			one := newAvgMinMax()
			one.observe(*p.v)
			p.dst.add(one)
		}
	}
}

// addTask adds a materialized task: an example, a task, the words of its
// JSON-dumped input, and its taskset.
func (m *datasetMetrics) addTask(taskset string, inputWords int) {
	m.examples++
	m.tasks++
	one := newAvgMinMax()
	one.observe(float64(inputWords))
	m.taskWords.add(one)
	i, ok := m.extraIndex[tasksetsKey]
	if !ok {
		i = len(m.extras)
		m.extraIndex[tasksetsKey] = i
		m.extras = append(m.extras, &extra{key: tasksetsKey, categories: newCategorical()})
	}
	c := m.extras[i].categories
	c.observe(taskset, 1)
	c.total++
}

// observeOthers is NeMo Gym's aggregate_other_metrics over a row: every key
// but the params and the response; each number (a boolean as 0 or 1) or
// string, or each one of a list of them, counted under the key.
func (m *datasetMetrics) observeOthers(row pyjson.Object) error {
	for _, mem := range row {
		if mem.Key == paramsKey || mem.Key == "response" {
			continue
		}
		values, ok := mem.Value.([]any)
		if !ok {
			values = []any{mem.Value}
		}
		for _, item := range values {
			var num *float64
			switch v := item.(type) {
			case bool:
				f := 0.0
				if v {
					f = 1
				}
				num = &f
			case int64:
				f := float64(v)
				num = &f
			case *big.Int:
				f, _ := new(big.Float).SetInt(v).Float64()
				num = &f
			case float64:
				num = &v
			case string:
			default:
				continue
			}
			i, seen := m.otherIndex[mem.Key]
			if !seen {
				i = len(m.others)
				m.otherIndex[mem.Key] = i
				om := &extra{key: mem.Key}
				if num != nil {
					om.numbers = newAvgMinMax()
				} else {
					om.strings = &stringCounts{counts: map[string]int{}}
				}
				m.others = append(m.others, om)
			}
			om := m.others[i]
			switch {
			case num != nil && om.numbers != nil:
				om.numbers.observe(*num)
			case num == nil && om.strings != nil:
				om.strings.counts[item.(string)]++
				om.strings.total++
			default:
				return fmt.Errorf("key %q mixes numbers and strings across rows (NeMo Gym's metrics fail on that)", mem.Key)
			}
		}
	}
	return nil
}

// finish ends a dataset: its row-key summaries join the extras, after the
// task metrics, as NeMo Gym sets them when the dataset is read. A key with
// a leading underscore (such as _ng_task_index) has none: NeMo Gym sets
// each summary as an attribute of a Pydantic model, which keeps such a
// name private, out of the dump.
func (m *datasetMetrics) finish() {
	for _, om := range m.others {
		if strings.HasPrefix(om.key, "_") {
			continue
		}
		m.setExtra(om)
	}
	m.others, m.otherIndex = nil, map[string]int{}
}

func (m *datasetMetrics) setExtra(e *extra) {
	if i, ok := m.extraIndex[e.key]; ok {
		m.extras[i] = e
		return
	}
	m.extraIndex[e.key] = len(m.extras)
	m.extras = append(m.extras, e)
}

// merge adds another (finished) dataset's metrics, as NeMo Gym merges the
// datasets of a type: the fixed metrics and the task categories pooled,
// and each row-key summary taken from the last dataset that has the key
// (in the place it first had).
func (m *datasetMetrics) merge(o *datasetMetrics) {
	m.examples += o.examples
	m.tasks += o.tasks
	m.tools.add(o.tools)
	m.words.add(o.words)
	m.taskWords.add(o.taskWords)
	m.turns.add(o.turns)
	m.temperature.add(o.temperature)
	for _, e := range o.extras {
		if i, ok := m.extraIndex[e.key]; ok && e.categories != nil && m.extras[i].categories != nil {
			m.extras[i].categories.add(e.categories)
			continue
		}
		if e.categories != nil {
			c := newCategorical()
			c.add(e.categories)
			e = &extra{key: e.key, categories: c}
		}
		m.setExtra(e)
	}
}

// dump is NeMo Gym's model_dump_for_output: the task metrics only when
// there were tasks.
func (m *datasetMetrics) dump() pyjson.Object {
	o := pyjson.Object{{Key: "Number of examples", Value: m.examples}}
	if m.tasks > 0 {
		o = append(o, pyjson.Member{Key: "Number of tasks", Value: m.tasks})
	}
	o = append(o,
		pyjson.Member{Key: "Number of tools", Value: m.tools.dump()},
		pyjson.Member{Key: "Json-dumped number of words (proxy for token count)", Value: m.words.dump()})
	if m.tasks > 0 {
		o = append(o, pyjson.Member{Key: "Json-dumped task-input words (proxy for token count)", Value: m.taskWords.dump()})
	}
	o = append(o,
		pyjson.Member{Key: "Number of turns", Value: m.turns.dump()},
		pyjson.Member{Key: "Temperature", Value: m.temperature.dump()})
	for _, e := range m.extras {
		o = o.Set(e.key, e.dump())
	}
	return o
}

// sampleMetrics are one valid row's response metrics; nil where the row
// gives no value.
type sampleMetrics struct {
	tools, words, turns, temperature *float64
}

// wordCount is len(s.split()) for text that is all ASCII, as json.dumps
// writes it.
func wordCount(s []byte) int {
	n, in := 0, false
	for _, c := range s {
		space := c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1f)
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}
