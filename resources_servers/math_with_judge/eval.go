package mathwithjudge

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"sync"
)

// maxExactBits caps the size of exact rationals; beyond it a value is
// carried only as a float, which keeps 10^(10^6) from costing real work.
const maxExactBits = 1 << 16

// maxFactorial is the largest n! computed.
const maxFactorial = 1000

// value is a number: exact when it is a rational the evaluator could keep
// exact, always as a (complex) float, or ±∞.
type value struct {
	exact  *big.Rat   // exact real value, or nil
	re, im *big.Float // numeric value; im nil means 0
	inf    int        // +1 or -1 for ±∞; the other fields are then unset
}

func ratValue(r *big.Rat) value {
	if r.Num().BitLen()+r.Denom().BitLen() > maxExactBits {
		return value{re: newF().SetRat(r)}
	}
	return value{exact: r, re: newF().SetRat(r)}
}

func intValue(n int64) value { return ratValue(big.NewRat(n, 1)) }

func (v value) imag() *big.Float {
	if v.im == nil {
		return fInt(0)
	}
	return v.im
}

func (v value) isReal() bool { return v.inf == 0 && (v.im == nil || v.im.Sign() == 0) }

func (v value) isZero() bool {
	if v.exact != nil {
		return v.exact.Sign() == 0
	}
	return v.inf == 0 && v.re.Sign() == 0 && v.imag().Sign() == 0
}

// checked rejects floats that left the range the functions handle, before
// big.Float would turn them into infinities.
func checked(re, im *big.Float) (value, error) {
	for _, x := range []*big.Float{re, im} {
		if x != nil && (x.IsInf() || (x.Sign() != 0 && (exponent(x) > maxMagnitudeExp || exponent(x) < -maxMagnitudeExp))) {
			return value{}, errDomain
		}
	}
	if im != nil && im.Sign() == 0 {
		im = nil
	}
	return value{re: re, im: im}, nil
}

// evaluator computes expressions with variables bound to sample values.
// steps bounds the work of one evaluation, ctx its time.
type evaluator struct {
	ctx   context.Context
	vars  map[string]value
	steps int
}

var errBudget = errors.New("evaluation budget exhausted")

// eval computes e. big.Float panics with ErrNaN on operations IEEE-754
// leaves undefined; the checks above should prevent them, and a NaN that
// still slips through makes the value unevaluable rather than the server
// crash.
func (ev *evaluator) eval(e *expr) (v value, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(big.ErrNaN); !ok {
				panic(r)
			}
			v, err = value{}, errDomain
		}
	}()
	return ev.walk(e)
}

func (ev *evaluator) walk(e *expr) (value, error) {
	ev.steps--
	if ev.steps < 0 {
		return value{}, errBudget
	}
	if ev.steps%64 == 0 && ev.ctx.Err() != nil {
		return value{}, ev.ctx.Err()
	}
	switch e.kind {
	case nNum:
		return ratValue(e.num), nil
	case nSym:
		if v, ok := ev.vars[symbolKey(e.name)]; ok {
			return v, nil
		}
		return value{}, errDomain
	case nPi:
		return value{re: piF()}, nil
	case nE:
		return value{re: mustExp1()}, nil
	case nI:
		return value{re: fInt(0), im: fInt(1)}, nil
	case nInf:
		return value{inf: 1}, nil
	case nNeg:
		a, err := ev.walk(e.args[0])
		if err != nil {
			return value{}, err
		}
		return negate(a), nil
	case nAdd:
		acc, err := ev.walk(e.args[0])
		if err != nil {
			return value{}, err
		}
		for _, t := range e.args[1:] {
			b, err := ev.walk(t)
			if err != nil {
				return value{}, err
			}
			if acc, err = add(acc, b); err != nil {
				return value{}, err
			}
		}
		return acc, nil
	case nMul:
		acc, err := ev.walk(e.args[0])
		if err != nil {
			return value{}, err
		}
		for _, f := range e.args[1:] {
			b, err := ev.walk(f)
			if err != nil {
				return value{}, err
			}
			if acc, err = mul(acc, b); err != nil {
				return value{}, err
			}
		}
		return acc, nil
	case nDiv:
		a, b, err := ev.pair(e)
		if err != nil {
			return value{}, err
		}
		return div(a, b)
	case nPow:
		a, b, err := ev.pair(e)
		if err != nil {
			return value{}, err
		}
		return power(a, b)
	case nPercent:
		a, err := ev.walk(e.args[0])
		if err != nil {
			return value{}, err
		}
		return div(a, intValue(100))
	case nFunc:
		return ev.function(e)
	}
	// Tuples and sets have no single value.
	return value{}, errDomain
}

func (ev *evaluator) pair(e *expr) (value, value, error) {
	a, err := ev.walk(e.args[0])
	if err != nil {
		return value{}, value{}, err
	}
	b, err := ev.walk(e.args[1])
	return a, b, err
}

// symbolKey is how variables are told apart: single letters by case, longer
// names (a textual answer) case-insensitively, as Math-Verify compares
// symbol names.
func symbolKey(name string) string {
	if len(name) > 1 {
		return strings.ToLower(name)
	}
	return name
}

var euler struct {
	once sync.Once
	e    *big.Float
}

func mustExp1() *big.Float {
	euler.once.Do(func() { euler.e, _ = bigExp(fInt(1)) })
	return fCopy(euler.e)
}

func negate(a value) value {
	if a.inf != 0 {
		return value{inf: -a.inf}
	}
	v := value{re: newF().Neg(a.re)}
	if a.im != nil {
		v.im = newF().Neg(a.im)
	}
	if a.exact != nil {
		v.exact = new(big.Rat).Neg(a.exact)
	}
	return v
}

func add(a, b value) (value, error) {
	if a.inf != 0 || b.inf != 0 {
		switch {
		case a.inf != 0 && b.inf != 0 && a.inf != b.inf:
			return value{}, errDomain
		case a.inf != 0 && (b.inf != 0 || b.isReal()):
			return a, nil
		case b.inf != 0 && a.isReal():
			return b, nil
		}
		return value{}, errDomain
	}
	if a.exact != nil && b.exact != nil {
		return ratValue(new(big.Rat).Add(a.exact, b.exact)), nil
	}
	return checked(newF().Add(a.re, b.re), newF().Add(a.imag(), b.imag()))
}

func mul(a, b value) (value, error) {
	if a.inf != 0 || b.inf != 0 {
		other, sign := b, a.inf
		if a.inf == 0 {
			other, sign = a, b.inf
		}
		switch {
		case other.inf != 0:
			return value{inf: sign * other.inf}, nil
		case !other.isReal() || other.isZero():
			return value{}, errDomain
		}
		return value{inf: sign * other.re.Sign()}, nil
	}
	if a.exact != nil && b.exact != nil {
		return ratValue(new(big.Rat).Mul(a.exact, b.exact)), nil
	}
	ar, ai, br, bi := a.re, a.imag(), b.re, b.imag()
	re := newF().Sub(newF().Mul(ar, br), newF().Mul(ai, bi))
	im := newF().Add(newF().Mul(ar, bi), newF().Mul(ai, br))
	return checked(re, im)
}

func div(a, b value) (value, error) {
	if b.isZero() {
		return value{}, errDomain
	}
	if b.inf != 0 {
		if a.inf != 0 {
			return value{}, errDomain
		}
		return intValue(0), nil
	}
	if a.inf != 0 {
		if !b.isReal() {
			return value{}, errDomain
		}
		return value{inf: a.inf * b.re.Sign()}, nil
	}
	if a.exact != nil && b.exact != nil {
		return ratValue(new(big.Rat).Quo(a.exact, b.exact)), nil
	}
	ar, ai, br, bi := a.re, a.imag(), b.re, b.imag()
	den := newF().Add(newF().Mul(br, br), newF().Mul(bi, bi))
	re := newF().Add(newF().Mul(ar, br), newF().Mul(ai, bi))
	im := newF().Sub(newF().Mul(ai, br), newF().Mul(ar, bi))
	return checked(re.Quo(re, den), im.Quo(im, den))
}

// power is a^b, principal value: exact for rational bases and integer
// exponents (within size), by repeated squaring for any integer exponent,
// and e^(b·ln a) otherwise.
func power(a, b value) (value, error) {
	if a.inf != 0 || b.inf != 0 {
		return value{}, errDomain
	}
	if b.exact != nil && b.exact.IsInt() {
		n := b.exact.Num()
		if a.exact != nil && n.IsInt64() {
			k := n.Int64()
			bits := int64(a.exact.Num().BitLen() + a.exact.Denom().BitLen())
			if k > -maxExactBits && k < maxExactBits && bits*abs64(k) <= maxExactBits {
				return exactPow(a.exact, k)
			}
		}
		if n.IsInt64() {
			return floatIntPow(a, n.Int64())
		}
		return value{}, errDomain
	}
	if a.isZero() {
		if b.isReal() && b.re.Sign() > 0 {
			return intValue(0), nil
		}
		return value{}, errDomain
	}
	if b.isReal() && b.exact != nil && b.exact.Denom().Cmp(big.NewInt(2)) == 0 && a.isReal() && a.re.Sign() > 0 {
		// x^(k/2) = √x^k keeps square roots on big.Float's exact Sqrt.
		r := newF().Sqrt(a.re)
		return floatIntPow(value{re: r}, b.exact.Num().Int64())
	}
	ln, err := complexLog(a)
	if err != nil {
		return value{}, err
	}
	prod, err := mul(b, ln)
	if err != nil {
		return value{}, err
	}
	return complexExp(prod)
}

func abs64(k int64) int64 {
	if k < 0 {
		return -k
	}
	return k
}

func exactPow(r *big.Rat, k int64) (value, error) {
	if r.Sign() == 0 {
		if k < 0 {
			return value{}, errDomain
		}
		if k == 0 {
			return intValue(1), nil
		}
		return intValue(0), nil
	}
	e := big.NewInt(abs64(k))
	num := new(big.Int).Exp(r.Num(), e, nil)
	den := new(big.Int).Exp(r.Denom(), e, nil)
	if k < 0 {
		num, den = den, num
	}
	return ratValue(new(big.Rat).SetFrac(num, den)), nil
}

func floatIntPow(a value, k int64) (value, error) {
	if a.isZero() {
		if k <= 0 {
			return value{}, errDomain
		}
		return intValue(0), nil
	}
	mag := max(exponent(a.re), exponent(a.imag()))
	if int64(mag)*abs64(k) > maxMagnitudeExp || int64(mag)*abs64(k) < -maxMagnitudeExp {
		return value{}, errDomain
	}
	result := intValue(1)
	base := value{re: a.re, im: a.im}
	var err error
	for e := abs64(k); e > 0; e >>= 1 {
		if e&1 == 1 {
			if result, err = mul(result, base); err != nil {
				return value{}, err
			}
		}
		if e > 1 {
			if base, err = mul(base, base); err != nil {
				return value{}, err
			}
		}
	}
	if k < 0 {
		return div(intValue(1), result)
	}
	return result, nil
}

// complexLog is the principal logarithm.
func complexLog(a value) (value, error) {
	if a.isZero() || a.inf != 0 {
		return value{}, errDomain
	}
	if a.isReal() && a.re.Sign() > 0 {
		l, err := bigLn(a.re)
		if err != nil {
			return value{}, err
		}
		return value{re: l}, nil
	}
	mod := newF().Add(newF().Mul(a.re, a.re), newF().Mul(a.imag(), a.imag()))
	mod.Sqrt(mod)
	l, err := bigLn(mod)
	if err != nil {
		return value{}, err
	}
	arg, err := bigAtan2(a.imag(), a.re)
	if err != nil {
		return value{}, err
	}
	return checked(l, arg)
}

func complexExp(a value) (value, error) {
	if a.inf != 0 {
		return value{}, errDomain
	}
	m, err := bigExp(a.re)
	if err != nil {
		return value{}, err
	}
	if a.isReal() {
		return checked(m, nil)
	}
	sin, cos, err := bigSinCos(a.imag())
	if err != nil {
		return value{}, err
	}
	return checked(newF().Mul(m, cos), newF().Mul(m, sin))
}

func (ev *evaluator) function(e *expr) (value, error) {
	args := make([]value, len(e.args))
	for i, a := range e.args {
		v, err := ev.walk(a)
		if err != nil {
			return value{}, err
		}
		args[i] = v
	}
	x := args[0]
	switch e.name {
	case "sqrt":
		return power(x, ratValue(big.NewRat(1, 2)))
	case "root":
		inv, err := div(intValue(1), args[1])
		if err != nil {
			return value{}, err
		}
		return power(x, inv)
	case "abs":
		if x.inf != 0 {
			return value{inf: 1}, nil
		}
		if x.exact != nil {
			return ratValue(new(big.Rat).Abs(x.exact)), nil
		}
		m := newF().Add(newF().Mul(x.re, x.re), newF().Mul(x.imag(), x.imag()))
		return checked(m.Sqrt(m), nil)
	case "exp":
		return complexExp(x)
	case "log":
		l, err := complexLog(x)
		if err != nil || len(args) == 1 {
			return l, err
		}
		lb, err := complexLog(args[1])
		if err != nil {
			return value{}, err
		}
		return div(l, lb)
	case "log10":
		l, err := complexLog(x)
		if err != nil {
			return value{}, err
		}
		lb, _ := complexLog(intValue(10))
		return div(l, lb)
	case "factorial":
		if x.exact == nil || !x.exact.IsInt() || x.exact.Sign() < 0 || x.exact.Num().Cmp(big.NewInt(maxFactorial)) > 0 {
			return value{}, errDomain
		}
		return ratValue(new(big.Rat).SetInt(new(big.Int).MulRange(1, x.exact.Num().Int64()))), nil
	case "binomial":
		k := args[1]
		if x.exact == nil || k.exact == nil || !x.exact.IsInt() || !k.exact.IsInt() ||
			x.exact.Num().Cmp(big.NewInt(100000)) > 0 || x.exact.Sign() < 0 || k.exact.Sign() < 0 {
			return value{}, errDomain
		}
		return ratValue(new(big.Rat).SetInt(new(big.Int).Binomial(x.exact.Num().Int64(), k.exact.Num().Int64()))), nil
	case "floor", "ceiling":
		if !x.isReal() {
			return value{}, errDomain
		}
		r := x.exact
		if r == nil {
			r, _ = x.re.Rat(nil)
		}
		q := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: floor for a positive denominator
		if e.name == "ceiling" && !r.IsInt() {
			q.Add(q, big.NewInt(1))
		}
		return ratValue(new(big.Rat).SetInt(q)), nil
	}
	if !x.isReal() {
		return value{}, errDomain
	}
	return realFunction(e.name, x.re)
}

func realFunction(name string, x *big.Float) (value, error) {
	switch name {
	case "sin", "cos", "tan", "cot", "sec", "csc":
		s, c, err := bigSinCos(x)
		if err != nil {
			return value{}, err
		}
		num, den := s, c
		switch name {
		case "sin":
			return checked(s, nil)
		case "cos":
			return checked(c, nil)
		case "cot":
			num, den = c, s
		case "sec":
			num, den = fInt(1), c
		case "csc":
			num, den = fInt(1), s
		}
		if den.Sign() == 0 || exponent(den) < -prec {
			return value{}, errDomain
		}
		return checked(newF().Quo(num, den), nil)
	case "atan":
		return checked(bigAtan(x), nil)
	case "asin", "acos":
		one := fInt(1)
		if newF().Abs(x).Cmp(one) > 0 {
			return value{}, errDomain
		}
		half := piF()
		half.SetMantExp(half, -1)
		var r *big.Float // asin x
		if newF().Abs(x).Cmp(one) == 0 {
			r = fCopy(half)
			if x.Sign() < 0 {
				r.Neg(r)
			}
		} else {
			d := newF().Sub(one, newF().Mul(x, x))
			r = bigAtan(newF().Quo(x, d.Sqrt(d)))
		}
		if name == "acos" {
			r = newF().Sub(half, r)
		}
		return checked(r, nil)
	case "sinh", "cosh", "tanh":
		ep, err := bigExp(x)
		if err != nil {
			return value{}, err
		}
		em := newF().Quo(fInt(1), ep)
		sh := newF().Sub(ep, em)
		sh.SetMantExp(sh, -1)
		ch := newF().Add(ep, em)
		ch.SetMantExp(ch, -1)
		switch name {
		case "sinh":
			return checked(sh, nil)
		case "cosh":
			return checked(ch, nil)
		}
		return checked(newF().Quo(sh, ch), nil)
	}
	return value{}, errDomain
}
