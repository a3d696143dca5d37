package tree

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Python ints have no size limit, so neither do config ints: values that
// fit in int64 are Int nodes, the rest BigInt nodes. The helpers here are
// shared by the YAML loader, the override parser and interpolation, which
// each read integers with their own syntax but must agree on the value.

// MaxIntDigits is CPython's default limit on converting between a decimal
// string and an int (sys.get_int_max_str_digits()): int() of a longer
// string raises ValueError, and so do PyYAML, Hydra and OmegaConf, which
// call it. It also bounds the quadratic cost of reading such a string.
const MaxIntDigits = 4300

// IntDigitsError is a decimal integer longer than MaxIntDigits digits.
type IntDigitsError struct{ Digits int }

func (e *IntDigitsError) Error() string {
	return "Exceeds the limit (" + strconv.Itoa(MaxIntDigits) + " digits) for integer string conversion: value has " +
		strconv.Itoa(e.Digits) + " digits"
}

// errBadDecimal is text that is not a sign and decimal digits.
var errBadDecimal = errors.New("not a decimal integer")

// NewBigInt returns the integer node for x: an Int when x fits in int64, a
// BigInt (holding a copy of x) otherwise.
func NewBigInt(x *big.Int) *Node {
	if x.IsInt64() {
		return NewInt(x.Int64())
	}
	return &Node{Kind: BigInt, Big: new(big.Int).Set(x)}
}

// ParseDecimal reads an optional sign and decimal digits, with '_' allowed
// between digits as the callers' grammars check, into an Int or BigInt
// node. More than MaxIntDigits digits (leading zeros count, as in Python)
// is an *IntDigitsError.
func ParseDecimal(s string) (*Node, error) {
	digits := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			digits++
		}
	}
	if digits > MaxIntDigits {
		return nil, &IntDigitsError{Digits: digits}
	}
	if strings.IndexByte(s, '_') >= 0 {
		s = strings.ReplaceAll(s, "_", "")
	}
	if digits <= 18 {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return NewInt(i), nil
		}
	}
	x, ok := new(big.Int).SetString(s, 10)
	if !ok || digits == 0 {
		return nil, errBadDecimal
	}
	return NewBigInt(x), nil
}

// IsInteger reports whether n is an Int or a BigInt.
func (n *Node) IsInteger() bool { return n.Kind == Int || n.Kind == BigInt }

// BigValue returns the value of an Int or BigInt node as a new big.Int,
// and nil for any other kind.
func (n *Node) BigValue() *big.Int {
	switch n.Kind {
	case Int:
		return big.NewInt(n.Int)
	case BigInt:
		return new(big.Int).Set(n.Big)
	}
	return nil
}

// IntText returns the decimal digits of an Int or BigInt node, which is
// Python's str() and repr() of the int, and "" for any other kind.
func (n *Node) IntText() string {
	switch n.Kind {
	case Int:
		return strconv.FormatInt(n.Int, 10)
	case BigInt:
		return n.Big.String()
	}
	return ""
}

// IntToFloat is Python's float(int): the nearest float, ties to even. ok is
// false where Python raises OverflowError ("int too large to convert to
// float").
func IntToFloat(x *big.Int) (f float64, ok bool) {
	if x.IsInt64() {
		return float64(x.Int64()), true
	}
	f, _ = new(big.Float).SetInt(x).Float64()
	return f, !math.IsInf(f, 0)
}

// FloatToInt is Python's int(float): truncation toward zero, to an Int or
// a BigInt. f must be finite.
func FloatToInt(f float64) *Node {
	if f >= -(1<<63) && f < 1<<63 {
		return NewInt(int64(f))
	}
	x, _ := big.NewFloat(f).Int(nil)
	return NewBigInt(x)
}

// NumbersEqual is Python's == between two numbers (bool, int or float):
// exact, so 2**53 + 1 differs from 2.0**53, and nan equals nothing.
// numeric is false, and equal meaningless, unless both a and b are numbers.
func NumbersEqual(a, b *Node) (equal, numeric bool) {
	x, xf, ok := pyNumber(a)
	if !ok {
		return false, false
	}
	y, yf, ok := pyNumber(b)
	if !ok {
		return false, false
	}
	switch {
	case x == nil && y == nil:
		return xf == yf, true
	case x == nil:
		return floatEqualsInt(xf, y), true
	case y == nil:
		return floatEqualsInt(yf, x), true
	}
	return x.Cmp(y) == 0, true
}

// pyNumber returns an integer value (bools are 0 and 1) or, with i nil, a
// float value.
func pyNumber(n *Node) (i *big.Int, f float64, ok bool) {
	switch n.Kind {
	case Bool:
		if n.Bool {
			return big.NewInt(1), 0, true
		}
		return new(big.Int), 0, true
	case Int, BigInt:
		return n.BigValue(), 0, true
	case Float:
		return nil, n.Float, true
	}
	return nil, 0, false
}

func floatEqualsInt(f float64, i *big.Int) bool {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return false
	}
	return FloatToInt(f).BigValue().Cmp(i) == 0
}
