package config

import (
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// LaxBool takes what pydantic's lax bool takes (floats 0 and 1 too), and
// names what it refuses.
func TestLaxBool(t *testing.T) {
	for _, tc := range []struct {
		n       *tree.Node
		want    bool
		wantErr bool
	}{
		{nil, false, false},
		{&tree.Node{Kind: tree.Null}, false, false},
		{&tree.Node{Kind: tree.Bool, Bool: true}, true, false},
		{&tree.Node{Kind: tree.Int, Int: 0}, false, false},
		{&tree.Node{Kind: tree.Float, Float: 1}, true, false},
		{&tree.Node{Kind: tree.Float, Float: 0}, false, false},
		{&tree.Node{Kind: tree.String, Str: " Yes "}, true, false},
		{&tree.Node{Kind: tree.String, Str: "off"}, false, false},
		{&tree.Node{Kind: tree.Int, Int: 2}, false, true},
		{&tree.Node{Kind: tree.Float, Float: 0.5}, false, true},
		{&tree.Node{Kind: tree.String, Str: "maybe"}, false, true},
	} {
		got, err := LaxBool(tc.n)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("LaxBool(%#v) = %v, %v", tc.n, got, err)
		}
	}
}
