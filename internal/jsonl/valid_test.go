package jsonl

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func nested(depth int) []byte {
	return append(bytes.Repeat([]byte("["), depth), bytes.Repeat([]byte("]"), depth)...)
}

// Deep nesting is refused where encoding/json refuses it, and ten million
// levels end in an answer, not a stack overflow.
func TestValidDepth(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want bool
	}{
		{nested(MaxDepth), true},
		{nested(MaxDepth + 1), false},
		{nested(10_000_000), false},
		{[]byte(`{"a":"` + strings.Repeat("[", 20000) + `"}`), true},
		{[]byte(`["\"[[", "\\", {"b": [1]}]`), true},
	} {
		if got := Valid(tc.b); got != tc.want {
			t.Errorf("Valid(%.40s… %d bytes) = %v, want %v", tc.b, len(tc.b), got, tc.want)
		}
		if got := json.Valid(tc.b); got != tc.want {
			t.Errorf("json.Valid disagrees on %.40s…: %v", tc.b, got)
		}
	}
}

// Valid is encoding/json's json.Valid.
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"c\"]"}]}`, `[[[]]]`, `"x`, `{"a":1}{`, "\"\xff\"", `1e5`,
		`-`, `01`, `1.`, `1e`, `-0.5E+7`, `"\u12G4"`, `"\u00e9\/"`, `{"a" 1}`, `[1,]`, `{,}`, `tru`, ` `, `{}}`, `[}`, "\"\x1f\"", ` {"a" : [ true , false , null ] } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

// BenchmarkValid: a recorded rollout, as the collector and the servers
// check every body, beside gjson's validator (which Valid replaced, with a
// depth check in front) and encoding/json's.
func BenchmarkValid(b *testing.B) {
	raw, err := os.ReadFile("../../resources_servers/example_single_tool_call/data/example_rollouts.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	line := bytes.SplitN(raw, []byte("\n"), 2)[0]
	for _, tc := range []struct {
		name  string
		valid func([]byte) bool
	}{{"Valid", Valid}, {"gjson", gjson.ValidBytes}, {"encoding-json", json.Valid}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if !tc.valid(line) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
