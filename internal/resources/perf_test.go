package resources

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Values beyond a float's range, which no collector writes, do not stop
// the summary (test/oracle holds the rest to NeMo Gym's).
func TestPerfSummaryBeyondFloats(t *testing.T) {
	huge := "1" + strings.Repeat("0", 400)
	perfs := gjson.Parse(`[{"num_turns":1,"prompt_tokens":1e999,"total_latency_ms":2},{"num_turns":2,"prompt_tokens":` + huge + `,"total_latency_ms":3}]`).Array()
	got := string(PerfSummary(perfs, 2))
	if !gjson.Valid(got) || gjson.Get(got, "mean_prompt_tokens").Raw != "null" || gjson.Get(got, "mean_num_turns").Raw != "1.5" {
		t.Errorf("PerfSummary = %s", got)
	}
}
