package override

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Builders for expected values.
func str(v string) *tree.Node  { return tree.NewString(v) }
func num(v int64) *tree.Node   { return tree.NewInt(v) }
func flt(v float64) *tree.Node { return tree.NewFloat(v) }
func boo(v bool) *tree.Node    { return tree.NewBool(v) }
func null() *tree.Node         { return tree.NewNull() }
func list(items ...*tree.Node) *tree.Node {
	return tree.NewList(items...)
}

// bignum is an int of any size, from its decimal digits.
func bignum(digits string) *tree.Node {
	n, err := tree.ParseDecimal(digits)
	if err != nil {
		panic(err)
	}
	return n
}

// dict builds a map from alternating string keys and values.
func dict(kv ...any) *tree.Node {
	m := tree.NewMap()
	for i := 0; i < len(kv); i += 2 {
		m.Set(kv[i].(string), kv[i+1].(*tree.Node))
	}
	return m
}

// same compares values exactly: kinds (1 is not 1.0), NaN equal to NaN,
// map order and key kinds.
func same(a, b *tree.Node) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case tree.Float:
		return a.Float == b.Float && math.Signbit(a.Float) == math.Signbit(b.Float) ||
			math.IsNaN(a.Float) && math.IsNaN(b.Float)
	case tree.List:
		if len(a.Items) != len(b.Items) {
			return false
		}
		for i := range a.Items {
			if !same(a.Items[i], b.Items[i]) {
				return false
			}
		}
		return true
	case tree.Map:
		if len(a.Entries) != len(b.Entries) {
			return false
		}
		for i, e := range a.Entries {
			f := b.Entries[i]
			if e.Key != f.Key || e.KeyKind != f.KeyKind || !same(e.Value, f.Value) {
				return false
			}
		}
		return true
	}
	return tree.Equal(a, b)
}

// show renders a value with kinds visible, for failure messages.
func show(n *tree.Node) string {
	if n == nil {
		return "<nil>"
	}
	switch n.Kind {
	case tree.Float:
		return "float(" + tree.PythonFloatRepr(n.Float) + ")"
	case tree.BigInt:
		return "bigint(" + n.IntText() + ")"
	case tree.List:
		parts := make([]string, len(n.Items))
		for i, it := range n.Items {
			parts[i] = show(it)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case tree.Map:
		parts := make([]string, len(n.Entries))
		for i, e := range n.Entries {
			parts[i] = e.KeyKind.String() + ":" + e.Key + ": " + show(e.Value)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return n.GoString()
}

type valueCase struct {
	value string // what follows "+k="
	want  *tree.Node
}

func checkValues(t *testing.T, cases []valueCase) {
	t.Helper()
	for _, c := range cases {
		tok := "+k=" + c.value
		ov, err := Parse(tok)
		if err != nil {
			t.Errorf("Parse(%q): %v", tok, err)
			continue
		}
		if !same(ov.Value, c.want) {
			t.Errorf("Parse(%q) = %s, want %s", tok, show(ov.Value), show(c.want))
		}
	}
}

func TestParseOpAndKey(t *testing.T) {
	tests := []struct {
		tok  string
		op   Op
		key  string
		path []string
	}{
		{"k=v", Change, "k", []string{"k"}},
		{"+k=v", Add, "k", []string{"k"}},
		{"++k=v", ForceAdd, "k", []string{"k"}},
		{"~k=v", Delete, "k", []string{"k"}},
		{"~k", Delete, "k", []string{"k"}},
		{"+a.b.c=1", Add, "a.b.c", []string{"a", "b", "c"}},
		{"+list.0=1", Add, "list.0", []string{"list", "0"}},
		{"+a.10.b_c=1", Add, "a.10.b_c", []string{"a", "10", "b_c"}},
		{"+0.a=1", Add, "0.a", []string{"0", "a"}},
		{"+$x=1", Add, "$x", []string{"$x"}},
		{"+a$b.$c=1", Add, "a$b.$c", []string{"a$b", "$c"}},
		{"+non-leading-dash.x-y=1", Add, "non-leading-dash.x-y", []string{"non-leading-dash", "x-y"}},
		{"+_private=1", Add, "_private", []string{"_private"}},
		{"+responses_create_params.temperature=1.0", Add, "responses_create_params.temperature",
			[]string{"responses_create_params", "temperature"}},
	}
	for _, tt := range tests {
		ov, err := Parse(tt.tok)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.tok, err)
			continue
		}
		if ov.Op != tt.op || ov.Key != tt.key || strings.Join(ov.Path, "|") != strings.Join(tt.path, "|") || ov.Token != tt.tok {
			t.Errorf("Parse(%q) = %v %q %q token %q, want %v %q %q", tt.tok, ov.Op, ov.Key, ov.Path, ov.Token, tt.op, tt.key, tt.path)
		}
	}
	if ov, _ := Parse("~k"); ov.Value != nil {
		t.Errorf("~k has value %s, want none", show(ov.Value))
	}
	if ov, _ := Parse("~k="); !same(ov.Value, str("")) {
		t.Errorf("~k= has value %s, want the empty string", show(ov.Value))
	}
}

func TestParseTyping(t *testing.T) {
	checkValues(t, []valueCase{
		// int: [+-]?(0|[1-9](_?[0-9])*), underscores dropped
		{"10", num(10)},
		{"0", num(0)},
		{"-20", num(-20)},
		{"+5", num(5)},
		{"-0", num(0)},
		{"1_000", num(1000)},
		{"1_000_000", num(1000000)},
		{"9223372036854775807", num(math.MaxInt64)},
		{"-9223372036854775808", num(math.MinInt64)},
		{"010", str("010")}, // INT 0 then INT 10: two tokens make a string
		{"00", str("00")},
		{"1__0", str("1__0")},
		{"1_", str("1_")},
		// float: decimal point, exponent, inf, nan
		{"1.5", flt(1.5)},
		{".5", flt(0.5)},
		{"5.", flt(5)},
		{"-1.5", flt(-1.5)},
		{"1e-3", flt(0.001)},
		{"1E3", flt(1000)},
		{"10e0", flt(10)},
		{"-1.5e+2", flt(-150)},
		{"1.e5", flt(100000)},
		{"1_0.5_5", flt(10.55)},
		{"1e1_0", flt(1e10)},
		{"1e400", flt(math.Inf(1))},
		{"-0.0", flt(math.Copysign(0, -1))},
		{"inf", flt(math.Inf(1))},
		{"-inf", flt(math.Inf(-1))},
		{"+INF", flt(math.Inf(1))},
		{"Inf", flt(math.Inf(1))},
		{"nan", flt(math.NaN())},
		{"NaN", flt(math.NaN())},
		{"-nan", flt(math.NaN())},
		{"00.5", str("00.5")},
		{"1.5.3", str("1.5.3")},
		// bool and null, any case
		{"true", boo(true)},
		{"True", boo(true)},
		{"TRUE", boo(true)},
		{"trUe", boo(true)},
		{"false", boo(false)},
		{"faLse", boo(false)},
		{"null", null()},
		{"NULL", null()},
		{"Null", null()},
		// anything else is a string
		{"hello", str("hello")},
		{"abc123", str("abc123")},
		{"abc-123", str("abc-123")},
		{"123abc", str("123abc")},
		{"infinity", str("infinity")},
		{"nan1", str("nan1")},
		{"true1", str("true1")},
		{"nullx", str("nullx")},
		{"1e", str("1e")},
		{".", str(".")},
		{"-", str("-")},
		{"+", str("+")},
		{"$", str("$")},
		{"@", str("@")},
		{"$foo", str("$foo")},
		{"a?b|c%d*e@f", str("a?b|c%d*e@f")},
		{":", str(":")},
		// several tokens: a string, outer blanks stripped, inner kept
		{"0.0.1", str("0.0.1")},
		{"openai/gpt-oss-120b", str("openai/gpt-oss-120b")},
		{"http://h:1/v1", str("http://h:1/v1")},
		{"http://0.0.0.0:10240/v1", str("http://0.0.0.0:10240/v1")},
		{"hello world", str("hello world")},
		{"   hello world   ", str("hello world")},
		{"a b c\t-\t1 2 3", str("a b c\t-\t1 2 3")},
		{`c:\foo\a-b.txt`, str(`c:\foo\a-b.txt`)},
		{`/:-\+.$*`, str(`/:-\+.$*`)},
		{"a : b", str("a : b")}, // the colon token owns the blanks around it
		{"10 ", num(10)},
		{"null\t", null()},
		// empty value; blanks after '=' belong to the '='
		{"", str("")},
		{"   ", str("")},
	})
}

func TestParseEscapes(t *testing.T) {
	checkValues(t, []valueCase{
		{`\,`, str(",")},
		{`a\,b`, str("a,b")},
		{`a\ b`, str("a b")},
		{"a\\\tb", str("a\tb")},
		{`\\`, str(`\`)},
		{`\(\)\[\]\{\}\:\=`, str("()[]{}:=")},
		{`a\=b`, str("a=b")},
		{`job\{a\=1\,b\=2\,c\=3\}`, str("job{a=1,b=2,c=3}")},
		{`A\[B`, str("A[B")},
		{`\ x\ `, str(" x ")},
		{`\a`, str(`\a`)}, // not an escape: a lone backslash is a plain character
		{`a\`, str(`a\`)},
	})
}

func TestParseQuoted(t *testing.T) {
	checkValues(t, []valueCase{
		{`'hello there'`, str("hello there")},
		{`"hello there"`, str("hello there")},
		{`''`, str("")},
		{`""`, str("")},
		{`"10"`, str("10")},
		{`'true'`, str("true")},
		{`'null'`, str("null")},
		{`'1,2,3'`, str("1,2,3")},
		{`"[1,2]"`, str("[1,2]")},
		{`"{a:10} ${xyz}"`, str("{a:10} ${xyz}")},
		{`'${foo}'`, str("${foo}")},
		{`"'single quoted string'"`, str("'single quoted string'")},
		{`'"double quoted string"'`, str(`"double quoted string"`)},
		{`'escaped \'single quote\''`, str("escaped 'single quote'")},
		{`"escaped \"double quote\""`, str(`escaped "double quote"`)},
		// Backslashes before a quote are escaped by doubling; others stay.
		{`"the path is C:\\\"some folder\"\\"`, str(`the path is C:\"some folder"\`)},
		{`'the path is C:\\\'some folder\'\\'`, str(`the path is C:\'some folder'\`)},
		{`'\\'`, str(`\`)},
		{`"\\\\"`, str(`\\`)},
		{`'abc\\'`, str(`abc\`)},
		{`"abc\\\"def\\\'ghi\\\\"`, str(`abc\"def\\\'ghi\\`)},
		{`"a\'b"`, str(`a\'b`)},
		{`'a\"b'`, str(`a\"b`)},
		{`'c:\foo\bar'`, str(`c:\foo\bar`)},
		{`'~/gym-cache'`, str("~/gym-cache")},
		{`"café ☕"`, str("café ☕")},
		{"'line1\nline2'", str("line1\nline2")},
		{`'a # b ! c'`, str("a # b ! c")},
	})
}

func TestParseInterpolations(t *testing.T) {
	checkValues(t, []valueCase{
		{"${foo.bar}", str("${foo.bar}")},
		{"${oc.env:USER,me}", str("${oc.env:USER,me}")},
		{"${env:USER,root}", str("${env:USER,root}")},
		{"xyz_${a.b.c}", str("xyz_${a.b.c}")},
		{"${a}${b}", str("${a}${b}")},
		{"${a}_x_${b}", str("${a}_x_${b}")},
		{"${foo:'x y'}", str("${foo:'x y'}")},
		{"${foo:[1,2]}", str("${foo:[1,2]}")},
		{"${now:%Y-%m-%d}", str("${now:%Y-%m-%d}")},
		{"[${a},${b}]", list(str("${a}"), str("${b}"))},
		{"{x:${a}}", dict("x", str("${a}"))},
		// Quoted, an interpolation may nest, as Hydra's docs advise.
		{`"${oc.select:k.v,${oc.env:NOPE,null}}"`, str("${oc.select:k.v,${oc.env:NOPE,null}}")},
		{`'${get_dir: {root: /root, name: ${name}}}'`, str("${get_dir: {root: /root, name: ${name}}}")},
	})
}

func TestParseNestedInterpolationUnquoted(t *testing.T) {
	// Hydra 1.3's lexer reads `${` up to the first `}` (INTERPOLATION:
	// '${' ~('}')+ '}'), so the outer `}` is left over.
	_, err := Parse("+x=${oc.select:k.v,${oc.env:NOPE,null}}")
	want := "Error parsing override '+x=${oc.select:k.v,${oc.env:NOPE,null}}': extraneous input '}' expecting <EOF> (column 39)\n" +
		"Hydra ends an unquoted ${...} at its first '}', so a nested interpolation must be quoted: key=\"${a:${b}}\""
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	_, err = Parse("+x=[${a:${b}}]")
	if err == nil || !strings.Contains(err.Error(), "mismatched input '}' expecting ',' or ']' (column 13)\nHydra ends an unquoted") {
		t.Errorf("in a list: got %v", err)
	}
}

func TestParseContainers(t *testing.T) {
	checkValues(t, []valueCase{
		{"[]", list()},
		{"[1]", list(num(1))},
		{"[1 ]", list(num(1))},
		{"[1,2,3]", list(num(1), num(2), num(3))},
		{"[1, 2, 3]", list(num(1), num(2), num(3))},
		{"[ 1 , 2 ]", list(num(1), num(2))},
		{"[1,a,true]", list(num(1), str("a"), boo(true))},
		{"[a,b,[1,2]]", list(str("a"), str("b"), list(num(1), num(2)))},
		{"[[a]]", list(list(str("a")))},
		{"[[[a]]]", list(list(list(str("a"))))},
		{"[[a], [b]]", list(list(str("a")), list(str("b")))},
		{"[1,[a]]", list(num(1), list(str("a")))},
		{"['a b']", list(str("a b"))},
		{"['[a,b]']", list(str("[a,b]"))},
		{"[null,1.5,0.0.1,'x']", list(null(), flt(1.5), str("0.0.1"), str("x"))},
		{"[a b, c d]", list(str("a b"), str("c d"))},
		{"{}", dict()},
		{"{a:b}", dict("a", str("b"))},
		{"{a:10}", dict("a", num(10))},
		{"{a: 10, b: 20}", dict("a", num(10), "b", num(20))},
		{"{b:1,a:2}", dict("b", num(1), "a", num(2))},
		{"{a:[a,10]}", dict("a", list(str("a"), num(10)))},
		{"{a:[true,10]}", dict("a", list(boo(true), num(10)))},
		{"{a:10,b:{}}", dict("a", num(10), "b", dict())},
		{"{a:10,b:{c:[1,2]}}", dict("a", num(10), "b", dict("c", list(num(1), num(2))))},
		{"{x:1}", dict("x", num(1))},
		{"{a b:1}", dict("a b", num(1))},
		{`{a\:b:1}`, dict("a:b", num(1))},
		{"{a-b:1,_c:2}", dict("a-b", num(1), "_c", num(2))},
		{"{a:1,b:2,a:3}", dict("a", num(3), "b", num(2))},
		{"{url:http://h:1/v1}", dict("url", str("http://h:1/v1"))},
		{"{a:'x,y'}", dict("a", str("x,y"))},
	})
}

func TestParseDictKeyKinds(t *testing.T) {
	ov, err := Parse("+k={1:a,1.5:b,true:c,null:d,1e3:e,x:f,0.0.1:g}")
	if err != nil {
		t.Fatal(err)
	}
	want := []tree.Entry{
		{Key: "1", KeyKind: tree.Int},
		{Key: "1.5", KeyKind: tree.Float},
		{Key: "true", KeyKind: tree.Bool},
		{Key: "null", KeyKind: tree.Null},
		{Key: "1000.0", KeyKind: tree.Float},
		{Key: "x", KeyKind: tree.String},
		{Key: "0.0.1", KeyKind: tree.String},
	}
	if len(ov.Value.Entries) != len(want) {
		t.Fatalf("got %s", show(ov.Value))
	}
	for i, w := range want {
		if e := ov.Value.Entries[i]; e.Key != w.Key || e.KeyKind != w.KeyKind {
			t.Errorf("key %d = %s %q, want %s %q", i, e.KeyKind, e.Key, w.KeyKind, w.Key)
		}
	}
}

func TestParseCasts(t *testing.T) {
	// Hydra's conversion matrix (override_grammar/extended.md) and more.
	checkValues(t, []valueCase{
		{"int(10)", num(10)},
		{"int(0)", num(0)},
		{"int(10.0)", num(10)},
		{"int(3.99)", num(3)},
		{"int(-3.99)", num(-3)},
		{"int(1e6)", num(1000000)},
		{"int('10')", num(10)},
		{"int(' -1_0 ')", num(-10)},
		{"int('007')", num(7)},
		{"int(true)", num(1)},
		{"int(false)", num(0)},
		{"int([])", list()},
		{"int([0,1,2])", list(num(0), num(1), num(2))},
		{"int([1,[2]])", list(num(1), list(num(2)))},
		{"int({})", dict()},
		{"int({a:10})", dict("a", num(10))},
		{"int({a:[0,1,2]})", dict("a", list(num(0), num(1), num(2)))},
		{"int(value=3.14)", num(3)},
		{"int( 10 )", num(10)},
		{"int (10)", num(10)},
		{"float(10)", flt(10)},
		{"float(0)", flt(0)},
		{"float(10.0)", flt(10)},
		{"float(inf)", flt(math.Inf(1))},
		{"float(nan)", flt(math.NaN())},
		{"float(1e6)", flt(1e6)},
		{"float('10')", flt(10)},
		{"float('10.0')", flt(10)},
		{"float(' 1_0.5 ')", flt(10.5)},
		{"float('.5')", flt(0.5)},
		{"float('5.')", flt(5)},
		{"float('1E3')", flt(1000)},
		{"float('-Infinity')", flt(math.Inf(-1))},
		{"float('inf')", flt(math.Inf(1))},
		{"float('+iNf')", flt(math.Inf(1))},
		{"float('1e-2')", flt(0.01)},
		{"float('-2.5E+1_0')", flt(-2.5e10)},
		{"float('nan')", flt(math.NaN())},
		{"float(true)", flt(1)},
		{"float(false)", flt(0)},
		{"float([0,1,2])", list(flt(0), flt(1), flt(2))},
		{"float([1,[2]])", list(flt(1), list(flt(2)))},
		{"float({a:10})", dict("a", flt(10))},
		{"float(float(10))", flt(10)},
		{"str(10)", str("10")},
		{"str(0)", str("0")},
		{"str(10.0)", str("10.0")},
		{"str(0.0)", str("0.0")},
		{"str(inf)", str("inf")},
		{"str(nan)", str("nan")},
		{"str(1e6)", str("1000000.0")},
		{"str(1e16)", str("1e+16")},
		{"str(1e-5)", str("1e-05")},
		{"str(foo)", str("foo")},
		{"str('')", str("")},
		{"str('10')", str("10")},
		{"str(true)", str("true")},
		{"str(False)", str("false")},
		{"str([])", list()},
		{"str([0,1,2])", list(str("0"), str("1"), str("2"))},
		{"str([1,[2]])", list(str("1"), list(str("2")))},
		{"str([a,1])", list(str("a"), str("1"))},
		{"str({a:10})", dict("a", str("10"))},
		{"str({a:10,b:xyz})", dict("a", str("10"), "b", str("xyz"))},
		{"str(value=10)", str("10")},
		{"bool(10)", boo(true)},
		{"bool(0)", boo(false)},
		{"bool(10.0)", boo(true)},
		{"bool(0.0)", boo(false)},
		{"bool(inf)", boo(true)},
		{"bool(nan)", boo(true)},
		{"bool(true)", boo(true)},
		{"bool(false)", boo(false)},
		{"bool('true')", boo(true)},
		{"bool('FALSE')", boo(false)},
		{"bool(null)", boo(false)}, // Python's bool(None): Hydra does not assert here
		{"bool([0,1,2])", list(boo(false), boo(true), boo(true))},
		{"bool({a:10})", dict("a", boo(true))},
		{"bool({a:[0,1,2]})", dict("a", list(boo(false), boo(true), boo(true)))},
		{"[int(1.5),str(2)]", list(num(1), str("2"))},
		{"{a:float(1)}", dict("a", flt(1))},
		{"int(1,value=null)", num(1)}, // value=null counts as no value
	})
	// Keys of a cast dict keep their kind.
	ov, err := Parse("+k=str({1:2})")
	if err != nil || ov.Value.Entries[0].KeyKind != tree.Int || !same(ov.Value.Entries[0].Value, str("2")) {
		t.Errorf("str({1:2}) = %v, %v", show(ov.Value), err)
	}
}

// TestParseBigInts: Hydra's ints are Python's, of any size, in every place
// an int can appear and through every cast.
func TestParseBigInts(t *testing.T) {
	const big = "123456789012345678901234567890"
	checkValues(t, []valueCase{
		{big, bignum(big)},
		{"-" + big, bignum("-" + big)},
		{"+9223372036854775808", bignum("9223372036854775808")},
		{"-9223372036854775809", bignum("-9223372036854775809")},
		{"-1_000_000_000_000_000_000_000", bignum("-1000000000000000000000")},
		{strings.Repeat("9", 4300), bignum(strings.Repeat("9", 4300))},
		{"'" + big + "'", str(big)},
		{big + "x", str(big + "x")},
		{big + ".5", flt(1.2345678901234568e+29)},
		{"[1," + big + "]", list(num(1), bignum(big))},
		{"{a:" + big + "}", dict("a", bignum(big))},
		{"int(" + big + ")", bignum(big)},
		{"int(1e30)", bignum("1000000000000000019884624838656")},
		{"int(-1e19)", bignum("-10000000000000000000")},
		{"int(-9.223372036854775808e18)", num(math.MinInt64)},
		{"int('" + big + "')", bignum(big)},
		{"int(' -1_000_000_000_000_000_000_000 ')", bignum("-1000000000000000000000")},
		{"float(" + big + ")", flt(1.2345678901234568e+29)},
		{"float(-" + big + ")", flt(-1.2345678901234568e+29)},
		{"str(" + big + ")", str(big)},
		{"str([" + big + "])", list(str(big))},
		{"bool(" + big + ")", boo(true)},
		{"bool(-" + big + ")", boo(true)},
	})
	for _, tok := range []string{"+k={" + big + ":a}", "+k=str({" + big + ":1})"} {
		ov, err := Parse(tok)
		if err != nil || len(ov.Value.Entries) != 1 {
			t.Fatalf("Parse(%q) = %v, %v", tok, show(ov.Value), err)
		}
		if e := ov.Value.Entries[0]; e.Key != big || e.KeyKind != tree.BigInt {
			t.Errorf("Parse(%q): key %q of kind %v, want %s of kind big int", tok, e.Key, e.KeyKind, big)
		}
	}
}

func TestParseCastErrors(t *testing.T) {
	tests := []struct{ value, msg string }{
		{"int(inf)", "OverflowError while evaluating 'int(inf)': cannot convert float infinity to integer"},
		{"int(nan)", "ValueError while evaluating 'int(nan)': cannot convert float NaN to integer"},
		{"int(foo)", "ValueError while evaluating 'int(foo)': invalid literal for int() with base 10: 'foo'"},
		{"int('')", "ValueError while evaluating 'int('')': invalid literal for int() with base 10: ''"},
		{"int('10.0')", "ValueError while evaluating 'int('10.0')': invalid literal for int() with base 10: '10.0'"},
		{"int('1__0')", "ValueError while evaluating 'int('1__0')': invalid literal for int() with base 10: '1__0'"},
		{`int("it's")`, `ValueError while evaluating 'int("it's")': invalid literal for int() with base 10: "it's"`},
		{"int([a,1])", "ValueError while evaluating 'int([a,1])': invalid literal for int() with base 10: 'a'"},
		{"int({a:10,b:xyz})", "ValueError while evaluating 'int({a:10,b:xyz})': invalid literal for int() with base 10: 'xyz'"},
		{"int('" + strings.Repeat("9", 4301) + "')", "ValueError while evaluating 'int('" + strings.Repeat("9", 4301) + "')': Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits"},
		{"float(" + strings.Repeat("9", 400) + ")", "OverflowError while evaluating 'float(" + strings.Repeat("9", 400) + ")': int too large to convert to float"},
		{"float([1," + strings.Repeat("9", 400) + "])", "OverflowError while evaluating 'float([1," + strings.Repeat("9", 400) + "])': int too large to convert to float"},
		{"int(null)", "AssertionError while evaluating 'int(null)': null cannot be cast"},
		{"str([null])", "AssertionError while evaluating 'str([null])': null cannot be cast"},
		{"float(null)", "AssertionError while evaluating 'float(null)': null cannot be cast"},
		{"float(foo)", "ValueError while evaluating 'float(foo)': could not convert string to float: 'foo'"},
		{"float('')", "ValueError while evaluating 'float('')': could not convert string to float: ''"},
		{"float('1._5')", "ValueError while evaluating 'float('1._5')': could not convert string to float: '1._5'"},
		{"float('1e')", "ValueError while evaluating 'float('1e')': could not convert string to float: '1e'"},
		{"float('1e+')", "ValueError while evaluating 'float('1e+')': could not convert string to float: '1e+'"},
		{"float('e5')", "ValueError while evaluating 'float('e5')': could not convert string to float: 'e5'"},
		{"float('.')", "ValueError while evaluating 'float('.')': could not convert string to float: '.'"},
		{"float([a,1])", "ValueError while evaluating 'float([a,1])': could not convert string to float: 'a'"},
		{"bool(foo)", "ValueError while evaluating 'bool(foo)': Cannot cast 'foo' to bool"},
		{"bool('')", "ValueError while evaluating 'bool('')': Cannot cast '' to bool"},
		{"bool('10')", "ValueError while evaluating 'bool('10')': Cannot cast '10' to bool"},
		{"int()", "TypeError while evaluating 'int()': No positional args or value specified"},
		{"int(value=null)", "TypeError while evaluating 'int(value=null)': No positional args or value specified"},
		{"int(1,value=2)", "TypeError while evaluating 'int(1,value=2)': cannot use both position and named arguments"},
		{"int(x=1)", "TypeError while evaluating 'int(x=1)': got an unexpected keyword argument 'x'"},
		{"int(value=1,2)", "positional argument follows keyword argument"},
		{"float(int(abc))", "ValueError while evaluating 'int(abc)': invalid literal for int() with base 10: 'abc'"},
		{"foo(1)", "Unknown function 'foo' in 'foo(1)'\nAvailable: bool,float,int,str"},
		{"json_str({a:1})", "Unknown function 'json_str' in 'json_str({a:1})'"},
		{"foo(int(x))", "ValueError while evaluating 'int(x)'"}, // arguments are evaluated first
	}
	for _, tt := range tests {
		tok := "+k=" + tt.value
		_, err := Parse(tok)
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.HasPrefix(pe.Msg, tt.msg) {
			t.Errorf("Parse(%q) error = %v, want message starting %q", tok, err, tt.msg)
			continue
		}
		if pe.sweep || pe.Column < 4 {
			t.Errorf("Parse(%q): sweep=%v column=%d", tok, pe.sweep, pe.Column)
		}
	}
}

func TestParseSweeps(t *testing.T) {
	ambiguous := func(tok string) string {
		return "Ambiguous value for argument '" + tok + "'\n" +
			"1. To use it as a list, use key=[value1,value2]\n" +
			"2. To use it as string, quote the value: key='value1,value2'\n" +
			"3. To sweep over it Hydra needs --multirun, which gym does not support"
	}
	multirun := func(tok string) string {
		return "Sweep parameters '" + tok + "' requires --multirun, which gym does not support"
	}
	tests := []struct {
		tok, msg string
		column   int
	}{
		{"k=a,b", ambiguous("k=a,b"), 3},
		{"+k=1,2,3", ambiguous("+k=1,2,3"), 4},
		{"+k=a , b", ambiguous("+k=a , b"), 4},
		{"+k=[a,b],[c,d]", ambiguous("+k=[a,b],[c,d]"), 4},
		{"+k={a:10, b:20},{c:30,d:40}", ambiguous("+k={a:10, b:20},{c:30,d:40}"), 4},
		{"+k=${a},${b}", ambiguous("+k=${a},${b}"), 4},
		{`+k="a,b","c,d"`, ambiguous(`+k="a,b","c,d"`), 4},
		{"~k=a,b", ambiguous("~k=a,b"), 4},
		{"+k=int(1,2)", ambiguous("+k=int(1,2)"), 4},
		{"+k=choice(a,b)", multirun("+k=choice(a,b)"), 4},
		{"+k=choice (a,b)", multirun("+k=choice (a,b)"), 4},
		{"+k=range(1,10)", multirun("+k=range(1,10)"), 4},
		{"+k=range(start=1,stop=10,step=2)", multirun("+k=range(start=1,stop=10,step=2)"), 4},
		{"+k=interval(0,1)", multirun("+k=interval(0,1)"), 4},
		{"+k=glob(*)", multirun("+k=glob(*)"), 4},
		{"+k=tag(log,interval(0,1))", multirun("+k=tag(log,interval(0,1))"), 4},
		{"+k=str(choice(1,2))", multirun("+k=str(choice(1,2))"), 4},
		{"+k=int(value=range(3))", multirun("+k=int(value=range(3))"), 4},
		{"+k=sort([3,1,2])", "sort() is not supported: it reorders Hydra sweeps, and gym has no --multirun", 4},
		{"+k=shuffle(a,b,c)", "shuffle() is not supported: it reorders Hydra sweeps, and gym has no --multirun", 4},
		{"+k=[1,choice(a,b)]", "'choice(a,b)' is a sweep, which cannot be a list or dict element (and gym does not support sweeps)", 7},
		{"+k={a:range(3)}", "'range(3)' is a sweep, which cannot be a list or dict element (and gym does not support sweeps)", 7},
		{"+k=[int(1,2)]", "'int(1,2)' is a sweep, which cannot be a list or dict element (and gym does not support sweeps)", 5},
	}
	for _, tt := range tests {
		_, err := Parse(tt.tok)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Msg != tt.msg || pe.Column != tt.column || !pe.sweep {
			t.Errorf("Parse(%q) = %#v\nwant msg %q column %d", tt.tok, pe, tt.msg, tt.column)
		}
	}
	// A malformed cast inside a sweep fails before the sweep is noticed.
	_, err := Parse("+k=int(a),b")
	var pe *ParseError
	if !errors.As(err, &pe) || pe.sweep || !strings.Contains(pe.Msg, "invalid literal for int()") {
		t.Errorf("+k=int(a),b: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ tok, want string }{
		{"+cache_dir=~/x", `Error parsing override '+cache_dir=~/x': token recognition error at: '~' (column 12)`},
		{"+cache_dir=~/gym-cache", `Error parsing override '+cache_dir=~/gym-cache': token recognition error at: '~' (column 12)`},
		{"+k=a#b", `Error parsing override '+k=a#b': token recognition error at: '#' (column 5)`},
		{"+k=a!", `Error parsing override '+k=a!': token recognition error at: '!' (column 5)`},
		{"+k=a&b", `Error parsing override '+k=a&b': token recognition error at: '&' (column 5)`},
		{"+k=a;b", `Error parsing override '+k=a;b': token recognition error at: ';' (column 5)`},
		{"+k=café", `Error parsing override '+k=café': token recognition error at: 'é' (column 7)`},
		{"+k=日本", `Error parsing override '+k=日本': token recognition error at: '日' (column 4)`},
		{"+k=é=~", `Error parsing override '+k=é=~': token recognition error at: 'é' (column 4)`},
		{"+k=a\nb", `Error parsing override '+k=a` + "\n" + `b': token recognition error at: '\n' (column 5)`},
		{"+k=\xffx", `Error parsing override '+k=` + "\xff" + `x': token recognition error at: '\xff' (column 4)`},
		{"+k='abc", `Error parsing override '+k='abc': token recognition error at: ''abc' (column 4)`},
		{`+k="abc\"`, `Error parsing override '+k="abc\"': token recognition error at: '"abc\"' (column 4)`},
		{"key=[1,2,3]'", `Error parsing override 'key=[1,2,3]'': token recognition error at: ''' (column 12)`},
		{"+k=${oc.decode:'{a:1}'}", `Error parsing override '+k=${oc.decode:'{a:1}'}': token recognition error at: ''}' (column 22)`},
		{"+a b=1", `Error parsing override '+a b=1': token recognition error at: ' ' (column 3)`},
		{"+a\tb=1", `Error parsing override '+a	b=1': token recognition error at: '\t' (column 3)`},
		{"+a..b=1", `Error parsing override '+a..b=1': token recognition error at: '.' (column 3)`},
		{"+a.=1", `Error parsing override '+a.=1': token recognition error at: '.' (column 3)`},
		{"0=1", `Error parsing override '0=1': token recognition error at: '0=' (column 1)`},
		{"+1.=1", `Error parsing override '+1.=1': token recognition error at: '1.=' (column 2)`},
		{" +a=1", `Error parsing override ' +a=1': token recognition error at: ' ' (column 1)`},
		{"-a=1", `Error parsing override '-a=1': token recognition error at: '-' (column 1)`},
		{"key=[]aa", `Error parsing override 'key=[]aa': extraneous input 'aa' expecting <EOF> (column 7)`},
		{"+k=[1,2] ", `Error parsing override '+k=[1,2] ': extraneous input ' ' expecting <EOF> (column 9)`},
		{"+k='a' ", `Error parsing override '+k='a' ': extraneous input ' ' expecting <EOF> (column 7)`},
		{"+k='a'b", `Error parsing override '+k='a'b': extraneous input 'b' expecting <EOF> (column 7)`},
		{"+k=a=b", `Error parsing override '+k=a=b': mismatched input '=' expecting <EOF> (column 5)`},
		{"+k=a)b", `Error parsing override '+k=a)b': mismatched input ')' expecting <EOF> (column 5)`},
		{"+k=a b(c)", `Error parsing override '+k=a b(c)': mismatched input '(' expecting <EOF> (column 7)`},
		{"+k=A[B", `Error parsing override '+k=A[B': mismatched input '[' expecting <EOF> (column 5)`},
		{"+k=${}", `Error parsing override '+k=${}': mismatched input '{' expecting <EOF> (column 5)`},
		{"+k=${a", `Error parsing override '+k=${a': mismatched input '{' expecting <EOF> (column 5)`},
		{"+k=[", `Error parsing override '+k=[': mismatched input '<EOF>' expecting a value (column 5)`},
		{"+k=[1,", `Error parsing override '+k=[1,': mismatched input '<EOF>' expecting a value (column 7)`},
		{"+k=[1,2", `Error parsing override '+k=[1,2': mismatched input '<EOF>' expecting ',' or ']' (column 8)`},
		{"+k=[1,]", `Error parsing override '+k=[1,]': mismatched input ']' expecting a value (column 7)`},
		{"+k={a}", `Error parsing override '+k={a}': mismatched input '}' expecting ':' (column 6)`},
		{"+k={:1}", `Error parsing override '+k={:1}': mismatched input ':' expecting a dict key (column 5)`},
		{"+k={a:1", `Error parsing override '+k={a:1': mismatched input '<EOF>' expecting ',' or '}' (column 8)`},
		{"+k={${a}:1}", `Error parsing override '+k={${a}:1}': mismatched input '${a}' expecting a dict key (column 5)`},
		{"+k={'a':1}", `Error parsing override '+k={'a':1}': mismatched input ''a'' expecting a dict key (column 5)`},
		{"+k=int(1", `Error parsing override '+k=int(1': mismatched input '<EOF>' expecting ',' or ')' (column 9)`},
		{"+k=,", `Error parsing override '+k=,': mismatched input ',' expecting a value (column 4)`},
		{"+a", `Error parsing override '+a': missing '=' at '<EOF>' (column 3)`},
		{"a", `Error parsing override 'a': missing '=' at '<EOF>' (column 2)`},
		{"", `Error parsing override '': missing key (column 1)`},
		{"=1", `Error parsing override '=1': missing key (column 1)`},
		{"+=1", `Error parsing override '+=1': missing key (column 2)`},
		{"~", `Error parsing override '~': missing key (column 2)`},
		{"+++a=1", `Error parsing override '+++a=1': mismatched input '+' expecting a key (column 3)`},
		{"+~a=1", `Error parsing override '+~a=1': mismatched input '~' expecting a key (column 2)`},
		{"a:b=1", `Error parsing override 'a:b=1': mismatched input ':' expecting '=' (column 2)`},
		{"~a:b", `Error parsing override '~a:b': mismatched input ':' expecting '=' or <EOF> (column 3)`},
		{"+a=1=2", `Error parsing override '+a=1=2': mismatched input '=' expecting <EOF> (column 5)`},
		{"+k=" + strings.Repeat("9", 4301), "Error parsing override '+k=" + strings.Repeat("9", 4301) +
			"': ValueError: Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits; quote the value to keep it as a string (column 4)"},
		{"+k={a:}", `Error parsing override '+k={a:}': mismatched input '}' expecting a value (column 7)`},
		{"+k=int(])", `Error parsing override '+k=int(])': mismatched input ']' expecting a value (column 8)`},
		{"+k={1_" + strings.Repeat("0", 4300) + ":1}", "Error parsing override '+k={1_" + strings.Repeat("0", 4300) +
			":1}': ValueError: Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits; quote the value to keep it as a string (column 5)"},
		{"~0", `Error parsing override '~0': token recognition error at: '0' (column 2)`},
		{"+k=a\rb", `Error parsing override '+k=a` + "\r" + `b': token recognition error at: '\r' (column 5)`},
		{"+k=[1,-" + strings.Repeat("9", 4301) + "]", "Error parsing override '+k=[1,-" + strings.Repeat("9", 4301) +
			"]': ValueError: Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits; quote the value to keep it as a string (column 7)"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.tok)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, want a *ParseError", tt.tok, err)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("Parse(%q):\n got %s\nwant %s", tt.tok, err, tt.want)
		}
		if pe.Token != tt.tok || pe.sweep {
			t.Errorf("Parse(%q): token %q sweep %v", tt.tok, pe.Token, pe.sweep)
		}
	}
}

func TestParseGroupsRejected(t *testing.T) {
	const msg = "config group and package overrides (group/option, group@package) are not supported: gym has no Hydra config groups"
	for tok, col := range map[string]int{
		"db=mysql/x":             0, // a slash in the value is fine
		"+hydra/launcher=basic":  7,
		"server/db=mysql":        7,
		"group@pkg=x":            6,
		"+user@hostname=active":  6,
		"group@=x":               6,
		"~a/b":                   3,
		"++a.b@c.d=1":            6,
		"+db@pkg1:pkg2=mysql":    4,
		"+responses_api_models/": 22,
	} {
		_, err := Parse(tok)
		if col == 0 {
			if err != nil {
				t.Errorf("Parse(%q): %v", tok, err)
			}
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Msg != msg || pe.Column != col {
			t.Errorf("Parse(%q) = %v, want the group error at column %d", tok, err, col)
		}
	}
}

// TestParseDepthLimit checks that an override's key and value together
// nest no deeper than tree.MaxDepth: `+a.b=[1]` is two maps and a list.
func TestParseDepthLimit(t *testing.T) {
	const max = tree.MaxDepth
	keys := func(n int) string { return strings.TrimSuffix(strings.Repeat("k.", n), ".") }
	tests := []struct {
		name, ok, deep string
		col            int // where the deep one crosses the limit
	}{
		{"lists", "+k=" + strings.Repeat("[", max-1) + strings.Repeat("]", max-1),
			"+k=" + strings.Repeat("[", max) + strings.Repeat("]", max), 4 + max - 1},
		{"dicts", "+k=" + strings.Repeat("{a:", max-1) + "1" + strings.Repeat("}", max-1),
			"+k=" + strings.Repeat("{a:", max) + "1" + strings.Repeat("}", max), 4 + 3*(max-1)},
		{"functions", "+k=" + strings.Repeat("int(", max-1) + "1" + strings.Repeat(")", max-1),
			"+k=" + strings.Repeat("int(", max) + "1" + strings.Repeat(")", max), 4 + 4*(max-1)},
		{"key", "+" + keys(max) + "=1", "+" + keys(max+1) + "=1", 2 + 2*max},
		{"key and value", "+" + keys(max-2) + "=[[1]]", "+" + keys(max-1) + "=[[1]]", 2*max + 1},
		{"deleted value", "~" + keys(max-1) + "=[1]", "~" + keys(max) + "=[1]", 2*max + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse(tt.ok); err != nil {
				t.Errorf("%d levels: %v", max, err)
			}
			_, err := Parse(tt.deep)
			pe, ok := errors.AsType[*ParseError](err)
			if !ok || pe.Msg != tree.DepthProblem() || pe.Column != tt.col {
				t.Errorf("%d levels: got %v, want %q at column %d", max+1, err, tree.DepthProblem(), tt.col)
			}
		})
	}
}

func TestParseOrigins(t *testing.T) {
	for _, tok := range []string{"+a.b={x:[1,{y:str(2)}],z:null}", "++k=int([1.5,2.5])", "~k={a:[b]}"} {
		ov, err := Parse(tok)
		if err != nil {
			t.Fatal(err)
		}
		var walk func(n *tree.Node)
		walk = func(n *tree.Node) {
			if n.Origin != (tree.Origin{Kind: tree.FromCLI, Token: tok}) {
				t.Errorf("%q: node %s has origin %+v", tok, show(n), n.Origin)
			}
			for _, e := range n.Entries {
				walk(e.Value)
			}
			for _, it := range n.Items {
				walk(it)
			}
		}
		walk(ov.Value)
	}
}

func TestOpString(t *testing.T) {
	for op, want := range map[Op]string{Change: "change", Add: "add", ForceAdd: "force-add", Delete: "delete", Op(9): "op(9)"} {
		if got := op.String(); got != want {
			t.Errorf("%d: %q, want %q", op, got, want)
		}
	}
}

func TestPythonRepr(t *testing.T) {
	for in, want := range map[string]string{
		"":           "''",
		"abc":        "'abc'",
		"it's":       `"it's"`,
		`say "hi"`:   `'say "hi"'`,
		`it's "x"`:   `'it\'s "x"'`,
		`back\`:      `'back\\'`,
		"a\nb\tc\r":  `'a\nb\tc\r'`,
		"\x01\x7f":   `'\x01\x7f'`,
		"café ☕":     "'café ☕'",
		"\u00a0":     `'\xa0'`,
		"\u2028":     `'\u2028'`,
		"\U000e0001": `'\U000e0001'`,
		"\xff":       `'\xff'`,
	} {
		if got := pyQuote(in); got != want {
			t.Errorf("pyQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestParseErrorFormat(t *testing.T) {
	e := &ParseError{Token: "k=a,b", Column: 3, Msg: "first line\nsecond line"}
	if got, want := e.Error(), "Error parsing override 'k=a,b': first line (column 3)\nsecond line"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// tokens used as benchmark input and fuzz seeds: what gym's own flags and
// NeMo Gym's docs produce.
var typicalTokens = []string{
	"+config_paths=[resources_servers/example_single_tool_call/configs/example_single_tool_call.yaml,responses_api_models/openai_model/configs/openai_model.yaml]",
	"+policy_model_name=openai/gpt-oss-120b",
	"+policy_base_url=http://0.0.0.0:10240/v1",
	"+policy_api_key=dummy_key",
	"+responses_create_params.temperature=1.0",
	"+limit=1024",
	"+resume_from_cache=true",
	"+verbose=true",
	"++policy_model.responses_api_models.openai_model.port=8000",
	`+scaffold_name="my \"quoted\" name"`,
	"+x=${oc.env:HOME,/tmp}/cache",
	"~head_server",
	"+d={a:10,b:{c:[1,2,3]},e:'x,y'}",
}

// BenchmarkParse parses every typical token once per iteration.
func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		for _, tok := range typicalTokens {
			if _, err := Parse(tok); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(typicalTokens)), "ns/token")
}

// BenchmarkParseAll builds a CLI layer from the typical tokens that add.
func BenchmarkParseAll(b *testing.B) {
	var adds []string
	for _, tok := range typicalTokens {
		if strings.HasPrefix(tok, "+") {
			adds = append(adds, tok)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseAll(adds); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseLinearTime(t *testing.T) {
	// Each of these would rescan the rest of the token at every position in
	// a naive lexer; 128 KiB is Linux's limit for one argument.
	const size = 128 << 10
	for _, tok := range []string{
		"+k=" + strings.Repeat("${", size/2),
		"+k=" + strings.Repeat("${", size/2) + "}",
		"+k=" + strings.Repeat("${}", size/3),
		"+k=" + strings.Repeat(`\\`, size/2) + "'",
		"+k=" + strings.Repeat(" ", size) + "x",
		"+k=" + strings.Repeat("1_", size/2),
		"+k=" + strings.Repeat("[1,", size/3),
		"+" + strings.Repeat("a.", size/2) + "=1",
		strings.Repeat("1.", size/2) + "=1",
	} {
		start := time.Now()
		_, _ = Parse(tok)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%.20q... took %v", tok, d)
		}
	}
}
