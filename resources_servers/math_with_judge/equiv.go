package mathwithjudge

import (
	"context"
	"math/big"
	"sort"
)

// Math-Verify compares SymPy objects: symbolically (simplify(a-b) == 0)
// and numerically. Here both sides are evaluated at high precision instead,
// at sample points for their variables, which decides equality of closed
// forms such as ((1+√3)^4033 - (1-√3)^4033)/(2^2017·√3) and the gold's
// (2±√3)^2016 form without a computer algebra system. Rationals stay exact
// wherever they can, so integer and fractional answers compare exactly.

// evalSteps bounds the work of evaluating one side at one point.
const evalSteps = 20000

// Tolerances. relTol stands in for exact equality; chopTol is SymPy's
// evalf(chop=True) at 15 digits, which Math-Verify's numeric check uses
// when neither side is a bare number.
var (
	relTol  = new(big.Float).SetMantExp(big.NewFloat(1), -180)
	chopTol = new(big.Float).SetMantExp(big.NewFloat(1), -49)
)

type comparer struct {
	ctx context.Context
}

// equal is Math-Verify's sympy_expr_eq for two parsed answers.
func (c *comparer) equal(gold, pred *answer) bool {
	goldAssign, predAssign := isAssignment(gold), isAssignment(pred)
	switch {
	case goldAssign && predAssign:
		// x = 1 and y = 1 differ; compare first lhs = last rhs of each.
		gold = &answer{kind: aRel, sides: []*expr{gold.sides[0], gold.sides[len(gold.sides)-1]}, ops: []string{"="}}
		pred = &answer{kind: aRel, sides: []*expr{pred.sides[0], pred.sides[len(pred.sides)-1]}, ops: []string{"="}}
	case goldAssign:
		gold = wholeAnswer(gold.sides[len(gold.sides)-1])
	case predAssign:
		pred = wholeAnswer(pred.sides[len(pred.sides)-1])
	}
	if !(goldAssign && predAssign) && isEquation(pred) && !isEquation(gold) {
		// Respect the gold: 8 and 7 + 1 = 8.
		pred = wholeAnswer(pred.sides[len(pred.sides)-1])
	}
	if gold.kind == aRel && isCollection(pred) {
		if iv := relationAsInterval(gold); iv != nil {
			gold = iv
		}
	}
	if printAnswer(gold) == printAnswer(pred) {
		return true
	}
	switch {
	case gold.kind == aRel && pred.kind == aRel:
		return c.relationsEqual(gold, pred)
	case isCollection(gold) || isCollection(pred):
		return c.collectionsEqual(gold, pred)
	case gold.kind == aExpr && pred.kind == aExpr:
		return c.exprsEqual(gold.expr, pred.expr)
	}
	return false
}

func isCollection(a *answer) bool {
	return a.kind == aSet || a.kind == aTuple || a.kind == aInterval
}

func isEquation(a *answer) bool {
	if a.kind != aRel {
		return false
	}
	for _, op := range a.ops {
		if op != "=" {
			return false
		}
	}
	return true
}

// isAssignment is an equation whose left side is only symbols: x = 5.
func isAssignment(a *answer) bool { return isEquation(a) && onlySymbols(a.sides[0]) }

func onlySymbols(e *expr) bool {
	switch e.kind {
	case nSym:
		return true
	case nMul:
		for _, f := range e.args {
			if !onlySymbols(f) {
				return false
			}
		}
		return true
	}
	return false
}

// relationAsInterval reads x > 3, x ≤ 3 and 1 < x < 3 as intervals, so
// that they compare with a predicted interval (SymPy's as_set).
func relationAsInterval(a *answer) *answer {
	inf := &expr{kind: nInf}
	negInf := &expr{kind: nNeg, args: []*expr{inf}}
	bound := func(op string, other *expr, symLeft bool) *answer {
		if !symLeft {
			op = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
		}
		switch op {
		case "<":
			return &answer{kind: aInterval, lo: negInf, hi: other, lopen: true, ropen: true}
		case "<=":
			return &answer{kind: aInterval, lo: negInf, hi: other, lopen: true}
		case ">":
			return &answer{kind: aInterval, lo: other, hi: inf, lopen: true, ropen: true}
		case ">=":
			return &answer{kind: aInterval, lo: other, hi: inf, ropen: true}
		}
		return nil
	}
	switch {
	case len(a.ops) == 1 && a.sides[0].kind == nSym:
		return bound(a.ops[0], a.sides[1], true)
	case len(a.ops) == 1 && a.sides[1].kind == nSym:
		return bound(a.ops[0], a.sides[0], false)
	case len(a.ops) == 2 && a.sides[1].kind == nSym && a.ops[0][0] == '<' && a.ops[1][0] == '<':
		return &answer{kind: aInterval, lo: a.sides[0], hi: a.sides[2], lopen: a.ops[0] == "<", ropen: a.ops[1] == "<"}
	}
	return nil
}

// flipped are the relations equal with sides swapped.
var flipped = map[string]string{">=": "<=", "<=": ">=", ">": "<", "<": ">", "=": "="}

func (c *comparer) relationsEqual(gold, pred *answer) bool {
	if len(gold.ops) != len(pred.ops) {
		return false
	}
	for i, op := range gold.ops {
		gl, gr := gold.sides[i], gold.sides[i+1]
		pl, pr := pred.sides[i], pred.sides[i+1]
		same := op == pred.ops[i] && c.exprsEqual(difference(gl, gr), difference(pl, pr))
		swapped := flipped[op] == pred.ops[i] && c.exprsEqual(difference(gl, gr), difference(pr, pl))
		if !same && !swapped {
			return false
		}
	}
	return true
}

func difference(a, b *expr) *expr {
	return &expr{kind: nAdd, args: []*expr{a, {kind: nNeg, args: []*expr{b}}}}
}

// collectionsEqual compares sets, tuples and intervals; a lone value is a
// one-element set.
func (c *comparer) collectionsEqual(gold, pred *answer) bool {
	if !isCollection(gold) {
		gold = &answer{kind: aSet, items: []*answer{gold}}
	}
	if !isCollection(pred) {
		pred = &answer{kind: aSet, items: []*answer{pred}}
	}
	switch {
	case gold.kind == aInterval && pred.kind == aInterval:
		return gold.lopen == pred.lopen && gold.ropen == pred.ropen &&
			c.exprsEqual(gold.lo, pred.lo) && c.exprsEqual(gold.hi, pred.hi)
	case gold.kind != aInterval && pred.kind != aInterval:
		return c.itemsEqual(gold, pred)
	case gold.kind == aInterval && gold.lopen && gold.ropen && len(pred.items) == 2:
		// (1, 2) reads as an open interval, and may be meant as a pair.
		return c.itemsEqual(pairOf(gold), pred)
	case pred.kind == aInterval && pred.lopen && pred.ropen && len(gold.items) == 2:
		return c.itemsEqual(gold, pairOf(pred))
	}
	return false
}

func pairOf(iv *answer) *answer {
	return &answer{kind: aTuple, items: []*answer{{kind: aExpr, expr: iv.lo}, {kind: aExpr, expr: iv.hi}}}
}

// itemsEqual compares finite sets and tuples element by element: sets in
// numeric order, tuples as written; a tuple gold keeps a predicted set's
// written order.
func (c *comparer) itemsEqual(gold, pred *answer) bool {
	if len(gold.items) != len(pred.items) {
		return false
	}
	g, p := gold.items, pred.items
	switch {
	case gold.kind == aSet:
		g, p = c.sorted(g), c.sorted(p)
	case pred.kind == aSet && gold.kind != aTuple:
		p = c.sorted(p)
	}
	for i := range g {
		if !c.equal(g[i], p[i]) {
			return false
		}
	}
	return true
}

// sorted orders items by value (real part, then imaginary); items without
// a value keep their place after those with one.
func (c *comparer) sorted(items []*answer) []*answer {
	type keyed struct {
		a      *answer
		ok     bool
		re, im *big.Float
	}
	ks := make([]keyed, len(items))
	for i, it := range items {
		ks[i].a = it
		if it.kind != aExpr {
			continue
		}
		ev := &evaluator{ctx: c.ctx, steps: evalSteps}
		if v, err := ev.eval(it.expr); err == nil && v.inf == 0 {
			ks[i] = keyed{it, true, v.re, v.imag()}
		}
	}
	sort.SliceStable(ks, func(a, b int) bool {
		x, y := ks[a], ks[b]
		if x.ok != y.ok {
			return x.ok
		}
		if !x.ok {
			return false
		}
		if d := x.re.Cmp(y.re); d != 0 {
			return d < 0
		}
		return x.im.Cmp(y.im) < 0
	})
	out := make([]*answer, len(ks))
	for i, k := range ks {
		out[i] = k.a
	}
	return out
}

// atomicNumber reports a bare number (-4, 2.5, 50%), and whether it is a
// decimal, which Math-Verify compares rounded to 6 places.
func atomicNumber(e *expr) (atomic, float bool) {
	switch e.kind {
	case nNum:
		return true, e.float
	case nNeg, nPercent:
		if e.args[0].kind == nNum {
			return true, e.args[0].float
		}
	}
	return false, false
}

// exprsEqual is Math-Verify's numeric and symbolic comparison.
func (c *comparer) exprsEqual(gold, pred *expr) bool {
	goldAtomic, goldFloat := atomicNumber(gold)
	predAtomic, predFloat := atomicNumber(pred)
	if goldAtomic || predAtomic {
		if goldFloat || predFloat {
			gv, gerr := (&evaluator{ctx: c.ctx, steps: evalSteps}).eval(gold)
			pv, perr := (&evaluator{ctx: c.ctx, steps: evalSteps}).eval(pred)
			if gerr == nil && perr == nil && gv.exact != nil && pv.exact != nil {
				return round6(gv.exact).Cmp(round6(pv.exact)) == 0
			}
		}
		return c.sameValue(gold, pred, false)
	}
	return c.sameValue(gold, pred, true)
}

// round6 is r rounded to 6 decimal places, scaled to an integer.
func round6(r *big.Rat) *big.Int {
	scaled := new(big.Rat).Mul(r, big.NewRat(1000000, 1))
	half := big.NewRat(1, 2)
	if scaled.Sign() < 0 {
		half.Neg(half)
	}
	scaled.Add(scaled, half)
	return new(big.Int).Quo(scaled.Num(), scaled.Denom())
}

// samplePoints are the values variables take, per variable index: three
// points of unremarkable rationals, so polynomial and rational identities
// stay exact.
func samplePoint(varIndex, point int) *big.Rat {
	return big.NewRat(int64(3+2*varIndex+5*point), int64(7+varIndex+3*point))
}

// sameValue evaluates both sides (at three sample points when they have
// variables) and compares. Points where either side has no value are
// skipped; at least one must decide, and all that decide must agree.
func (c *comparer) sameValue(gold, pred *expr, chop bool) bool {
	names := map[string]bool{}
	collectSymbols(gold, names)
	collectSymbols(pred, names)
	points := 1
	if len(names) > 0 {
		points = 3
	}
	keys := make([]string, 0, len(names))
	for n := range names {
		keys = append(keys, n)
	}
	sort.Strings(keys)
	decided := false
	for pt := range points {
		vars := make(map[string]value, len(keys))
		for i, n := range keys {
			vars[n] = ratValue(samplePoint(i, pt))
		}
		gv, gerr := (&evaluator{ctx: c.ctx, vars: vars, steps: evalSteps}).eval(gold)
		pv, perr := (&evaluator{ctx: c.ctx, vars: vars, steps: evalSteps}).eval(pred)
		if gerr != nil || perr != nil {
			if c.ctx.Err() != nil {
				return false
			}
			continue
		}
		if !valuesEqual(gv, pv, chop) {
			return false
		}
		decided = true
	}
	return decided
}

func collectSymbols(e *expr, into map[string]bool) {
	if e.kind == nSym {
		into[symbolKey(e.name)] = true
	}
	for _, a := range e.args {
		collectSymbols(a, into)
	}
}

func valuesEqual(a, b value, chop bool) bool {
	if a.inf != 0 || b.inf != 0 {
		return a.inf == b.inf
	}
	if a.exact != nil && b.exact != nil {
		return a.exact.Cmp(b.exact) == 0
	}
	dre := newF().Sub(a.re, b.re)
	dim := newF().Sub(a.imag(), b.imag())
	d := maxAbs(dre, dim)
	if d.Sign() == 0 {
		return true
	}
	if chop && d.Cmp(chopTol) <= 0 {
		return true
	}
	scale := maxAbs(a.re, a.imag(), b.re, b.imag())
	return d.Cmp(newF().Mul(scale, relTol)) <= 0
}

func maxAbs(xs ...*big.Float) *big.Float {
	m := newF()
	for _, x := range xs {
		if a := newF().Abs(x); a.Cmp(m) > 0 {
			m = a
		}
	}
	return m
}
