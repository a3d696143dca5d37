package mathwithjudge

import (
	"math/big"
	"sort"
	"strconv"
	"strings"
)

// NeMo Gym reports extracted_answer as SymPy's str() of the parsed answer
// (83/499, sqrt(2), x**2 + 1). The printer below writes the same syntax:
// ** for powers, sqrt(), pi, E, I, oo, Abs(), log(), FiniteSet as {a, b},
// Interval.open(a, b), Eq(x, 5). Terms of a sum are ordered as SymPy
// usually orders them (higher degree first, numbers after variables,
// rationals before surds), but SymPy's full canonical order is not
// reproduced, so long sums may list their terms differently.

const (
	precAdd = 10
	precMul = 20
	precPow = 30
	precTop = 40
)

func printAnswer(a *answer) string {
	switch a.kind {
	case aExpr:
		return printTop(a.expr)
	case aSet, aTuple:
		parts := make([]string, len(a.items))
		for i, it := range a.items {
			parts[i] = printAnswer(it)
		}
		if a.kind == aSet {
			return "{" + strings.Join(parts, ", ") + "}"
		}
		if len(parts) == 1 {
			return "(" + parts[0] + ",)"
		}
		return "(" + strings.Join(parts, ", ") + ")"
	case aInterval:
		name := "Interval"
		switch {
		case a.lopen && a.ropen:
			name = "Interval.open"
		case a.lopen:
			name = "Interval.Lopen"
		case a.ropen:
			name = "Interval.Ropen"
		}
		return name + "(" + printExpr(a.lo, 0) + ", " + printExpr(a.hi, 0) + ")"
	}
	rels := make([]string, len(a.ops))
	for i, op := range a.ops {
		l, r := printExpr(a.sides[i], 0), printExpr(a.sides[i+1], 0)
		switch op {
		case "=":
			rels[i] = "Eq(" + l + ", " + r + ")"
		case "!=":
			rels[i] = "Ne(" + l + ", " + r + ")"
		default:
			rels[i] = l + " " + op + " " + r
		}
	}
	if len(rels) == 1 {
		return rels[0]
	}
	for i, r := range rels {
		if !strings.HasPrefix(r, "Eq(") && !strings.HasPrefix(r, "Ne(") {
			rels[i] = "(" + r + ")"
		}
	}
	return strings.Join(rels, " & ")
}

// printTop prints a whole answer; a lone decimal shows SymPy's 15 digits,
// as str(Float) does at the top level.
func printTop(e *expr) string {
	if e.kind == nNum && e.float {
		return floatString(e.num, false)
	}
	return printExpr(e, 0)
}

func printExpr(e *expr, parent int) string {
	s, prec := printNode(e)
	if prec < parent {
		return "(" + s + ")"
	}
	return s
}

func printNode(e *expr) (string, int) {
	switch e.kind {
	case nNum:
		if e.float {
			return floatString(e.num, true), precTop
		}
		return e.num.RatString(), precTop
	case nSym:
		return e.name, precTop
	case nPi:
		return "pi", precTop
	case nE:
		return "E", precTop
	case nI:
		return "I", precTop
	case nInf:
		return "oo", precTop
	case nNeg:
		return "-" + printExpr(e.args[0], precMul), precAdd
	case nAdd:
		return printSum(e.args), precAdd
	case nMul:
		return printProduct(e.args), precMul
	case nDiv:
		return printExpr(e.args[0], precMul) + "/" + printDenominator(e.args[1]), precMul
	case nPercent:
		return printExpr(e.args[0], precMul) + "/100", precMul
	case nPow:
		base, exp := e.args[0], e.args[1]
		if exp.kind == nDiv && isInt(exp.args[0], 1) && isInt(exp.args[1], 2) {
			return "sqrt(" + printExpr(base, 0) + ")", precTop
		}
		if exp.kind == nNeg && isInt(exp.args[0], 1) {
			return "1/" + printExpr(base, precPow+1), precMul
		}
		return printExpr(base, precPow+1) + "**" + printExpr(exp, precTop), precPow
	case nFunc:
		return printFunc(e)
	case nTuple, nSet:
		parts := make([]string, len(e.args))
		for i, a := range e.args {
			parts[i] = printExpr(a, 0)
		}
		if e.kind == nSet {
			return "{" + strings.Join(parts, ", ") + "}", precTop
		}
		return "(" + strings.Join(parts, ", ") + ")", precTop
	}
	return "?", precTop
}

func isInt(e *expr, n int64) bool {
	return e.kind == nNum && !e.float && e.num.Cmp(big.NewRat(n, 1)) == 0
}

// printDenominator wraps products and sums, not powers: x/(2*y), 1/x**2.
func printDenominator(e *expr) string {
	switch e.kind {
	case nAdd, nMul, nDiv, nNeg, nPercent:
		return "(" + printExpr(e, 0) + ")"
	}
	return printExpr(e, precPow)
}

var funcNames = map[string]string{
	"abs": "Abs", "factorial": "factorial", "binomial": "binomial", "floor": "floor", "ceiling": "ceiling",
	"sin": "sin", "cos": "cos", "tan": "tan", "cot": "cot", "sec": "sec", "csc": "csc",
	"asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "exp": "exp",
}

func printFunc(e *expr) (string, int) {
	args := make([]string, len(e.args))
	for i, a := range e.args {
		args[i] = printExpr(a, 0)
	}
	switch e.name {
	case "sqrt":
		return "sqrt(" + args[0] + ")", precTop
	case "root":
		return printExpr(e.args[0], precPow+1) + "**(1/" + printExpr(e.args[1], precPow+1) + ")", precPow
	case "log":
		if len(args) == 2 {
			return "log(" + args[0] + ")/log(" + args[1] + ")", precMul
		}
		return "log(" + args[0] + ")", precTop
	case "log10":
		return "log(" + args[0] + ")/log(10)", precMul
	}
	return funcNames[e.name] + "(" + strings.Join(args, ", ") + ")", precTop
}

func printSum(terms []*expr) string {
	ordered := orderTerms(terms)
	var b strings.Builder
	for i, t := range ordered {
		neg := t.kind == nNeg
		inner := t
		if neg {
			inner = t.args[0]
		}
		switch {
		case i == 0 && neg:
			b.WriteString("-" + printExpr(inner, precMul))
		case i == 0:
			b.WriteString(printExpr(t, precAdd))
		case neg:
			b.WriteString(" - " + printExpr(inner, precMul))
		default:
			b.WriteString(" + " + printExpr(t, precAdd+1))
		}
	}
	return b.String()
}

// orderTerms puts terms with variables first, by falling degree, then
// rational numbers, then other constants; ties keep the written order.
func orderTerms(terms []*expr) []*expr {
	type info struct {
		e        *expr
		symbolic bool
		degree   int
		rational bool
	}
	infos := make([]info, len(terms))
	for i, t := range terms {
		syms := map[string]bool{}
		collectSymbols(t, syms)
		infos[i] = info{t, len(syms) > 0, degree(t), isRationalLiteral(t)}
	}
	sort.SliceStable(infos, func(a, b int) bool {
		x, y := infos[a], infos[b]
		if x.symbolic != y.symbolic {
			return x.symbolic
		}
		if x.symbolic {
			return x.degree > y.degree
		}
		return x.rational && !y.rational
	})
	out := make([]*expr, len(infos))
	for i, in := range infos {
		out[i] = in.e
	}
	return out
}

func degree(e *expr) int {
	switch e.kind {
	case nSym:
		return 1
	case nNeg, nPercent:
		return degree(e.args[0])
	case nDiv:
		return degree(e.args[0])
	case nMul:
		d := 0
		for _, f := range e.args {
			d += degree(f)
		}
		return d
	case nPow:
		if e.args[1].kind == nNum && e.args[1].num.IsInt() && e.args[1].num.Num().IsInt64() {
			return degree(e.args[0]) * int(e.args[1].num.Num().Int64())
		}
	}
	syms := map[string]bool{}
	collectSymbols(e, syms)
	if len(syms) > 0 {
		return 1
	}
	return 0
}

func isRationalLiteral(e *expr) bool {
	switch e.kind {
	case nNum:
		return true
	case nNeg:
		return isRationalLiteral(e.args[0])
	case nDiv:
		return isRationalLiteral(e.args[0]) && isRationalLiteral(e.args[1])
	}
	return false
}

// printProduct writes numbers first (2*x), as SymPy does.
func printProduct(factors []*expr) string {
	ordered := make([]*expr, 0, len(factors))
	for _, f := range factors {
		if f.kind == nNum {
			ordered = append(ordered, f)
		}
	}
	for _, f := range factors {
		if f.kind != nNum {
			ordered = append(ordered, f)
		}
	}
	parts := make([]string, len(ordered))
	for i, f := range ordered {
		parts[i] = printExpr(f, precMul+1)
	}
	return strings.Join(parts, "*")
}

// floatString writes a decimal as SymPy prints a Float: 15 significant
// digits, fixed notation for exponents from -4 to 14, e.g. 2.50000000000000;
// inside an expression trailing zeros are dropped (2.5).
func floatString(r *big.Rat, strip bool) string {
	if r.Sign() == 0 {
		return "0.0"
	}
	sci := new(big.Float).SetPrec(256).SetRat(r).Text('e', 14) // -d.dddddddddddddde±XX
	sign := ""
	if sci[0] == '-' {
		sign, sci = "-", sci[1:]
	}
	mant, expText, _ := strings.Cut(sci, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp := 0
	for _, c := range expText[1:] {
		exp = exp*10 + int(c-'0')
	}
	if expText[0] == '-' {
		exp = -exp
	}
	trim := func(s string) string {
		if !strip || !strings.Contains(s, ".") {
			return s
		}
		s = strings.TrimRight(s, "0")
		if strings.HasSuffix(s, ".") {
			s += "0"
		}
		return s
	}
	if exp <= -5 || exp >= 15 {
		es := "e+"
		if exp < 0 {
			es, exp = "e-", -exp
		}
		return sign + trim(digits[:1]+"."+digits[1:]) + es + strconv.Itoa(exp)
	}
	var s string
	if exp < 0 {
		s = "0." + strings.Repeat("0", -exp-1) + digits
	} else {
		s = digits[:exp+1] + "." + digits[exp+1:]
	}
	return sign + trim(s)
}
