package mathwithjudge

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestGrade(t *testing.T) {
	const none = "<none>"
	tests := []struct {
		name, expected, generated string
		reward                    float64
		extracted                 string
	}{
		// The recorded example rows.
		{"wrong fraction", `\(\frac{333}{1997}\)`, `\boxed{\frac{83}{499}}`, 0, "83/499"},
		{"closed forms equal only symbolically",
			`\(\frac{(3-\sqrt{3})(2-\sqrt{3})^{2016}+(3+\sqrt{3})(2+\sqrt{3})^{2016}}{6}\)`,
			`\boxed{\dfrac{(1+\sqrt{3})^{4033}-(1-\sqrt{3})^{4033}}{2^{2017}\sqrt{3}}}`,
			1, "((1 + sqrt(3))**4033 - (1 - sqrt(3))**4033)/(2**2017*sqrt(3))"},
		{"integer", "32", `\boxed{32}`, 1, "32"},
		{"surd", `\(\sqrt{2}\)`, `\boxed{\sqrt{2}}`, 1, "sqrt(2)"},
		{"wrong integer", "-3", `\boxed{-4}`, 0, "-4"},

		// Numbers.
		{"thousands separator", "1000", `The answer is \boxed{1,000}`, 1, "1000"},
		{"thousands braces", "1000", `\boxed{1{,}000}`, 1, "1000"},
		{"leading plus", "7", `\boxed{+7}`, 1, "7"},
		{"decimal equals fraction", "0.5", `\boxed{\frac{1}{2}}`, 1, "1/2"},
		{"float rounds to 6 places", `\frac{1}{3}`, `\boxed{0.333333}`, 1, "0.333333000000000"},
		{"float too coarse", `\frac{1}{3}`, `\boxed{0.33}`, 0, "0.330000000000000"},
		{"float of an integer", "10", `\boxed{10.0}`, 1, "10.0000000000000"},
		{"dfrac and decimal", `\dfrac{1}{4}`, `\boxed{.25}`, 1, "0.250000000000000"},
		{"slash fraction", "3/4", `\boxed{\frac{3}{4}}`, 1, "3/4"},
		{"unreduced fraction", `\frac{2}{4}`, `\boxed{\frac{1}{2}}`, 1, "1/2"},
		{"percent both", `50\%`, `\boxed{50\%}`, 1, "50/100"},
		{"percent is a hundredth", "50", `\boxed{50\%}`, 0, "50/100"},
		{"units stripped", "5", `\boxed{5 \text{ cm}}`, 1, "5"},
		{"unit word stripped", "12", `\boxed{12 \text{ inches}}`, 1, "12"},
		{"degrees ignored", "30", `\boxed{30^\circ}`, 1, "30"},
		{"gsm8k style answer line", "18", "48/2 = 24 clips in May, 48+24 = 72 in all.\nThe answer is 18", 1, "18"},
		{"last inline math", "72", `So the total is $72$.`, 1, "72"},
		{"last number", "72", `I think 12 then 72`, 1, "72"},
		{"no answer at all", "3", "I cannot solve this.", 0, none},
		{"empty output", "3", "", 0, none},
		{"empty box", "3", `\boxed{}`, 0, none},
		{"nothing expected", "", `\boxed{1}`, 0, none},

		// Closed forms.
		{"pi", `\pi/2`, `\boxed{\frac{\pi}{2}}`, 1, "pi/2"},
		{"surd simplification", `2\sqrt{3}`, `\boxed{\sqrt{12}}`, 1, "sqrt(12)"},
		{"nested radicals", `\sqrt{2}+\sqrt{3}`, `\boxed{\sqrt{5+2\sqrt{6}}}`, 1, "sqrt(5 + 2*sqrt(6))"},
		{"cube root", "2", `\boxed{\sqrt[3]{8}}`, 1, "8**(1/3)"},
		{"trig value", `\frac{\sqrt{3}}{2}`, `\boxed{\cos\frac{\pi}{6}}`, 1, "cos(pi/6)"},
		{"sine of 60 radians", `\frac{\sqrt{3}}{2}`, `\boxed{\sin 60^\circ}`, 0, "sin(60)"},
		{"logarithms", `\ln 8`, `\boxed{3\ln 2}`, 1, "3*log(2)"},
		{"log base", "3", `\boxed{\log_2 8}`, 1, "log(8)/log(2)"},
		{"e powers", `e^2`, `\boxed{e \cdot e}`, 1, "E*E"},
		{"big power", `2^{10}`, `\boxed{1024}`, 1, "1024"},
		{"binomial", "10", `\boxed{\binom{5}{2}}`, 1, "binomial(5, 2)"},
		{"factorial", "120", `\boxed{5!}`, 1, "factorial(5)"},
		{"close but different", `\pi`, `\boxed{3.14159265358979}`, 0, "3.14159265358979"},
		{"complex", "3+4i", `\boxed{4i+3}`, 1, "4*i + 3"},
		{"absolute value", "5", `\boxed{|-5|}`, 1, "Abs(-5)"},

		// Variables, equations and relations.
		{"polynomial identity", "x^2+2x+1", `\boxed{(x+1)^2}`, 1, "(x + 1)**2"},
		{"different polynomial", "x^2+2x+1", `\boxed{(x-1)^2}`, 0, "(x - 1)**2"},
		{"different variable", "x+1", `\boxed{y+1}`, 0, "y + 1"},
		{"assignment gold", "x = 5", `\boxed{5}`, 1, "5"},
		{"assignment prediction", "5", `\boxed{x = 5}`, 1, "Eq(x, 5)"},
		{"equation chain", "8", `\boxed{7+1=8}`, 1, "Eq(7 + 1, 8)"},
		{"inequality", "x > 3", `\boxed{x>3}`, 1, "x > 3"},
		{"flipped inequality", "x > 3", `\boxed{3 < x}`, 1, "3 < x"},
		{"inequality as interval", "x > 3", `\boxed{(3, \infty)}`, 1, "Interval.open(3, oo)"},

		// Collections.
		{"open interval", "(1, 2)", `\boxed{(1,2)}`, 1, "Interval.open(1, 2)"},
		{"half-open interval", "[0, 1)", `\boxed{[0,1)}`, 1, "Interval.Ropen(0, 1)"},
		{"wrong interval ends", "[0, 1)", `\boxed{(0,1)}`, 0, "Interval.open(0, 1)"},
		{"set in any order", `\{1, 2\}`, `\boxed{2, 1}`, 1, "{2, 1}"},
		{"list in any order", "1, 2, 3", `\boxed{3, 1, 2}`, 1, "{3, 1, 2}"},
		{"sets of different size", "1, 2", `\boxed{1, 2, 3}`, 0, "{1, 2, 3}"},
		{"two boxes", "1, 2", `\boxed{1} and \boxed{2}`, 1, "{1, 2}"},
		{"tuple", "(1, 2, 3)", `\boxed{(1,2,3)}`, 1, "(1, 2, 3)"},
		{"infinity", `\infty`, `\boxed{\infty}`, 1, "oo"},

		// Text and boxes.
		{"text answer", `\text{Evelyn}`, `\boxed{\text{Evelyn}}`, 1, "Evelyn"},
		{"last box wins", "5", `First \boxed{3}. Checking that again it is \boxed{5}`, 1, "5"},
		{"boxes joined by a separator are a set", "5", `First \boxed{3}, then finally \boxed{5}`, 0, "{3, 5}"},
		{"nested braces", `\frac{1}{2}`, `\boxed{\frac{1}{\left(2\right)}}`, 1, "1/2"},
		{"fbox", "4", `\fbox{4}`, 0, none},
		{"unclosed box", "4", `\boxed{4`, 0, none},
		{"unclosed box, then a number", "4", `\boxed{4 so 4`, 1, "4"},
		{"expected in dollars", `$\frac{1}{2}$`, `\boxed{0.5}`, 1, "1/2"},
		{"numeric gsm8k answer", "18", `\boxed{18}`, 1, "18"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reward, extracted := grade(context.Background(), tc.expected, tc.generated)
			got := none
			if extracted != nil {
				got = *extracted
			}
			if reward != tc.reward || got != tc.extracted {
				t.Errorf("grade(%q, %q) = %v, %q; want %v, %q", tc.expected, tc.generated, reward, got, tc.reward, tc.extracted)
			}
		})
	}
}

// TestGradeBounded feeds inputs built to be expensive and checks each is
// answered quickly: exponents, factorials and nesting are capped, and long
// texts of unclosed delimiters are scanned in linear time (the bound leaves
// room for the race detector's slowdown).
func TestGradeBounded(t *testing.T) {
	inputs := []string{
		`\boxed{2^{2^{2^{2^{2^{2^{2^{2}}}}}}}}`,
		`\boxed{10^{10^{10}}}`,
		`\boxed{(1+\sqrt{2})^{999999999999}}`,
		`\boxed{1000000!}`,
		`\boxed{\binom{99999999}{4444444}}`,
		`\boxed{` + strings.Repeat(`\sqrt{`, 500) + "2" + strings.Repeat("}", 500) + "}",
		`\boxed{` + strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000) + "}",
		`\boxed{` + strings.Repeat("x+", 3000) + "1}",
		`\boxed{\sin(10^{30})}`,
		`\boxed{e^{10^{9}}}`,
		`\boxed{` + strings.Repeat("9", 5000) + "}",
		strings.Repeat("1 + 2 = 3. ", 5000),
		strings.Repeat(`$x$ `, 10000),
		strings.Repeat(`\boxed{`, 10000),
		strings.Repeat(`\[ 1 `, 10000),
		strings.Repeat(`\( 1 `, 10000),
		strings.Repeat("$$ 1 ", 10000),
		strings.Repeat(" [1", 10000),
		strings.Repeat("answer: 1 ", 10000),
	}
	for i, in := range inputs {
		start := time.Now()
		grade(context.Background(), `\sqrt{2}`, in)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("input %d took %v", i, d)
		}
	}
}

func TestParseAndPrint(t *testing.T) {
	tests := []struct{ latex, printed string }{
		{`\frac{83}{499}`, "83/499"},
		{`-\frac{1}{2}`, "-1/2"},
		{`x^{2}+2x+1`, "x**2 + 2*x + 1"},
		{`1-\sqrt{3}`, "1 - sqrt(3)"},
		{`\sqrt{3}+1`, "1 + sqrt(3)"},
		{`2^{-1}`, "1/2"},
		{`\frac{x}{2y}`, "x/(2*y)"},
		{`(x+1)^2`, "(x + 1)**2"},
		{`\sin^2 x`, "sin(x)**2"},
		{`\sin^{-1} x`, "asin(x)"},
		{`\lfloor 2.5 \rfloor`, "floor(2.5)"},
		{`3.14`, "3.14000000000000"},
		{`0.000001`, "1.00000000000000e-6"},
		{`10^{20}`, "10**20"},
		{`x_{1}+x_2`, "x_1 + x_2"},
		{`\alpha\beta`, "alpha*beta"},
		{`[1, 2]`, "Interval(1, 2)"},
		{`1 < x \le 3`, "(1 < x) & (x <= 3)"},
		{`x \neq 2`, "Ne(x, 2)"},
		{`\{1, 2\}`, "{1, 2}"},
		{`\emptyset`, "{}"},
	}
	for _, tc := range tests {
		a, err := parseAnswer(tc.latex)
		if err != nil {
			t.Errorf("parseAnswer(%q): %v", tc.latex, err)
			continue
		}
		if got := printAnswer(a); got != tc.printed {
			t.Errorf("printAnswer(%q) = %q, want %q", tc.latex, got, tc.printed)
		}
	}
	for _, bad := range []string{`\frac{1}`, `(1, 2]]`, `x +`, `\unknown{1}`, `1 ) 2`, `\sqrt[3`, "|x", ""} {
		if a, err := parseAnswer(bad); err == nil {
			t.Errorf("parseAnswer(%q) = %s, want an error", bad, printAnswer(a))
		}
	}
}

func TestNormalizeLatex(t *testing.T) {
	tests := []struct{ in, want string }{
		{`\boxed{\dfrac{1}{2}}`, `\frac{1}{2}`},
		{`\left( x \right)`, `( x )`},
		{`$5$ dollars`, `5 dollars`},
		{`10\text{ cm}^2`, `10`},
		{`3 \text{ and } 4`, `3, 4`},
		{`1 and 2`, `1, 2`},
		{`\frac12`, `\frac{1}{2}`},
		{`\sqrt2`, `\sqrt{2}`},
		{`0.5`, `\frac{1}{2}`},
		{`.75`, `0.75`},
		{`3/4`, `\frac{3}{4}`},
		{`50 percent`, `50%`},
		{`\textbf{A}`, `\text{A}`},
		{`\boxed{1}, \boxed{2}`, `1,2`},
		{`\boxed{1} then much later after a long explanation \boxed{2}`, `2`},
	}
	for _, tc := range tests {
		if got := normalizeLatex(tc.in, boxedLast); got != tc.want {
			t.Errorf("normalizeLatex(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// BenchmarkGradeClosedForm is the verifier alone on the recorded row 2,
// without HTTP.
func BenchmarkGradeClosedForm(b *testing.B) {
	gold := `\(\frac{(3-\sqrt{3})(2-\sqrt{3})^{2016}+(3+\sqrt{3})(2+\sqrt{3})^{2016}}{6}\)`
	pred := `\boxed{\dfrac{(1+\sqrt{3})^{4033}-(1-\sqrt{3})^{4033}}{2^{2017}\sqrt{3}}}`
	for b.Loop() {
		if r, _ := grade(context.Background(), gold, pred); r != 1 {
			b.Fatal("not equal")
		}
	}
}
