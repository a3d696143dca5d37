package pyyaml

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// trickyStrings are texts where PyYAML's quoting rules bite.
var trickyStrings = []string{
	"", " ", "  ", "3", "-3", "+3", "3.5", "1e3", "1E3", "1e-3", ".5", "5.", "1_000",
	"0x1F", "0o17", "0b101", "010", "09", "1:30", "1:30.5", "inf", "-inf", ".inf",
	"nan", ".NaN", "Infinity", " 1 ", "1 ", "\t1", "٣", "١٢", "\u30001",
	"y", "Y", "n", "N", "yes", "No", "TRUE", "off", "On", "true", "False",
	"null", "Null", "NULL", "~", "<<", "=", "!", "&", "*", "?", ":", "-", "--", "---",
	"...", "- x", "-x", "? x", "?x", ": x", ":x", "a: b", "a:b", "a :b", "#x", "x #y",
	"x#y", "a,b", "[x]", "{x}", "x]", "'q'", "\"q\"", "it's", "@x", "`x`", "%x", "|x",
	">x", " lead", "trail ", "mid  space", "2020-01-01", "2020-1-1 10:00:00",
	"2001-12-14t21:59:43.10-05:00", "line1\nline2", "line1\n\nline2", "\n", "\nx",
	"x\n", "x\n\n", " \nx", "x \ny", "x\n y", "tab\there", "cr\rx", "nul\x00x",
	"bell\x07", "esc\x1b", "del\x7f", "nbsp\u00a0x", "\u0085", "ls\u2028x", "bom\ufeffx",
	"héllo wörld", "日本語テキスト", "emoji 😀", "emoji\t😀", "\ue000", "\uffff",
	"${oc.env:HOME}", "${a.b}", "???", "http://x.y/z?a=1&b=2", "a\\b", "back\\slash\"q",
	strings.Repeat("word ", 30), strings.Repeat("x", 100), strings.Repeat("ab ", 50) + "end",
	"This description is long enough that PyYAML has to fold it across two or more lines at eighty columns.",
	strings.Repeat("a", 79) + " " + strings.Repeat("b", 10),
	strings.Repeat("é", 85) + " x",
	"'" + strings.Repeat("q ", 50) + "'",
	strings.Repeat("line with spaces ", 6) + "\n" + strings.Repeat("next ", 20),
}

var alphabet = []rune("ab AZ09_-.:#'\"\\\n\t,[]{}&*!|>%@`?~=<+eE😀é\u00a0\u2028\x01")

func randString(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return trickyStrings[r.IntN(len(trickyStrings))]
	}
	n := r.IntN(12)
	if r.IntN(10) == 0 {
		n = 60 + r.IntN(150)
	}
	var b strings.Builder
	for range n {
		if r.IntN(3) == 0 {
			b.WriteByte("abcdefgh"[r.IntN(8)])
		} else {
			b.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
	}
	return b.String()
}

var trickyFloats = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.5, 1.5, 1e-6, -1e-6, 1e16, 1e17, 1e-5, 1e-4, 123456789.125,
	1e22, 1.7976931348623157e308, 5e-324, 0.1, 1.0 / 3, math.Inf(1), math.Inf(-1), math.NaN(), 100, 1e15,
}

func randScalar(r *rand.Rand) *tree.Node {
	switch r.IntN(10) {
	case 0:
		return tree.NewNull()
	case 1:
		return tree.NewBool(r.IntN(2) == 0)
	case 2:
		ints := []int64{0, 1, -1, 42, math.MaxInt64, math.MinInt64, 8, 1000000}
		switch r.IntN(3) {
		case 0:
			return tree.NewInt(ints[r.IntN(len(ints))])
		case 1:
			return tree.NewInt(r.Int64() >> r.IntN(63))
		}
		return randBigInt(r)
	case 3:
		if r.IntN(2) == 0 {
			return tree.NewFloat(trickyFloats[r.IntN(len(trickyFloats))])
		}
		return tree.NewFloat(math.Float64frombits(r.Uint64()))
	}
	return tree.NewString(randString(r))
}

var trickyBigInts = []string{
	"9223372036854775808", "-9223372036854775809", "18446744073709551616", "-18446744073709551616",
	"123456789012345678901234567890", "-123456789012345678901234567890", strings.Repeat("9", 400),
}

// randBigInt draws an integer beyond 64 bits.
func randBigInt(r *rand.Rand) *tree.Node {
	if r.IntN(2) == 0 {
		return tree.NewBigInt(bigInt(trickyBigInts[r.IntN(len(trickyBigInts))]))
	}
	x := new(big.Int).SetUint64(r.Uint64() | 1<<63)
	x.Lsh(x, uint(1+r.IntN(200)))
	x.Add(x, new(big.Int).SetUint64(r.Uint64()))
	if r.IntN(2) == 0 {
		x.Neg(x)
	}
	return tree.NewBigInt(x)
}

// randKey draws a key that a YAML file could produce: mostly strings, and
// the canonical text of bool, int (of any size) and float keys.
func randKey(r *rand.Rand) (string, tree.Kind) {
	switch r.IntN(13) {
	case 0:
		return strconv.FormatBool(r.IntN(2) == 0), tree.Bool
	case 1:
		return strconv.FormatInt(r.Int64N(2000)-1000, 10), tree.Int
	case 2:
		f := trickyFloats[r.IntN(len(trickyFloats))]
		if math.IsNaN(f) || f == math.Trunc(f) {
			f = 2.5
		}
		return tree.PythonFloatRepr(f), tree.Float
	case 3:
		return randBigInt(r).IntText(), tree.BigInt
	}
	return randString(r), tree.String
}

// randTree builds a random config-like tree whose keys are distinct under
// both gym's and Python's key equality.
func randTree(r *rand.Rand, depth int) *tree.Node {
	if depth <= 0 || r.IntN(4) == 0 {
		return randScalar(r)
	}
	n := r.IntN(5)
	if r.IntN(2) == 0 {
		items := make([]*tree.Node, n)
		for i := range items {
			items[i] = randTree(r, depth-1)
		}
		return tree.NewList(items...)
	}
	m := tree.NewMap()
	numeric := map[string]bool{}
	for range n {
		k, kind := randKey(r)
		if m.Has(k) {
			continue
		}
		if kind != tree.String {
			// Python merges True, 1 and 1.0 into one key.
			id := k
			switch k {
			case "true":
				id = "1"
			case "false":
				id = "0"
			}
			if numeric[id] {
				continue
			}
			numeric[id] = true
		}
		m.SetEntry(tree.Entry{Key: k, KeyKind: kind, Value: randTree(r, depth-1)})
	}
	return m
}

// sameTree is tree.Equal made strict where a round trip must be: key kinds
// match, floats match bit for bit (NaN included).
func sameTree(a, b *tree.Node) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case tree.Float:
		return math.Float64bits(a.Float) == math.Float64bits(b.Float) ||
			(math.IsNaN(a.Float) && math.IsNaN(b.Float))
	case tree.Map:
		if len(a.Entries) != len(b.Entries) {
			return false
		}
		for i := range a.Entries {
			ea, eb := a.Entries[i], b.Entries[i]
			if ea.Key != eb.Key || ea.KeyKind != eb.KeyKind || !sameTree(ea.Value, eb.Value) {
				return false
			}
		}
		return true
	case tree.List:
		if len(a.Items) != len(b.Items) {
			return false
		}
		for i := range a.Items {
			if !sameTree(a.Items[i], b.Items[i]) {
				return false
			}
		}
		return true
	}
	return tree.Equal(a, b)
}

// plainTokens are plain scalars that exercise every implicit resolver and
// constructor edge.
var plainTokens = []string{
	"yes", "Yes", "YES", "no", "On", "OFF", "y", "n", "true", "False", "TRUE", "tRUE",
	"~", "null", "Null", "NULL", "nULL", "<<", "=", "0o17", "0x1F", "0x1f", "0X1F", "0b101", "0b_",
	"0x_", "0_", "010", "09", "0", "-0", "+0", "00", "1_000", "1__0", "_1", "1:30", "-1:30", "1:60",
	"190:20:30", "1:30.5", "1e3", "1E3", "1e+3", "1e-3", "1.5e3", "1.5e+3", "-1e3", "+1e3", "1.", "-1.",
	".5", "._", "._5", "+.5", "-.5", ".inf", "-.Inf", "+.INF", ".nan", "-.nan", ".NaN", "1_0e1",
	"12345678901234567890", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
	"-9223372036854775809", "0x8000000000000000", "1e400", "123456789012345678901234567890",
	"-1_000_000_000_000_000_000_000", "+0xFFFF_FFFF_FFFF_FFFF_FFFF", "-0777777777777777777777777",
	"0b11111111111111111111111111111111111111111111111111111111111111111", "190:20:30:15:12:12:12:12:12:12:12",
	"18446744073709551616.0", "2020-01-01", "2020-1-1",
	"2001-12-14 21:59:43.10 -5", "plain text", "a b  c", "ünïcödé", "x:y", "-x", "?x", "${a.b}",
	"???", "1.0.0", "v1", "0.0.0.0", "http://h:1/p", "1,000", "+", "-", ".", "1e", ".e1", "0xg",
}

var quotedTokens = []string{
	`"3"`, `'yes'`, `""`, `''`, `"a\tb"`, `"\x41\u00e9\U0001F600"`, `'it''s'`, `"line\nbreak"`,
	`'multi

  line'`, `"fold
  ed"`, `"null"`, `'~'`, `"1e3"`,
}

var taggedTokens = []string{
	"!!str 5", "!!str yes", "!!int \"5\"", "!!int \" 5\"", "!!int 0o17", "!!int 1.5", "!!int ''",
	"!!int +", "!!float 1", "!!float \"1_0\"", "!!float inf", "!!float ' 2.5 '", "!!float x",
	"!!bool YES", "!!bool maybe", "!!null foo", "!!null ''", "!!binary aGk=", "!!timestamp 2020-01-01",
	"!foo bar", "!!str", "!!map {a: 1}", "!!seq [1]", "!!seq {a: 1}", "!!map [1]", "!!str {a: 1}",
	"!!int [1]", "!!merge x", "!!value x", "!<tag:yaml.org,2002:int> 7", "!!set {a}", "!!omap [a: 1]",
}

// yamlGen writes random, mostly valid YAML documents for differential and
// fuzz testing of Load.
type yamlGen struct {
	r       *rand.Rand
	b       strings.Builder
	anchors []string
	next    int
}

func randYAML(r *rand.Rand) string {
	g := &yamlGen{r: r}
	g.mapping(0, 3)
	return g.b.String()
}

func (g *yamlGen) pick(list []string) string { return list[g.r.IntN(len(list))] }

func (g *yamlGen) anchor() string {
	if g.r.IntN(6) != 0 {
		return ""
	}
	g.next++
	name := "a" + strconv.Itoa(g.next)
	if len(g.anchors) > 0 && g.r.IntN(15) == 0 {
		name = g.pick(g.anchors) // a duplicate anchor
	}
	g.anchors = append(g.anchors, name)
	return "&" + name + " "
}

func (g *yamlGen) inline() string {
	switch g.r.IntN(12) {
	case 0, 1:
		return g.pick(quotedTokens)
	case 2:
		return g.pick(taggedTokens)
	case 3:
		if len(g.anchors) > 0 {
			return "*" + g.pick(g.anchors)
		}
	case 4:
		return "[" + g.pick(plainTokens) + ", " + g.pick(quotedTokens) + "]"
	case 5:
		return "{" + g.key() + ": " + g.pick(plainTokens) + ", " + g.key() + ": []}"
	case 6:
		return ""
	}
	return g.pick(plainTokens)
}

func (g *yamlGen) key() string {
	switch g.r.IntN(14) {
	case 0:
		return g.pick(plainTokens)
	case 1:
		return g.pick(quotedTokens[:7])
	case 2:
		return "<<"
	case 3:
		return "=" // a value-tagged key, turned into a string
	}
	return "k" + strconv.Itoa(g.r.IntN(8))
}

func (g *yamlGen) mapping(indent, depth int) {
	pad := strings.Repeat(" ", indent)
	for range 1 + g.r.IntN(5) {
		k := g.key()
		if k == "<<" && len(g.anchors) > 0 {
			if g.r.IntN(2) == 0 {
				g.b.WriteString(pad + "<<: *" + g.pick(g.anchors) + "\n")
			} else {
				g.b.WriteString(pad + "<<: [*" + g.pick(g.anchors) + ", *" + g.pick(g.anchors) + "]\n")
			}
			continue
		}
		g.b.WriteString(pad + k + ":")
		switch {
		case depth > 0 && g.r.IntN(3) == 0:
			g.b.WriteString(" " + g.anchor() + "\n")
			g.mapping(indent+2, depth-1)
		case depth > 0 && g.r.IntN(4) == 0:
			g.b.WriteString(" " + g.anchor() + "\n")
			for range 1 + g.r.IntN(3) {
				g.b.WriteString(pad + "- " + g.inline() + "\n")
			}
		case g.r.IntN(10) == 0:
			g.b.WriteString(" |\n" + pad + "  block " + g.pick(plainTokens) + "\n" + pad + "  text\n")
		default:
			g.b.WriteString(" " + g.anchor() + g.inline() + "\n")
		}
		if g.r.IntN(8) == 0 {
			g.b.WriteString(pad + "# a comment\n")
		}
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// firstDiff describes where a and b first differ, for failure messages.
func firstDiff(a, b *tree.Node, path string) string {
	if a.Kind != b.Kind {
		return fmt.Sprintf("%s: %#v vs %#v", path, a, b)
	}
	switch a.Kind {
	case tree.Map:
		for i := range min(len(a.Entries), len(b.Entries)) {
			ea, eb := a.Entries[i], b.Entries[i]
			if ea.Key != eb.Key || ea.KeyKind != eb.KeyKind {
				return fmt.Sprintf("%s: key %q (%v) vs %q (%v)", path, ea.Key, ea.KeyKind, eb.Key, eb.KeyKind)
			}
			if d := firstDiff(ea.Value, eb.Value, path+"/"+strconv.Quote(ea.Key)); d != "" {
				return d
			}
		}
		if len(a.Entries) != len(b.Entries) {
			return fmt.Sprintf("%s: %d vs %d entries", path, len(a.Entries), len(b.Entries))
		}
	case tree.List:
		for i := range min(len(a.Items), len(b.Items)) {
			if d := firstDiff(a.Items[i], b.Items[i], path+"/"+strconv.Itoa(i)); d != "" {
				return d
			}
		}
		if len(a.Items) != len(b.Items) {
			return fmt.Sprintf("%s: %d vs %d items", path, len(a.Items), len(b.Items))
		}
	default:
		if !sameTree(a, b) {
			return fmt.Sprintf("%s: %#v vs %#v", path, a, b)
		}
	}
	return ""
}
