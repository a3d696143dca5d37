package resolve

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDidYouMean(t *testing.T) {
	tests := []struct {
		value      string
		candidates []string
		want       string
	}{
		// The examples of spec §5.6.
		{"evl", []string{"list", "eval", "env"}, " Did you mean `eval`?"},
		{"zzzzzz", []string{"list", "eval", "env"}, ""},
		{"aalcrr", []string{"aalcr", "aime24", "gsm8k"}, " Did you mean `aalcr`?"},
		{"dapo17", []string{"math_with_judge", "dapo17k"}, " Did you mean `dapo17k`?"},
		{"mybnch", []string{"mybench", "gsm8k"}, " Did you mean `mybench`?"},
		{"--benchmrk", []string{"--benchmark", "--config", "--model"}, " Did you mean `--benchmark`?"},
		{"gitlb", []string{"hf", "gitlab"}, " Did you mean `gitlab`?"},
		{"anything", nil, ""},
		// Ties go to the lexicographically larger candidate, wherever it is.
		{"abcd", []string{"abce", "abcf"}, " Did you mean `abcf`?"},
		{"abcd", []string{"abcf", "abce"}, " Did you mean `abcf`?"},
		// Exactly at the cutoff: 2·3/(5+5) = 0.6 is kept.
		{"abcxx", []string{"abcyy"}, " Did you mean `abcyy`?"},
		{"abxxx", []string{"abyyy"}, ""},
	}
	for _, tt := range tests {
		if got := DidYouMean(tt.value, tt.candidates); got != tt.want {
			t.Errorf("DidYouMean(%q, %q) = %q, want %q", tt.value, tt.candidates, got, tt.want)
		}
	}
}

// golden holds CPython's own answers, made by testdata/difflib_golden.py.
type golden struct {
	Ratios []struct {
		A, B  string
		Ratio float64
	}
	CloseMatches []struct {
		Word       string
		Candidates []string
		N          int
		Cutoff     float64
		Want       []string
	} `json:"close_matches"`
}

func loadGolden(t *testing.T) golden {
	t.Helper()
	data, err := os.ReadFile("testdata/difflib_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("testdata/difflib_golden.json: %v", err)
	}
	return g
}

func TestRatioMatchesPython(t *testing.T) {
	g := loadGolden(t)
	if len(g.Ratios) < 500 {
		t.Fatalf("only %d golden ratios", len(g.Ratios))
	}
	long := 0
	for _, c := range g.Ratios {
		// Exact float equality: both compute 2.0*M/length in IEEE doubles.
		if got := Ratio(c.A, c.B); got != c.Ratio {
			t.Errorf("Ratio(%q, %q) = %v, want %v", c.A, c.B, got, c.Ratio)
		}
		if utf8.RuneCountInString(c.B) >= 200 {
			long++
		}
	}
	if long < 40 {
		t.Errorf("only %d golden cases exercise autojunk", long)
	}
}

func TestCloseMatchesMatchesPython(t *testing.T) {
	for _, c := range loadGolden(t).CloseMatches {
		got := CloseMatches(c.Word, c.Candidates, c.N, c.Cutoff)
		if len(got) == 0 && len(c.Want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, c.Want) {
			t.Errorf("CloseMatches(%q, %q, %d, %v) = %q, want %q", c.Word, c.Candidates, c.N, c.Cutoff, got, c.Want)
		}
	}
}

func TestAutojunk(t *testing.T) {
	a250 := strings.Repeat("a", 250)
	tests := []struct {
		a, b string
		want float64
	}{
		// "a" fills more than 1% of b, so only "b" can anchor a match and the
		// long run of "a"s on the wrong side of it is never matched.
		{"b" + a250, a250 + "b", 2.0 / 502},
		// Below 200 elements there is no autojunk: the run matches.
		{"b" + a250[:150], a250[:150] + "b", 300.0 / 302},
		// Equal strings still match in full: the empty best match at the
		// start is grown over equal elements.
		{a250, a250, 1},
	}
	for _, tt := range tests {
		if got := Ratio(tt.a, tt.b); got != tt.want {
			t.Errorf("Ratio(%d runes, %d runes) = %v, want %v", len(tt.a), len(tt.b), got, tt.want)
		}
	}
	// A long misspelling is still found among long candidates.
	word := strings.Repeat("ab ", 70) + "xyz"
	got := CloseMatches(word, []string{strings.Repeat("ab ", 70) + "xyw", "short", strings.Repeat("cd ", 70)}, 3, 0.6)
	if want := []string{strings.Repeat("ab ", 70) + "xyw"}; !reflect.DeepEqual(got, want) {
		t.Errorf("long CloseMatches = %q, want %q", got, want)
	}
}

func TestCloseMatchesOrderAndLimit(t *testing.T) {
	if got, want := CloseMatches("ab", []string{"ba", "ab", "zz", "ab"}, 3, 0), []string{"ab", "ab", "ba"}; !reflect.DeepEqual(got, want) {
		t.Errorf("duplicates and limit: got %q, want %q", got, want)
	}
	if got := CloseMatches("abcd", []string{"abce", "abcf", "abcg"}, 2, 0.6); !reflect.DeepEqual(got, []string{"abcg", "abcf"}) {
		t.Errorf("ties: got %q, want [abcg abcf]", got)
	}
	for _, bad := range []struct {
		n      int
		cutoff float64
	}{{0, 0.6}, {-1, 0.6}, {1, -0.1}, {1, 1.5}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("CloseMatches(n=%d, cutoff=%v) did not panic", bad.n, bad.cutoff)
				}
			}()
			CloseMatches("a", []string{"a"}, bad.n, bad.cutoff)
		}()
	}
}

// FuzzRatio checks what difflib guarantees for any pair of strings.
func FuzzRatio(f *testing.F) {
	for _, s := range [][2]string{
		{"evl", "eval"}, {"", ""}, {"", "a"}, {"abcd", "bcda"}, {"héllo", "hello"},
		{strings.Repeat("a", 250) + "b", "b" + strings.Repeat("a", 250)},
		{strings.Repeat("ab", 120), strings.Repeat("ba", 110)},
		{"\xff\xfe", "\xfe"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		// Ratcliff/Obershelp is cubic in the worst case (as in Python); longer
		// inputs only slow the fuzzer down without reaching new code.
		if len(a) > 300 || len(b) > 300 {
			t.Skip()
		}
		ra, rb := []rune(a), []rune(b)
		m := newMatcher(rb)
		m.setA(ra)
		r, q, rq := Ratio(a, b), m.quickRatio(), m.realQuickRatio()
		if !(0 <= r && r <= 1) {
			t.Fatalf("ratio %v outside [0, 1]", r)
		}
		// Each bound is computed over the same denominator from a count no
		// smaller than the next one's, so the order is exact.
		if !(r <= q && q <= rq) {
			t.Fatalf("ratio %v, quick_ratio %v, real_quick_ratio %v out of order", r, q, rq)
		}
		rev := newMatcher(ra)
		rev.setA(rb)
		if rev.quickRatio() != q || rev.realQuickRatio() != rq {
			t.Fatalf("quick ratios not symmetric: %v/%v vs %v/%v", q, rq, rev.quickRatio(), rev.realQuickRatio())
		}
		if a == b && len(rb) < 200 && r != 1 {
			t.Fatalf("ratio of a string with itself = %v", r)
		}

		// The matching blocks are equal runs, in order in both strings, and
		// make up the ratio.
		blocks := m.matchingBlocks()
		slices.SortFunc(blocks, func(x, y match) int { return x.i - y.i })
		lastI, lastJ, total := 0, 0, 0
		for _, x := range blocks {
			if x.size <= 0 || x.i < lastI || x.j < lastJ || x.i+x.size > len(ra) || x.j+x.size > len(rb) {
				t.Fatalf("bad block %+v after (%d, %d) in %d/%d runes", x, lastI, lastJ, len(ra), len(rb))
			}
			if !slices.Equal(ra[x.i:x.i+x.size], rb[x.j:x.j+x.size]) {
				t.Fatalf("block %+v does not match", x)
			}
			lastI, lastJ, total = x.i+x.size, x.j+x.size, total+x.size
		}
		if got := calculateRatio(total, len(ra)+len(rb)); got != r {
			t.Fatalf("blocks give ratio %v, Ratio says %v", got, r)
		}

		// CloseMatches keeps candidates at or above the cutoff, best first.
		got := CloseMatches(b, []string{a, b[:len(b)/2], ""}, 2, 0.5)
		if len(got) > 2 {
			t.Fatalf("%d results for n=2", len(got))
		}
		prev := 2.0
		for _, g := range got {
			s := r
			if g != a {
				s = Ratio(g, b)
			}
			if s < 0.5 || s > prev {
				t.Fatalf("result %q scores %v after %v", g, s, prev)
			}
			prev = s
		}
	})
}
