package resources

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Values beyond a float's range, which no collector writes, do not stop
// the summary (test/oracle holds the rest to NeMo Gym's).
func TestPerfSummaryBeyondFloats(t *testing.T) {
	huge := "1" + strings.Repeat("0", 400)
	perfs := gjson.Parse(`[{"num_turns":1,"prompt_tokens":1e999,"total_latency_ms":2},{"num_turns":2,"prompt_tokens":` + huge + `,"total_latency_ms":3}]`).Array()
	got, err := PerfSummary(perfs, 2)
	if err != nil || !gjson.ValidBytes(got) || gjson.GetBytes(got, "mean_prompt_tokens").Raw != "null" || gjson.GetBytes(got, "mean_num_turns").Raw != "1.5" {
		t.Errorf("PerfSummary = %s, %v", got, err)
	}
}

// streamedPerfSummary is the summary as AggregateRows builds it, one
// ng_perf at a time, each series spilling past chunk values.
func streamedPerfSummary(dir string, perfs []gjson.Result, total, chunk int) ([]byte, error) {
	s := newPerfSummarizer(dir, chunk)
	defer s.close()
	for _, p := range perfs {
		if err := s.add(p); err != nil {
			return nil, err
		}
	}
	return s.summary(total)
}

// randomPerf is an ng_perf as a collector writes it, or with what one
// never writes: ints past int64, floats, booleans, negative numbers,
// strings and missing fields.
func randomPerf(rng *rand.Rand) string {
	value := func() string {
		switch rng.IntN(12) {
		case 0:
			return strconv.FormatFloat(rng.Float64()*1000, 'g', -1, 64)
		case 1:
			return "true"
		case 2:
			return "false"
		case 3:
			return "-" + strconv.Itoa(rng.IntN(50))
		case 4:
			return "92233720368547758070"
		case 5:
			return `"7"`
		case 6:
			return strconv.Itoa(rng.IntN(3)) + ".0"
		}
		return strconv.Itoa(rng.IntN(4000))
	}
	var fields []string
	for _, f := range []string{"prompt_tokens", "cached_prompt_tokens", "completion_tokens", "reasoning_tokens", "num_turns", "total_latency_ms", "token_observability_coverage"} {
		if rng.IntN(8) > 0 {
			fields = append(fields, `"`+f+`":`+value())
		}
	}
	return "{" + strings.Join(fields, ",") + "}"
}

// The streamed summary is the one that held every value, whether its
// series spill or not.
func TestPerfSummaryIsTheInMemoryOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, n := range []int{1, 2, 3, 10, 101, 2000} {
		for _, chunk := range []int{perfChunk, 1, 7} {
			var perfs []gjson.Result
			for range n {
				perfs = append(perfs, gjson.Parse(randomPerf(rng)))
			}
			want := perfSummaryRef(perfs, n+1)
			if got, err := streamedPerfSummary(t.TempDir(), perfs, n+1, chunk); err != nil || string(got) != string(want) {
				t.Errorf("%d perfs, chunk %d: got %s (%v), want %s", n, chunk, got, err, want)
			}
			if got, err := PerfSummary(perfs, n+1); err != nil || string(got) != string(want) {
				t.Errorf("%d perfs, in memory: got %s (%v), want %s", n, got, err, want)
			}
		}
	}
}

func FuzzPerfSummary(f *testing.F) {
	f.Add(`{"num_turns":3,"completion_tokens":10}`, `{"num_turns":true,"completion_tokens":2.5,"total_latency_ms":1}`, uint8(1))
	f.Add(`{"prompt_tokens":92233720368547758070}`, `{"prompt_tokens":-3,"cached_prompt_tokens":1e300}`, uint8(0))
	f.Fuzz(func(t *testing.T, a, b string, chunk uint8) {
		if !gjson.Valid(a) || !gjson.Valid(b) {
			return
		}
		perfs := []gjson.Result{gjson.Parse(a), gjson.Parse(b), gjson.Parse(a)}
		want := perfSummaryRef(perfs, 4)
		got, err := streamedPerfSummary(t.TempDir(), perfs, 4, int(chunk%3)+1)
		if err != nil || string(got) != string(want) {
			t.Fatalf("got %s (%v), want %s", got, err, want)
		}
	})
}
