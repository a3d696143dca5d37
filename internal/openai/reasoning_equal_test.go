package openai

import (
	"bytes"
	"testing"

	"github.com/tidwall/gjson"
)

// fixByValidatingFirst is FixProviderReasoning as it was: validate, then
// walk. The walk-first way must give the same bytes for every input.
func fixByValidatingFirst(resp []byte) []byte {
	if !gjson.ValidBytes(resp) {
		return resp
	}
	output := gjson.GetBytes(resp, "output")
	if !output.IsArray() {
		return resp
	}
	var edits []edit
	elems(output, func(_ int, item gjson.Result) bool {
		edits = appendReasoningFixes(edits, item)
		return true
	})
	return splice(resp, edits)
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
}

func TestFixProviderReasoningMatchesValidatingFirst(t *testing.T) {
	for _, in := range fixCases {
		checkFix(t, []byte(in))
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
