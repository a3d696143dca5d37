package rollout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/tidwall/gjson"
)

var jsonSeeds = []string{
	`{"a":1}`, `{"group_level_metrics":[],"agent_metrics":{"mean/reward":0.5},"key_metrics":{}}`,
	`{ "k" : [ 1 , {"x":"y\"}"} , [] , {} ] , "n" : null, "t":true , "s":"\\" }`,
	`[1,2,{"a":[]}]`, `"str"`, `{"e":1e-5,"neg":-0.0}`, `{}`,
}

// FuzzIndentStream: the streaming indenter lays out any valid JSON exactly
// as encoding/json's Indent does.
func FuzzIndentStream(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if !json.Valid([]byte(doc)) {
			return
		}
		var compact, want, got bytes.Buffer
		json.Compact(&compact, []byte(doc))
		json.Indent(&want, compact.Bytes(), "", "  ")
		// Whole, and a byte per read, where every buffer boundary falls.
		for _, src := range []io.Reader{strings.NewReader(doc), iotest.OneByteReader(strings.NewReader(doc))} {
			got.Reset()
			if err := indentStream(&got, src, "  "); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Fatalf("indentStream(%q)\n got %q\nwant %q", doc, got.String(), want.String())
			}
		}
	})
}

// An answer that is not valid JSON (a remote aggregator's, written as it
// came) is laid out a byte at a time as before: a scalar ends at any byte
// with a meaning of its own.
func TestIndentStreamInvalid(t *testing.T) {
	for doc, want := range map[string]string{
		`[1"a,b"]`:       "[\n  1\"a,b\"\n]",
		`{"a":1{"b":2}}`: "{\n  \"a\": 1{\n    \"b\": 2\n  }\n}",
		`[1[2,3]]`:       "[\n  1[\n    2,\n    3\n  ]\n]",
	} {
		var got bytes.Buffer
		if err := indentStream(&got, strings.NewReader(doc), "  "); err != nil || got.String() != want {
			t.Errorf("indentStream(%q) = %q, %v; want %q", doc, got.String(), err, want)
		}
	}
}

// FuzzScanTopLevel: every range found holds exactly its key's value, and
// bad input is an error, never a panic or a hang.
func FuzzScanTopLevel(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		tl, err := scanTopLevel(bufio.NewReader(strings.NewReader(doc)))
		// A byte buffered at a time finds the same.
		small, smallErr := scanTopLevel(bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(doc)), 16))
		if (err == nil) != (smallErr == nil) || err == nil && !reflect.DeepEqual(tl, small) {
			t.Fatalf("%q: scanned whole %+v, %v; a byte at a time %+v, %v", doc, tl, err, small, smallErr)
		}
		if err != nil || !json.Valid([]byte(doc)) || !gjson.Parse(doc).IsObject() {
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(doc), &obj) != nil {
			return
		}
		for name, r := range tl.at {
			var a, b bytes.Buffer
			json.Compact(&a, []byte(doc[r[0]:r[1]]))
			json.Compact(&b, obj[name])
			if a.String() != b.String() {
				t.Fatalf("%q: key %q range holds %q, want %q", doc, name, doc[r[0]:r[1]], obj[name])
			}
		}
	})
}

// FuzzMaterialize: any input file is materialized or refused with an
// error; never a panic, and never a half-written output.
func FuzzMaterialize(f *testing.F) {
	f.Add(`{"responses_create_params":{"input":[]},"x":0}`+"\n", "user: '{x}'")
	f.Add("{\"a\":\n\n[1]\n", "")
	f.Add(`{"responses_create_params":{},"_ng_task_index":"x"}`, "system: '{a[b]}'\nuser: '{{'")
	f.Fuzz(func(t *testing.T, input, prompt string) {
		dir := t.TempDir()
		in := filepath.Join(dir, "in.jsonl")
		os.WriteFile(in, []byte(input), 0o644)
		o := MaterializeOptions{InputPath: in, OutputPath: filepath.Join(dir, "out.jsonl"), AgentName: "a", Repeats: Repeats{All: 2}, AddSeed: true}
		if prompt != "" {
			pp := filepath.Join(dir, "p.yaml")
			os.WriteFile(pp, []byte(prompt), 0o644)
			p, err := LoadPrompt(pp)
			if err != nil {
				return
			}
			o.Prompt = p
		}
		_, err := Materialize(context.Background(), o)
		out, readErr := os.ReadFile(o.OutputPath)
		if err != nil {
			if readErr == nil {
				t.Fatalf("failed (%v) but left %s", err, o.OutputPath)
			}
			return
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
			if l != "" && !json.Valid([]byte(l)) {
				t.Fatalf("materialized an invalid line %q", l)
			}
		}
	})
}
