package interp

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

func encNode(n *tree.Node) any {
	switch n.Kind {
	case tree.Null:
		return map[string]any{"NoneType": nil}
	case tree.Bool:
		return map[string]any{"bool": n.Bool}
	case tree.Int:
		return map[string]any{"int": n.Int}
	case tree.Float:
		if math.IsNaN(n.Float) {
			return map[string]any{"nan": true}
		}
		if math.IsInf(n.Float, 0) {
			return map[string]any{"inf": n.Float > 0}
		}
		return map[string]any{"float": tree.PythonFloatRepr(n.Float)}
	case tree.String:
		return map[string]any{"str": n.Str}
	case tree.List:
		l := []any{}
		for _, it := range n.Items {
			l = append(l, encNode(it))
		}
		return map[string]any{"list": l}
	}
	d := []any{}
	for _, e := range n.Entries {
		k := PythonRepr(tree.NewMap())
		var b = tree.NewMap()
		b.SetEntry(tree.Entry{Key: e.Key, KeyKind: e.KeyKind, Value: tree.NewNull()})
		k = PythonRepr(b)
		k = k[1 : len(k)-len(": None}")]
		d = append(d, []any{k, encNode(e.Value)})
	}
	return map[string]any{"dict": d}
}

func TestZZDiff(t *testing.T) {
	in := os.Getenv("DIFF_IN")
	if in == "" {
		t.Skip()
	}
	f, _ := os.Open(in)
	out, _ := os.Create(os.Getenv("DIFF_OUT"))
	defer out.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s string
		json.Unmarshal(sc.Bytes(), &s)
		res := map[string]any{"in": s}
		env := newFakeEnv()
		var v *tree.Node
		var err error
		if os.Getenv("DIFF_MODE") == "top" {
			var tp *Template
			tp, err = Parse(s)
			if err == nil {
				v, err = tp.Eval(env)
			}
		} else {
			v, err = DecodeString(s, env)
		}
		if err != nil {
			if _, ok := err.(*GrammarError); ok {
				res["grammar"] = err.Error()
			} else {
				res["eval"] = err.Error()
			}
		} else {
			res["out"] = encNode(v)
			res["str"] = PythonStr(v)
		}
		b, _ := json.Marshal(res)
		out.Write(append(b, '\n'))
	}
}
