package tree

import (
	"math"
	"strconv"
	"strings"
)

// PythonFloatRepr renders f as Python's repr(float) does: the shortest
// digits that round-trip, fixed notation for decimal exponents in [-4, 16),
// scientific otherwise with at least two exponent digits ("1e-05", "1e+16"),
// and "inf", "-inf", "nan". Config output and string interpolation both
// follow it so values read the same as under NeMo Gym.
func PythonFloatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64) // e.g. "-1.2345e+06"
	mant, expText, _ := strings.Cut(sci, "e")
	exp, _ := strconv.Atoi(expText)
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	digits := strings.Replace(mant, ".", "", 1)
	sign := ""
	if neg {
		sign = "-"
	}
	if exp < -4 || exp >= 16 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		es := "+"
		if exp < 0 {
			es = "-"
			exp = -exp
		}
		e := strconv.Itoa(exp)
		if len(e) < 2 {
			e = "0" + e
		}
		return sign + m + "e" + es + e
	}
	pointAt := exp + 1 // digits before the decimal point
	var b strings.Builder
	b.WriteString(sign)
	switch {
	case pointAt <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -pointAt))
		b.WriteString(digits)
	case pointAt >= len(digits):
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", pointAt-len(digits)))
		b.WriteString(".0")
	default:
		b.WriteString(digits[:pointAt])
		b.WriteString(".")
		b.WriteString(digits[pointAt:])
	}
	return b.String()
}

// AppendOrjsonFloat writes f as orjson (3.13, which nemo-gym 0.7.0
// installs) does: the shortest digits that read back
// as f, in fixed notation (with .0 when integral) for a decimal exponent
// from -5 to 15, else as d.ddde±x; NaN and infinities as null.
func AppendOrjsonFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	if exp >= -5 && exp < 16 {
		fixed := strconv.FormatFloat(f, 'f', -1, 64)
		dst = append(dst, fixed...)
		if !strings.ContainsAny(fixed, ".") {
			dst = append(dst, '.', '0')
		}
		return dst
	}
	dst = append(dst, mant...)
	dst = append(dst, 'e')
	if exp >= 0 {
		dst = append(dst, '+')
	}
	return strconv.AppendInt(dst, int64(exp), 10)
}
