package override

import (
	"errors"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

func TestParseAllLayers(t *testing.T) {
	tests := []struct {
		name   string
		tokens []string
		want   *tree.Node
	}{
		{"T13 typing", []string{"+i=10", "+f=1.5", "+b=true", "+n=null", "+s=hello", "+v=0.0.1", `+q="10"`, "+e=", "+l=[1,a,true]", "+d={x:1}"},
			dict("i", num(10), "f", flt(1.5), "b", boo(true), "n", null(), "s", str("hello"), "v", str("0.0.1"),
				"q", str("10"), "e", str(""), "l", list(num(1), str("a"), boo(true)), "d", dict("x", num(1)))},
		{"T14 + then ++ merge", []string{"+a.b.c=1", "++a.b.d=2"}, dict("a", dict("b", dict("c", num(1), "d", num(2))))},
		{"empty", nil, dict()},

		// + (Add)
		{"add creates parents", []string{"+a.b.c=1"}, dict("a", dict("b", dict("c", num(1))))},
		{"add beside a sibling", []string{"+a.b=1", "+a.c=2"}, dict("a", dict("b", num(1), "c", num(2)))},
		{"add over null", []string{"+a=null", "+a=5"}, dict("a", num(5))},
		{"add over MISSING", []string{"+a=???", "+a=5"}, dict("a", num(5))},
		{"add null over null", []string{"+a=null", "+a=null"}, dict("a", null())},
		{"add merges maps", []string{"+a={x:1}", "+a={y:2}"}, dict("a", dict("x", num(1), "y", num(2)))},
		{"add merges maps deeply", []string{"+a={x:{p:1}}", "+a={x:{q:2},y:3}"}, dict("a", dict("x", dict("p", num(1), "q", num(2)), "y", num(3)))},
		{"add map over a scalar", []string{"+a=1", "+a={x:1}"}, dict("a", dict("x", num(1)))},
		{"add list over a scalar", []string{"+a=1", "+a=[1]"}, dict("a", list(num(1)))},
		{"add replaces a list", []string{"+a=[1,2]", "+a=[3]"}, dict("a", list(num(3)))},
		{"add into a map", []string{"+a={x:1}", "+a.y=2"}, dict("a", dict("x", num(1), "y", num(2)))},
		{"add config_paths twice as lists", []string{"+config_paths=[a]", "+config_paths=[b]"}, dict("config_paths", list(str("b")))},
		{"add empty string", []string{"+k="}, dict("k", str(""))},

		// ++ (ForceAdd)
		{"force-add overwrites", []string{"+a=1", "++a=2"}, dict("a", num(2))},
		{"force-add repeated, last wins", []string{"++a=1", "++a=2", "++a=3"}, dict("a", num(3))},
		{"force-add config_paths replaces", []string{"+config_paths=[a]", "++config_paths=[b]"}, dict("config_paths", list(str("b")))},
		{"force-add merges maps", []string{"+a={x:1}", "++a={y:2}"}, dict("a", dict("x", num(1), "y", num(2)))},
		{"force-add scalar over map", []string{"+a={x:1}", "++a=5"}, dict("a", num(5))},
		{"force-add through a scalar", []string{"+a=1", "++a.b=2"}, dict("a", dict("b", num(2)))},
		{"force-add through null", []string{"+a=null", "++a.b=2"}, dict("a", dict("b", num(2)))},
		{"force-add MISSING keeps set values in a merge", []string{"+a={x:1,y:2}", "++a={x:???,z:???}"}, dict("a", dict("x", num(1), "y", num(2), "z", str("???")))},
		{"force-add MISSING replaces a value directly", []string{"+a=1", "++a=???"}, dict("a", str("???"))},
		{"force-add map value over a nested scalar", []string{"+a={x:1}", "++a={x:{y:2}}"}, dict("a", dict("x", dict("y", num(2))))},
		{"force-add list inside map replaced", []string{"+a={l:[1,2]}", "++a={l:[3]}"}, dict("a", dict("l", list(num(3))))},

		// k=v (Change)
		{"change existing", []string{"+a=1", "a=2"}, dict("a", num(2))},
		{"change null", []string{"+a=null", "a=x"}, dict("a", str("x"))},
		{"change nested", []string{"+a.b=1", "a.b=[1]"}, dict("a", dict("b", list(num(1))))},
		{"change map to scalar", []string{"+a={x:1}", "a=1"}, dict("a", num(1))},
		{"change scalar to map", []string{"+a=1", "a={x:1}"}, dict("a", dict("x", num(1)))},
		{"change merges existing keys", []string{"+a={x:1,y:2}", "a={y:3}"}, dict("a", dict("x", num(1), "y", num(3)))},
		{"change empty value", []string{"+a=1", "a="}, dict("a", str(""))},

		// ~ (Delete)
		{"delete", []string{"+a=1", "+b=2", "~a"}, dict("b", num(2))},
		{"delete nested", []string{"+a.b=1", "~a.b"}, dict("a", dict())},
		{"delete map", []string{"+a={x:{y:1}}", "~a"}, dict()},
		{"delete with equal value", []string{"+a=20", "~a=20"}, dict()},
		{"delete int with equal float", []string{"+a=1", "~a=1.0"}, dict()},
		{"delete int with equal bool", []string{"+a=1", "~a=true"}, dict()},
		{"delete string", []string{"+a=x", "~a=x"}, dict()},
		{"delete empty string", []string{"+a=", "~a="}, dict()},
		{"delete map with equal map in another order", []string{"+a={x:1,y:[1,2]}", "~a={y:[1,2.0],x:1}"}, dict()},
		{"delete list with nulls", []string{"+a=[1,null]", "~a=[1,null]"}, dict()},
		{"delete float with equal int", []string{"+a=2.0", "~a=2"}, dict()},
		{"delete with =null ignores the value", []string{"+a=1", "~a=null"}, dict()},
		{"delete then add again", []string{"+a=1", "~a", "+a=2"}, dict("a", num(2))},
		{"delete big int with equal big int", []string{"+a=123456789012345678901234567890", "~a=123456789012345678901234567890"}, dict()},
		{"delete big int with equal float", []string{"+a=18446744073709551616", "~a=18446744073709551616.0"}, dict()},
		{"delete float with equal big int", []string{"+a=1e30", "~a=int(1e30)"}, dict()},
		{"delete big int inside a list", []string{"+a=[9223372036854775808]", "~a=[9223372036854775808.0]"}, dict()},

		// ints beyond 64 bits are ints
		{"big ints", []string{"+n=123456789012345678901234567890", "+m.x=-9223372036854775809", "++n=+9223372036854775808"},
			dict("n", bignum("9223372036854775808"), "m", dict("x", bignum("-9223372036854775809")))},

		// lists on the path
		{"change a list item", []string{"+l=[1,2]", "l.1=5"}, dict("l", list(num(1), num(5)))},
		{"change inside a list item", []string{"+l=[{x:1}]", "l.0.x=5"}, dict("l", list(dict("x", num(5))))},
		{"merge into a map in a list", []string{"+l=[{x:1}]", "l.0={x:2}"}, dict("l", list(dict("x", num(2))))},
		{"force-add through a scalar list item", []string{"+l=[1]", "++l.0.y=1"}, dict("l", list(dict("y", num(1))))},
		{"add to a null list item", []string{"+l=[null]", "+l.0=1"}, dict("l", list(num(1)))},
		{"list index with underscore", []string{"+l=[0,1,2,3,4,5,6,7,8,9,10,11]", "l.1_1=x"},
			list(num(0), num(1), num(2), num(3), num(4), num(5), num(6), num(7), num(8), num(9), num(10), str("x"))},
	}
	for _, tt := range tests {
		got, err := ParseAll(tt.tokens)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		want := tt.want
		if want.Kind == tree.List {
			want = dict("l", want)
		}
		if !same(got, want) {
			t.Errorf("%s: %v\n got %s\nwant %s", tt.name, tt.tokens, show(got), show(want))
		}
	}
}

func TestParseAllErrors(t *testing.T) {
	tests := []struct {
		name   string
		tokens []string
		want   string
	}{
		// T16 as the errata corrects it: the CLI layer starts empty.
		{"T16 change", []string{"x=2"}, "Could not override 'x'.\nTo append to your config use +x=2"},
		{"T16 delete", []string{"~x"}, "Could not delete from config. 'x' does not exist."},
		{"change without plus, empty value", []string{"k="}, "Could not override 'k'.\nTo append to your config use +k="},
		{"change nested missing", []string{"+a.b=1", "a.c=2"}, "Could not override 'a.c'.\nTo append to your config use +a.c=2"},
		{"change through missing parent", []string{"a.b=1"}, "Could not override 'a.b'.\nTo append to your config use +a.b=1"},
		{"change through a scalar", []string{"+a=1", "a.b=2"}, "Could not override 'a.b'.\nTo append to your config use +a.b=2"},
		{"change through null", []string{"+a=null", "a.b=2"}, "Could not override 'a.b'.\nTo append to your config use +a.b=2"},
		{"change map adding a key", []string{"+a={x:1}", "a={y:1}"}, "Could not override 'a'.\nTo append to your config use +a={y:1}"},
		{"change map adding a nested key", []string{"+a={x:{p:1}}", "a={x:{q:1}}"}, "Could not override 'a'.\nTo append to your config use +a={x:{q:1}}"},

		{"add over a value", []string{"+a=1", "+a=2"},
			"Could not append to config. An item is already at 'a'.\nEither remove + prefix: 'a=2'\nOr add a second + to add or override 'a': '++a=2'"},
		{"add null over a value", []string{"+a=1", "+a=null"},
			"Could not append to config. An item is already at 'a'.\nEither remove + prefix: 'a=null'\nOr add a second + to add or override 'a': '++a=null'"},
		{"add scalar over a map", []string{"+a={x:1}", "+a=1"},
			"Could not append to config. An item is already at 'a'.\nEither remove + prefix: 'a=1'\nOr add a second + to add or override 'a': '++a=1'"},
		{"add interpolation over config_paths", []string{"+config_paths=[a.yaml]", "+config_paths=${x}"},
			"Could not append to config. An item is already at 'config_paths'.\nEither remove + prefix: 'config_paths=${x}'\nOr add a second + to add or override 'config_paths': '++config_paths=${x}'"},
		{"add nested over a value", []string{"+a.b.c=1", "+a.b.c=2"},
			"Could not append to config. An item is already at 'a.b.c'.\nEither remove + prefix: 'a.b.c=2'\nOr add a second + to add or override 'a.b.c': '++a.b.c=2'"},
		{"add through a scalar", []string{"+a=1", "+a.b=2"},
			"Error merging override +a.b=2: Error trying to access a.b: node `a` is not a container and thus cannot contain `b`"},
		{"add through null", []string{"+a=null", "+a.b.c=2"},
			"Error merging override +a.b.c=2: Error trying to access a.b.c: node `a` is not a container and thus cannot contain `b`"},
		{"add list into map", []string{"+a={x:1}", "+a=[1]"},
			"Error merging override +a=[1]: cannot merge a list into the map at 'a' (Cannot merge DictConfig with ListConfig)"},
		{"force-add map into list", []string{"+a=[1]", "++a={x:1}"},
			"Error merging override ++a={x:1}: cannot merge a map into the list at 'a' (Cannot merge ListConfig with DictConfig)"},
		{"force-add nested map/list clash", []string{"+a={x:{y:1}}", "++a={x:[1]}"},
			"Error merging override ++a={x:[1]}: cannot merge a list into the map at 'a.x' (Cannot merge DictConfig with ListConfig)"},
		{"change list into map", []string{"+a={x:1}", "a=[1]"},
			"Error merging override a=[1]: cannot merge a list into the map at 'a' (Cannot merge DictConfig with ListConfig)"},

		{"delete null", []string{"+a=null", "~a"}, "Could not delete from config. 'a' does not exist."},
		{"delete big int with another big int", []string{"+a=123456789012345678901234567890", "~a=123456789012345678901234567891"},
			"Could not delete from config. The value of 'a' is 123456789012345678901234567890 and not 123456789012345678901234567891."},
		{"delete big int with the nearest float", []string{"+a=123456789012345678901234567890", "~a=1.2345678901234568e29"},
			"Could not delete from config. The value of 'a' is 123456789012345678901234567890 and not 1.2345678901234568e+29."},
		{"delete int with a float only near it", []string{"+a=9007199254740993", "~a=9007199254740992.0"},
			"Could not delete from config. The value of 'a' is 9007199254740993 and not 9007199254740992.0."},
		{"delete MISSING", []string{"+a=???", "~a"}, "Could not delete from config. 'a' does not exist."},
		{"delete nested missing", []string{"+a.b=1", "~a.c"}, "Could not delete from config. 'a.c' does not exist."},
		{"delete twice", []string{"+a=1", "~a", "~a"}, "Could not delete from config. 'a' does not exist."},
		{"delete through a scalar", []string{"+a=1", "~a.b"},
			"Error merging override ~a.b: Error trying to access a.b: node `a` is not a container and thus cannot contain `b`"},
		{"delete other value", []string{"+a=1", "~a=2"}, "Could not delete from config. The value of 'a' is 1 and not 2."},
		{"delete string vs int", []string{`+a="1"`, "~a=1"}, "Could not delete from config. The value of 'a' is 1 and not 1."},
		{"delete float", []string{"+a=1.5", "~a=1e16"}, "Could not delete from config. The value of 'a' is 1.5 and not 1e+16."},
		{"delete bool", []string{"+a=true", "~a=false"}, "Could not delete from config. The value of 'a' is True and not False."},
		{"delete empty value", []string{"+a=x", "~a="}, "Could not delete from config. The value of 'a' is x and not ."},
		{"delete map", []string{`+a={x:"it's",y:[1,null,true]}`, "~a={x:1}"},
			"Could not delete from config. The value of 'a' is {'x': \"it's\", 'y': [1, None, True]} and not {'x': 1}."},
		{"delete typed keys", []string{"+a={1:a,1.5:b,true:c,null:d}", "~a={}"},
			"Could not delete from config. The value of 'a' is {1: 'a', 1.5: 'b', True: 'c', None: 'd'} and not {}."},
		{"delete longer list", []string{"+a=[1]", "~a=[1,2]"}, "Could not delete from config. The value of 'a' is [1] and not [1, 2]."},
		{"delete other list", []string{"+a=[1,2]", "~a=[1,3]"}, "Could not delete from config. The value of 'a' is [1, 2] and not [1, 3]."},
		{"delete other map", []string{"+a={x:1}", "~a={y:1}"}, "Could not delete from config. The value of 'a' is {'x': 1} and not {'y': 1}."},
		{"delete map with string", []string{"+a={x:1}", "~a=x"}, "Could not delete from config. The value of 'a' is {'x': 1} and not x."},
		{"delete float vs non-integral", []string{"+a=2", "~a=2.5"}, "Could not delete from config. The value of 'a' is 2 and not 2.5."},
		{"delete list item", []string{"+l=[1,2]", "~l.0"}, "Could not delete from config. 'l.0' is a list item, and Hydra cannot delete list items."},

		{"list index out of range", []string{"+l=[1]", "+l.3=1"}, "Error merging override +l.3=1: list index 3 is out of range: 'l' has 1 items"},
		{"list index out of range, change", []string{"+l=[1]", "l.1=1"}, "Error merging override l.1=1: list index 1 is out of range: 'l' has 1 items"},
		{"list index out of range, parent", []string{"+l=[1]", "++l.5.x=1"}, "Error merging override ++l.5.x=1: list index 5 is out of range: 'l' has 1 items"},
		{"list index not an int", []string{"+l=[1]", "+l.x=1"}, "Error merging override +l.x=1: 'l' is a list, and its index 'x' is not an int"},
		{"list index not an int, parent", []string{"+l=[1]", "++l.x.y=1"}, "Error merging override ++l.x.y=1: 'l' is a list, and its index 'x' is not an int"},
		{"list index not an int, deeper", []string{"+a.l=[[1]]", "++a.l.0.x=1"}, "Error merging override ++a.l.0.x=1: 'a.l.0' is a list, and its index 'x' is not an int"},

		{"hydra key", []string{"+hydra.run.dir=out"},
			"Could not override 'hydra.run.dir': it is Hydra's own runtime config, which gym does not have; remove '+hydra.run.dir=out'"},
		{"hydra key, change", []string{"hydra.job.chdir=true"},
			"Could not override 'hydra.job.chdir': it is Hydra's own runtime config, which gym does not have; remove 'hydra.job.chdir=true'"},
		{"hydra root", []string{"++hydra={}"}, "Could not override 'hydra': it is Hydra's own runtime config, which gym does not have; remove '++hydra={}'"},
		{"hydra delete", []string{"~hydra.verbose"}, "Could not override 'hydra.verbose': it is Hydra's own runtime config, which gym does not have; remove '~hydra.verbose'"},

		// Hydra parses every token before it checks sweeps, and checks
		// sweeps before it applies anything.
		{"syntax error beats an earlier sweep", []string{"+a=1,2", "+b=~"}, "Error parsing override '+b=~': token recognition error at: '~' (column 4)"},
		{"sweep beats an earlier apply error", []string{"x=1", "+a=1,2"}, "Error parsing override '+a=1,2': Ambiguous value for argument '+a=1,2' (column 4)"},
		{"first sweep wins", []string{"+a=choice(1,2)", "+b=1,2"}, "Error parsing override '+a=choice(1,2)': Sweep parameters '+a=choice(1,2)' requires --multirun, which gym does not support (column 4)"},
		{"first apply error wins", []string{"x=1", "~y"}, "Could not override 'x'.\nTo append to your config use +x=1"},
	}
	for _, tt := range tests {
		got, err := ParseAll(tt.tokens)
		if err == nil {
			t.Errorf("%s: %v = %s, want error %q", tt.name, tt.tokens, show(got), tt.want)
			continue
		}
		if msg := err.Error(); msg != tt.want && !strings.HasPrefix(msg, tt.want+"\n") {
			t.Errorf("%s: %v\n got %q\nwant %q", tt.name, tt.tokens, msg, tt.want)
		}
		var ae *ApplyError
		var pe *ParseError
		if !errors.As(err, &ae) && !errors.As(err, &pe) {
			t.Errorf("%s: error %T is neither *ApplyError nor *ParseError", tt.name, err)
		}
		if ae != nil && (ae.Token != tt.tokens[len(tt.tokens)-1] && tt.name != "first apply error wins") {
			t.Errorf("%s: ApplyError.Token = %q", tt.name, ae.Token)
		}
	}
}

func TestApplyFailureLeavesLayerUnchanged(t *testing.T) {
	layer, err := ParseAll([]string{"+a={x:1,y:{z:[1]}}", "+l=[1]"})
	if err != nil {
		t.Fatal(err)
	}
	before := layer.Clone()
	for _, tok := range []string{
		"a={x:2,new:1}",      // struct mode refuses the new key after x would change
		"++a={x:2,y:{z:{}}}", // the map/list clash is found before x changes
		"+a.x.deeper=1",
		"~a=5",
		"++l.3=1",
		"a.y.q=1",
		"+hydra.x=1",
	} {
		ov, err := Parse(tok)
		if err != nil {
			t.Fatal(err)
		}
		if err := Apply(layer, ov); err == nil {
			t.Errorf("%s: applied", tok)
		}
		if !same(layer, before) {
			t.Fatalf("%s changed the layer to %s", tok, show(layer))
		}
	}
}

func TestApplyOrigins(t *testing.T) {
	layer, err := ParseAll([]string{"+a.b.c=1", "++a.b.d=2", "+a={b:{e:3}}", "++a.b.c=4"})
	if err != nil {
		t.Fatal(err)
	}
	origin := func(path ...string) string {
		n := layer
		for _, p := range path {
			n = n.Get(p)
		}
		return n.Origin.Token
	}
	for path, want := range map[string]string{
		"a":     "+a.b.c=1", // parents are created by the first token and survive merges
		"a.b":   "+a.b.c=1",
		"a.b.c": "++a.b.c=4",
		"a.b.d": "++a.b.d=2",
		"a.b.e": "+a={b:{e:3}}",
	} {
		if got := origin(strings.Split(path, ".")...); got != want {
			t.Errorf("origin of %s = %q, want %q", path, got, want)
		}
	}
	if k := layer.Get("a").Origin.Kind; k != tree.FromCLI {
		t.Errorf("origin kind %v", k)
	}
}

func TestApplyDoesNotAliasTheOverride(t *testing.T) {
	ov, err := Parse("+a={x:[1]}")
	if err != nil {
		t.Fatal(err)
	}
	layer := tree.NewMap()
	if err := Apply(layer, ov); err != nil {
		t.Fatal(err)
	}
	layer.Get("a").Set("y", num(2))
	layer.Get("a").Get("x").Items[0] = num(9)
	if !same(ov.Value, dict("x", list(num(1)))) {
		t.Errorf("override value changed to %s", show(ov.Value))
	}
	// Applying the same override again merges an equal map: no change.
	if err := Apply(layer, ov); err != nil || !same(layer, dict("a", dict("x", list(num(1)), "y", num(2)))) {
		t.Errorf("reapply: %v %s", err, show(layer))
	}
}

func TestApplyRejectsBadInput(t *testing.T) {
	ov, _ := Parse("+a=1")
	tests := []struct {
		name  string
		layer *tree.Node
		ov    Override
		want  string
	}{
		{"nil layer", nil, ov, "cannot apply override '+a=1': the CLI layer is not a map"},
		{"list layer", tree.NewList(), ov, "cannot apply override '+a=1': the CLI layer is not a map"},
		{"no path", tree.NewMap(), Override{Op: Add, Key: "a", Value: num(1), Token: "+a=1"}, "cannot apply override '+a=1': it has no key"},
		{"no value", tree.NewMap(), Override{Op: ForceAdd, Key: "a", Path: []string{"a"}, Token: "++a"}, "cannot apply override '++a': it has no value"},
		{"bad op", tree.NewMap(), Override{Op: Op(7), Key: "a", Path: []string{"a"}, Value: num(1), Token: "?a=1"}, "cannot apply override '?a=1': unknown operation op(7)"},
	}
	for _, tt := range tests {
		err := Apply(tt.layer, tt.ov)
		var ae *ApplyError
		if !errors.As(err, &ae) || ae.Msg != tt.want {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
}
