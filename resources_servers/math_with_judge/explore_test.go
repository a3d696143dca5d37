package mathwithjudge

import (
	"context"
	"fmt"
	"testing"
)

func TestExplore(t *testing.T) {
	cases := [][2]string{
		{`\(\frac{333}{1997}\)`, `\boxed{\frac{83}{499}}`},
		{`\(\frac{(3-\sqrt{3})(2-\sqrt{3})^{2016}+(3+\sqrt{3})(2+\sqrt{3})^{2016}}{6}\)`, `\boxed{\dfrac{(1+\sqrt{3})^{4033}-(1-\sqrt{3})^{4033}}{2^{2017}\sqrt{3}}}`},
		{`32`, `\boxed{32}`},
		{`\(\sqrt{2}\)`, `\boxed{\sqrt{2}}`},
		{`-3`, `\boxed{-4}`},
		{`1000`, `The answer is \boxed{1,000}`},
		{`0.5`, `\boxed{\frac{1}{2}}`},
		{`\frac{1}{3}`, `\boxed{0.333333}`},
		{`\frac{1}{3}`, `\boxed{0.33}`},
		{`50\%`, `\boxed{50\%}`},
		{`50`, `\boxed{50\%}`},
		{`5`, `\boxed{5 \text{ cm}}`},
		{`\pi/2`, `\boxed{\frac{\pi}{2}}`},
		{`x^2+2x+1`, `\boxed{(x+1)^2}`},
		{`(1, 2)`, `\boxed{(1,2)}`},
		{`[0, 1)`, `\boxed{[0,1)}`},
		{`[0, 1)`, `\boxed{(0,1)}`},
		{`x = 5`, `\boxed{5}`},
		{`5`, `\boxed{x = 5}`},
		{`\{1, 2\}`, `\boxed{2, 1}`},
		{`2\sqrt{3}`, `\boxed{\sqrt{12}}`},
		{`3+4i`, `\boxed{4i+3}`},
		{`\text{Evelyn}`, `\boxed{\text{Evelyn}}`},
		{`18`, `Natalia sold 48/2 = 24 clips in May. ... 48+24 = 72. #### 72 The answer is 18`},
		{`72`, `So the total is $72$.`},
		{`e^2`, `\boxed{e^{2}}`},
		{`\infty`, `\boxed{\infty}`},
		{`x > 3`, `\boxed{(3, \infty)}`},
		{`\frac{\sqrt{3}}{2}`, `\boxed{\sin 60^\circ}`},
		{`\frac{\sqrt{3}}{2}`, `\boxed{\cos\frac{\pi}{6}}`},
		{`\ln 2`, `\boxed{\log 2}`},
		{`2^{10}`, `\boxed{1024}`},
		{``, `\boxed{1}`},
		{`3`, ``},
		{`3`, `\boxed{}`},
		{`10`, `\boxed{10.0}`},
		{`\dfrac{1}{4}`, `\boxed{0.25}`},
		{`2`, `\boxed{\sqrt{4}}`},
	}
	for _, c := range cases {
		r, ex := grade(context.Background(), c[0], c[1])
		e := "<nil>"
		if ex != nil {
			e = *ex
		}
		g := extractGold(c[0])
		gs := "<nil>"
		if g.ans != nil {
			gs = printAnswer(g.ans)
		}
		fmt.Printf("%-40.40q %-45.45q => %v  extracted=%q gold=%q\n", c[0], c[1], r, e, gs)
	}
}
