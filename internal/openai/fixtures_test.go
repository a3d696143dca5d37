package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata fixtures from the current output")

// fixture is one txtar file of testdata: a comment saying what it shows,
// and named sections.
type fixture struct {
	path string
	ar   *txtar.Archive
}

func fixtures(t *testing.T, dir string) []fixture {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", dir, "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures in testdata/%s: %v", dir, err)
	}
	var fs []fixture
	for _, p := range paths {
		ar, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, fixture{path: p, ar: ar})
	}
	return fs
}

func (f fixture) name() string { return strings.TrimSuffix(filepath.Base(f.path), ".txtar") }

// get returns a section without the newline txtar ends it with.
func (f fixture) get(name string) ([]byte, bool) {
	for _, file := range f.ar.Files {
		if file.Name == name {
			return bytes.TrimSuffix(file.Data, []byte("\n")), true
		}
	}
	return nil, false
}

func (f fixture) must(t *testing.T, name string) []byte {
	t.Helper()
	b, ok := f.get(name)
	if !ok {
		t.Fatalf("%s: no %q section", f.path, name)
	}
	return b
}

// opts reads the `opts` section: names of ChatOptions flags.
func (f fixture) opts(t *testing.T) ChatOptions {
	t.Helper()
	b, _ := f.get("opts")
	var o ChatOptions
	for _, w := range strings.Fields(string(b)) {
		switch w {
		case "replace_developer_role_with_system":
			o.ReplaceDeveloperRoleWithSystem = true
		case "reasoning_field":
			o.ReasoningField = true
		case "parse_think":
			o.ParseThink = true
		case "return_token_ids":
			o.ReturnTokenIDs = true
		case "drop_unrepresentable_request_fields":
			o.DropUnrepresentable = true
		default:
			t.Fatalf("%s: unknown option %q", f.path, w)
		}
	}
	return o
}

// check compares got with the want section. With pretty, want is indented
// for reading and compared after compacting both sides, which removes only
// insignificant whitespace: key order and every byte of every value still
// count. With -update it rewrites the section instead.
func (f fixture) check(t *testing.T, section string, got []byte, pretty bool) {
	t.Helper()
	if *update {
		data := append([]byte(nil), got...)
		if pretty {
			var b bytes.Buffer
			if err := json.Indent(&b, got, "", "  "); err != nil {
				t.Fatalf("%s: output is not JSON: %v\n%s", f.path, err, got)
			}
			data = b.Bytes()
		}
		f.set(t, section, data)
		return
	}
	want := f.must(t, section)
	if pretty {
		want, got = compact(t, want), compact(t, got)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: %s differs\n got: %s\nwant: %s", f.path, section, got, want)
	}
}

func (f fixture) set(t *testing.T, section string, data []byte) {
	t.Helper()
	data = append(data, '\n')
	found := false
	for i := range f.ar.Files {
		if f.ar.Files[i].Name == section {
			f.ar.Files[i].Data = data
			found = true
		}
	}
	if !found {
		f.ar.Files = append(f.ar.Files, txtar.File{Name: section, Data: data})
	}
	if err := os.WriteFile(f.path, txtar.Format(f.ar), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkError compares err with the `error` section: the error's type name
// and its Field.
func (f fixture) checkError(t *testing.T, err error) {
	t.Helper()
	got := describeError(err)
	if *update {
		f.set(t, "error", []byte(got))
		return
	}
	if want := string(f.must(t, "error")); got != want {
		t.Errorf("%s: error = %q (%v), want %q", f.path, got, err, want)
	}
}

func describeError(err error) string {
	var u *UnrepresentableError
	var inv *InvalidError
	switch {
	case err == nil:
		return "nil"
	case errors.As(err, &u):
		return "unrepresentable " + u.Field
	case errors.As(err, &inv):
		return "invalid " + inv.Field
	}
	return "other " + err.Error()
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return out.Bytes()
}

// randomIDs matches the ids this package generates, which tests replace
// with their prefix so that outputs compare.
var randomIDs = regexp.MustCompile(`"(resp|msg|rs|call)_[0-9a-f]{32}"`)

func normalizeIDs(b []byte) []byte { return randomIDs.ReplaceAll(b, []byte(`"${1}_*"`)) }
