package dataset

import (
	"fmt"
	"math"
	"math/big"

	"github.com/nemo-gym-go/gym/internal/pyjson"
)

// metricsDiffs is NeMo Gym's check of freshly computed metrics against a
// metrics file already there: every key of the old file must be in the new
// metrics with an equal value (floats within a tolerance, lists as
// multisets); new keys are allowed.
func metricsDiffs(prev, next any) []string {
	var diffs []string
	diffValues(prev, next, "", &diffs)
	return diffs
}

func diffValues(prev, next any, path string, diffs *[]string) {
	po, pok := prev.(pyjson.Object)
	no, nok := next.(pyjson.Object)
	if pok && nok {
		for _, m := range po {
			sub := m.Key
			if path != "" {
				sub = path + "." + m.Key
			}
			v, ok := no.Get(m.Key)
			if !ok {
				*diffs = append(*diffs, "Missing key in new metrics: "+sub)
				continue
			}
			diffValues(m.Value, v, sub, diffs)
		}
		return
	}
	pl, plok := prev.([]any)
	nl, nlok := next.([]any)
	if plok && nlok {
		if len(pl) != len(nl) {
			*diffs = append(*diffs, fmt.Sprintf("List length differs at %s: %d != %d", path, len(pl), len(nl)))
			return
		}
		used := make([]bool, len(nl))
		for i, pv := range pl {
			found := false
			for j, nv := range nl {
				if used[j] {
					continue
				}
				var sub []string
				diffValues(pv, nv, fmt.Sprintf("%s[%d]", path, i), &sub)
				if len(sub) == 0 {
					used[j], found = true, true
					break
				}
			}
			if !found {
				*diffs = append(*diffs, fmt.Sprintf("No matching element for %s[%d] in new metrics (unordered)", path, i))
			}
		}
		return
	}
	pf, pfok := prev.(float64)
	nf, nfok := next.(float64)
	if pfok && nfok {
		if !numericClose(pf, nf) {
			*diffs = append(*diffs, fmt.Sprintf("Numeric mismatch at %s: %s != %s", path, pyjson.AppendFloatRepr(nil, pf), pyjson.AppendFloatRepr(nil, nf)))
		}
		return
	}
	if !pyEqual(prev, next) {
		a, _ := pyjson.Dumps(prev, false)
		b, _ := pyjson.Dumps(next, false)
		*diffs = append(*diffs, fmt.Sprintf("Value differs at %s: %s != %s", path, a, b))
	}
}

func numericClose(a, b float64) bool {
	if a == b {
		return true
	}
	scale := math.Max(math.Abs(a), math.Abs(b))
	tol := 5e-4
	if scale >= 1 {
		tol = 5e-3
	}
	return math.Abs(a-b) <= math.Max(tol, 1e-9)
}

// pyEqual is Python's == over json.loads values: numbers compare by value
// across int, float and bool, objects whatever their key order.
func pyEqual(a, b any) bool {
	if x, ok := pyNumber(a); ok {
		y, ok := pyNumber(b)
		return ok && x.Cmp(y) == 0 && !math.IsNaN(floatOf(a)) && !math.IsNaN(floatOf(b))
	}
	switch a := a.(type) {
	case nil:
		return b == nil
	case string:
		s, ok := b.(string)
		return ok && a == s
	case []any:
		l, ok := b.([]any)
		if !ok || len(a) != len(l) {
			return false
		}
		for i := range a {
			if !pyEqual(a[i], l[i]) {
				return false
			}
		}
		return true
	case pyjson.Object:
		o, ok := b.(pyjson.Object)
		if !ok || len(a) != len(o) {
			return false
		}
		for _, m := range a {
			v, ok := o.Get(m.Key)
			if !ok || !pyEqual(m.Value, v) {
				return false
			}
		}
		return true
	}
	return false
}

func floatOf(v any) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return 0
}

// pyNumber is a number's exact value; NaN and the infinities compare as
// Python compares them only through pyEqual's NaN check.
func pyNumber(v any) (*big.Float, bool) {
	switch v := v.(type) {
	case bool:
		if v {
			return big.NewFloat(1), true
		}
		return big.NewFloat(0), true
	case int64:
		return new(big.Float).SetInt64(v), true
	case *big.Int:
		return new(big.Float).SetInt(v), true
	case float64:
		if math.IsNaN(v) {
			return big.NewFloat(0), true
		}
		return big.NewFloat(v), true
	}
	return nil, false
}
