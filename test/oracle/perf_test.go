package oracle

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/resources"
)

//go:embed testdata/nemo_gym_perf_summary.py
var perfSummaryScript []byte

// perfValue is a value an ng_perf field may hold: mostly what collectors
// write, sometimes what a hand-made row might.
func perfValue(r *rand.Rand) string {
	switch r.IntN(10) {
	case 0:
		return "null"
	case 1:
		return []string{"true", "false"}[r.IntN(2)]
	case 2:
		return fmt.Sprint(r.Float64() * 1e6)
	case 3:
		return []string{"0.1", "1e-7", "12345678.875", "0", "0.0", "-3", "9007199254740993"}[r.IntN(7)]
	case 4, 5:
		return fmt.Sprintf("%.3f", r.Float64()*5000)
	}
	return fmt.Sprint(r.IntN(4000))
}

// TestPerfSummaryMatchesNeMoGym holds gym's perf_summary to NeMo Gym's
// compute_perf_summary on generated ng_perf sets, byte for byte: means,
// medians of both parities, totals, population std, numpy's linear
// percentiles, ints kept as ints.
func TestPerfSummaryMatchesNeMoGym(t *testing.T) {
	e := setup(t)
	r := rand.New(rand.NewPCG(13, 7))
	fields := []string{"num_turns", "num_tool_calls", "token_observability_coverage", "prompt_tokens", "cached_prompt_tokens", "completion_tokens", "reasoning_tokens", "total_latency_ms"}
	var lines, ours []string
	for c := 0; c < 1000; c++ {
		n := r.IntN(12)
		var perfs []string
		for i := 0; i < n; i++ {
			var parts []string
			for _, f := range fields {
				if r.IntN(5) > 0 {
					v := perfValue(r)
					if f == "num_turns" && r.IntN(3) > 0 {
						v = fmt.Sprint(r.IntN(6))
					}
					// pandas cannot take the percentiles of booleans
					// (NeMo Gym's aggregation fails on them).
					if (f == "num_turns" || f == "total_latency_ms") && (v == "true" || v == "false") {
						v = "2"
					}
					parts = append(parts, fmt.Sprintf("%q:%s", f, v))
				}
			}
			perfs = append(perfs, "{"+strings.Join(parts, ",")+"}")
		}
		total := n + r.IntN(3)
		if c%50 == 0 {
			total = 0
		}
		list := "[" + strings.Join(perfs, ",") + "]"
		lines = append(lines, fmt.Sprintf(`{"perfs":%s,"total":%d}`, list, total))
		got, err := resources.PerfSummary(gjson.Parse(list).Array(), total)
		if err != nil {
			t.Fatal(err)
		}
		if got == nil {
			got = json.RawMessage("null")
		}
		ours = append(ours, string(got))
	}
	theirs := e.runScript(t, "perf", perfSummaryScript, map[string][]byte{"perf-cases.jsonl": []byte(strings.Join(lines, "\n") + "\n")}, "perf-nemo.jsonl",
		"perf-cases.jsonl", "perf-nemo.jsonl")
	agreed := 0
	for i := range ours {
		if ours[i] == theirs[i] {
			agreed++
		} else if agreed+10 > i {
			t.Errorf("case %s:\nNeMo Gym: %s\ngym:      %s", lines[i], theirs[i], ours[i])
		}
	}
	t.Logf("perf_summary: %d of %d generated cases byte for byte NeMo Gym's", agreed, len(ours))
	if agreed != len(ours) {
		t.Errorf("%d cases differ", len(ours)-agreed)
	}
}
