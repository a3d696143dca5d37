package openai

import (
	"bytes"
	"testing"

	"github.com/tidwall/gjson"
)

func TestFixProviderReasoning(t *testing.T) {
	for _, f := range fixtures(t, "reasoning") {
		t.Run(f.name(), func(t *testing.T) {
			in := f.must(t, "in.json")
			got := FixProviderReasoning(in)
			if _, unchanged := f.get("unchanged"); unchanged {
				if !bytes.Equal(got, in) || &got[0] != &in[0] {
					t.Fatalf("want the input back untouched, got\n%s", got)
				}
				return
			}
			f.check(t, "want.json", got, false)
			if again := FixProviderReasoning(got); !bytes.Equal(again, got) {
				t.Errorf("the fix is not idempotent:\n%s", again)
			}
		})
	}
}

// The item and part variants, used on stream events, agree with the whole
// response fix on every fixture.
func TestFixReasoningItemAndPart(t *testing.T) {
	for _, f := range fixtures(t, "reasoning") {
		in := f.must(t, "in.json")
		want := FixProviderReasoning(in)
		wantOut := gjson.GetBytes(want, "output").Array()
		for i, item := range gjson.GetBytes(in, "output").Array() {
			if got := FixReasoningItem([]byte(item.Raw)); string(got) != wantOut[i].Raw {
				t.Errorf("%s: item %d: got %s, want %s", f.name(), i, got, wantOut[i].Raw)
			}
			if !isString(item.Get("type"), "reasoning") {
				continue
			}
			wantParts := wantOut[i].Get("content").Array()
			for j, part := range item.Get("content").Array() {
				if got := FixReasoningPart([]byte(part.Raw)); string(got) != wantParts[j].Raw {
					t.Errorf("%s: item %d part %d: got %s, want %s", f.name(), i, j, got, wantParts[j].Raw)
				}
			}
		}
	}
}

func TestFixProviderReasoningNotJSON(t *testing.T) {
	for _, in := range []string{``, `{`, `{"output":[{"type":"reasoning","content":[{"type":"output_text","text":"a"}]}]`, `[1,2]`, `"x"`} {
		if got := FixProviderReasoning([]byte(in)); string(got) != in {
			t.Errorf("FixProviderReasoning(%q) = %q, want it unchanged", in, got)
		}
	}
}

// An answer with nothing to fix is read where it lies: most answers are
// passed on as they came, and copying their output to look at it was an
// allocation the size of the answer.
func TestFixProviderReasoningNothingToFixAllocatesNothing(t *testing.T) {
	resp := FixProviderReasoning(benchResponse(8 << 10))
	if allocs := testing.AllocsPerRun(20, func() { FixProviderReasoning(resp) }); allocs != 0 {
		t.Errorf("%v allocations per answer with nothing to fix, want 0", allocs)
	}
}

func TestMayHaveReasoningItem(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp string
		want bool
	}{
		{"a plain answer: the word only as a key", `{"reasoning":{"effort":null,"summary":null},"output":[{"type":"message"}]}`, false},
		{"a key before spaces and a colon", "{\"reasoning\" \t\r\n: {}}", false},
		{"no word at all", `{"output":[]}`, false},
		{"a value", `{"output":[{"type":"reasoning"}]}`, true},
		{"a value before white space", "{\"output\":[{\"type\":\"reasoning\"\n}]}", true},
		{"a value in an array", `["reasoning"]`, true},
		{"the word last", `"reasoning"`, true},
		{"an escape anywhere", `{"reasoning":{},"text":"caf\u00e9"}`, true},
		{"quoted inside a string", `{"text":"say \"reasoning\" twice"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mayHaveReasoningItem([]byte(tc.resp)); got != tc.want {
				t.Errorf("mayHaveReasoningItem(%s) = %v, want %v", tc.resp, got, tc.want)
			}
		})
	}
}
