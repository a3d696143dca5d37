package interp

import (
	"math"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

func TestPythonStr(t *testing.T) {
	m := tree.NewMap()
	m.Set("v", tree.NewInt(7))
	m.Set("it's", tree.NewString(`say "hi"`))
	m.SetEntry(tree.Entry{Key: "3", KeyKind: tree.Int, Value: tree.NewBool(false)})
	m.SetEntry(tree.Entry{Key: "yes", KeyKind: tree.Bool, Value: tree.NewNull()})
	m.SetEntry(tree.Entry{Key: "null", KeyKind: tree.Null, Value: tree.NewList()})
	m.SetEntry(tree.Entry{Key: "2.5", KeyKind: tree.Float, Value: tree.NewMap()})
	m.SetEntry(tree.Entry{Key: "-18446744073709551616", KeyKind: tree.BigInt, Value: bigNum("18446744073709551616")})
	cases := []struct {
		n         *tree.Node
		str, repr string
	}{
		{nil, "None", "None"},
		{tree.NewNull(), "None", "None"},
		{tree.NewBool(true), "True", "True"},
		{tree.NewBool(false), "False", "False"},
		{tree.NewInt(-42), "-42", "-42"},
		{bigNum("123456789012345678901234567890"), "123456789012345678901234567890", "123456789012345678901234567890"},
		{bigNum("-9223372036854775809"), "-9223372036854775809", "-9223372036854775809"},
		{tree.NewFloat(1), "1.0", "1.0"},
		{tree.NewFloat(1e16), "1e+16", "1e+16"},
		{tree.NewFloat(0.0001), "0.0001", "0.0001"},
		{tree.NewFloat(math.Inf(-1)), "-inf", "-inf"},
		{tree.NewFloat(math.NaN()), "nan", "nan"},
		{tree.NewString("a'b"), "a'b", `"a'b"`},
		{tree.NewString(`a"b`), `a"b`, `'a"b'`},
		{tree.NewString(`a'"b`), `a'"b`, `'a\'"b'`},
		{tree.NewString("back\\slash"), "back\\slash", `'back\\slash'`},
		{tree.NewString("t\tn\nr\r"), "t\tn\nr\r", `'t\tn\nr\r'`},
		{tree.NewString("\x00\x1f\x7f\u0085\u00a0é\u2028\U0001F600\U000E0001"), "\x00\x1f\x7f\u0085\u00a0é\u2028\U0001F600\U000E0001",
			`'\x00\x1f\x7f\x85\xa0é\u2028` + "\U0001F600" + `\U000e0001'`},
		{tree.NewString("bad\xffutf8"), "bad\xffutf8", `'bad\xffutf8'`},
		{tree.NewList(tree.NewInt(1), tree.NewString("a"), tree.NewBool(true), tree.NewNull(), tree.NewFloat(0.5),
			tree.NewList(tree.NewString("it's"))), `[1, 'a', True, None, 0.5, ["it's"]]`, `[1, 'a', True, None, 0.5, ["it's"]]`},
		{m, `{'v': 7, "it's": 'say "hi"', 3: False, True: None, None: [], 2.5: {}, -18446744073709551616: 18446744073709551616}`,
			`{'v': 7, "it's": 'say "hi"', 3: False, True: None, None: [], 2.5: {}, -18446744073709551616: 18446744073709551616}`},
	}
	for _, c := range cases {
		if got := PythonStr(c.n); got != c.str {
			t.Errorf("PythonStr(%#v) = %q, want %q", c.n, got, c.str)
		}
		if got := PythonRepr(c.n); got != c.repr {
			t.Errorf("PythonRepr(%#v) = %q, want %q", c.n, got, c.repr)
		}
	}
}
