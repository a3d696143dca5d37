package jsonl

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
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
	for _, s := range []string{`{"a":[1,{"b":"c\"]"}]}`, `[[[]]]`, `"x`, `{"a":1}{`, "\"\xff\"", `1e5`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}
