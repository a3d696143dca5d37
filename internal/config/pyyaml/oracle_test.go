package pyyaml

import (
	"bufio"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// The oracle tests compare Load and Dump with real PyYAML, through
// testdata/oracle.py. They need a Python with PyYAML, so they run only when
// PYYAML_ORACLE names the interpreter:
//
//	PYYAML_ORACLE=python3 go test -run Oracle ./internal/config/pyyaml/
//
// PYYAML_ORACLE_N sets the number of random cases (default 2000).

type oracle struct {
	t   *testing.T
	enc *json.Encoder
	dec *json.Decoder
}

func startOracle(t *testing.T) *oracle {
	python := os.Getenv("PYYAML_ORACLE")
	if python == "" {
		t.Skip("set PYYAML_ORACLE to a python3 with PyYAML to compare with PyYAML itself")
	}
	cmd := exec.Command(python, "testdata/oracle.py")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	return &oracle{t: t, enc: json.NewEncoder(in), dec: json.NewDecoder(bufio.NewReader(out))}
}

type oracleResp struct {
	Out  string          `json:"out"`
	Tree json.RawMessage `json:"tree"`
	Err  *string         `json:"err"`
	Line int             `json:"line"`
	Col  int             `json:"col"`
}

func (o *oracle) call(req map[string]any) oracleResp {
	o.t.Helper()
	if err := o.enc.Encode(req); err != nil {
		o.t.Fatal(err)
	}
	var resp oracleResp
	if err := o.dec.Decode(&resp); err != nil {
		o.t.Fatal(err)
	}
	return resp
}

func oracleCases() int {
	if n, err := strconv.Atoi(os.Getenv("PYYAML_ORACLE_N")); err == nil {
		return n
	}
	return 2000
}

type jsonTree struct {
	T string          `json:"t"`
	V json.RawMessage `json:"v,omitempty"`
}

func treeJSON(n *tree.Node) map[string]any {
	switch n.Kind {
	case tree.Null:
		return map[string]any{"t": "null"}
	case tree.Bool:
		return map[string]any{"t": "bool", "v": n.Bool}
	case tree.Int, tree.BigInt:
		return map[string]any{"t": "int", "v": n.IntText()}
	case tree.Float:
		return map[string]any{"t": "float", "v": pyFloatHex(n.Float)}
	case tree.String:
		return map[string]any{"t": "str", "v": n.Str}
	case tree.List:
		items := []any{}
		for _, it := range n.Items {
			items = append(items, treeJSON(it))
		}
		return map[string]any{"t": "list", "v": items}
	}
	entries := []any{}
	for _, e := range n.Entries {
		var k *tree.Node
		switch e.KeyKind {
		case tree.Bool:
			k = tree.NewBool(e.Key == "true")
		case tree.Int, tree.BigInt:
			i, _ := new(big.Int).SetString(e.Key, 10)
			k = tree.NewBigInt(i)
		case tree.Float:
			f, _ := strconv.ParseFloat(e.Key, 64)
			k = tree.NewFloat(f)
		default:
			k = tree.NewString(e.Key)
		}
		entries = append(entries, []any{treeJSON(k), treeJSON(e.Value)})
	}
	return map[string]any{"t": "map", "v": entries}
}

func pyFloatHex(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'x', -1, 64)
}

// fromOracleTree rebuilds a tree from the oracle's answer, through the same
// key conversion Load uses.
func fromOracleTree(t *testing.T, raw json.RawMessage) (*tree.Node, error) {
	var jt jsonTree
	if err := json.Unmarshal(raw, &jt); err != nil {
		return nil, err
	}
	switch jt.T {
	case "null":
		return tree.NewNull(), nil
	case "bool":
		var b bool
		err := json.Unmarshal(jt.V, &b)
		return tree.NewBool(b), err
	case "int":
		var s string
		if err := json.Unmarshal(jt.V, &s); err != nil {
			return nil, err
		}
		i, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return nil, errors.New("oracle int " + s)
		}
		return tree.NewBigInt(i), nil
	case "float":
		var s string
		if err := json.Unmarshal(jt.V, &s); err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(s, 64)
		return tree.NewFloat(f), err
	case "str":
		var s string
		err := json.Unmarshal(jt.V, &s)
		return tree.NewString(s), err
	case "list":
		var items []json.RawMessage
		if err := json.Unmarshal(jt.V, &items); err != nil {
			return nil, err
		}
		l := tree.NewList()
		for _, it := range items {
			n, err := fromOracleTree(t, it)
			if err != nil {
				return nil, err
			}
			l.Items = append(l.Items, n)
		}
		return l, nil
	case "map":
		var entries [][2]json.RawMessage
		if err := json.Unmarshal(jt.V, &entries); err != nil {
			return nil, err
		}
		m := tree.NewMap()
		b := &builder{}
		for _, kv := range entries {
			k, err := fromOracleTree(t, kv[0])
			if err != nil {
				return nil, err
			}
			v, err := fromOracleTree(t, kv[1])
			if err != nil {
				return nil, err
			}
			e, _ := b.entry(k)
			if e.KeyKind == tree.Null {
				return nil, errors.New("OmegaConf rejects null keys")
			}
			if m.Has(e.Key) {
				return nil, errors.New("oracle keys clash in gym's tree: " + e.Key)
			}
			e.Value = v
			m.SetEntry(e)
		}
		return m, nil
	}
	return nil, errors.New("oracle produced unsupported type " + string(jt.V))
}

func TestOracleDump(t *testing.T) {
	o := startOracle(t)
	check := func(n *tree.Node) {
		t.Helper()
		want := o.call(map[string]any{"op": "dump", "tree": treeJSON(n)}).Out
		if got := string(Dump(n, Options{})); got != want {
			t.Errorf("Dump(%#v)\n got %q\nwant %q", n, got, want)
		}
	}
	for _, s := range trickyStrings {
		check(tree.NewString(s))
		m := tree.NewMap()
		m.Set(s, tree.NewString(s))
		check(m)
		check(tree.NewList(tree.NewString(s), tree.NewList(tree.NewString(s))))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range oracleCases() {
		check(randTree(r, 4))
	}
}

func TestOracleLoad(t *testing.T) {
	o := startOracle(t)
	check := func(text string) {
		t.Helper()
		resp := o.call(map[string]any{"op": "load", "text": text})
		got, err := Load([]byte(text), "f.yaml")
		if resp.Err != nil {
			if err == nil {
				t.Errorf("Load(%q) = %#v, PyYAML fails: %s (line %d, column %d)", text, got, *resp.Err, resp.Line, resp.Col)
				return
			}
			var se *SyntaxError
			if errors.As(err, &se) && se.Line != 0 && resp.Line != 0 && se.Line != resp.Line {
				t.Logf("Load(%q): line %d, PyYAML line %d (%s | %s)", text, se.Line, resp.Line, err, *resp.Err)
			}
			return
		}
		want, werr := fromOracleTree(t, resp.Tree)
		if werr != nil {
			if err == nil {
				t.Errorf("Load(%q) = %#v, but OmegaConf could not hold PyYAML's result: %v", text, got, werr)
			}
			return
		}
		if want.Kind == tree.Null {
			want = tree.NewMap()
		}
		if err != nil {
			t.Errorf("Load(%q) failed: %v; PyYAML gives %#v", text, err, want)
			return
		}
		if !sameTree(got, want) {
			t.Errorf("Load(%q)\n got %#v\nwant %#v", text, got, want)
		}
	}
	for _, tok := range append(append(plainTokens, quotedTokens...), taggedTokens...) {
		check("v: " + tok + "\n")
		check(tok + ": v\n")
	}
	for _, doc := range oracleDocs {
		check(doc)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range oracleCases() {
		check(randYAML(r))
	}
}

// TestOracleLoadMutated feeds PyYAML and Load damaged documents, to compare
// what the two parsers accept. Divergences here come from yaml.v3's parser;
// they are logged rather than failed unless both accept and disagree.
func TestOracleLoadMutated(t *testing.T) {
	o := startOracle(t)
	r := rand.New(rand.NewPCG(5, 6))
	const junk = ":- \t\"'[]{}#&*!|>\n?,%@`~"
	accepts := map[[2]bool]int{}
	for range oracleCases() {
		b := []byte(randYAML(r))
		for range 1 + r.IntN(3) {
			i := r.IntN(len(b) + 1)
			c := junk[r.IntN(len(junk))]
			switch r.IntN(3) {
			case 0:
				b = append(b[:i], append([]byte{c}, b[i:]...)...)
			case 1:
				if i < len(b) {
					b[i] = c
				}
			default:
				if i < len(b) {
					b = append(b[:i], b[i+1:]...)
				}
			}
		}
		text := string(b)
		resp := o.call(map[string]any{"op": "load", "text": text})
		got, err := Load(b, "f.yaml")
		accepts[[2]bool{resp.Err == nil, err == nil}]++
		switch {
		case resp.Err == nil && err != nil:
			t.Logf("only PyYAML accepts %q: %v", text, err)
		case resp.Err != nil && err == nil:
			t.Logf("only Load accepts %q: PyYAML says %s (line %d)", text, *resp.Err, resp.Line)
		case resp.Err == nil:
			want, werr := fromOracleTree(t, resp.Tree)
			if werr != nil {
				continue
			}
			if want.Kind == tree.Null {
				want = tree.NewMap()
			}
			if !sameTree(got, want) {
				t.Errorf("Load(%q)\n got %#v\nwant %#v", text, got, want)
			}
		}
	}
	t.Logf("[PyYAML accepts, Load accepts] counts: %v", accepts)
}

// TestOracleDumpTable checks the expectations written in dumpCases against
// PyYAML itself.
func TestOracleDumpTable(t *testing.T) {
	o := startOracle(t)
	for _, c := range dumpCases {
		if got := o.call(map[string]any{"op": "dump", "tree": treeJSON(c.in)}).Out; got != c.want {
			t.Errorf("%s: PyYAML gives %q, table says %q", c.name, got, c.want)
		}
	}
}

// oracleDocs are hand-written documents probing parser corners. Known
// differences are left out: yaml.v3 rejects the escape "\/" and compact
// flow keys like {a:[1]}, which PyYAML accepts.
var oracleDocs = []string{
	"a: [x\n  y, z]\n", "a: {b: c d\n  e}\n", "'a ': 1\n", "--- a: 1\n", "---\na: 1\n...\n",
	"[a, , b]\n", "{a: , b: }\n", "a: &x\nb: *x\n", "? a\n: b\n? [c]\n", "%YAML 1.1\n---\na: 1\n",
	"a: 1\r\nb: 2\r\n", "a: 1\rb: 2\r", "a: b#c\n", "a: b #c\n", "a: 'x\u2028y'\n", "a: x\u2028  y\n",
	"a: \x00\n", "a: \x7f\n", "a: \u0085\n", "a: \ufffe\n", "a: \U0001F600\n", "a: -\n", "- - - a\n",
	"a:\n- b\n-   c: 1\n    d: 2\n", "a:\n  - b\n  - c\n", "a: >\n  x\n\n  y\n", "a: |+\n  x\n\n",
	"a: |2\n    x\n", "a: >-\n\n  x\n", "a: \"x\\\n  y\"\n", "a: \"\\N\\_\\L\\P\"\n",
	"a: 'x\n\n  y'\n", "a: 'x\n  \n  y'\n", "\"a\":1\n", "{\"a\":1}\n", "{a: 1}\n", "[1, [2, [3]]]\n",
	"a: !!str\nb: 1\n", "!!map\na: 1\n", "a: !!seq\n- 1\n", "&r a: 1\n", "a: *a\n", "a: [*x]\n",
	"a: 1 # c\n# d\nb: 2\n", "# only\n", "a:    1\n", "a:\n\n\n  b: 1\n", "a: {b: [1, {c: d}]}\n",
	"a: 0o17\nb: 0O17\n", "a: 1_\n", "a: 0b\n", "a: 0x\n", "a: +0b1\n", "a: -0x_1\n", "a: 1:2:3\n",
	"a: 1.5:2\n", "a: 12:30:00.5\n", "<<: {a: 1}\nb: 2\n", "b: 2\n<<: {b: 1, c: 3}\n", "? |\n  k\n: v\n",
	"a: \"\\t\" \n", "a: 'x' # c\n", "a: \"x\"#c\n", "[a]: 1\n", "{a: 1}: 2\n", "a: [b]: c\n",
	// Python's limit on decimal int digits, which other bases escape
	"a: " + strings.Repeat("9", 4300) + "\n", "a: " + strings.Repeat("9", 4301) + "\n",
	"a: -" + strings.Repeat("1_", 2150) + "1\n", "1: " + strings.Repeat("9", 4301) + "\n1: 2\n",
	"a: 0x" + strings.Repeat("f", 3000) + "\n", "a: 0" + strings.Repeat("7", 4301) + "\n",
	"a: 1" + strings.Repeat(":59", 2000) + "\n", "a: " + strings.Repeat("1", 4301) + ":1\n",
	"a: !!int '" + strings.Repeat("9", 4301) + "'\n",
	// big int keys meeting equal floats and ints of other spellings
	"18446744073709551616: a\n0x10000000000000000: b\n1.8446744073709552e19: c\n",
	"1.8446744073709552e19: a\n18446744073709551616: b\n", "1e400: a\n.inf: b\n",
}
