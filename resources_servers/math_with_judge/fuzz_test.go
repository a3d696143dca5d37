package mathwithjudge

import (
	"context"
	"testing"
	"time"
)

// FuzzGrade checks that answer extraction, parsing, evaluation and
// comparison neither panic nor take long on any input: exponents, exact
// sizes, factorials, nesting, node counts and parse attempts are bounded.
func FuzzGrade(f *testing.F) {
	for _, seed := range [][2]string{
		{`\(\frac{333}{1997}\)`, `\boxed{\frac{83}{499}}`},
		{`\(\frac{(3-\sqrt{3})(2-\sqrt{3})^{2016}+(3+\sqrt{3})(2+\sqrt{3})^{2016}}{6}\)`, `\boxed{\dfrac{(1+\sqrt{3})^{4033}-(1-\sqrt{3})^{4033}}{2^{2017}\sqrt{3}}}`},
		{"32", `\boxed{32}`},
		{`\sqrt{2}`, `so $x = \sqrt{2}$`},
		{"-3", `The answer is -4.`},
		{"x^2+1", `\boxed{\left(x+i\right)\left(x-i\right)}`},
		{`[0, \infty)`, `\boxed{x \ge 0}`},
		{`\{1, 2\}`, `\boxed{1} and \boxed{2}`},
		{"0.5", `\boxed{50\%}`},
		{`e^{i\pi}`, `\boxed{-1}`},
		{`\log_2 8`, `\boxed{\sin^{-1}(1)\cdot\frac{6}{\pi}}`},
		{`2^{2^{2^{2^{2}}}}`, `\boxed{10^{10^{10}}!}`},
		{`\binom{10}{3}`, `\boxed{\lfloor 120.5 \rfloor}`},
		{"5", `\fbox{5}`},
		{"(1,2]", `\[ \boxed{(1, 2]} \]`},
		{"", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, expected, generated string) {
		start := time.Now()
		reward, _ := grade(context.Background(), expected, generated)
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("grade(%q, %q) took %v", expected, generated, d)
		}
		if reward != 0 && reward != 1 {
			t.Fatalf("reward %v", reward)
		}
	})
}
