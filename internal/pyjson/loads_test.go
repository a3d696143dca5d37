package pyjson

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// goldenLines reads a testdata file of records of n lines each, skipping
// the comment line at its top.
func goldenLines(t *testing.T, path string, n int) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var lines []string
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "#") {
			lines = append(lines, sc.Text())
		}
	}
	if len(lines)%n != 0 || len(lines) == 0 {
		t.Fatalf("%s: %d lines, not records of %d", path, len(lines), n)
	}
	var out [][]string
	for i := 0; i < len(lines); i += n {
		out = append(out, lines[i:i+n])
	}
	return out
}

func unquote(t *testing.T, s string) string {
	t.Helper()
	var v string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("testdata line %s: %v", s, err)
	}
	return v
}

// TestLoadsDumpsAsPython checks json.dumps(json.loads(line)) and the
// indent=4 form against what Python wrote (testdata/loads.txt).
func TestLoadsDumpsAsPython(t *testing.T) {
	for _, rec := range goldenLines(t, "testdata/loads.txt", 3) {
		in, want, wantIndent := unquote(t, rec[0]), rec[1], unquote(t, rec[2])
		v, err := Loads([]byte(in))
		if err != nil {
			t.Errorf("Loads(%q): %v", in, err)
			continue
		}
		if got, err := Dumps(v, false); err != nil || string(got) != want {
			t.Errorf("Dumps(Loads(%q)) = %s, %v\n            Python: %s", in, got, err, want)
		}
		if got, err := DumpsIndent(v, 4); err != nil || string(got) != wantIndent {
			t.Errorf("DumpsIndent(Loads(%q)) = %s, %v\n            Python: %s", in, got, err, wantIndent)
		}
	}
}

// TestLoadsErrorsAsPython checks the JSONDecodeError messages.
func TestLoadsErrorsAsPython(t *testing.T) {
	for _, rec := range goldenLines(t, "testdata/loads_errors.txt", 2) {
		in := unquote(t, rec[0])
		_, err := Loads([]byte(in))
		if err == nil || err.Error() != rec[1] {
			t.Errorf("Loads(%q) error = %v; Python: %s", in, err, rec[1])
		}
	}
}

func TestLoadsRejects(t *testing.T) {
	for _, in := range []string{"\xff", strings.Repeat("[", maxDepth+1), "1" + strings.Repeat("0", maxIntDigits+1)} {
		if _, err := Loads([]byte(in)); err == nil {
			t.Errorf("Loads(%.20q...) accepted", in)
		}
	}
}

func FuzzLoads(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5, "x\u00e9"], "a": null}`, `"\ud800"`, `[NaN, -Infinity, 1e999]`, `{"":{"":[]}}`, `12345678901234567890123`, `"\"\\\/"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Loads(data)
		if err != nil {
			return
		}
		out, err := Dumps(v, false)
		if err != nil {
			t.Fatalf("Dumps(Loads(%q)): %v", data, err)
		}
		// What Dumps writes reads back to the same value.
		v2, err := Loads(out)
		if err != nil {
			t.Fatalf("Loads(%s) (from %q): %v", out, data, err)
		}
		if again, _ := Dumps(v2, false); string(again) != string(out) {
			t.Fatalf("not stable: %s then %s", out, again)
		}
		if _, err := DumpsIndent(v, 2); err != nil {
			t.Fatal(err)
		}
	})
}
