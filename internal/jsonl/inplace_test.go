package jsonl

import (
	"testing"

	"github.com/tidwall/gjson"
)

// ParseInPlace and GetInPlace read what gjson's byte readers read, without
// their copy.
func TestInPlaceIsGjson(t *testing.T) {
	for _, doc := range []string{`{"a":{"b":[1,"x"]},"c":"d"}`, `[1,2]`, `"s"`, `{"a":`, ``} {
		b := []byte(doc)
		if got, want := ParseInPlace(b), gjson.ParseBytes(b); got.Raw != want.Raw || got.Type != want.Type {
			t.Errorf("ParseInPlace(%q) = %q, gjson %q", doc, got.Raw, want.Raw)
		}
		for _, path := range []string{"a", "a.b", "a.b.1", "c", "z"} {
			if got, want := GetInPlace(b, path), gjson.GetBytes(b, path); got.Raw != want.Raw || got.Index != want.Index {
				t.Errorf("GetInPlace(%q, %q) = %q at %d, gjson %q at %d", doc, path, got.Raw, got.Index, want.Raw, want.Index)
			}
		}
	}
	b := []byte(`{"output":[{"type":"message","content":"a long enough answer"}]}`)
	if allocs := testing.AllocsPerRun(20, func() { GetInPlace(b, "output") }); allocs != 0 {
		t.Errorf("GetInPlace allocated %v times", allocs)
	}
}
