package tree

import (
	"strconv"
	"strings"
	"testing"
)

// chain nests levels maps, each holding the next under "a", over a leaf.
func chain(levels int, leaf *Node) *Node {
	n := leaf
	for range levels {
		m := NewMap()
		m.Set("a", n)
		n = m
	}
	return n
}

func TestTooDeep(t *testing.T) {
	tests := []struct {
		name  string
		n     *Node
		level int
		deep  bool
	}{
		{"scalar", NewInt(1), MaxDepth + 5, false},
		{"at the limit", chain(MaxDepth, NewInt(1)), 1, false},
		{"one past the limit", chain(MaxDepth+1, NewInt(1)), 1, true},
		{"below a starting level", chain(10, NewList()), MaxDepth - 10, false},
		{"past it from a starting level", chain(10, NewList()), MaxDepth - 9, true},
		{"in a list", NewList(NewInt(1), chain(MaxDepth, NewMap())), 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TooDeep(tt.n, tt.level)
			if (got != nil) != tt.deep {
				t.Fatalf("TooDeep = %v, want deep=%v", got, tt.deep)
			}
			if got != nil && got.IsScalar() {
				t.Errorf("TooDeep gave a scalar: %#v", got)
			}
		})
	}
}

func TestDepthProblemNamesTheLimit(t *testing.T) {
	if p := DepthProblem(); !strings.Contains(p, strconv.Itoa(MaxDepth)) {
		t.Errorf("DepthProblem() = %q", p)
	}
}

func TestGoStringLinear(t *testing.T) {
	// Concatenating at every level made this quadratic in depth.
	n := chain(20000, NewInt(1))
	s := n.GoString()
	if want := strings.Repeat("{a: ", 20000) + "1" + strings.Repeat("}", 20000); s != want {
		t.Errorf("GoString of a deep chain is wrong (len %d, want %d)", len(s), len(want))
	}
	if got := (&Node{Kind: List, Items: []*Node{NewString("x"), NewNull()}}).GoString(); got != `["x", null]` {
		t.Errorf("GoString = %s", got)
	}
}
