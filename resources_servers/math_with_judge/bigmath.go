package mathwithjudge

import (
	"errors"
	"math/big"
	"sync"
)

// Answers are compared at prec bits (about 77 decimal digits), far beyond
// any tolerance a grader uses, so that two closed forms agree to the last
// digit shown only when they are equal. Functions work with guard more
// bits and round once.
const (
	prec  = 256
	guard = 64
	wprec = prec + guard
)

// errDomain is a value the evaluator does not produce: a pole, an overflow,
// a function outside the real domain it implements. Such an answer cannot
// be compared numerically.
var errDomain = errors.New("value outside the evaluable domain")

// maxMagnitudeExp bounds |x| < 2^maxMagnitudeExp for values the functions
// accept; big.Float itself would go to ±Inf near 2^(2^31).
const maxMagnitudeExp = 1 << 30

func newF() *big.Float { return new(big.Float).SetPrec(wprec) }

func fInt(n int64) *big.Float { return newF().SetInt64(n) }

func fCopy(x *big.Float) *big.Float { return newF().Set(x) }

// exponent is x's binary exponent (x = m·2^e, 0.5 ≤ |m| < 1); 0 for 0.
func exponent(x *big.Float) int { return x.MantExp(nil) }

var constants struct {
	once    sync.Once
	pi, ln2 *big.Float
}

// consts computes π (Machin) and ln 2 once, at working precision plus
// enough bits for argument reduction of |x| < 2^64.
func consts() (pi, ln2 *big.Float) {
	constants.once.Do(func() {
		p := uint(wprec + 96)
		x5 := new(big.Float).SetPrec(p).Quo(new(big.Float).SetPrec(p).SetInt64(1), new(big.Float).SetPrec(p).SetInt64(5))
		x239 := new(big.Float).SetPrec(p).Quo(new(big.Float).SetPrec(p).SetInt64(1), new(big.Float).SetPrec(p).SetInt64(239))
		a := atanSeries(x5, p)
		b := atanSeries(x239, p)
		pi := new(big.Float).SetPrec(p).Mul(a, new(big.Float).SetInt64(16))
		pi.Sub(pi, new(big.Float).SetPrec(p).Mul(b, new(big.Float).SetInt64(4)))
		third := new(big.Float).SetPrec(p).Quo(new(big.Float).SetPrec(p).SetInt64(1), new(big.Float).SetPrec(p).SetInt64(3))
		ln2 := atanhSeries(third, p)
		ln2.Mul(ln2, new(big.Float).SetInt64(2))
		constants.pi, constants.ln2 = pi, ln2
	})
	return constants.pi, constants.ln2
}

func piF() *big.Float { pi, _ := consts(); return fCopy(pi) }

// atanSeries is Σ (-1)^n x^(2n+1)/(2n+1) at precision p, for |x| ≤ 1/5.
func atanSeries(x *big.Float, p uint) *big.Float {
	sum := new(big.Float).SetPrec(p).Set(x)
	x2 := new(big.Float).SetPrec(p).Mul(x, x)
	pow := new(big.Float).SetPrec(p).Set(x)
	term := new(big.Float).SetPrec(p)
	for n := int64(1); ; n++ {
		pow.Mul(pow, x2)
		pow.Neg(pow)
		term.Quo(pow, new(big.Float).SetInt64(2*n+1))
		if term.Sign() == 0 || exponent(term) < exponent(sum)-int(p)-2 {
			return sum
		}
		sum.Add(sum, term)
	}
}

// atanhSeries is Σ x^(2n+1)/(2n+1) at precision p, for |x| ≤ 1/3.
func atanhSeries(x *big.Float, p uint) *big.Float {
	sum := new(big.Float).SetPrec(p).Set(x)
	x2 := new(big.Float).SetPrec(p).Mul(x, x)
	pow := new(big.Float).SetPrec(p).Set(x)
	term := new(big.Float).SetPrec(p)
	for n := int64(1); ; n++ {
		pow.Mul(pow, x2)
		term.Quo(pow, new(big.Float).SetInt64(2*n+1))
		if term.Sign() == 0 || exponent(term) < exponent(sum)-int(p)-2 {
			return sum
		}
		sum.Add(sum, term)
	}
}

// bigExp is e^x.
func bigExp(x *big.Float) (*big.Float, error) {
	if x.Sign() == 0 {
		return fInt(1), nil
	}
	if exponent(x) > 30 {
		return nil, errDomain
	}
	_, ln2 := consts()
	// x = k·ln2 + r with |r| ≤ ln2/2; e^x = 2^k·e^r.
	kf := newF().Quo(x, ln2)
	kf.Add(kf, big.NewFloat(0.5*float64(kf.Sign()))) // round half away from zero
	k, _ := kf.Int64()
	r := newF().Sub(x, newF().Mul(fInt(k), ln2))
	// Halve r eight times so the series converges fast, then square back.
	r.SetMantExp(r, -8)
	sum, term := fInt(1), fInt(1)
	for n := int64(1); n < 1000; n++ {
		term.Mul(term, r)
		term.Quo(term, fInt(n))
		if term.Sign() == 0 || exponent(term) < -wprec-8 {
			break
		}
		sum.Add(sum, term)
	}
	for range 8 {
		sum.Mul(sum, sum)
	}
	if k > maxMagnitudeExp || k < -maxMagnitudeExp {
		return nil, errDomain
	}
	return sum.SetMantExp(sum, int(k)), nil
}

// bigLn is ln x for x > 0.
func bigLn(x *big.Float) (*big.Float, error) {
	if x.Sign() <= 0 || x.IsInf() {
		return nil, errDomain
	}
	_, ln2 := consts()
	m := newF()
	e := x.MantExp(m) // x = m·2^e, m in [0.5, 1)
	// Keep m near 1 so that z = (m-1)/(m+1) is small.
	if m.Cmp(big.NewFloat(0.7071067811865476)) < 0 {
		m.SetMantExp(m, 1)
		e--
	}
	z := newF().Quo(newF().Sub(m, fInt(1)), newF().Add(m, fInt(1)))
	res := atanhSeries(z, wprec)
	res.Mul(res, fInt(2))
	return res.Add(res, newF().Mul(fInt(int64(e)), ln2)), nil
}

// bigSinCos is sin x and cos x for |x| < 2^64.
func bigSinCos(x *big.Float) (sin, cos *big.Float, err error) {
	if x.Sign() == 0 {
		return fInt(0), fInt(1), nil
	}
	if exponent(x) > 64 {
		return nil, nil, errDomain
	}
	pi, _ := consts()
	p := uint(wprec + 96)
	halfPi := new(big.Float).SetPrec(p).Quo(pi, new(big.Float).SetInt64(2))
	xp := new(big.Float).SetPrec(p).Set(x)
	kf := new(big.Float).SetPrec(p).Quo(xp, halfPi)
	kf.Add(kf, new(big.Float).SetFloat64(0.5*float64(kf.Sign())))
	kInt, _ := kf.Int(nil)
	r := new(big.Float).SetPrec(p).Sub(xp, new(big.Float).SetPrec(p).Mul(new(big.Float).SetPrec(p).SetInt(kInt), halfPi))
	q := new(big.Int).Mod(kInt, big.NewInt(4)).Int64()
	s, c := sinCosSeries(newF().Set(r))
	switch q {
	case 1:
		s, c = c, s.Neg(s)
	case 2:
		s, c = s.Neg(s), c.Neg(c)
	case 3:
		s, c = c.Neg(c), s
	}
	return s, c, nil
}

// sinCosSeries is the Taylor series of sin and cos for |r| ≤ π/4.
func sinCosSeries(r *big.Float) (sin, cos *big.Float) {
	r2 := newF().Mul(r, r)
	sin, cos = fCopy(r), fInt(1)
	sterm, cterm := fCopy(r), fInt(1)
	for n := int64(1); n < 1000; n++ {
		cterm.Mul(cterm, r2)
		cterm.Quo(cterm, fInt((2*n-1)*(2*n)))
		cterm.Neg(cterm)
		sterm.Mul(sterm, r2)
		sterm.Quo(sterm, fInt((2*n)*(2*n+1)))
		sterm.Neg(sterm)
		if cterm.Sign() == 0 || exponent(cterm) < -wprec-8 {
			break
		}
		cos.Add(cos, cterm)
		sin.Add(sin, sterm)
	}
	return sin, cos
}

// bigAtan is arctan x.
func bigAtan(x *big.Float) *big.Float {
	if x.Sign() == 0 {
		return fInt(0)
	}
	neg := x.Sign() < 0
	a := newF().Abs(x)
	inverted := a.Cmp(fInt(1)) > 0
	if inverted {
		a.Quo(fInt(1), a)
	}
	// atan(a) = 2·atan(a / (1 + √(1+a²))) brings a below 1/5.
	doublings := 0
	fifth := big.NewFloat(0.2)
	for a.Cmp(fifth) > 0 {
		s := newF().Mul(a, a)
		s.Add(s, fInt(1))
		s.Sqrt(s)
		s.Add(s, fInt(1))
		a.Quo(a, s)
		doublings++
	}
	res := atanSeries(a, wprec)
	res.SetMantExp(res, doublings)
	if inverted {
		half := piF()
		half.SetMantExp(half, -1)
		res.Sub(half, res)
	}
	if neg {
		res.Neg(res)
	}
	return res
}

// bigAtan2 is the angle of (x, y), in (-π, π].
func bigAtan2(y, x *big.Float) (*big.Float, error) {
	switch {
	case x.Sign() > 0:
		return bigAtan(newF().Quo(y, x)), nil
	case x.Sign() < 0:
		a := bigAtan(newF().Quo(y, x))
		if y.Sign() >= 0 {
			return a.Add(a, piF()), nil
		}
		return a.Sub(a, piF()), nil
	case y.Sign() > 0:
		h := piF()
		return h.SetMantExp(h, -1), nil
	case y.Sign() < 0:
		h := piF()
		h.SetMantExp(h, -1)
		return h.Neg(h), nil
	}
	return nil, errDomain
}
