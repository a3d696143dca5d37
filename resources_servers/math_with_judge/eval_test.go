package mathwithjudge

import (
	"context"
	"encoding/json"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/resources/resourcestest"
)

func evalLatex(t *testing.T, latex string) (value, error) {
	t.Helper()
	a, err := parseAnswer(latex)
	if err != nil {
		t.Fatalf("parseAnswer(%q): %v", latex, err)
	}
	if a.kind != aExpr {
		t.Fatalf("%q is not an expression", latex)
	}
	return (&evaluator{ctx: context.Background(), steps: evalSteps, vars: map[string]value{"x": ratValue(big.NewRat(1, 3))}}).eval(a.expr)
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		latex  string
		re, im float64
		exact  string // the exact value, when there is one
	}{
		{`\frac{1}{3}+\frac{1}{6}`, 0.5, 0, "1/2"},
		{`2^{-3}`, 0.125, 0, "1/8"},
		{`(-2)^{3}`, -8, 0, "-8"},
		{`0^0`, 1, 0, "1"},
		{`1.5\%`, 0.015, 0, "3/200"},
		{`5!`, 120, 0, "120"},
		{`\binom{6}{3}`, 20, 0, "20"},
		{`\lfloor -2.5 \rfloor`, -3, 0, "-3"},
		{`\lceil \frac{7}{2} \rceil`, 4, 0, "4"},
		{`\lfloor \pi \rfloor`, 3, 0, "3"},
		{`|-\frac{3}{4}|`, 0.75, 0, "3/4"},
		{`x^2`, 1.0 / 9, 0, "1/9"},
		{`\sqrt{2}^2`, 2, 0, ""},
		{`\sqrt[3]{27}`, 3, 0, ""},
		{`4^{\frac{3}{2}}`, 8, 0, ""},
		{`\pi`, math.Pi, 0, ""},
		{`e`, math.E, 0, ""},
		{`\exp(2)`, math.Exp(2), 0, ""},
		{`\ln 10`, math.Log(10), 0, ""},
		{`\log_{10} 1000`, 3, 0, ""},
		{`\lg 100`, 2, 0, ""},
		{`\sin\frac{\pi}{6}`, 0.5, 0, ""},
		{`\cos\pi`, -1, 0, ""},
		{`\tan\frac{\pi}{4}`, 1, 0, ""},
		{`\cot\frac{\pi}{4}`, 1, 0, ""},
		{`\sec 0`, 1, 0, ""},
		{`\csc\frac{\pi}{2}`, 1, 0, ""},
		{`\sin 100`, math.Sin(100), 0, ""},
		{`\cos(-7)`, math.Cos(-7), 0, ""},
		{`\arctan 1`, math.Pi / 4, 0, ""},
		{`\arctan(-10)`, math.Atan(-10), 0, ""},
		{`\arcsin\frac{1}{2}`, math.Pi / 6, 0, ""},
		{`\arccos(-1)`, math.Pi, 0, ""},
		{`\arcsin 1`, math.Pi / 2, 0, ""},
		{`\sinh 1`, math.Sinh(1), 0, ""},
		{`\cosh 1`, math.Cosh(1), 0, ""},
		{`\tanh 1`, math.Tanh(1), 0, ""},
		{`i^2`, -1, 0, ""},
		{`(1+i)(1-i)`, 2, 0, ""},
		{`\frac{1}{i}`, 0, -1, ""},
		{`\sqrt{-4}`, 0, 2, ""},
		{`e^{i\pi}`, -1, 0, ""},
		{`\ln(-1)`, 0, math.Pi, ""},
		{`(-8)^{\frac{1}{3}}`, 1, math.Sqrt(3), ""}, // the principal root, as SymPy takes it
		{`|3+4 i|`, 5, 0, ""},
		{`2^{0.5}`, math.Sqrt2, 0, ""},
	}
	for _, tc := range tests {
		v, err := evalLatex(t, tc.latex)
		if err != nil {
			t.Errorf("%s: %v", tc.latex, err)
			continue
		}
		re, _ := v.re.Float64()
		im, _ := v.imag().Float64()
		if math.Abs(re-tc.re) > 1e-12*max(1, math.Abs(tc.re)) || math.Abs(im-tc.im) > 1e-12 {
			t.Errorf("%s = %v%+vi, want %v%+vi", tc.latex, re, im, tc.re, tc.im)
		}
		if tc.exact != "" && (v.exact == nil || v.exact.RatString() != tc.exact) {
			t.Errorf("%s: exact %v, want %s", tc.latex, v.exact, tc.exact)
		}
	}
	for _, latex := range []string{`\frac{1}{0}`, `\ln 0`, `\arcsin 2`, `\tan\frac{\pi}{2}`, `(-1)!`, `2.5!`, `\sin(\infty)`, `\infty-\infty`, `0^{-1}`, `y`, `1001!`} {
		if v, err := evalLatex(t, latex); err == nil {
			t.Errorf("%s = %v, want no value", latex, v.re)
		}
	}
	inf, err := evalLatex(t, `-2\infty+1`)
	if err != nil || inf.inf != -1 {
		t.Errorf("-2∞+1 = %+v, %v", inf, err)
	}
}

// TestHighPrecision checks the functions far past float64: identities must
// hold to within the comparison tolerance.
func TestHighPrecision(t *testing.T) {
	for _, pair := range [][2]string{
		{`\sin^2 3 + \cos^2 3`, "1"},
		{`e^{\ln 7}`, "7"},
		{`\tan(\arctan 5)`, "5"},
		{`4\arctan 1`, `\pi`},
		{`(\sqrt{2}+1)(\sqrt{2}-1)`, "1"},
		{`\frac{(1+\sqrt{5})^{50}-(1-\sqrt{5})^{50}}{2^{50}\sqrt{5}}`, "12586269025"},
	} {
		c := &comparer{ctx: context.Background()}
		a, _ := parseAnswer(pair[0])
		b, _ := parseAnswer(pair[1])
		if !c.sameValue(a.expr, b.expr, false) {
			ga, _ := evalLatex(t, pair[0])
			t.Errorf("%s ≠ %s (got %s)", pair[0], pair[1], ga.re.Text('g', 40))
		}
	}
	// Numbers that agree to 40 digits are still different.
	a, _ := parseAnswer(`\pi`)
	b, _ := parseAnswer(`3.141592653589793238462643383279502884197`)
	if (&comparer{ctx: context.Background()}).sameValue(a.expr, b.expr, false) {
		t.Error("π equals a 40-digit approximation")
	}
}

func TestExtractPred(t *testing.T) {
	tests := []struct{ text, want string }{
		{`The final result is $$\frac{3}{4}$$ indeed.`, "3/4"},
		{`So \[ x = 2 \] and then \( y = 3 \).`, "Eq(y, 3)"},
		{`We get $5$ and then $6$.`, "6"},
		{`first 1/2 then \frac{3}{7}`, "3/7"},
		{`The value [ 12 ] here`, "12"},
		{`about $25$\% of them`, "25/100"},
		{`It costs $1,234.50 in total`, "1234.50000000000"},
		{`Answer: 42. Later I mention 17 and 18`, "42"},
		{`answer is 3 + 4 * 2 ok`, "3 + 4*2"},
		{`Bad $\frac{1}{$ then 7`, "7"},
		{`\boxed{\text{(C)}}`, "C"},
		{`no digits here`, ""},
	}
	for _, tc := range tests {
		x := extractPred(tc.text)
		got := x.fallback
		if x.ans != nil {
			got = printAnswer(x.ans)
		}
		if got != tc.want {
			t.Errorf("extractPred(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestRelationsAndSets(t *testing.T) {
	tests := []struct {
		gold, pred string
		equal      bool
	}{
		{`x \le 3`, `(-\infty, 3]`, true},
		{`x < 3`, `(-\infty, 3]`, false},
		{`1 < x < 3`, `(1, 3)`, true},
		{`x \ge 2`, `[2, \infty)`, true},
		{`y = 2x + 1`, `y = 1 + 2x`, true},
		{`y = 2x + 1`, `y = 2x - 1`, false},
		{`x = 1`, `y = 1`, false},
		{`2x = 4`, `4 = 2x`, true},
		{`(1, 2)`, `1, 2`, true},
		{`1, 2`, `(2, 1)`, true},
		{`(1, 2, 3)`, `(3, 2, 1)`, false},
		{`\{x, 2\}`, `\{2, x\}`, true},
		{`x = 1, y = 2`, `x = 1, y = 2`, true},
		{`\emptyset`, `\{\}`, true},
		{`(0, 1]`, `(0, 1]`, true},
	}
	for _, tc := range tests {
		g, err1 := parseAnswer(tc.gold)
		p, err2 := parseAnswer(tc.pred)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s / %s: %v %v", tc.gold, tc.pred, err1, err2)
		}
		if got := (&comparer{ctx: context.Background()}).equal(g, p); got != tc.equal {
			t.Errorf("equal(%s, %s) = %v, want %v", tc.gold, tc.pred, got, tc.equal)
		}
	}
}

func TestAggregateMetrics(t *testing.T) {
	s := startDefault(t)
	_, body := s.Post("/aggregate_metrics", `{"verify_responses": [
		{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"library_reward":1.0,"extracted_answer":"5","judge_evaluations":null,"response":{"usage":{"input_tokens":10,"output_tokens":100}}},
		{"_ng_task_index":0,"_ng_rollout_index":1,"reward":1.0,"library_reward":0.0,"extracted_answer":"x","judge_evaluations":[{}],"response":{"usage":{"input_tokens":10,"output_tokens":300}}},
		{"_ng_task_index":1,"_ng_rollout_index":0,"reward":0.0,"library_reward":0.0,"extracted_answer":null,"judge_evaluations":null,"response":{"usage":{"input_tokens":20,"output_tokens":50}}},
		{"_ng_task_index":1,"_ng_rollout_index":1,"reward":0.0,"library_reward":0.0,"extracted_answer":"7","judge_evaluations":[{}],"response":{"usage":{"input_tokens":20,"output_tokens":70}}}]}`)
	var out struct {
		AgentMetrics map[string]any `json:"agent_metrics"`
		KeyMetrics   map[string]any `json:"key_metrics"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	for k, v := range map[string]float64{
		"pass@2/symbolic_accuracy": 50, "pass@1/symbolic_accuracy": 25, "pass@1/judge_accuracy": 50,
		"majority@2/symbolic_accuracy": 25, "pass@2/no_answer": 50, "mean/output_tokens": 130,
	} {
		if out.AgentMetrics[k] != v {
			t.Errorf("%s = %v, want %v", k, out.AgentMetrics[k], v)
		}
	}
	var keys []string
	for k := range out.KeyMetrics {
		keys = append(keys, k)
	}
	for _, k := range keys {
		if strings.Contains(k, "no_answer") && !strings.HasPrefix(k, "pass@1[avg-of") {
			t.Errorf("key metric %s: no_answer is excluded from pass@k and majority@k", k)
		}
	}
	for _, k := range []string{"mean/input_tokens", "mean/output_tokens", "pass@1[avg-of-2]/symbolic_accuracy", "pass@2/symbolic_accuracy", "majority@2/symbolic_accuracy"} {
		if _, ok := out.KeyMetrics[k]; !ok {
			t.Errorf("key metrics lack %s: %v", k, keys)
		}
	}
}

func TestFloatString(t *testing.T) {
	for _, tc := range []struct {
		in    string
		strip bool
		want  string
	}{
		{"3.14", false, "3.14000000000000"},
		{"3.14", true, "3.14"},
		{"2", true, "2.0"},
		{"-1234.5", false, "-1234.50000000000"},
		{"0.00001", false, "1.00000000000000e-5"},
		{"0.0001", false, "0.000100000000000000"},
		{"1e20", false, "1.00000000000000e+20"},
		{"0", false, "0.0"},
	} {
		r, _ := new(big.Rat).SetString(tc.in)
		if got := floatString(r, tc.strip); got != tc.want {
			t.Errorf("floatString(%s, %v) = %s, want %s", tc.in, tc.strip, got, tc.want)
		}
	}
	_ = resourcestest.JSONEqual // the package's HTTP tests use it too
}
