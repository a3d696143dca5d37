package pyjson

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestFloatsAsPython(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0.0, `0.0`}, {math.Copysign(0, -1), `-0.0`}, {1.0, `1.0`}, {1.5, `1.5`}, {0.1, `0.1`},
		{1e+16, `1e+16`}, {1000000000000000.0, `1000000000000000.0`}, {1.2345678901234568e+17, `1.2345678901234568e+17`},
		{1e-05, `1e-05`}, {0.0001, `0.0001`}, {0.00012345, `0.00012345`}, {1.7976931348623157e+308, `1.7976931348623157e+308`},
		{5e-324, `5e-324`}, {2.5e-07, `2.5e-07`}, {1234.5678, `1234.5678`}, {-3e+20, `-3e+20`},
		{math.NaN(), `NaN`}, {math.Inf(1), `Infinity`}, {math.Inf(-1), `-Infinity`},
		{1.0 / 3, `0.3333333333333333`}, {100.0, `100.0`}, {9999999999999998.0, `9999999999999998.0`},
	} {
		got, err := Dumps(tc.f, false)
		if err != nil || string(got) != tc.want {
			t.Errorf("Dumps(%v) = %s, %v; want %s", tc.f, got, err, tc.want)
		}
	}
}

// TestFloatsFromPython checks bit patterns whose dumps Python wrote.
func TestFloatsFromPython(t *testing.T) {
	f, err := os.Open("testdata/floats.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		hex, want, _ := strings.Cut(line, " ")
		bits, err := strconv.ParseUint(strings.TrimPrefix(hex, "0x"), 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := Dumps(math.Float64frombits(bits), false); string(got) != want {
			t.Errorf("Dumps(%s) = %s; Python wrote %s", hex, got, want)
		}
		n++
	}
	if n < 80 {
		t.Fatalf("only %d floats read", n)
	}
}

func TestDumpsAsPython(t *testing.T) {
	nested := Object{{"b", []any{1, "x", nil, true, false, 2.0}}, {"a", Object{{"z", int64(1)}, {"y", "é"}}}}
	for _, tc := range []struct {
		name     string
		v        any
		sortKeys bool
		want     string
	}{
		{"plain", "plain", false, `"plain"`},
		{"quotes", "quote\" back\\ slash", false, `"quote\" back\\ slash"`},
		{"controls", "\n\r\t\b\f\x00\x1f", false, `"\n\r\t\b\f\u0000\u001f"`},
		{"non-ASCII", "é 😀 \x7f ~", false, `"\u00e9 \ud83d\ude00 \u007f ~"`},
		{"line separator", "\u2028", false, `"\u2028"`},
		{"insertion order", nested, false, `{"b": [1, "x", null, true, false, 2.0], "a": {"z": 1, "y": "\u00e9"}}`},
		{"sorted", nested, true, `{"a": {"y": "\u00e9", "z": 1}, "b": [1, "x", null, true, false, 2.0]}`},
		{"map sorted", map[string]any{"options": []string{"x", "y"}, "question": "q"}, true, `{"options": ["x", "y"], "question": "q"}`},
		{"empty", Object{{"l", []any{}}, {"o", Object{}}}, false, `{"l": [], "o": {}}`},
		{"float32", float32(0.1), false, `0.10000000149011612`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Dumps(tc.v, tc.sortKeys)
			if err != nil || string(got) != tc.want {
				t.Errorf("Dumps = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestDumpsRefuses(t *testing.T) {
	for _, v := range []any{map[string]any{"a": 1}, struct{}{}, []any{make(chan int)}} {
		if _, err := Dumps(v, false); err == nil {
			t.Errorf("Dumps(%T) gave no error", v)
		}
	}
}
