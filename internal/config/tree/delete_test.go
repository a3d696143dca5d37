package tree

import (
	"reflect"
	"strconv"
	"testing"
)

func TestDeleteAll(t *testing.T) {
	m := NewMap()
	for i := range 40 {
		m.Set("k"+strconv.Itoa(i), NewInt(int64(i)))
	}
	missing := m.DeleteAll([]string{"k3", "nope", "k39", "k3", "k0"})
	if want := []string{"nope", "k3"}; !reflect.DeepEqual(missing, want) {
		t.Errorf("missing = %v, want %v", missing, want)
	}
	if m.Len() != 37 || m.Has("k3") || m.Has("k0") || m.Has("k39") {
		t.Errorf("keys left: %v", m.Keys())
	}
	// The index must follow the entries that moved.
	for i := 1; i < 39; i++ {
		if k := "k" + strconv.Itoa(i); i != 3 && (m.Get(k) == nil || m.Get(k).Int != int64(i)) {
			t.Errorf("Get(%s) = %#v", k, m.Get(k))
		}
	}
	if missing := NewInt(1).DeleteAll([]string{"a"}); !reflect.DeepEqual(missing, []string{"a"}) {
		t.Errorf("on a scalar: %v", missing)
	}
}
