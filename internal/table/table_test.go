package table

import (
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	tests := []struct {
		name string
		rows [][]string
		want string
	}{
		{"empty", nil, ""},
		{"aligned", [][]string{{"a", "bb", "c"}, {"dddd", "e", "f"}}, "a     bb  c\ndddd  e   f\n"},
		{"empty last cell leaves no blanks", [][]string{{"name", "desc"}, {"x", ""}}, "name  desc\nx\n"},
		{"wide runes count once", [][]string{{"✓", "a"}, {"xx", "b"}}, "✓   a\nxx  b\n"},
		{"rule", WithRule([]string{"Name", "Kind"}, [][]string{{"gsm8k", "benchmark"}}), "Name   Kind\n----   ----\ngsm8k  benchmark\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := Write(&b, tt.rows); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
}
