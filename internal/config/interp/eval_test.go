package interp

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

func evalString(t *testing.T, env Env, s string) (*tree.Node, error) {
	t.Helper()
	tpl, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return tpl.Eval(env)
}

func TestEvalWholeValueKeepsType(t *testing.T) {
	cases := []struct {
		in   string
		kind tree.Kind
		repr string
	}{
		{"${int}", tree.Int, "123"},
		{"${float}", tree.Float, "1.2"},
		{"${t}", tree.Bool, "True"},
		{"${null}", tree.Null, "None"},
		{"${list}", tree.List, "[-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"},
		{"${k}", tree.Map, "{'v': 7}"},
		{"${ \tint }", tree.Int, "123"},
		{"${chain}", tree.Int, "123"},
		{"${big}", tree.BigInt, "123456789012345678901234567890"},
		{"${test:-9223372036854775809}", tree.BigInt, "-9223372036854775809"},
		{"${test:9223372036854775807}", tree.Int, "9223372036854775807"},
		{"${test:1.5}", tree.Float, "1.5"},
		{"${test:[1, a]}", tree.List, "[1, 'a']"},
		{"${test:null}", tree.Null, "None"},
		{"${oc.decode:'[1, {a: true}]'}", tree.List, "[1, {'a': True}]"},
		{"${oc.select:k.v,${oc.env:NOPE,null}}", tree.Int, "7"},
		{"${oc.select:k.nope,${oc.env:NOPE,null}}", tree.Null, "None"},
		{"${oc.select:k.nope,${oc.env:NOPE,10}}", tree.String, "'10'"},
		{"${oc.select:k.nope,fallback}", tree.String, "'fallback'"},
		{"${oc.env:NOPE,false}", tree.String, "'False'"},
		{"${oc.env:HOME}", tree.String, "'/home/u'"},
		{"${options.${choice}}", tree.String, "'A'"},
		{"${${rel_opt}.b}", tree.String, "'B'"},
	}
	for _, c := range cases {
		v, err := evalString(t, newFakeEnv(), c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if v.Kind != c.kind || PythonRepr(v) != c.repr {
			t.Errorf("%q: got %s %s, want %s %s", c.in, v.Kind, PythonRepr(v), c.kind, c.repr)
		}
	}
}

func TestEvalConcatenation(t *testing.T) {
	cases := []struct{ in, want string }{
		{"x${int}", "x123"},
		{" ${int}", " 123"},
		{"${null}${float}", "None1.2"},
		{"flag=${t}", "flag=True"},
		{"v: ${k}", "v: {'v': 7}"},
		{"m: ${server.mixed}", "m: [1, 'a', True, None, 0.5]"},
		{"q: ${quote} ${test:[\"it's\"]}", `q: it's ["it's"]`},
		{"${test:1e16}/${test:1e-5}/${test:100.0}/${test:-0.0}", "1e+16/1e-05/100.0/-0.0"},
		{"${test:inf} ${test:-inf} ${test:nan}", "inf -inf nan"},
		{"${server.url}", "http://localhost:8000/v1"},
		{"peer=${server.peer}", "peer=7"},
		{`Esc: \${str} and \\${str}`, `Esc: ${str} and \hi`},
		{"'${str}'", "'hi'"},
		{"${str}}", "hi}"},
		{"$$${str}$", "$$hi$"},
		{"${test:'${int}'}", "123"},
		{"${test:a_${int}}", "a_123"},
		{"${inherit_from:a.b.c}", "${inherit_from:a.b.c}"},
		{"x-${copy:a}", "x-${copy:a}"},
	}
	for _, c := range cases {
		v, err := evalString(t, newFakeEnv(), c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if v.Kind != tree.String || v.Str != c.want {
			t.Errorf("%q: got %s %q, want %q", c.in, v.Kind, PythonStr(v), c.want)
		}
	}
}

func TestEvalRelative(t *testing.T) {
	env := newFakeEnv()
	env.anchor = []string{"server"}
	cases := map[string]string{
		"${.host}":      "'localhost'",
		"${.port}":      "8000",
		"${..k.v}":      "7",
		"${..k[v]}":     "7",
		"${.mixed[1]}":  "'a'",
		"${..list.1_0}": "9",
		"${str}":        "'hi'",
	}
	for in, want := range cases {
		v, err := evalString(t, env, in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := PythonRepr(v); got != want {
			t.Errorf("%q: got %s, want %s", in, got, want)
		}
	}
	if _, err := evalString(t, env, "${...x}"); err == nil {
		t.Error("${...x} from one level down should go above the root")
	}
}

// recordEnv records the refs and calls it sees and answers them from maps.
type recordEnv struct {
	refs  []Ref
	calls []string
	raws  [][]string
	vals  map[string]*tree.Node
}

func (e *recordEnv) Lookup(ref Ref) (*tree.Node, error) {
	e.refs = append(e.refs, ref)
	if v, ok := e.vals[ref.Key]; ok {
		return v, nil
	}
	return nil, errNotFound
}

func (e *recordEnv) Call(name string, args []*tree.Node, raw []string) (*tree.Node, error) {
	e.calls = append(e.calls, name)
	e.raws = append(e.raws, raw)
	if name == "fail" {
		return nil, errors.New("resolver broke")
	}
	return nil, nil
}

func TestEvalPassesRefsAndRaw(t *testing.T) {
	env := &recordEnv{vals: map[string]*tree.Node{"b": tree.NewString("x.y"), "a.x.y": tree.NewInt(1)}}
	v, err := evalString(t, env, "${a.${b}}")
	if err != nil || v.Int != 1 {
		t.Fatalf("got %#v, %v", v, err)
	}
	want := []Ref{
		{Key: "b", Path: []string{"b"}, Text: "${b}"},
		{Key: "a.x.y", Path: []string{"a", "x", "y"}, Text: "${a.${b}}"},
	}
	if !reflect.DeepEqual(env.refs, want) {
		t.Errorf("refs %+v, want %+v", env.refs, want)
	}
	if _, err := evalString(t, env, "${f: 1 , 'a' , [x], ${b}, null}"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(env.raws[0], []string{"1", "'a'", "[x]", "${b}", "null"}) {
		t.Errorf("raw %q", env.raws[0])
	}
	// A nil node from Env stands for None.
	if v, err := evalString(t, env, "${f:}"); err != nil || v.Kind != tree.Null {
		t.Errorf("got %#v, %v", v, err)
	}
	if v, err := evalString(t, env, "<${f:}>"); err != nil || v.Str != "<None>" {
		t.Errorf("got %#v, %v", v, err)
	}
}

func TestEvalErrors(t *testing.T) {
	t.Run("missing key", func(t *testing.T) {
		_, err := evalString(t, newFakeEnv(), "a ${server.nope} b")
		var ee *EvalError
		if !errors.As(err, &ee) || ee.Ref == nil || ee.Ref.Key != "server.nope" || ee.Text != "${server.nope}" || !errors.Is(err, errNotFound) {
			t.Fatalf("got %#v", err)
		}
	})
	t.Run("failing resolver names itself", func(t *testing.T) {
		_, err := evalString(t, newFakeEnv(), "${oc.select:k.v,${oc.env:NOPE}}")
		var ee *EvalError
		if !errors.As(err, &ee) || ee.Resolver != "oc.env" || ee.Text != "${oc.env:NOPE}" ||
			!strings.Contains(err.Error(), "Environment variable 'NOPE' not found") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("inner failure is not rewrapped", func(t *testing.T) {
		env := &recordEnv{}
		_, err := evalString(t, env, "${a.${fail:x}}")
		var ee *EvalError
		if !errors.As(err, &ee) || ee.Resolver != "fail" || ee.Text != "${fail:x}" {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("key must be a string", func(t *testing.T) {
		_, err := evalString(t, newFakeEnv(), "${dict.${float}}")
		var ee *EvalError
		if !errors.As(err, &ee) || ee.Text != "${dict.${float}}" || !strings.Contains(err.Error(), "must give a string, but gave 1.2 (float)") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("resolver name must be a string", func(t *testing.T) {
		_, err := evalString(t, newFakeEnv(), "${${float}:1}")
		if err == nil || !strings.Contains(err.Error(), "resolver name") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("unknown resolver", func(t *testing.T) {
		_, err := evalString(t, newFakeEnv(), "${nope:1}")
		var ee *EvalError
		if !errors.As(err, &ee) || ee.Resolver != "nope" {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("no env", func(t *testing.T) {
		if _, err := evalString(t, nil, "${a}"); err == nil {
			t.Fatal("want an error")
		}
	})
}

func TestEvalConstantsAreFresh(t *testing.T) {
	tpl, err := Parse("${test:[1, x]}")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := tpl.Eval(newFakeEnv())
	a.Items[0].Int = 99
	b, _ := tpl.Eval(newFakeEnv())
	if b.Items[0].Int != 1 {
		t.Error("evaluations share nodes")
	}
}

func TestEvalDictKeys(t *testing.T) {
	if _, err := Parse("${test:{'2': e}}"); err == nil {
		t.Fatal("quoted dict keys are not grammar")
	}
	v, err := evalString(t, newFakeEnv(), "${test:{1: a, 1.0: b, true: c, 2: d, null: f, x y: g, nan: h}}")
	if err != nil {
		t.Fatal(err)
	}
	if got := PythonRepr(v); got != "{1: 'c', 2: 'd', None: 'f', 'x y': 'g', nan: 'h'}" {
		t.Errorf("got %s", got)
	}
	kinds := []tree.Kind{tree.Int, tree.Int, tree.Null, tree.String, tree.Float}
	for i, e := range v.Entries {
		if e.KeyKind != kinds[i] {
			t.Errorf("key %q kind %s, want %s", e.Key, e.KeyKind, kinds[i])
		}
	}
	if f := v.Entries[4]; f.Key != "nan" || !math.IsNaN(keyNode(f).Float) {
		t.Errorf("nan key %+v", f)
	}
}
