package rollout

import (
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// A record's values are what gjson.Get finds at the top level: the first
// of a repeated key, escaped keys unescaped, nothing in a row that is not
// an object.
func FuzzRecordIsGet(f *testing.F) {
	for _, s := range []string{
		`{"reward":1,"reward":2}`, `{"r\u0065ward":true}`, `{"agent_ref":{"name":"a"},"agent_ref":{"name":"b"}}`,
		`{"agent_ref":{"name":3}}`, `{"agent_ref":[{"name":"a"}]}`, `[{"reward":1}]`, ` { "reward" : [ 1 ] } `, `"reward"`,
		`{"x":{"reward":1}}`, `{"response":{},"response":{"usage":1}}`,
	} {
		f.Add(s, "reward")
	}
	f.Fuzz(func(t *testing.T, doc, name string) {
		var r record
		if !r.parse([]byte(doc)) {
			return
		}
		names := []string{"reward", AgentRefKey}
		if gjson.Parse(doc).IsObject() { // gjson reads a number as an array index
			names = append(names, name)
		}
		for _, n := range names {
			want := gjson.Get(doc, gjson.Escape(n))
			if got := r.get(n); got.Raw != want.Raw || got.Type != want.Type {
				t.Fatalf("%q: get(%q) = %q, gjson.Get %q", doc, n, got.Raw, want.Raw)
			}
		}
		if got, want := r.agent(), gjson.Get(doc, AgentRefKey+".name").Str; got != want {
			t.Fatalf("%q: agent() = %q, gjson.Get %q", doc, got, want)
		}
		if got, want := r.nested("response", "usage"), gjson.Get(doc, "response.usage"); got.Raw != want.Raw || got.Type != want.Type {
			t.Fatalf("%q: nested(response, usage) = %q, gjson.Get %q", doc, got.Raw, want.Raw)
		}
	})
}

// A copy of a row from past its leading white space is the row that
// reading those bytes finds: the same members, in storage of its own.
func FuzzRecordFrom(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[2]}`, "  \t{ \"a\" : 1 }", ` [1]`, `{}`, "\n{\"r\\u0065ward\":true}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var r record
		if !r.parse([]byte(doc)) {
			return
		}
		at := len(doc) - len(strings.TrimLeft(doc, " \t\r\n"))
		got := r.from(at)
		var want record
		want.parse([]byte(doc[at:]))
		if string(got.raw) != string(want.raw) || !slices.Equal(got.members, want.members) || got.object != want.object {
			t.Fatalf("%q from %d: %+v, reading it finds %+v", doc, at, *got, want)
		}
		if want.spaced && !got.spaced {
			t.Fatalf("%q from %d: not spaced, reading it finds white space", doc, at)
		}
		if len(got.raw) > 0 {
			got.raw[0] = 'x'
			if r.raw[at] == 'x' {
				t.Fatalf("%q: the copy shares the row's storage", doc)
			}
		}
	})
}

// stripHeavy's one copy writes what deleting each heavy key with sjson
// writes, for rows compact or not.
func FuzzStripHeavy(f *testing.F) {
	for _, s := range []string{
		`{"response":{"output":[],"usage":{"input_tokens":1}},"reward":1,"responses_create_params":{"input":"x"}}`,
		`{"reward":1,"response":{"usage":2},"response":{"usage":3},"ng_trajectory":[1]}`,
		`{"response":1,"response":{"usage":2}}`, `{"respons\u0065":{"usage":1},"x":2}`, `{}`, `{"ng_trajectory":[]}`,
		`{"a":1, "response":{"usage":1}}`, ` {"response":{"usage":1}}`, `{"response" : {"usage":1}}`, `{"a":{"response":1}}`,
		`{"ng_model_call_capture":1,"ng_agent_observations":2,"ng_trajectory":3,"response":4,"responses_create_params":5}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var r record
		if !r.parse([]byte(doc)) || !gjson.Parse(doc).IsObject() {
			return
		}
		want, wantErr := stripByRewriting(gjson.Parse(doc))
		got, err := stripHeavy(&r)
		if (err != nil) != (wantErr != nil) || string(got) != string(want) {
			t.Fatalf("stripHeavy(%q) = %q, %v; rewriting gives %q, %v", doc, got, err, want, wantErr)
		}
	})
}
