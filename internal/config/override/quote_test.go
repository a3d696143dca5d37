package override

import "testing"

// A quoted value parses back to the very string, special characters and
// all.
func TestQuoteRoundTrips(t *testing.T) {
	for _, s := range []string{"", "123", "true", "null", `a\b`, `ends\`, `it's`, `\'`, "a,b=c", "[x]", "${y}", "two words", "ü"} {
		ov, err := Parse("++k=" + Quote(s))
		if err != nil {
			t.Errorf("Parse(++k=%s): %v", Quote(s), err)
			continue
		}
		if ov.Value == nil || ov.Value.Str != s {
			t.Errorf("Quote(%q) = %s reads back as %#v", s, Quote(s), ov.Value)
		}
	}
}
