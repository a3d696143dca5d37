package interp

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// checkOutcome compares a result with an expectation from the OmegaConf
// tables: Python's repr of the value, or the kind of error.
func checkOutcome(t *testing.T, in, want string, got string, err error) {
	t.Helper()
	var gerr *GrammarError
	switch {
	case want == "!grammar":
		if !errors.As(err, &gerr) {
			t.Errorf("%q: want a grammar error, got %v (err %v)", in, got, err)
		}
	case want == "!eval":
		if err == nil || errors.As(err, &gerr) {
			t.Errorf("%q: want an evaluation error, got %v (err %v)", in, got, err)
		}
	case err != nil:
		t.Errorf("%q: %v", in, err)
	case got != want:
		t.Errorf("%q: got %s, want %s", in, got, want)
	}
}

func TestOmegaConfValueCases(t *testing.T) {
	for _, c := range omegaconfValueCases {
		v, err := DecodeString(c.in, newFakeEnv())
		got := ""
		if err == nil {
			got = PythonRepr(v)
		}
		checkOutcome(t, c.in, c.want, got, err)
	}
}

func TestOmegaConfTopCases(t *testing.T) {
	for _, c := range omegaconfTopCases {
		got := ""
		tpl, err := Parse(c.in)
		if err == nil {
			v, evalErr := tpl.Eval(newFakeEnv())
			if err = evalErr; err == nil {
				got = PythonRepr(v)
			}
		}
		checkOutcome(t, c.in, c.want, got, err)
	}
}

// Resolver names may contain '-' since OmegaConf 2.3.
func TestDashInResolverName(t *testing.T) {
	tpl, err := Parse("${foo-bar:x}")
	if err != nil {
		t.Fatal(err)
	}
	if name, _ := tpl.Single().Call.StaticName(); name != "foo-bar" {
		t.Errorf("name %q", name)
	}
}

func TestParseStructure(t *testing.T) {
	ref := func(dots int, path ...string) *Ref { return &Ref{Dots: dots, Path: path} }
	cases := []struct {
		in       string
		text     []string // literal parts, "" marking an interpolation
		ref      *Ref     // for a single node reference
		resolver string   // for a single resolver call
		raw      []string // its arguments as written
	}{
		{in: "plain text", text: []string{"plain text"}},
		{in: `no \${x} here`, text: []string{"no ${x} here"}},
		{in: `a\b\\c`, text: []string{`a\b\\c`}}, // no "${": never unescaped
		{in: "${a.b.c}", ref: ref(0, "a", "b", "c")},
		{in: "${a[0]}", ref: ref(0, "a", "0")},
		{in: "${a.0}", ref: ref(0, "a", "0")},
		{in: "${[a].b[c]}", ref: ref(0, "a", "b", "c")},
		{in: "${.x}", ref: ref(1, "x")},
		{in: "${..x.y}", ref: ref(2, "x", "y")},
		{in: "${...[x]}", ref: ref(3, "x")},
		{in: "${ \ta.b \t}", ref: ref(0, "a", "b")},
		{in: "${x@y}", ref: ref(0, "x@y")},
		{in: "${$x$y$z$}", ref: ref(0, "$x$y$z$")},
		{in: "${0foo.1_0}", ref: ref(0, "0foo", "1_0")},
		{in: "pre ${a} mid ${b.c} post", text: []string{"pre ", "", " mid ", "", " post"}},
		{in: `\\${a}`, text: []string{`\`, ""}},
		{in: `\\\${a}`, text: []string{`\${a}`}},
		{in: `x\\\\${a}\\`, text: []string{`x\\`, "", `\\`}},
		{in: "${oc.env:HOME}", resolver: "oc.env", raw: []string{"HOME"}},
		{in: "${oc.env:HOME,/tmp/x}", resolver: "oc.env", raw: []string{"HOME", "/tmp/x"}},
		{in: "${oc.select:k.v,${oc.env:NOPE,null}}", resolver: "oc.select", raw: []string{"k.v", "${oc.env:NOPE,null}"}},
		{in: "${f:  a b , 'c, d' ,[1, 2], {k: v}}", resolver: "f", raw: []string{"a b", "'c, d'", "[1, 2]", "{k: v}"}},
		{in: "${f:}", resolver: "f"},
		{in: "${f:a,,}", resolver: "f", raw: []string{"a", "", ""}},
		{in: "${a:b:c}", resolver: "a", raw: []string{"b:c"}},
		{in: "${ns1.ns2.f:1}", resolver: "ns1.ns2.f", raw: []string{"1"}},
		{in: "${inherit_from:a.b.c}", resolver: "inherit_from", raw: []string{"a.b.c"}},
		{in: "${copy:servers.0}", resolver: "copy", raw: []string{"servers.0"}},
	}
	for _, c := range cases {
		tpl, err := Parse(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if c.text != nil {
			var got []string
			for _, p := range tpl.Parts {
				got = append(got, p.Text)
			}
			if !reflect.DeepEqual(got, c.text) {
				t.Errorf("%q: parts %q, want %q", c.in, got, c.text)
			}
			continue
		}
		in := tpl.Single()
		if in == nil || in.Text != c.in {
			t.Errorf("%q: not a single interpolation: %+v", c.in, tpl.Parts)
			continue
		}
		if c.ref != nil {
			if in.Ref == nil || in.Ref.static == nil {
				t.Errorf("%q: not a static reference", c.in)
				continue
			}
			got := *in.Ref.static
			if got.Dots != c.ref.Dots || !reflect.DeepEqual(got.Path, c.ref.Path) || got.Text != c.in {
				t.Errorf("%q: ref %+v, want dots %d path %q", c.in, got, c.ref.Dots, c.ref.Path)
			}
			continue
		}
		if in.Call == nil {
			t.Errorf("%q: not a resolver call", c.in)
			continue
		}
		name, _ := in.Call.StaticName()
		var raw []string
		for _, a := range in.Call.Args {
			raw = append(raw, a.Raw)
		}
		if name != c.resolver || !reflect.DeepEqual(raw, c.raw) {
			t.Errorf("%q: call %q %q, want %q %q", c.in, name, raw, c.resolver, c.raw)
		}
	}
}

func TestParseNested(t *testing.T) {
	tpl, err := Parse("${foo.${bar}[${baz:1}]}")
	if err != nil {
		t.Fatal(err)
	}
	r := tpl.Single().Ref
	if r == nil || r.static != nil || len(r.Keys) != 3 {
		t.Fatalf("ref %+v", r)
	}
	if r.Keys[0].Name != "foo" || r.Keys[1].Interp.Ref == nil || r.Keys[2].Interp.Call == nil || !r.Keys[2].Bracket {
		t.Errorf("keys %+v", r.Keys)
	}
	tpl, err = Parse("${${kind}.fn:x}")
	if err != nil {
		t.Fatal(err)
	}
	c := tpl.Single().Call
	if _, ok := c.StaticName(); ok || c.Name[0].Interp == nil || c.Name[1].Name != "fn" {
		t.Errorf("call name %+v", c.Name)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		in  string
		pos int
		msg string
	}{
		{"${", 2, "expected a key, found end of input"},
		{"${foo", 5, "found end of input"},
		{"x ${}", 4, "expected a key"},
		{"${.}", 3, "expected a key"},
		{"${..}", 4, "expected a key"},
		{"${a..b}", 4, "expected a key"},
		{"${foo . bar}", 5, "unexpected character ' '"},
		{"${d i c t.a}", 3, "unexpected character ' '"},
		{"${te st:foo}", 4, "unexpected character ' '"},
		{"${0foo:bar}", 6, `invalid resolver name "0foo"`},
		{"${$foo:bar}", 6, "invalid resolver name"},
		{"${.foo:bar}", 6, "invalid resolver name"},
		{"${a[b]:c}", 6, "invalid resolver name"},
		{"${y@z:}", 5, "invalid resolver name"},
		{"${some_${resolver}:a}", 8, "unexpected character '{'"},
		{"${'a'}", 2, `unexpected character '\''`},
		{`${foo:\}`, 8, "expected ',' or '}', found end of input"},
		{"${foo:a#b}", 7, "unexpected character '#'"},
		{"${oc.env:X,~/x}", 11, "unexpected character '~'"},
		{"${foo:'a'b}", 9, "expected ',' or '}', found name \"b\""},
		{"${foo:'abc}", 11, "expected closing quote, found end of input"},
		{"${foo:[1, 2}", 11, "expected ',' or ']', found '}'"},
		{"${foo:{a: 1,}}", 12, "expected a dict key"},
		{"${foo:{'a': 1}}", 7, "expected a dict key"},
		{"${foo:{a}}", 8, "expected ':'"},
		{"${foo:{a:}}", 9, "expected a value"},
		{"${test:${str}", 13, "found end of input"},
		{"${foo:é}", 6, "unexpected character 'é'"},
		{"${foo:" + strings.Repeat("9", 4301) + "}", 6, "ValueError: Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits"},
	}
	for _, c := range cases {
		_, err := Parse(c.in)
		var gerr *GrammarError
		if !errors.As(err, &gerr) {
			t.Errorf("%q: want a GrammarError, got %v", c.in, err)
			continue
		}
		if gerr.Pos != c.pos || gerr.Input != c.in || !strings.Contains(gerr.Msg, c.msg) {
			t.Errorf("%q: got pos %d msg %q, want pos %d msg containing %q", c.in, gerr.Pos, gerr.Msg, c.pos, c.msg)
		}
	}
}

func TestParseDepthLimit(t *testing.T) {
	nested := func(n int) string { return strings.Repeat("${a.", n) + "b" + strings.Repeat("}", n) }
	if _, err := Parse(nested(tree.MaxDepth)); err != nil {
		t.Error(err)
	}
	_, err := Parse(nested(tree.MaxDepth + 1))
	if ge, ok := errors.AsType[*GrammarError](err); !ok || ge.Msg != tree.DepthProblem() || ge.Pos != 4*tree.MaxDepth {
		t.Errorf("got %v", err)
	}
	if _, err := DecodeString(strings.Repeat("[", 10*tree.MaxDepth), nil); err == nil {
		t.Error("deep list accepted")
	}
}

// TestDictManyKeys checks that keys equal in Python or in text share a
// slot however many keys come before them.
func TestDictManyKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString("${test:{")
	for i := range 3000 {
		fmt.Fprintf(&b, "k%d: %d, ", i, i)
	}
	b.WriteString("1: one, true: yes, 1.0: float, k7: again}}")
	v, err := evalString(t, newFakeEnv(), b.String())
	if err != nil {
		t.Fatal(err)
	}
	if v.Len() != 3001 || v.Get("k7").Str != "again" || v.Get("1").Str != "float" || v.Entries[3000].KeyKind != tree.Int {
		t.Errorf("got %d keys, k7=%#v, 1=%#v (%s)", v.Len(), v.Get("k7"), v.Get("1"), v.Entries[v.Len()-1].KeyKind)
	}
}

func TestDecodeString(t *testing.T) {
	env := newFakeEnv()
	cases := []struct{ in, want string }{
		{"123", "123"},
		{"'123'", "'123'"},
		{"[1,2]", "[1, 2]"},
		{"{a: 1, b: [x, 'y z']}", "{'a': 1, 'b': ['x', 'y z']}"},
		{"${int}", "123"},
		{"${k}", "{'v': 7}"},
		{"a b", "'a b'"},
		{" 1 ", "' 1 '"},
	}
	for _, c := range cases {
		v, err := DecodeString(c.in, env)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := PythonRepr(v); got != c.want {
			t.Errorf("%q: got %s, want %s", c.in, got, c.want)
		}
	}
	for _, in := range []string{"", " ", "ab}", `"a" b`, "1,2"} {
		if _, err := DecodeString(in, env); err == nil {
			t.Errorf("%q: want an error", in)
		}
	}
}

func TestKeyRef(t *testing.T) {
	cases := []struct {
		key  string
		dots int
		path []string
	}{
		{"a.b", 0, []string{"a", "b"}},
		{"", 0, nil},
		{".", 1, nil},
		{"..a[0].b", 2, []string{"a", "0", "b"}},
		{"a..b", 0, []string{"a", "", "b"}},
		{"a[b.c]d.e", 0, []string{"a", "b.c", "e"}},
		{"[a", 0, []string{""}},
		{"a[x\ny]", 0, []string{"a"}},
	}
	for _, c := range cases {
		r := KeyRef(c.key)
		if r.Key != c.key || r.Dots != c.dots || !reflect.DeepEqual(r.Path, c.path) {
			t.Errorf("KeyRef(%q) = %+v, want dots %d path %q", c.key, r, c.dots, c.path)
		}
	}
}

func TestParseIndex(t *testing.T) {
	cases := []struct {
		in   string
		want int
		ok   bool
	}{
		{"0", 0, true}, {"10", 10, true}, {"1_0", 10, true}, {" 3 ", 3, true}, {"+2", 2, true}, {"-1", -1, true},
		{"007", 7, true}, {"", 0, false}, {"a", 0, false}, {"1__0", 0, false}, {"_1", 0, false}, {"1_", 0, false},
		{"+-1", 0, false}, {"1.0", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseIndex(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseIndex(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestHasInterpolation(t *testing.T) {
	for s, want := range map[string]bool{"": false, "a": false, "$": false, "${": true, `\${x}`: true, "$ {x}": false, "a${b}": true} {
		if HasInterpolation(s) != want {
			t.Errorf("HasInterpolation(%q) != %v", s, want)
		}
	}
}
