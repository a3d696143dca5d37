package tree

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
)

func bigOf(t *testing.T, s string) *big.Int {
	t.Helper()
	x, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("bad test number %q", s)
	}
	return x
}

func TestNewBigIntKeepsInt64sInt(t *testing.T) {
	tests := []struct {
		digits string
		kind   Kind
	}{
		{"0", Int}, {"-1", Int}, {"9223372036854775807", Int}, {"-9223372036854775808", Int},
		{"9223372036854775808", BigInt}, {"-9223372036854775809", BigInt},
		{"123456789012345678901234567890", BigInt},
	}
	for _, tt := range tests {
		x := bigOf(t, tt.digits)
		n := NewBigInt(x)
		if n.Kind != tt.kind || n.IntText() != tt.digits || n.GoString() != tt.digits {
			t.Errorf("NewBigInt(%s) = %s %q", tt.digits, n.Kind, n.IntText())
		}
		if n.BigValue().Cmp(x) != 0 || !n.IsInteger() {
			t.Errorf("NewBigInt(%s).BigValue() = %v", tt.digits, n.BigValue())
		}
		x.SetInt64(5) // the node holds its own copy
		if n.IntText() != tt.digits {
			t.Errorf("NewBigInt(%s) shares its argument", tt.digits)
		}
	}
	if NewString("1").IsInteger() || NewFloat(1).IsInteger() || NewFloat(1).BigValue() != nil || NewBool(true).IntText() != "" {
		t.Error("non-integers read as integers")
	}
	if BigInt.String() != "big int" {
		t.Errorf("BigInt.String() = %q", BigInt.String())
	}
}

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		in, want string
		kind     Kind
	}{
		{"0", "0", Int}, {"-0", "0", Int}, {"+7", "7", Int}, {"1_000", "1000", Int},
		{"999999999999999999", "999999999999999999", Int},
		{"9223372036854775807", "9223372036854775807", Int},
		{"-9223372036854775808", "-9223372036854775808", Int},
		{"0009223372036854775807", "9223372036854775807", Int},
		{"9223372036854775808", "9223372036854775808", BigInt},
		{"-1_000_000_000_000_000_000_000", "-1000000000000000000000", BigInt},
		{"+123456789012345678901234567890", "123456789012345678901234567890", BigInt},
		{strings.Repeat("9", MaxIntDigits), strings.Repeat("9", MaxIntDigits), BigInt},
	}
	for _, tt := range tests {
		n, err := ParseDecimal(tt.in)
		if err != nil || n.Kind != tt.kind || n.IntText() != tt.want {
			t.Errorf("ParseDecimal(%q) = %#v, %v; want %s %s", tt.in, n, err, tt.kind, tt.want)
		}
	}
	for _, in := range []string{strings.Repeat("9", MaxIntDigits+1), "-" + strings.Repeat("0", MaxIntDigits+1), "1_" + strings.Repeat("0", MaxIntDigits)} {
		_, err := ParseDecimal(in)
		var de *IntDigitsError
		if !errors.As(err, &de) || de.Digits != MaxIntDigits+1 {
			t.Errorf("ParseDecimal(%d chars) = %v, want an IntDigitsError for %d digits", len(in), err, MaxIntDigits+1)
		}
	}
	if _, err := ParseDecimal(strings.Repeat("9", MaxIntDigits+1)); err == nil ||
		err.Error() != "Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits" {
		t.Errorf("message: %v", err)
	}
	for _, in := range []string{"", "-", "x", "12a", "1.5", "99999999999999999999x"} {
		if n, err := ParseDecimal(in); err == nil {
			t.Errorf("ParseDecimal(%q) = %#v, want an error", in, n)
		}
	}
}

func TestIntToFloat(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"123456789012345678901234567890", 1.2345678901234568e+29, true},
		{"-9223372036854775809", -9223372036854775808, true},
		{"9007199254740993", 9007199254740992, true}, // ties to even, as Python
		{"9007199254740995", 9007199254740996, true},
		{"18446744073709551617", 18446744073709551616, true},
		{"1" + strings.Repeat("0", 308), 1e308, true},
		{"1" + strings.Repeat("0", 309), 0, false}, // OverflowError: int too large to convert to float
		{"-1" + strings.Repeat("0", 400), 0, false},
	}
	for _, tt := range tests {
		f, ok := IntToFloat(bigOf(t, tt.in))
		if ok != tt.ok || (ok && f != tt.want) {
			t.Errorf("IntToFloat(%s) = %v, %v; want %v, %v", tt.in, f, ok, tt.want, tt.ok)
		}
	}
}

func TestFloatToInt(t *testing.T) {
	tests := []struct {
		in   float64
		want string
		kind Kind
	}{
		{1.9, "1", Int}, {-1.9, "-1", Int}, {-9223372036854775808, "-9223372036854775808", Int},
		{9223372036854775808, "9223372036854775808", BigInt},
		{1e30, "1000000000000000019884624838656", BigInt},
		{-1e19, "-10000000000000000000", BigInt},
		{math.MaxFloat64, "1797693134862315708145274237317043567980705675258449965989174768031572607800285" +
			"3876058955863276687817154045895351438246423432132688946418276846754670353751698604991057655128207" +
			"6245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738" +
			"177180919299881250404026184124858368", BigInt},
	}
	for _, tt := range tests {
		n := FloatToInt(tt.in)
		if n.Kind != tt.kind || n.IntText() != tt.want {
			t.Errorf("FloatToInt(%v) = %s %s, want %s %s", tt.in, n.Kind, n.IntText(), tt.kind, tt.want)
		}
	}
}

func TestNumbersEqual(t *testing.T) {
	b := func(s string) *Node { return NewBigInt(bigOf(t, s)) }
	tests := []struct {
		a, b        *Node
		eq, numeric bool
	}{
		{b("123456789012345678901234567890"), b("123456789012345678901234567890"), true, true},
		{b("123456789012345678901234567890"), b("123456789012345678901234567891"), false, true},
		{b("18446744073709551616"), NewFloat(18446744073709551616), true, true},
		{NewFloat(1e30), b("1000000000000000019884624838656"), true, true},
		{b("1" + strings.Repeat("0", 30)), NewFloat(1e30), false, true},
		{NewInt(9007199254740993), NewFloat(9007199254740992), false, true},
		{NewInt(1), NewFloat(1), true, true},
		{NewBool(true), NewInt(1), true, true},
		{NewBool(false), NewFloat(0), true, true},
		{b("9223372036854775808"), NewFloat(math.Inf(1)), false, true},
		{NewFloat(math.NaN()), NewFloat(math.NaN()), false, true},
		{NewFloat(2.5), NewFloat(2.5), true, true},
		{b("9223372036854775808"), NewString("9223372036854775808"), false, false},
		{NewNull(), NewInt(0), false, false},
	}
	for _, tt := range tests {
		eq, numeric := NumbersEqual(tt.a, tt.b)
		if eq != tt.eq || numeric != tt.numeric {
			t.Errorf("NumbersEqual(%#v, %#v) = %v, %v; want %v, %v", tt.a, tt.b, eq, numeric, tt.eq, tt.numeric)
		}
		if eq2, numeric2 := NumbersEqual(tt.b, tt.a); eq2 != eq || numeric2 != numeric {
			t.Errorf("NumbersEqual is not symmetric for %#v, %#v", tt.a, tt.b)
		}
	}
}

func TestBigIntEqualAndClone(t *testing.T) {
	a := NewBigInt(bigOf(t, "123456789012345678901234567890"))
	if !Equal(a, NewBigInt(bigOf(t, "123456789012345678901234567890"))) {
		t.Error("equal big ints differ")
	}
	if Equal(a, NewBigInt(bigOf(t, "-123456789012345678901234567890"))) || Equal(a, NewString(a.IntText())) {
		t.Error("different values are equal")
	}
	m := NewMap()
	m.Set("x", a)
	c := m.Clone()
	if !Equal(m, c) {
		t.Fatal("clone differs")
	}
	c.Get("x").Big.SetInt64(1) // even against the rule, a clone is its own
	if a.IntText() != "123456789012345678901234567890" {
		t.Error("Clone shares the big value")
	}
}
