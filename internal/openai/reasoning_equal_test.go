package openai

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/jsonl"
)

// fixByValidatingFirst is FixProviderReasoning as it first was: validate,
// then look for the fixes with gjson. The one-read walk must give the same
// bytes for every input.
func fixByValidatingFirst(resp []byte) []byte {
	if !jsonl.Valid(resp) {
		return resp
	}
	output := gjson.GetBytes(resp, "output")
	if !output.IsArray() {
		return resp
	}
	var edits []edit
	elems(output, func(_ int, item gjson.Result) bool {
		edits = gjsonReasoningFixes(edits, item)
		return true
	})
	return splice(resp, edits)
}

// fixItemWithGJSON and fixPartWithGJSON are FixReasoningItem and
// FixReasoningPart as they were, with gjson.
func fixItemWithGJSON(item []byte) []byte {
	if !jsonl.Valid(item) {
		return item
	}
	return splice(item, gjsonReasoningFixes(nil, gjson.ParseBytes(item)))
}

func fixPartWithGJSON(part []byte) []byte {
	if !jsonl.Valid(part) {
		return part
	}
	p := gjson.ParseBytes(part)
	if !gjsonMiscastPart(p) {
		return part
	}
	e, ok := replaceValue(p.Get("type"), reasoningTextType)
	if !ok {
		return part
	}
	return splice(part, []edit{e})
}

func gjsonReasoningFixes(edits []edit, item gjson.Result) []edit {
	if !item.IsObject() || !isString(item.Get("type"), "reasoning") {
		return edits
	}
	content := item.Get("content")
	if !content.IsArray() {
		return edits
	}
	elems(content, func(_ int, part gjson.Result) bool {
		if gjsonMiscastPart(part) {
			// Result.Get reports offsets in the whole document, not in part.
			if e, ok := replaceValue(part.Get("type"), reasoningTextType); ok {
				edits = append(edits, e)
			}
		}
		return true
	})
	return edits
}

func gjsonMiscastPart(part gjson.Result) bool {
	if !part.IsObject() || !isString(part.Get("type"), "output_text") || part.Get("text").Type != gjson.String {
		return false
	}
	n := 0
	seen := map[string]bool{}
	repeated := false
	part.ForEach(func(k, _ gjson.Result) bool {
		n++
		repeated = repeated || seen[k.Str]
		seen[k.Str] = true
		return true
	})
	if repeated {
		return false
	}
	switch n {
	case 2:
		return true
	case 3:
		ann := part.Get("annotations")
		return ann.IsArray() && len(ann.Array()) == 0
	}
	return false
}

var miscast = `{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"output_text","text":"thinking"}]}`

var fixCases = []string{
	`{"output":[` + miscast + `]}`,
	`{"output":[` + miscast + `]`, // cut off: not JSON, so left alone
	`{"output":[` + miscast + `]}}`,
	`{"output":[` + miscast + `,]}`,
	`{"output":[` + miscast + `], "x": tru}`,
	`{"output":[{"type":"reasoning","content":[{"type":"output_text","text":"t","annotations":[]}]}]} x`,
	`{"output":[{"type":"message","content":[{"type":"output_text","text":"t"}]}]}`,
	`{"output":[{"type":"reasoning","content":[{"type":"output_text","text":"t","extra":1}]}]}`,
	`{"output":{"type":"reasoning"}}`, `{"output":[]}`, `{}`, ``, `[`, `{"output":[` + miscast,
	"{\"output\":[" + miscast + "]}\n",
	// The type spelled with an escape, beside the plain answer's key: the
	// check before the walk must not take either for "no reasoning item".
	`{"reasoning":{"effort":null},"output":[{"type":"reasonin\u0067","content":[{"type":"output_text","text":"t"}]}]}`,
	`{"reasoning" :{},"output":[{"type":"reasoning","content":[{"type":"output_text","text":"t"}]}]}`,
	`{"reasoning":{},"output":[{"type":"reasoning"` + "\n" + `,"content":[{"type":"output_text","text":"t"}]}]}`,
	`{"reasoning":{},"output":[{"type":"message","content":[{"type":"output_text","text":"a \"reasoning\""}]}]}`,
	// The first of a repeated name is the one read, and a part with one
	// is left alone.
	`{"output":[],"output":[` + miscast + `]}`,
	`{"output":[{"type":"message","type":"reasoning","content":[{"type":"output_text","text":"t"}]}]}`,
	`{"output":[{"type":"reasoning","content":[],"content":[{"type":"output_text","text":"t"}]}]}`,
	`{"output":[{"type":"reasoning","content":[{"type":"output_text","text":"t","text":"u"}]}]}`,
	`{"output":[{"type":"reasoning","content":[{"type":"output_text","text":"t","t\u0065xt":"u"}]}]}`,
	`{"output":[{"type":"reasoning","content":[{"type":"output_text","t\u0065xt":"u"}]}]}`,
	`{"output":[{"type":"reasoning","content":[{"type":"output_text","type":"output_text"}]}]}`,
	// Names and values spelled with escapes, and the content before the type.
	`{"outpu\u0074":[{"typ\u0065":"reasoning","content":[{"type":"output_te\u0078t","text":"t"}]}]}`,
	`{"output":[{"content":[{"type":"output_text","text":"t"},{"type":"output_text","text":1}],"type":"reasoning"}]}`,
	`{"output":[{"content":[{"type":"output_text","text":"t"}],"type":"message"}]}`,
	`{"output":[{"type":"reasoning","content":[{"type":"output_text","text":"t","annotations":[ ]}, {"type":"output_text","text":"t","annotations":[1]}, {"type":"output_text","text":"t","annotations":{}}, 7, [], {"type":"output_text","annotations":[],"text":""}]}, 3, "reasoning"]}`,
	// An item and a part alone, as streamed events carry them.
	miscast,
	`{"type":"output_text","text":"t"}`,
	` {"text":"t","type":"output_text","annotations":[]} `,
	`{"type":"output_text","text":"t","annotations":[]} x`,
	`{"type":"output_text","text":"t","type":"output_text"}`,
}

func TestFixProviderReasoningMatchesValidatingFirst(t *testing.T) {
	for _, in := range fixCases {
		checkFix(t, []byte(in))
	}
	// Nested as deep as jsonl.Valid takes (the answer, its output, the
	// item, its content and the arrays beside the part), and one deeper.
	for _, pad := range []int{jsonl.MaxDepth - 4, jsonl.MaxDepth - 3} {
		in := `{"output":[{"type":"reasoning","content":[{"type":"output_text","text":"t"},` +
			strings.Repeat("[", pad) + strings.Repeat("]", pad) + `]}]}`
		checkFix(t, []byte(in))
		if fixed := !bytes.Equal(FixProviderReasoning([]byte(in)), []byte(in)); fixed != (pad == jsonl.MaxDepth-4) {
			t.Errorf("nested %d deep: fixed %v", pad+4, fixed)
		}
	}
}

func FuzzFixProviderReasoningMatchesValidatingFirst(f *testing.F) {
	for _, in := range fixCases {
		f.Add([]byte(in))
	}
	seedSections(f, func(b []byte) { f.Add(b) }, []string{"in.json"}, "reasoning")
	f.Fuzz(checkFix)
}

func checkFix(t *testing.T, in []byte) {
	want := fixByValidatingFirst(in)
	if got := FixProviderReasoning(in); !bytes.Equal(got, want) {
		t.Fatalf("FixProviderReasoning(%q) = %q; validating first gives %q", in, got, want)
	}
	for _, w := range []struct {
		name      string
		got, want []byte
	}{
		{"FixReasoningItem", FixReasoningItem(in), fixItemWithGJSON(in)},
		{"FixReasoningPart", FixReasoningPart(in), fixPartWithGJSON(in)},
	} {
		if !bytes.Equal(w.got, w.want) {
			t.Fatalf("%s(%q) = %q; with gjson %q", w.name, in, w.got, w.want)
		}
	}
}

// BenchmarkFixProviderReasoningWays compares the two ways on a 50 KiB
// answer with miscast parts and on the same answer once fixed (the common
// case: nothing to fix).
func BenchmarkFixProviderReasoningWays(b *testing.B) {
	for _, answer := range []struct {
		name string
		resp []byte
	}{{"to-fix", benchResponse(50 << 10)}, {"nothing-to-fix", FixProviderReasoning(benchResponse(50 << 10))}} {
		for _, way := range []struct {
			name string
			fn   func([]byte) []byte
		}{{"validating-first", fixByValidatingFirst}, {"walking-first", FixProviderReasoning}} {
			b.Run(answer.name+"/"+way.name, func(b *testing.B) {
				b.SetBytes(int64(len(answer.resp)))
				b.ReportAllocs()
				for b.Loop() {
					way.fn(answer.resp)
				}
			})
		}
	}
}
