package pyyaml

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// TestLoadScalars covers every implicit resolver as OmegaConf's loader has
// them: YAML 1.1 bools, ints and nulls, OmegaConf's float, no timestamps.
func TestLoadScalars(t *testing.T) {
	cases := []struct {
		text string
		want any
	}{
		// bool: the 18 YAML 1.1 spellings, and nothing else
		{"yes", true}, {"Yes", true}, {"YES", true}, {"no", false}, {"No", false}, {"NO", false},
		{"true", true}, {"True", true}, {"TRUE", true}, {"false", false}, {"False", false}, {"FALSE", false},
		{"on", true}, {"On", true}, {"ON", true}, {"off", false}, {"Off", false}, {"OFF", false},
		{"y", "y"}, {"n", "n"}, {"tRUE", "tRUE"}, {"yES", "yES"},
		// null
		{"~", nil}, {"null", nil}, {"Null", nil}, {"NULL", nil}, {"", nil}, {"nULL", "nULL"},
		// int
		{"0", 0}, {"-0", 0}, {"+7", 7}, {"42", 42}, {"-42", -42}, {"1_000", 1000}, {"1__0", 10},
		{"0b101", 5}, {"-0b101", -5}, {"0x1F", 31}, {"0x1f", 31}, {"-0x10", -16}, {"0x_1F", 31},
		{"010", 8}, {"-010", -8}, {"00", 0}, {"0_", 0}, {"1:30", 90}, {"-1:30", -90}, {"190:20:30", 685230},
		{"9223372036854775807", int64(math.MaxInt64)}, {"-9223372036854775808", int64(math.MinInt64)},
		{"0X1F", "0X1F"}, {"0o17", "0o17"}, {"09", "09"}, {"1:60", "1:60"}, {"_1", "_1"}, {"1,000", "1,000"},
		// ints beyond 64 bits, in every YAML 1.1 form, are ints as in Python
		{"9223372036854775808", bigInt("9223372036854775808")}, {"-9223372036854775809", bigInt("-9223372036854775809")},
		{"123456789012345678901234567890", bigInt("123456789012345678901234567890")},
		{"+123456789012345678901234567890", bigInt("123456789012345678901234567890")},
		{"-123456789012345678901234567890", bigInt("-123456789012345678901234567890")},
		{"1_000_000_000_000_000_000_000", bigInt("1000000000000000000000")},
		{"0xFFFFFFFFFFFFFFFFFFFF", bigInt("1208925819614629174706175")}, {"0x8000000000000000", bigInt("9223372036854775808")},
		{"-0x8000000000000000", int64(math.MinInt64)}, {"-0x_8000_0000_0000_0001", bigInt("-9223372036854775809")},
		{"0777777777777777777777777", bigInt("4722366482869645213695")}, {"-01_000000000000000000000", bigInt("-9223372036854775808")},
		{"0b11111111111111111111111111111111111111111111111111111111111111111", bigInt("36893488147419103231")},
		{"190:20:30:15:12:12:12:12:12:12:12:12", bigInt("6905542183665681355932")},
		{strings.Repeat("9", 4300), bigInt(strings.Repeat("9", 4300))}, {strings.Repeat("0", 4301), 0},
		{`!!int "123456789012345678901234567890"`, bigInt("123456789012345678901234567890")},
		{`"123456789012345678901234567890"`, "123456789012345678901234567890"},
		// float: OmegaConf's resolver reads exponents without a point
		{"1.5", 1.5}, {"-1.5", -1.5}, {"+1.5", 1.5}, {"1.", 1.0}, {"1_000.5", 1000.5}, {".5", 0.5},
		{"1e3", 1000.0}, {"1E3", 1000.0}, {"1e+3", 1000.0}, {"-1e3", -1000.0}, {"1e-3", 0.001},
		{"1.5e3", 1500.0}, {"1_0e1", 100.0}, {"1:30.5", 90.5}, {"1e400", inf},
		{".inf", inf}, {".Inf", inf}, {".INF", inf}, {"-.inf", math.Inf(-1)}, {"+.inf", inf},
		{"+.5", "+.5"}, {"-.nan", "-.nan"}, {".e1", ".e1"}, {"1e", "1e"}, {"inf", "inf"}, {"nan", "nan"},
		// no timestamps, merge and value indicators only as keys
		{"2020-01-01", "2020-01-01"}, {"2001-12-14 21:59:43.10 -5", "2001-12-14 21:59:43.10 -5"},
		// strings
		{"plain text", "plain text"}, {"a:b", "a:b"}, {"http://h:1/p", "http://h:1/p"}, {"${a.b}", "${a.b}"},
		{"???", "???"}, {"1.0.0", "1.0.0"}, {"ünïcödé", "ünïcödé"},
		// quoted scalars are strings, whatever they say
		{`"3"`, "3"}, {`'yes'`, "yes"}, {`""`, ""}, {`'~'`, "~"}, {`"null"`, "null"}, {`'1e3'`, "1e3"},
		{`"a\tb"`, "a\tb"}, {`'it''s'`, "it's"}, {`"\x41\u00e9\U0001F600"`, "Aé😀"},
		// explicit tags, with PyYAML's constructors' leniency
		{"!!str 5", "5"}, {"!!str yes", "yes"}, {"!!str", ""}, {`!!int "5"`, 5}, {`!!int " 5"`, 5},
		{"!!int 0o17", 15}, {"!!float 1", 1.0}, {`!!float "1_0"`, 10.0}, {"!!float inf", inf},
		{"!!float ' 2.5 '", 2.5}, {"!!bool YES", true}, {"!!null foo", nil}, {"!<tag:yaml.org,2002:int> 7", 7},
		{"!!map {a: 1}", mp("a", 1)}, {"!!seq [1]", ls(1)},
	}
	for _, c := range cases {
		got, err := Load([]byte("v: "+c.text+"\n"), "f.yaml")
		if err != nil {
			t.Errorf("v: %s: %v", c.text, err)
			continue
		}
		if want := mp("v", c.want); !sameTree(got, want) {
			t.Errorf("v: %s\n got %#v\nwant %#v", c.text, got, want)
		}
	}
	got, err := Load([]byte("v: .nan\nw: .NaN\nx: !!float nan\n"), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got.Entries {
		if e.Value.Kind != tree.Float || !math.IsNaN(e.Value.Float) {
			t.Errorf("%s = %#v, want NaN", e.Key, e.Value)
		}
	}
}

func TestLoadKeys(t *testing.T) {
	cases := []struct {
		text string
		want *tree.Node
	}{
		{"yes: a\nOff: b\n", mp(key{"true", tree.Bool}, "a", key{"false", tree.Bool}, "b")},
		{"1: a\n0x10: b\n-3: c\n", mp(key{"1", tree.Int}, "a", key{"16", tree.Int}, "b", key{"-3", tree.Int}, "c")},
		{"1.5: a\n1e3: b\n.inf: c\n", mp(key{"1.5", tree.Float}, "a", key{"1000.0", tree.Float}, "b", key{"inf", tree.Float}, "c")},
		{"'yes': a\n\"1\": b\n", mp("yes", "a", "1", "b")},
		// Python's dict merges True, 1 and 1.0, keeping the first key
		{"1: a\ntrue: b\n1.0: c\n", mp(key{"1", tree.Int}, "c")},
		{"0: a\nfalse: b\n", mp(key{"0", tree.Int}, "b")},
		// OmegaConf checks only string keys for duplicates
		{"1: a\n1: b\n", mp(key{"1", tree.Int}, "b")},
		// beyond 64 bits too: 2**64, 0x1_0000_0000_0000_0000 and 2.0**64 are one key
		{"123456789012345678901234567890: a\n-9223372036854775809: b\n",
			mp(key{"123456789012345678901234567890", tree.BigInt}, "a", key{"-9223372036854775809", tree.BigInt}, "b")},
		{"18446744073709551616: a\n0x10000000000000000: b\n1.8446744073709552e19: c\n",
			mp(key{"18446744073709551616", tree.BigInt}, "c")},
		{"1.8446744073709552e19: a\n18446744073709551616: b\n", mp(key{"1.8446744073709552e+19", tree.Float}, "b")},
		{"18446744073709551617: a\n1.8446744073709552e19: b\n",
			mp(key{"18446744073709551617", tree.BigInt}, "a", key{"1.8446744073709552e+19", tree.Float}, "b")},
		{"9223372036854775807: a\n9223372036854775808: b\n",
			mp(key{"9223372036854775807", tree.Int}, "a", key{"9223372036854775808", tree.BigInt}, "b")},
		{"y: a\nn: b\n", mp("y", "a", "n", "b")},
		{"=: a\n", mp("=", "a")},
		{"? complex key\n: v\n", mp("complex key", "v")},
	}
	for _, c := range cases {
		got, err := Load([]byte(c.text), "f.yaml")
		if err != nil {
			t.Errorf("%q: %v", c.text, err)
			continue
		}
		if !sameTree(got, c.want) {
			t.Errorf("%q\n got %#v\nwant %#v", c.text, got, c.want)
		}
	}
}

func TestLoadStructure(t *testing.T) {
	cases := []struct {
		name, text string
		want       *tree.Node
	}{
		{"empty", "", mp()},
		{"comments only", "# nothing\n  # here\n", mp()},
		{"bare document marker", "---\n", mp()},
		{"null document", "~\n", mp()},
		{"document end marker", "a: 1\n...\n", mp("a", 1)},
		{"top-level list", "- a\n- 1\n", ls("a", 1)},
		{"top-level scalar", "hello\n", v("hello")},
		{"nested", "a:\n  b:\n  - 1\n  - c: d\n    e: []\n  f: {}\n", mp("a", mp("b", ls(1, mp("c", "d", "e", ls())), "f", mp()))},
		{"flow", "a: {b: [1, 'x', {c: ~}]}\n", mp("a", mp("b", ls(1, "x", mp("c", nil))))},
		{"order kept", "z: 1\na: 2\nm: 3\n", mp("z", 1, "a", 2, "m", 3)},
		{"block scalars", "a: |\n  x\n   y\nb: >-\n  p\n  q\n", mp("a", "x\n y\n", "b", "p q")},
		{"multi-line plain", "a: one\n  two\n\n  three\n", mp("a", "one two\nthree")},
		{"tabs inside quotes, blocks and comments", "a: \"x\ty\"\nb: 'p\tq'\nc: |\n  r\ts\nd: 1 # c\td\n", mp("a", "x\ty", "b", "p\tq", "c", "r\ts\n", "d", 1)},
		{"alias", "a: &x {p: 1}\nb: *x\n", mp("a", mp("p", 1), "b", mp("p", 1))},
		{"scalar alias", "a: &x 5\nb: [*x, *x]\n", mp("a", 5, "b", ls(5, 5))},
		{"alias as key", "a: &k name\n*k : 2\n", mp("a", "name", "name", 2)},
		{"merge", "base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\n", mp("base", mp("x", 1, "y", 2), "d", mp("x", 1, "y", 3))},
		{"merge keys come first", "b: &b {x: 1}\nd:\n  z: 0\n  <<: *b\n", mp("b", mp("x", 1), "d", mp("x", 1, "z", 0))},
		{"merge list, earlier wins", "a: &a {x: 1}\nb: &b {x: 2, y: 3}\nc:\n  <<: [*a, *b]\n", mp("a", mp("x", 1), "b", mp("x", 2, "y", 3), "c", mp("x", 1, "y", 3))},
		{"merge inline map", "c:\n  <<: {x: 1}\n  w: 2\n", mp("c", mp("x", 1, "w", 2))},
		{"nested merge", "a: &a {x: 1}\nb: &b {<<: *a, y: 2}\nc: {<<: *b}\n", mp("a", mp("x", 1), "b", mp("x", 1, "y", 2), "c", mp("x", 1, "y", 2))},
		{"self merge terminates", "a: &a\n  x: 1\n  <<: *a\n", mp("a", mp("x", 1))},
		{"quoted << is a key", "'<<': 1\n", mp("<<", 1)},
		{"duplicate merged keys are fine", "a: &a {x: 1}\nb:\n  <<: [*a, *a]\n", mp("a", mp("x", 1), "b", mp("x", 1))},
		{"recursion discarded by a later key", "=: &a [*a]\n=: 1\n", mp("=", 1)},
		{"big int discarded by a later key", "=: 99999999999999999999\n=: 1\n", mp("=", 1)},
		{"bom", "\ufeffa: 1\n", mp("a", 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Load([]byte(c.text), "f.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if !sameTree(got, c.want) {
				t.Errorf("got %#v\nwant %#v", got, c.want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"duplicate key", "a: 1\nb: 2\na: 3\n", "Malformed YAML in 'f.yaml' at line 3, column 1: found duplicate key a"},
		{"nested duplicate", "top:\n  x: 1\n  y: 2\n  x: 3\n", "Malformed YAML in 'f.yaml' at line 4, column 3: found duplicate key x"},
		{"quoted duplicate", "a: 1\n'a': 2\n", "Malformed YAML in 'f.yaml' at line 2, column 1: found duplicate key a"},
		{"flow duplicate", "m: {k: 1, k: 2}\n", "Malformed YAML in 'f.yaml' at line 1, column 11: found duplicate key k"},
		{"duplicate bool-looking string", "'yes': 1\n\"yes\": 2\n", "Malformed YAML in 'f.yaml' at line 2, column 1: found duplicate key yes"},
		{"mapping values", "a: 1\n b: 2\n", "Malformed YAML in 'f.yaml' at line 2: mapping values are not allowed in this context"},
		{"on the first line", "a: b: c\n", "Malformed YAML in 'f.yaml' at line 1: mapping values are not allowed in this context"},
		{"unclosed flow", "a: 1\nb: [1, 2\nc: 3\n", "Malformed YAML in 'f.yaml' at line 2: did not find expected ',' or ']'"},
		{"bad indentation", "a:\n  b: 1\n c: 2\n", "Malformed YAML in 'f.yaml' at line 3: did not find expected key"},
		{"unterminated quote", "a: \"x\nb: 2\n", "Malformed YAML in 'f.yaml' at line 3: found unexpected end of stream"},
		{"missing colon", "a: 1\nb\n", "Malformed YAML in 'f.yaml' at line 2: could not find expected ':'"},
		{"tab indentation", "a:\n\tb: 1\n", "Malformed YAML in 'f.yaml' at line 2: found character that cannot start any token"},
		{"tab separator", "a:\tb\n", `Malformed YAML in 'f.yaml' at line 1, column 3: found character '\t' that cannot start any token`},
		{"trailing tab", "a: b\t\nc: d\n", `Malformed YAML in 'f.yaml' at line 1, column 5: found character '\t' that cannot start any token`},
		{"tab in plain scalar", "a: x\ty\n", `Malformed YAML in 'f.yaml' at line 1, column 5: found character '\t' that cannot start any token`},
		{"escaped quote", `a: "it\'s"` + "\n", `Malformed YAML in 'f.yaml' at line 1, column 8: found unknown escape character "'"`},
		{"block header", "a: |#\n  x\n", "Malformed YAML in 'f.yaml' at line 1, column 5: expected chomping or indentation indicators, but found '#'"},
		{"undefined alias", "a: *nope\n", "Malformed YAML in 'f.yaml': found undefined alias 'nope'"},
		{"duplicate anchor", "a: &x 1\nb: &x 2\n", "Malformed YAML in 'f.yaml' at line 2, column 4: found duplicate anchor 'x' (first occurrence at line 1, column 4)"},
		{"two documents", "a: 1\n---\nb: 2\n", "Malformed YAML in 'f.yaml' at line 2, column 1: expected a single document in the stream, but found another document"},
		{"empty second document", "a: 1\n---\n", "Malformed YAML in 'f.yaml' at line 2, column 1: expected a single document in the stream, but found another document"},
		{"trailing garbage", "{a: 1}}\n", "Malformed YAML in 'f.yaml' at line 1: did not find expected <document start>"},
		{"int too long for Python", "a:\n  b: " + strings.Repeat("9", 4301) + "\n",
			"Malformed YAML in 'f.yaml' at line 2, column 6: integer too long: Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits, Python's limit for a decimal integer; quote it to keep it as a string"},
		{"underscores do not count", "a: -1_" + strings.Repeat("0", 4300) + "\n",
			"Malformed YAML in 'f.yaml' at line 1, column 4: integer too long: Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits, Python's limit for a decimal integer; quote it to keep it as a string"},
		{"too long even if replaced", "1: " + strings.Repeat("9", 4301) + "\n1: 1\n",
			"Malformed YAML in 'f.yaml' at line 1, column 4: integer too long: Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits, Python's limit for a decimal integer; quote it to keep it as a string"},
		{"big int keys gym cannot tell apart", "'123456789012345678901234567890': a\n123456789012345678901234567890: b\n",
			"Malformed YAML in 'f.yaml' at line 2, column 1: found key 123456789012345678901234567890 of type int, which gym cannot tell apart from an earlier key of another type"},
		{"bad binary int", "a: 0b_\n", `Malformed YAML in 'f.yaml' at line 1, column 4: invalid integer "0b_"`},
		{"bad float", "a: ._\n", `Malformed YAML in 'f.yaml' at line 1, column 4: invalid float "._"`},
		{"bad bool", "a: !!bool maybe\n", `Malformed YAML in 'f.yaml' at line 1, column 4: invalid boolean "maybe"`},
		{"unknown tag", "a: !foo bar\n", "Malformed YAML in 'f.yaml' at line 1, column 4: could not determine a constructor for the tag '!foo'"},
		{"value indicator as value", "a: =\n", "Malformed YAML in 'f.yaml' at line 1, column 4: could not determine a constructor for the tag 'tag:yaml.org,2002:value'"},
		{"timestamp tag", "a: !!timestamp 2020-01-01\n", "Malformed YAML in 'f.yaml' at line 1, column 4: values tagged 'tag:yaml.org,2002:timestamp' are not supported by OmegaConf"},
		{"wrong node for tag", "a: !!str {b: 1}\n", "Malformed YAML in 'f.yaml' at line 1, column 4: expected a scalar node, but found mapping"},
		{"list key", "? [1]\n: 2\n", "Malformed YAML in 'f.yaml' at line 1, column 3: found unhashable key"},
		{"null key", "~: 1\n", "Malformed YAML in 'f.yaml' at line 1, column 1: found null key; OmegaConf keys must be strings, numbers or booleans"},
		{"keys gym cannot tell apart", "'1': a\n1: b\n", "Malformed YAML in 'f.yaml' at line 2, column 1: found key 1 of type int, which gym cannot tell apart from an earlier key of another type"},
		{"merge of a scalar", "a:\n  <<: 1\n", "Malformed YAML in 'f.yaml' at line 2, column 7: expected a mapping or list of mappings for merging, but found scalar"},
		{"merge list of scalars", "a:\n  <<: [1]\n", "Malformed YAML in 'f.yaml' at line 2, column 8: expected a mapping for merging, but found scalar"},
		{"recursive alias", "a: &a\n  b: *a\n", "Malformed YAML in 'f.yaml' at line 1, column 4: found recursive alias 'a': a node may not contain itself"},
		{"invalid utf-8", "a: \xff\n", "Malformed YAML in 'f.yaml': invalid leading UTF-8 octet"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Load([]byte(c.text), "f.yaml")
			if err == nil {
				t.Fatalf("loaded %#v, want error %q", got, c.want)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v is not a *SyntaxError", err, err)
			}
			if err.Error() != c.want {
				t.Errorf("got  %s\nwant %s", err, c.want)
			}
		})
	}
}

// TestLoadAliasBomb checks that alias and merge expansion is bounded: the
// billion laughs fails fast instead of exhausting memory.
func TestLoadAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		p := "*a" + strconv.Itoa(i-1)
		b.WriteString("a" + strconv.Itoa(i) + ": &a" + strconv.Itoa(i) + " [" + strings.Repeat(p+", ", 9) + p + "]\n")
	}
	_, err := Load([]byte(b.String()), "bomb.yaml")
	if err == nil || !strings.Contains(err.Error(), "too large once aliases and merge keys are expanded") {
		t.Errorf("billion laughs: got %v", err)
	}

	b.Reset()
	b.WriteString("m0: &m0 {a: 1, b: 2}\n")
	for i := 1; i < 40; i++ {
		b.WriteString("m" + strconv.Itoa(i) + ": &m" + strconv.Itoa(i) + " {<<: [*m" + strconv.Itoa(i-1) + ", *m" + strconv.Itoa(i-1) + "]}\n")
	}
	_, err = Load([]byte(b.String()), "merge-bomb.yaml")
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("merge bomb: got %v", err)
	}
}

func TestLoadOrigins(t *testing.T) {
	text := "top:\n  name: x\n  list:\n  - 1\n  - {k: v}\nother: &o\n  q: 2\nref: *o\n"
	n, err := Load([]byte(text), "cfg.yaml")
	if err != nil {
		t.Fatal(err)
	}
	at := func(n *tree.Node, line, col int) {
		t.Helper()
		want := tree.Origin{Kind: tree.FromFile, File: "cfg.yaml", Line: line, Column: col}
		if n.Origin != want {
			t.Errorf("origin of %#v = %+v, want %+v", n, n.Origin, want)
		}
	}
	at(n, 1, 1)
	top := n.Get("top")
	at(top, 2, 3)
	at(top.Get("name"), 2, 9)
	at(top.Get("list"), 4, 3)
	at(top.Get("list").Items[0], 4, 5)
	at(top.Get("list").Items[1], 5, 5)
	at(top.Get("list").Items[1].Get("k"), 5, 9)
	// A node with properties starts at them, as PyYAML's marks do.
	at(n.Get("other"), 6, 8)
	// An alias's copy keeps the anchored node's position.
	at(n.Get("ref"), 6, 8)
	at(n.Get("ref").Get("q"), 7, 6)
	if n.Get("ref") == n.Get("other") {
		t.Error("alias shares its node with the anchor; the tree must own each node")
	}

	empty, err := Load(nil, "empty.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if empty.Origin != (tree.Origin{Kind: tree.FromFile, File: "empty.yaml"}) {
		t.Errorf("empty document origin %+v", empty.Origin)
	}
}

// TestLoadRealConfig mirrors the kind of file NeMo Gym ships, including the
// duplicate-key mistake in mini_swe_agent_2.yaml that upstream rejects.
func TestLoadRealConfig(t *testing.T) {
	good := `# Resources server config
example_resources_server:
  resources_servers:
    example:
      entrypoint: app.py
      domain: math
      description: >-
        A long description that NeMo Gym folds when it prints the config, so
        it spans several lines here.
      verified: false
      datasets:
      - name: train
        type: train
        jsonl_fpath: resources_servers/example/data/train.jsonl
        license: Apache 2.0
      - name: validation
        type: validation
        num_repeats: 1
policy_model:
  responses_api_models:
    openai_model:
      openai_api_key: ${policy_api_key}
      temperature: 0.7
      max_output_tokens: 1e3
`
	n, err := Load([]byte(good), "example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ex := n.Get("example_resources_server").Get("resources_servers").Get("example")
	if got := ex.Get("description").Str; !strings.HasPrefix(got, "A long description that NeMo Gym folds when it prints the config, so it spans") {
		t.Errorf("description = %q", got)
	}
	if got := n.Get("policy_model").Get("responses_api_models").Get("openai_model").Get("max_output_tokens"); got.Kind != tree.Float || got.Float != 1000 {
		t.Errorf("max_output_tokens = %#v, want float 1000", got)
	}
	bad := "agent:\n  datasets:\n  - name: a\n  model: x\n  datasets:\n  - name: b\n"
	if _, err := Load([]byte(bad), "mini_swe_agent_2.yaml"); err == nil ||
		err.Error() != "Malformed YAML in 'mini_swe_agent_2.yaml' at line 5, column 3: found duplicate key datasets" {
		t.Errorf("duplicate datasets: %v", err)
	}
}

func TestSyntaxErrorFormats(t *testing.T) {
	cases := []struct {
		err  SyntaxError
		want string
	}{
		{SyntaxError{File: "a.yaml", Line: 3, Column: 7, Problem: "p"}, "Malformed YAML in 'a.yaml' at line 3, column 7: p"},
		{SyntaxError{File: "a.yaml", Line: 3, Problem: "p"}, "Malformed YAML in 'a.yaml' at line 3: p"},
		{SyntaxError{File: "a.yaml", Problem: "p"}, "Malformed YAML in 'a.yaml': p"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
