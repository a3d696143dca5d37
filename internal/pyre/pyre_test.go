package pyre

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// Python's answers for these were taken from CPython 3.13's re.findall
// with re.IGNORECASE (test/oracle holds the whole corpus to it).
func TestFindAll(t *testing.T) {
	tests := []struct {
		pattern, text string
		want          []string
	}{
		{`(?<=Answer: )([A-J])`, "Answer: C, Answer: d", []string{"C", "d"}},
		{`(?P<l>[A-D])(?P=l)`, "AA bB cd", []string{"A", "b"}},
		{`([A-D])\Z`, "B\n", nil},
		{`([A-D])$`, "B\n", []string{"B"}},
		{`\w+`, "é ﬁ ² x_y", []string{"é", "ﬁ", "²", "x_y"}},
		{`(?a)\w+`, "é x_y", []string{"x_y"}},
		{`\s+`, "a\u00a0\u2028b", []string{"\u00a0\u2028"}},
		{`[^\W\d_]+`, "50 and ½x", []string{"and", "½x"}},
		{`[[A-D]]`, "[B] B]", []string{"B]", "B]"}},
		{`[a-z-[aeiou]]`, "b] b-[", []string{"b]"}},
		{`a{,2}`, "aaa", []string{"aa", "a", ""}},
		{`a++`, "aaa", []string{"aaa"}},
		{`\bB\b`, "B éB B", []string{"B", "B"}},
		{`(A|B)+?`, "AB", []string{"A", "B"}},
		{`(?x) answer \s* : \s* ([a-d])`, "Answer : c", []string{"c"}},
	}
	for _, tt := range tests {
		re, err := Compile(tt.pattern, IgnoreCase)
		if err != nil {
			t.Errorf("Compile(%q): %v", tt.pattern, err)
			continue
		}
		got, err := re.FindAll(tt.text)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("FindAll(%q, %q) = %q, %v; want %q", tt.pattern, tt.text, got, err, tt.want)
		}
	}
}

// What Python refuses is refused, and what gym cannot run says so.
func TestRefused(t *testing.T) {
	for pattern, want := range map[string]string{
		`(?<name>A)`: "unknown extension", `\k<name>`: "bad escape", `\p{L}`: "bad escape", `[A-D`: "unterminated",
		`(?P=nope)`: "unknown group name", `a(?i)b`: "global flags not at the start", `(?L)a`: "'L' flag",
		`(?P<a>x)(?P<a>y)`: "redefinition", `\N{LATIN SMALL LETTER A}`: "not supported by gym",
	} {
		_, err := Compile(pattern, 0)
		var pe *Error
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%q) = %v; want an error saying %q", pattern, err, want)
		}
	}
}

// FuzzCompile holds the translation to what a pattern may do: compile or
// refuse, never panic; and a match is bounded in time.
func FuzzCompile(f *testing.F) {
	for _, p := range []string{`(?<=a)b`, `(?P<x>[^\W\d])(?P=x)`, `a{,2}+`, `[]\]-[a]`, `(?i:x)(?#c)\Z`, `((a)|b)++`, `\b\B\d\D\s\S\w\W`} {
		f.Add(p, "ab aab ½ é")
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		if len(pattern) > 200 || len(text) > 200 {
			return
		}
		re, err := Compile(pattern, IgnoreCase)
		if err != nil {
			return
		}
		if _, err := re.FindAll(text); err != nil && !errors.Is(err, ErrTimeout) {
			t.Fatalf("FindAll(%q, %q): %v", pattern, text, err)
		}
	})
}
