package oracle

import (
	_ "embed"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/pyre"
)

//go:embed testdata/python_findall.py
var pythonFindallScript []byte

// pyrePatterns are output_regex shapes: NeMo Gym's benchmarks' own, and
// what Python's re reads and Go's regexp does not (lookaround, named
// groups, backreferences, inline flags, \Z), Unicode classes, classes
// holding '[', and patterns Python refuses.
var pyrePatterns = []string{
	`(?i)[Tt]he (?:[Bb]est [Aa]nswer|[Ff]inal [Aa]nswer|[Aa]nswer)[^A-B]*([A-B])`,
	`(?i)[Aa]nswer\s*:[^A-B]*([A-B])`, `(?i)\\boxed\{([A-B])\}`, `[\s\S]*\b\(?\s*([A-B])\s*\)?\.?\b`, `\\boxed\{([A-D])\}`,
	`Answer:\s*([A-J])`, `(?<=Answer: )([A-J])`, `(?<!not )\b([A-D])\b(?!\w)`, `(?P<letter>[A-D])\)`, `(?P<l>[A-D])(?P=l)`,
	`([A-D])\Z`, `([A-D])$`, `(?m)^([A-D])$`, `(?s)Answer:(.*)`, `(?x) answer \s* : \s* ([a-d])`, `(?a)\w+`, `\w+`, `\d+`, `\s+`,
	`\bB\b`, `\BB\B`, `[^\W\d_]+`, `[\w-]+`, `[[A-D]]`, `[a-z-[aeiou]]`, `[]A]`, `\[([A-D])\]`, `(A|B)+?`, `([A-D])\1`, `(?:x)?([A-D])`,
	`(?i:answer):\s*([A-D])`, `Réponse\s*:\s*([A-D])`, `答案[:：]\s*([A-D])`, `(\d+)\s*%`, `\x41`, `\u00e9`, `a{2,}`, `a{,2}`, `{foo}`, `(?#note)([A-D])`,
	`(?>a+)b`, `(a)?b(?(1)c|d)`, `.*?([A-D])`, `(?i)final answer.*?\b([A-D])\b`,
	`\é`, `\_`, `[\D^x]+`, `[^\W^]`, `(?P<x>a)?(?(x)b|c)`, "(?x) a # (comment\n", `(?x) a ++ b`, "(?x) [a-c] # [ not a class\n \\d",
	`(x)?a*(?(1)b|a)++a`, `(?i)(a)?(?(1)b|c)++`, `(?P<n>a)(x(?P=n)y)++`,
	`(?<name>A)`, `\k<name>`, `\p{L}`, `[A-D`, `(A`, `A)`, `*A`, `\q`, `(?P<1a>A)`, `(?P=nope)`, `a(?i)b`, `(?L)a`, `a++`, `\N{LATIN SMALL LETTER A}`,
}

var pyreTexts = []string{
	"The answer is B.", "Answer: C", "answer:   d", "The best answer is (A)", "\\boxed{B}", "I think not A, but B.", "AA BB", "A\n", "A\nB\n", "Final answer: B\nanswer: c",
	"Réponse\u00a0: B", "答案：C", "ab c xb", "12^x3a", "aaa", "axayay", "é_", "a b2", "50 % and 70%", "é ﬁ ² ½ x_y", "word-like text_here", "[B] [C]", "ab aab aaab", "", "BbB", "\u2028B\u2029", "no letters here 123", "xyz{foo}",
}

// TestPythonRegexesMatchPython holds internal/pyre to Python 3.13's re
// (the root's): on every pattern and text, the same refusal or the same
// findall under IGNORECASE, as mcqa reads a row's output_regex.
func TestPythonRegexesMatchPython(t *testing.T) {
	e := setup(t)
	type tcase struct {
		Pattern string `json:"pattern"`
		Text    string `json:"text"`
	}
	var cases []tcase
	var lines []string
	for _, p := range pyrePatterns {
		for _, tx := range pyreTexts {
			c := tcase{p, tx}
			b, _ := json.Marshal(c)
			cases, lines = append(cases, c), append(lines, string(b))
		}
	}
	theirs := e.runScript(t, "findall", pythonFindallScript, map[string][]byte{"re-cases.jsonl": []byte(strings.Join(lines, "\n") + "\n")}, "re-python.jsonl",
		"re-cases.jsonl", "re-python.jsonl")
	agreed, refused := 0, 0
	var differ []string
	for i, c := range cases {
		var want struct {
			Error   bool     `json:"error"`
			Matches []string `json:"matches"`
		}
		if err := json.Unmarshal([]byte(theirs[i]), &want); err != nil {
			t.Fatal(err)
		}
		re, err := pyre.Compile(c.Pattern, pyre.IgnoreCase)
		if strings.Contains(c.Pattern, `\N{`) {
			// Named characters are refused, saying so (README).
			if err == nil || !strings.Contains(err.Error(), "not supported by gym") {
				t.Errorf("%q: %v; want a refusal that says gym does not support it", c.Pattern, err)
			}
			refused++
			continue
		}
		var got []string
		if err == nil {
			got, err = re.FindAll(c.Text)
		}
		if (err != nil) == want.Error && (want.Error || slices.Equal(got, want.Matches) || len(got) == 0 && len(want.Matches) == 0) {
			agreed++
			continue
		}
		differ = append(differ, lines[i])
		if len(differ) <= 15 {
			t.Errorf("%q on %q: Python %s; gym %q, %v", c.Pattern, c.Text, theirs[i], got, err)
		}
	}
	t.Logf("output_regex: %d of %d pattern and text pairs as Python's re reads them; %d refused by gym (\\N{...})", agreed, len(cases), refused)
	if len(differ) > 0 {
		os.WriteFile(filepath.Join(e.tmp, "re-differ.jsonl"), []byte(strings.Join(differ, "\n")+"\n"), 0o644)
	}
}
