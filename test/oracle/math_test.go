package oracle

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/resources/resourcestest"
	mathwithjudge "github.com/nemo-gym-go/gym/resources_servers/math_with_judge"
)

//go:embed testdata/nemo_gym_math_verify.py
var mathVerifyScript []byte

// mathPairs are expected answers and ways of writing them, equal or not:
// integers, fractions, decimals, roots, pi, intervals, sets, percentages,
// units, commas, scientific notation, negatives.
var mathPairs = [][]string{
	{"5", "5", "5.0", "05", "\\frac{10}{2}", "6", "-5", "5\\%", "5 \\text{ cm}", "x = 5"},
	{"\\frac{1}{2}", "\\frac12", "0.5", "1/2", "\\dfrac{1}{2}", "2/4", "\\frac{1}{3}", "0.50", "50\\%", "\\tfrac{1}{2}"},
	{"\\sqrt{2}", "\\sqrt2", "2^{1/2}", "1.41421356", "\\sqrt{4}", "\\frac{2}{\\sqrt{2}}", "\\sqrt{3}"},
	{"\\pi", "\\pi", "3.14159", "\\frac{2\\pi}{2}", "180^\\circ", "2\\pi"},
	{"(0, 1]", "(0,1]", "(0, 1)", "\\left(0, 1\\right]", "[0, 1]", "0 < x \\le 1"},
	{"\\{1, 2, 3\\}", "\\{3, 2, 1\\}", "1, 2, 3", "\\{1,2\\}", "1,2,3"},
	{"1000", "1,000", "1000.0", "10^3", "1e3", "1 000", "999"},
	{"-\\frac{3}{4}", "-0.75", "\\frac{-3}{4}", "-3/4", "\\frac{3}{4}", "- \\frac{3}{4}"},
	{"2x+1", "1+2x", "2x + 1", "2(x+0.5)", "2x-1", "x+x+1"},
	{"\\text{Tuesday}", "\\text{Tuesday}", "Tuesday", "\\text{tuesday}", "\\text{Monday}"},
	{"3.2 \\times 10^{5}", "320000", "3.2e5", "3.2\\cdot10^5", "32000"},
}

// mathAnswer is how a model writes an answer around its value.
func mathAnswer(r *rand.Rand, value string) string {
	switch r.IntN(8) {
	case 0:
		return "The answer is " + value + "."
	case 1:
		return "\\boxed{" + value
	case 2:
		return "So \\boxed{" + value + "} and finally \\boxed{" + value + "}"
	case 3:
		return "\\boxed{}"
	}
	return "We compute carefully. Therefore the answer is $\\boxed{" + value + "}$."
}

// TestMathAgreesWithNeMoGym measures gym's math_with_judge (no judge)
// against NeMo Gym's math_verify path on generated answers and reports the
// agreement, per expected answer; the answers that differ are kept.
func TestMathAgreesWithNeMoGym(t *testing.T) {
	e := setup(t)
	// math-verify, which NeMo Gym's server installs in its own venv, in a
	// directory of the test's put on nemo-gym's path.
	lib := filepath.Join(e.tmp, "mvlib")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stdout, stderr, code, err := e.run(ctx, e.tmp, []string{"UV_CACHE_DIR=/var/cache/uv"}, "sh", "-c",
		"uv pip install -q --python /opt/nemo-gym/bin/python --target "+lib+" "+`"math-verify[antlr4_9_3]==0.8.0"`)
	if err != nil || code != 0 {
		t.Skipf("cannot install math-verify from PyPI (exit %d, %v): %s %s", code, err, stdout, stderr)
	}
	srv := resourcestest.Start(t, "math:\n  resources_servers:\n    math_with_judge:\n      entrypoint: app.py\n      should_use_judge: false\n      judge_model_server: {type: responses_api_models, name: none}\n      judge_responses_create_params: {input: []}\n",
		"math", mathwithjudge.ClassName, mathwithjudge.New)
	r := rand.New(rand.NewPCG(8, 8))
	type mcase struct {
		Expected  string `json:"expected"`
		Generated string `json:"generated"`
	}
	var cases []mcase
	var lines []string
	for i := 0; i < 1500; i++ {
		set := mathPairs[r.IntN(len(mathPairs))]
		c := mcase{Expected: set[0], Generated: mathAnswer(r, set[r.IntN(len(set))])}
		b, _ := json.Marshal(c)
		cases, lines = append(cases, c), append(lines, string(b))
	}
	// The answers that once differed, kept to be scored again.
	corpus, err := os.ReadFile("testdata/math_differed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(corpus)), "\n") {
		var c mcase
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatal(err)
		}
		cases, lines = append(cases, c), append(lines, l)
	}
	theirs := e.runScriptEnv(t, []string{"PYTHONPATH=" + lib}, "math_with_judge", mathVerifyScript,
		map[string][]byte{"math-cases.jsonl": []byte(strings.Join(lines, "\n") + "\n")}, "math-nemo.jsonl",
		"math-cases.jsonl", "math-nemo.jsonl")
	byExpected := map[string][2]int{}
	var differ []string
	for i, c := range cases {
		var want struct {
			Reward float64 `json:"reward"`
		}
		json.Unmarshal([]byte(theirs[i]), &want)
		body := fmt.Sprintf(`{"responses_create_params":{"input":"q"},"response":{"id":"r","created_at":0,"model":"m","object":"response","output":[{"id":"msg","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":%s,"annotations":[]}]}],"parallel_tool_calls":false,"tool_choice":"none","tools":[]},"question":"q","expected_answer":%s}`,
			quote(c.Generated), quote(c.Expected))
		status, out := srv.Post("/verify", json.RawMessage(body))
		var got struct {
			Reward float64 `json:"reward"`
		}
		json.Unmarshal(out, &got)
		n := byExpected[c.Expected]
		n[1]++
		if status == 200 && got.Reward == want.Reward {
			n[0]++
		} else {
			differ = append(differ, lines[i]+"\t"+theirs[i]+"\t"+string(out))
		}
		byExpected[c.Expected] = n
	}
	agreed := len(cases) - len(differ)
	t.Logf("math_with_judge: %d of %d generated answers rewarded as NeMo Gym's math_verify rewards them (%.1f%%)", agreed, len(cases), 100*float64(agreed)/float64(len(cases)))
	for _, set := range mathPairs {
		n := byExpected[set[0]]
		t.Logf("math_with_judge: expected %s: %d of %d", set[0], n[0], n[1])
	}
	// What gym's symbolic check does not yet share with math_verify
	// (README): a decimal for a root, a word as a product of symbols.
	if agreed*1000 < len(cases)*950 {
		t.Errorf("agreement fell below 95%%: %d of %d", agreed, len(cases))
	}
	if len(differ) > 0 {
		os.WriteFile(filepath.Join(e.tmp, "math-differ.tsv"), []byte(strings.Join(differ, "\n")+"\n"), 0o644)
		for _, d := range differ[:min(8, len(differ))] {
			t.Logf("differs (case, NeMo Gym, gym): %s", d)
		}
	}
}
