package pyyaml

import (
	"fmt"
	"math"
	"math/big"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// v builds a tree node from a Go value, for compact test tables.
func v(x any) *tree.Node {
	switch x := x.(type) {
	case nil:
		return tree.NewNull()
	case *tree.Node:
		return x
	case bool:
		return tree.NewBool(x)
	case int:
		return tree.NewInt(int64(x))
	case int64:
		return tree.NewInt(x)
	case *big.Int:
		return tree.NewBigInt(x)
	case float64:
		return tree.NewFloat(x)
	case string:
		return tree.NewString(x)
	case []any:
		l := tree.NewList()
		for _, it := range x {
			l.Items = append(l.Items, v(it))
		}
		return l
	}
	panic(fmt.Sprintf("v: unsupported %T", x))
}

// key is a map key of a kind other than string.
type key struct {
	text string
	kind tree.Kind
}

// mp builds a map from alternating keys (string or key) and values.
func mp(kv ...any) *tree.Node {
	m := tree.NewMap()
	for i := 0; i < len(kv); i += 2 {
		switch k := kv[i].(type) {
		case string:
			m.SetEntry(tree.Entry{Key: k, KeyKind: tree.String, Value: v(kv[i+1])})
		case key:
			m.SetEntry(tree.Entry{Key: k.text, KeyKind: k.kind, Value: v(kv[i+1])})
		default:
			panic(fmt.Sprintf("mp: key %T", kv[i]))
		}
	}
	return m
}

func ls(items ...any) *tree.Node { return v(items) }

// bigInt is the integer with decimal digits s, of any size.
func bigInt(s string) *big.Int {
	x, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic("bigInt: " + s)
	}
	return x
}

var (
	inf = math.Inf(1)
	nan = math.NaN()
)
