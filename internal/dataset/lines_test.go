package dataset

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestLinesAsPython checks the lines Python's `for line in open(p)` gives
// (universal newlines), over a buffer's length too.
func TestLinesAsPython(t *testing.T) {
	long := strings.Repeat("x", 200000)
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"a\nb\n", []string{"a", "b"}},
		{"a\nb", []string{"a", "b"}},
		{"a\r\nb\r\n", []string{"a", "b"}},
		{"a\rb\rc", []string{"a", "b", "c"}},
		{"a\r\r\nb", []string{"a", "", "b"}},
		{"\n\n", []string{"", ""}},
		{"a\r", []string{"a"}},
		{long + "\r" + long + "\n" + long, []string{long, long, long}},
		{"", nil},
	} {
		path := filepath.Join(t.TempDir(), "f")
		os.WriteFile(path, []byte(tc.in), 0o644)
		lr, c, err := openLines(path)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			line, err := lr.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(line))
		}
		c.Close()
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("lines of %.30q: %d lines %.60q, want %d %.60q", tc.in, len(got), got, len(tc.want), tc.want)
		}
	}
}
