package pyyaml

import (
	"errors"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// blockMaps nests levels block mappings, one a line, the top one included.
func blockMaps(levels int) string {
	var b strings.Builder
	for i := range levels {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	return b.String() + strings.Repeat(" ", levels) + "x\n"
}

func TestLoadNestingLimit(t *testing.T) {
	const max = tree.MaxDepth
	brackets := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name     string
		ok, deep string // max levels, and one more
		line     int    // where the deep one crosses the limit
	}{
		{"flow sequences", "a: " + brackets(max-1) + "\n", "a: " + brackets(max) + "\n", 1},
		{"flow mappings", "a: " + strings.Repeat("{a: ", max-1) + "1" + strings.Repeat("}", max-1) + "\n",
			"a: " + strings.Repeat("{a: ", max) + "1" + strings.Repeat("}", max) + "\n", 1},
		{"block sequences", "a:\n" + strings.Repeat("- ", max-1) + "x\n", "a:\n" + strings.Repeat("- ", max) + "x\n", 2},
		{"block mappings", blockMaps(max), blockMaps(max + 1), max + 1},
		// An alias puts its anchor's whole depth where it stands.
		{"through an alias", "a: &a " + brackets(300) + "\nb: " + strings.Repeat("[", max-301) + "*a" + strings.Repeat("]", max-301) + "\n",
			"a: &a " + brackets(300) + "\nb: " + strings.Repeat("[", max-300) + "*a" + strings.Repeat("]", max-300) + "\n", 2},
		{"through aliases of aliases", "a: &a " + brackets(200) + "\nb: &b [[*a]]\nc: " + strings.Repeat("[", max-203) + "*b" + strings.Repeat("]", max-203) + "\n",
			"a: &a " + brackets(200) + "\nb: &b [[*a]]\nc: " + strings.Repeat("[", max-202) + "*b" + strings.Repeat("]", max-202) + "\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := Load([]byte(tt.ok), "deep.yaml")
			if err != nil {
				t.Fatalf("%d levels: %v", max, err)
			}
			if d := tree.TooDeep(n, 1); d != nil {
				t.Fatalf("%d levels loaded deeper than the limit", max)
			}
			_, err = Load([]byte(tt.deep), "deep.yaml")
			se, ok := errors.AsType[*SyntaxError](err)
			if !ok {
				t.Fatalf("%d levels: got %v, want a *SyntaxError", max+1, err)
			}
			if se.Line != tt.line || se.Problem != tree.DepthProblem() {
				t.Errorf("%d levels: got line %d, %q; want line %d, %q", max+1, se.Line, se.Problem, tt.line, tree.DepthProblem())
			}
			if !strings.Contains(err.Error(), "deep.yaml") {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
}

// TestLoadNestingLimitMerge checks merge keys, whose mappings' pairs land
// one level above where the mapping is written (two for a list of them).
func TestLoadNestingLimitMerge(t *testing.T) {
	anchor := "a: &a {k: " + strings.Repeat("[", 399) + strings.Repeat("]", 399) + "}\n"
	merging := func(outer int, merge string) string {
		return anchor + "b: " + strings.Repeat("{x: ", outer) + "{<<: " + merge + "}" + strings.Repeat("}", outer) + "\n"
	}
	for _, merge := range []string{"*a", "[*a]", "{k: " + strings.Repeat("[", 399) + strings.Repeat("]", 399) + "}"} {
		// b's maps take levels 2..112, the merging map 113, and k's lists
		// 114..512.
		if _, err := Load([]byte(merging(111, merge)), "merge.yaml"); err != nil {
			t.Errorf("<<: %.10s at the limit: %v", merge, err)
		}
		_, err := Load([]byte(merging(112, merge)), "merge.yaml")
		if se, ok := errors.AsType[*SyntaxError](err); !ok || se.Problem != tree.DepthProblem() || se.Line != 2 {
			t.Errorf("<<: %.10s past the limit: got %v", merge, err)
		}
	}
}
