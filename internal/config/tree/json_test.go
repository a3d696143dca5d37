package tree

import (
	"math"
	"math/big"
	"strings"
	"testing"
)

func TestJSON(t *testing.T) {
	m := NewMap()
	m.Set("z", NewString("a\"b<"))
	m.Set("a", &Node{Kind: Int, Int: -3})
	inner := NewMap()
	inner.Set("f", &Node{Kind: Float, Float: 0.5})
	inner.Set("n", &Node{Kind: Null})
	inner.Set("t", &Node{Kind: Bool, Bool: true})
	m.Set("inner", inner)
	big, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	m.Set("list", &Node{Kind: List, Items: []*Node{NewBigInt(big), NewString("x")}})
	got, err := JSON(m, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"z":"a\"b\u003c","a":-3,"inner":{"f":0.5,"n":null,"t":true},"list":[123456789012345678901234567890,"x"]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	indented, err := JSON(m, 2)
	if err != nil || !strings.Contains(string(indented), "\n  \"inner\": {\n    \"f\": 0.5,") {
		t.Errorf("indented: %s %v", indented, err)
	}
	inner.Set("bad", &Node{Kind: Float, Float: math.Inf(1)})
	if _, err := JSON(m, 0); err == nil || !strings.Contains(err.Error(), "inner.bad is +Inf, which JSON cannot hold") {
		t.Errorf("err = %v", err)
	}
}
