package capture

import (
	"errors"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"math"
	"strings"
	"testing"
)

// The round trip json.loads → orjson.dumps, case by case as NeMo Gym
// 0.7.0 writes them.
func TestCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`},
		{`{ "x" : [ 1 , 2.50 , 1E2 , -0 , -0.0 ] }`, `{"x":[1,2.5,100.0,0,-0.0]}`},
		{`[NaN, Infinity, -Infinity, 1e400, 1e-400]`, `[null,null,null,null,0.0]`},
		{`"\u00e9\u2028\/<&>\u007f"`, "\"é\u2028/<&>\x7f\""},
		{`"\u000b\b\f\n\r\t\"\\"`, `"\u000b\b\f\n\r\t\"\\"`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`18446744073709551615`, `18446744073709551615`},
		{`-9223372036854775808`, `-9223372036854775808`},
		{`0.00001`, `0.00001`},
		{`1e-6`, `1e-6`},
	}
	for _, tt := range tests {
		got, err := appendCanonical(nil, []byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("appendCanonical(nil, %s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{`{"a":}`, `[1,]`, `01`, `1.`, "\"\xff\"", `{"a":1} x`, `"\x01"`} {
		var se *SyntaxError
		if _, err := appendCanonical(nil, []byte(bad)); !errors.As(err, &se) {
			t.Errorf("appendCanonical(nil, %q) = %v; want a syntax error", bad, err)
		}
	}
	for _, unwritable := range []string{`18446744073709551616`, `-9223372036854775809`, `"\ud800"`, `"\udc00x"`} {
		var ue *UnwritableError
		if _, err := appendCanonical(nil, []byte(unwritable)); !errors.As(err, &ue) {
			t.Errorf("appendCanonical(nil, %s) = %v; want unwritable", unwritable, err)
		}
	}
}

func TestAppendFloat(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{100, "100.0"}, {1700000000, "1700000000.0"}, {0.00001, "0.00001"}, {0.000015, "0.000015"},
		{9999999999999998, "9999999999999998.0"}, {1e16, "1e+16"}, {1.5e16, "1.5e+16"}, {1e-6, "1e-6"},
		{1.234e-6, "1.234e-6"}, {5e-324, "5e-324"}, {math.MaxFloat64, "1.7976931348623157e+308"},
		{math.Copysign(0, -1), "-0.0"}, {math.NaN(), "null"}, {1786032154.1234567, "1786032154.1234567"},
	}
	for _, tt := range tests {
		if got := string(tree.AppendOrjsonFloat(nil, tt.f)); got != tt.want {
			t.Errorf("tree.AppendOrjsonFloat(%v) = %s, want %s", tt.f, got, tt.want)
		}
	}
}

// Python's round(x, 2) and sum() of floats, which the latencies go through.
func TestPythonArithmetic(t *testing.T) {
	if got := pyRound(0.125, 2); got != 0.12 {
		t.Errorf("pyRound(0.125, 2) = %v", got)
	}
	if got := pyRound(0.375, 2); got != 0.38 {
		t.Errorf("pyRound(0.375, 2) = %v", got)
	}
	if got := string(tree.AppendOrjsonFloat(nil, pySum([]float64{0.86, 1.5, 0.19, 0.17, 0.16, 0.38, 1.85, 1.04, 2.19, 0.2}))); got != "8.540000000000001" {
		t.Errorf("sum = %s", got)
	}
	if got := string(tree.AppendOrjsonFloat(nil, pySum([]float64{0.86, 2.19}))); got != "3.05" {
		t.Errorf("sum = %s", got)
	}
}

// Python's errors="replace": one U+FFFD per maximal invalid subpart.
func TestDecodeReplace(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a\xe2\x82b", "a\ufffdb"},
		{"\xff\xff", "\ufffd\ufffd"},
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"},
		{"\xf0\x9f\x98", "\ufffd"},
		{"\xc0\xaf", "\ufffd\ufffd"},
		{"ok é", "ok é"},
	}
	for _, tt := range tests {
		if got := decodeReplace([]byte(tt.in)); got != tt.want {
			t.Errorf("decodeReplace(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x"]}`, `[NaN]`, `"\ud83d\ude00"`, `{"a":1,"a":2}`, `1e400`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The one-pass transcoder and the tree write the same, or fail
		// the same way.
		fast, ferr := transcode(nil, data)
		if !errors.Is(ferr, errDuplicateKey) {
			v, terr := parse(data)
			var slow []byte
			if terr == nil {
				slow = v.appendTo(nil)
			}
			var fs, ts *SyntaxError
			if (ferr == nil) != (terr == nil) || errors.As(ferr, &fs) != errors.As(terr, &ts) || string(fast) != string(slow) && ferr == nil {
				t.Fatalf("%q: transcode %q, %v; tree %q, %v", data, fast, ferr, slow, terr)
			}
		}
		out, err := appendCanonical(nil, data)
		if err != nil {
			return
		}
		// What gym writes reads back to itself.
		again, err := appendCanonical(nil, out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("appendCanonical(nil, %q) = %q, which reads back as %q, %v", data, out, again, err)
		}
	})
}

// TestPlainRun holds the eight-at-a-time scan to the byte-at-a-time rule
// at every offset of every byte that stops a run.
func TestPlainRun(t *testing.T) {
	slow := func(s []byte, i int) int {
		for i < len(s) && s[i] != '"' && s[i] != '\\' && s[i] >= 0x20 {
			i++
		}
		return i
	}
	for c := 0; c < 256; c++ {
		for at := 0; at < 20; at++ {
			s := []byte(strings.Repeat("aé~\x7f\xff", 5))[:20]
			s[at] = byte(c)
			for from := 0; from <= len(s); from++ {
				if got, want := plainRun(s, from), slow(s, from); got != want {
					t.Fatalf("plainRun(%q, %d) = %d; want %d", s, from, got, want)
				}
			}
		}
	}
}
