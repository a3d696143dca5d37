package jsonl

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

func nested(depth int) []byte {
	return append(bytes.Repeat([]byte("["), depth), bytes.Repeat([]byte("]"), depth)...)
}

// Deep nesting is refused where encoding/json refuses it, and ten million
// levels end in an answer, not a stack overflow.
func TestValidDepth(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want bool
	}{
		{nested(MaxDepth), true},
		{nested(MaxDepth + 1), false},
		{nested(10_000_000), false},
		{[]byte(`{"a":"` + strings.Repeat("[", 20000) + `"}`), true},
		{[]byte(`["\"[[", "\\", {"b": [1]}]`), true},
		{[]byte(`{"a":` + string(nested(MaxDepth-1)) + `}`), true},
		{[]byte(`{"a":` + string(nested(MaxDepth)) + `}`), false},
	} {
		if got := Valid(tc.b); got != tc.want {
			t.Errorf("Valid(%.40s… %d bytes) = %v, want %v", tc.b, len(tc.b), got, tc.want)
		}
		if _, _, got := Members(tc.b, nil); got != tc.want {
			t.Errorf("Members(%.40s… %d bytes) valid = %v, want %v", tc.b, len(tc.b), got, tc.want)
		}
		if got := json.Valid(tc.b); got != tc.want {
			t.Errorf("json.Valid disagrees on %.40s…: %v", tc.b, got)
		}
	}
}

// Strings read 8 bytes at a time find every byte that needs a look, at
// every offset in the word, next to every kind of byte.
func TestValidStringBytes(t *testing.T) {
	for _, special := range []string{`"`, `\"`, `\\`, `\u00e9`, `\x`, "\x00", "\x1f", "\x20", "\x7f", "\x80", "\xff", "\xe2\x80\xa8"} {
		for at := range 20 {
			for _, fill := range []string{"a", "\x9f", "~"} {
				for _, tail := range []string{`"`, `" `, `"]`, ``} {
					b := []byte(`"` + strings.Repeat(fill, at) + special + strings.Repeat(fill, 17-at%9) + tail)
					if got, want := Valid(b), json.Valid(b); got != want {
						t.Errorf("Valid(%q) = %v, json.Valid %v", b, got, want)
					}
				}
			}
		}
	}
}

// Valid is encoding/json's json.Valid.
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"c\"]"}]}`, `[[[]]]`, `"x`, `{"a":1}{`, "\"\xff\"", `1e5`,
		`-`, `01`, `1.`, `1e`, `-0.5E+7`, `"\u12G4"`, `"\u00e9\/"`, `{"a" 1}`, `[1,]`, `{,}`, `tru`, ` `, `{}}`, `[}`, "\"\x1f\"", ` {"a" : [ true , false , null ] } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

// Members is Valid, and finds the members gjson finds, in order, with
// every white space and escape where it stands.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"c\"]"}]}`, `{}`, ` { } `, `{"a" : 1 , "b":{"c":{}},"a":"x"}`, `[{"a":1}]`, `"x"`, `{"a":1}{`,
		`{"a":1,}`, `{"a"}`, `{"\u0061":[]}`, `{"a":-0.5E+7 }`, "\n{\"a\":\ttrue}\r\n", `{"a":[[[`, `{"a":1 "b":2}`, `{"\ud800\u0041":1,"\u00e9":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		members, object, valid := Members(b, nil)
		if want := json.Valid(b); valid != want {
			t.Fatalf("Members(%q) valid = %v, json.Valid %v", b, valid, want)
		}
		if !valid {
			return
		}
		doc := gjson.ParseBytes(b)
		if object != doc.IsObject() {
			t.Fatalf("Members(%q) object = %v, gjson %v", b, object, doc.IsObject())
		}
		var want [][2]string
		var names []string
		if object {
			doc.ForEach(func(k, v gjson.Result) bool {
				want = append(want, [2]string{k.Raw, v.Raw})
				names = append(names, k.Str)
				return true
			})
		}
		var got [][2]string
		for _, m := range members {
			got = append(got, [2]string{string(b[m.KeyStart:m.KeyEnd]), string(m.Value(b))})
			if string(m.Key(b)) != string(b[m.KeyStart+1:m.KeyEnd-1]) {
				t.Fatalf("Key(%q) is not its quoted key's inside", b)
			}
			// Invalid UTF-8 (which json.loads refuses) is replaced by
			// a decoder where gjson keeps it.
			if name := string(m.Name(b)); utf8.Valid(m.Key(b)) && name != names[len(got)-1] {
				t.Fatalf("Name(%q) = %q, gjson reads %q", b, name, names[len(got)-1])
			}
			name := names[len(got)-1]
			if first := Lookup(b, members, name); utf8.Valid(m.Key(b)) && !isGJSONPath(name) && string(members[first].Value(b)) != doc.Get(name).Raw {
				t.Fatalf("Lookup(%q, %q) finds %q, gjson.Get %q", b, name, members[first].Value(b), doc.Get(name).Raw)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Members(%q) = %q, gjson %q", b, got, want)
		}
	})
}

// MembersLayout says a valid line has white space outside its strings
// exactly when json.Compact changes it (its members are Members', which
// FuzzMembers holds to gjson).
func FuzzMembersLayout(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"c\"]"}]}`, `{}`, ` {}`, `{} `, `{ }`, `{"a" :1}`, `{"a": 1}`, `{"a":1 }`, `{"a":1 ,"b":2}`, `{"a":1, "b":2}`,
		`{"a":{"b" :1}}`, `{"a":{"b":1, "c":2}}`, `{"a":[1 ]}`, `{"a":[ 1]}`, `{"a":[1, 2]}`, `{"a":[ ]}`, `{"a":{ }}`, `[1 ,2]`, ` 1`, `"a b"`, `[{"a":1}, {}]`,
		`{"a":"\t","b":"x\ny"}`, "{\"a\":1}\r\n", "{\"a\":\n1}", `{"a":1}{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, valid, spaced := MembersLayout(b, nil)
		if want := json.Valid(b); valid != want {
			t.Fatalf("MembersLayout(%q) valid = %v, json.Valid %v", b, valid, want)
		}
		if !valid {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			t.Fatal(err)
		}
		if want := !bytes.Equal(compact.Bytes(), b); spaced != want {
			t.Fatalf("MembersLayout(%q) spaced = %v, json.Compact changes it: %v", b, spaced, want)
		}
	})
}

// FuzzElements holds Elements to gjson's reading of an array's elements
// and to json.Valid, and MembersAt of each element that is an object to
// Members of that element alone.
func FuzzElements(f *testing.F) {
	for _, s := range []string{`[]`, ` [ ] `, `[1, "a" ,{"b":[2]},[],null]`, `[1,]`, `[,1]`, `[1 2]`, `[{"a":1},{"a"}]`, `[{}]x`, `["\"]",{"\u0061":{"b":1},"c":2}]`, "[\n{\"a\":\ttrue}\r\n]", `[[[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		open := SkipSpace(b, 0)
		if open >= len(b) || b[open] != '[' {
			if _, end := Elements(b, open, nil); end != -1 {
				t.Fatalf("Elements(%q) of no array ended at %d", b, end)
			}
			return
		}
		elements, end := Elements(b, open, nil)
		valid := end >= 0 && SkipSpace(b, end) == len(b)
		if want := json.Valid(b); valid != want {
			t.Fatalf("Elements(%q) valid = %v, json.Valid %v", b, valid, want)
		}
		if !valid {
			return
		}
		var want []string
		gjson.ParseBytes(b).ForEach(func(_, v gjson.Result) bool {
			want = append(want, v.Raw)
			return true
		})
		var got []string
		for _, e := range elements {
			got = append(got, string(b[e.Start:e.End]))
			if b[e.Start] != '{' {
				continue
			}
			members, end := MembersAt(b, e.Start, nil)
			alone, object, valid := Members(b[e.Start:e.End], nil)
			if end != e.End || !object || !valid || len(members) != len(alone) {
				t.Fatalf("MembersAt(%q, %d) = %v ending at %d, Members of the element alone %v", b, e.Start, members, end, alone)
			}
			for i, m := range members {
				if string(m.Value(b)) != string(alone[i].Value(b[e.Start:e.End])) || string(m.Key(b)) != string(alone[i].Key(b[e.Start:e.End])) {
					t.Fatalf("MembersAt(%q, %d) member %d differs from Members of the element alone", b, e.Start, i)
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Elements(%q) = %q, gjson %q", b, got, want)
		}
	})
}

// BenchmarkValid: a recorded rollout, as the collector and the servers
// check every body, beside gjson's validator (which Valid replaced, with a
// depth check in front) and encoding/json's.
func BenchmarkValid(b *testing.B) {
	raw, err := os.ReadFile("../../resources_servers/example_single_tool_call/data/example_rollouts.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	line := bytes.SplitN(raw, []byte("\n"), 2)[0]
	for _, tc := range []struct {
		name  string
		valid func([]byte) bool
	}{{"Valid", Valid}, {"gjson", gjson.ValidBytes}, {"encoding-json", json.Valid}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if !tc.valid(line) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// IndexEither finds what a byte loop finds.
func FuzzIndexEither(f *testing.F) {
	for _, s := range []string{``, `a`, `"`, `ab\"c`, "x\ny\rz", `\\\\"`} {
		f.Add(s, byte('"'), byte('\\'))
	}
	f.Fuzz(func(t *testing.T, s string, x, y byte) {
		want := -1
		for i := range len(s) {
			if s[i] == x || s[i] == y {
				want = i
				break
			}
		}
		if got := IndexEither([]byte(s), x, y); got != want {
			t.Fatalf("IndexEither(%q, %q, %q) = %d, want %d", s, x, y, got, want)
		}
	})
}

// isGJSONPath is whether gjson would read name as more than a key (a
// name opening with a brace or a bracket is a multipath).
func isGJSONPath(name string) bool {
	return name == "" || strings.ContainsAny(name, ".*?|#@\\!=<>%") || name[0] == '{' || name[0] == '['
}

// A member's value and key are capped at their end: appending to one
// leaves the rest of the line as it was.
func TestMemberSlicesAreCapped(t *testing.T) {
	line := []byte(`{"a":"x","b":"y"}`)
	members, _, _ := Members(line, nil)
	_ = append(members[0].Value(line), `,"q":1`...)
	_ = append(members[0].Key(line), 'z')
	if string(line) != `{"a":"x","b":"y"}` {
		t.Errorf("appending to a member wrote over the line: %s", line)
	}
}

func TestOpenOutsideTheLine(t *testing.T) {
	for _, open := range []int{-1, 2, 100} {
		if _, end := MembersAt([]byte("{}"), open, nil); end != -1 {
			t.Errorf("MembersAt at %d ended at %d", open, end)
		}
		if _, end := Elements([]byte("[]"), open, nil); end != -1 {
			t.Errorf("Elements at %d ended at %d", open, end)
		}
	}
}

// MembersWithin finds what Members finds, and of the last member named
// name, when an object, what Members finds in its value.
func FuzzMembersWithin(f *testing.F) {
	for _, s := range []string{
		`{"response":{"id":"r","usage":{"input_tokens":1}},"reward":1}`,
		`{"response":{"a":1},"response":"text"}`,
		`{"response":"text","response":{"b":[{}]}}`,
		` {"r\u0065sponse" : { "x" : null } } `,
		`{"response":{}}`, `{}`, `[]`, `{"response":{`, `{"response":{"a":1,}}`,
	} {
		f.Add([]byte(s), "response")
	}
	f.Fuzz(func(t *testing.T, b []byte, name string) {
		members, inner, object, valid := MembersWithin(b, name, nil, nil)
		wantMembers, wantObject, wantValid := Members(b, nil)
		if valid != wantValid || valid && (object != wantObject || !slices.Equal(members, wantMembers)) {
			t.Fatalf("MembersWithin(%q) = %v, %v, %v; Members gives %v, %v, %v", b, members, object, valid, wantMembers, wantObject, wantValid)
		}
		if !valid {
			return
		}
		var want []Member
		for _, m := range wantMembers {
			if string(m.Name(b)) != name {
				continue
			}
			sub, isObject, _ := Members(m.Value(b), nil)
			want = nil
			if isObject {
				want = []Member{}
				for _, s := range sub {
					want = append(want, Member{s.KeyStart + m.ValueStart, s.KeyEnd + m.ValueStart, s.ValueStart + m.ValueStart, s.ValueEnd + m.ValueStart})
				}
			}
		}
		if (inner == nil) != (want == nil) || !slices.Equal(inner, want) {
			t.Fatalf("MembersWithin(%q, %q) inner %v, want %v", b, name, inner, want)
		}
	})
}

// An object read within counts toward the nesting limit as it does when
// it is only checked.
func TestMembersWithinNestingLimit(t *testing.T) {
	for _, k := range []int{MaxDepth - 3, MaxDepth - 2, MaxDepth - 1} {
		b := []byte(`{"r":{"a":` + strings.Repeat("[", k) + strings.Repeat("]", k) + `}}`)
		if _, _, _, valid := MembersWithin(b, "r", nil, nil); valid != Valid(b) || valid != (k <= MaxDepth-2) {
			t.Errorf("%d nested arrays within: valid %v, Valid %v", k, valid, Valid(b))
		}
	}
}
