package dataset

import (
	"fmt"
	"math"
	"math/big"
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

// otherMetric is one row key's summary: numbers or strings.
type otherMetric struct {
	key     string
	numbers *avgMinMax
	strings *stringCounts
}

func (m *otherMetric) dump() any {
	if m.numbers != nil {
		return m.numbers.dump()
	}
	return pyjson.Object{{Key: "unique_count", Value: len(m.strings.counts)}, {Key: "total_count", Value: m.strings.total}}
}

// datasetMetrics is NeMo Gym's DatasetMetrics of one dataset or of every
// dataset of a type.
type datasetMetrics struct {
	examples                         int
	tools, words, turns, temperature *avgMinMax
	others                           []*otherMetric
	otherIndex                       map[string]int
}

func newDatasetMetrics() *datasetMetrics {
	return &datasetMetrics{tools: newAvgMinMax(), words: newAvgMinMax(), turns: newAvgMinMax(), temperature: newAvgMinMax(), otherIndex: map[string]int{}}
}

// addSample adds one valid row's response metrics, as NeMo Gym adds the
// metrics of a single sample: each of one observation, merged.
func (m *datasetMetrics) addSample(s sampleMetrics) {
	m.examples++
	for _, p := range []struct {
		dst *avgMinMax
		v   *float64
	}{{m.tools, s.tools}, {m.words, &s.words}, {m.turns, s.turns}, {m.temperature, s.temperature}} {
		if p.v != nil {
			one := newAvgMinMax()
			one.observe(*p.v)
			p.dst.add(one)
		}
	}
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
				om := &otherMetric{key: mem.Key}
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

// merge adds another dataset's metrics, as NeMo Gym merges the datasets
// of a type: the response metrics pooled, and each row-key summary taken
// from the last dataset that has the key (in the place it first had).
func (m *datasetMetrics) merge(o *datasetMetrics) {
	m.examples += o.examples
	m.tools.add(o.tools)
	m.words.add(o.words)
	m.turns.add(o.turns)
	m.temperature.add(o.temperature)
	for _, om := range o.others {
		if i, ok := m.otherIndex[om.key]; ok {
			m.others[i] = om
			continue
		}
		m.otherIndex[om.key] = len(m.others)
		m.others = append(m.others, om)
	}
}

// dump is NeMo Gym's model_dump_for_output.
func (m *datasetMetrics) dump() pyjson.Object {
	o := pyjson.Object{
		{Key: "Number of examples", Value: m.examples},
		{Key: "Number of tools", Value: m.tools.dump()},
		{Key: "Json-dumped number of words (proxy for token count)", Value: m.words.dump()},
		{Key: "Number of turns", Value: m.turns.dump()},
		{Key: "Temperature", Value: m.temperature.dump()},
	}
	for _, om := range m.others {
		// NeMo Gym sets each summary as an attribute of a Pydantic model,
		// which keeps a name with a leading underscore (such as
		// _ng_task_index) as a private attribute, out of the dump.
		if strings.HasPrefix(om.key, "_") {
			continue
		}
		o = o.Set(om.key, om.dump())
	}
	return o
}

// sampleMetrics are one valid row's response metrics; nil where the row
// gives no value.
type sampleMetrics struct {
	tools, turns, temperature *float64
	words                     float64
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
