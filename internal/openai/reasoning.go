package openai

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/jsonl"
)

// Some Responses-compatible providers put a reasoning item's text in a
// content part typed `output_text`, which only message items may carry, so
// the response fails validation. The fix renames that discriminator to
// `reasoning_text`, but only for a part that is unmistakably reasoning
// text in the wrong costume: a string `text` and nothing else except an
// empty `annotations: []`. Any other shape may mean something we do not
// know, so it is left for validation to judge.

const reasoningTextType = `"reasoning_text"`

// FixProviderReasoning applies the provider reasoning fix to every
// `reasoning` item in a Responses object's `output`. It returns resp itself
// when nothing applies (including when resp is not JSON); otherwise only the
// renamed discriminators differ.
//
// Most answers need no fix, and come back as they are whether or not they
// are JSON, so the answer is walked first and validated only when there is
// something to edit: gjson reads invalid JSON without failing, and edits
// found in it are dropped.
func FixProviderReasoning(resp []byte) []byte {
	if !mayHaveReasoningItem(resp) {
		return resp
	}
	// In place: output is most of an answer, and nothing read here
	// outlives resp or writes to it.
	output := jsonl.GetInPlace(resp, "output")
	if !output.IsArray() {
		return resp
	}
	var edits []edit
	elems(output, func(_ int, item gjson.Result) bool {
		edits = appendReasoningFixes(edits, item)
		return true
	})
	if len(edits) == 0 || !jsonl.Valid(resp) {
		return resp
	}
	return splice(resp, edits)
}

// mayHaveReasoningItem is false when no string value in resp can be
// "reasoning", so no item is typed reasoning and nothing is walked: most
// answers carry the word only as the key of their top-level `reasoning`
// object. A string that decodes to "reasoning" is those nine letters
// between quotes unless it escapes one as \uXXXX; a value is never
// followed by a colon.
func mayHaveReasoningItem(resp []byte) bool {
	if bytes.Contains(resp, []byte(`\u`)) {
		return true
	}
	const quoted = `"reasoning"`
	for rest := resp; ; {
		i := bytes.Index(rest, []byte(quoted))
		if i < 0 {
			return false
		}
		rest = bytes.TrimLeft(rest[i+len(quoted):], " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			return true
		}
	}
}

// FixReasoningItem applies the fix to one output item, as carried by a
// `response.output_item.added`/`.done` event.
func FixReasoningItem(item []byte) []byte {
	if !jsonl.Valid(item) {
		return item
	}
	return splice(item, appendReasoningFixes(nil, gjson.ParseBytes(item)))
}

// FixReasoningPart applies the fix to one content part of a reasoning item,
// as carried by a `response.content_part.added`/`.done` event; the caller
// knows from the event's output_index that the part belongs to reasoning.
func FixReasoningPart(part []byte) []byte {
	if !jsonl.Valid(part) {
		return part
	}
	p := gjson.ParseBytes(part)
	if !isMiscastReasoningPart(p) {
		return part
	}
	e, ok := replaceValue(p.Get("type"), reasoningTextType)
	if !ok {
		return part
	}
	return splice(part, []edit{e})
}

func appendReasoningFixes(edits []edit, item gjson.Result) []edit {
	if !item.IsObject() || !isString(item.Get("type"), "reasoning") {
		return edits
	}
	content := item.Get("content")
	if !content.IsArray() {
		return edits
	}
	elems(content, func(_ int, part gjson.Result) bool {
		if isMiscastReasoningPart(part) {
			// Result.Get reports offsets in the whole document, not in part.
			if e, ok := replaceValue(part.Get("type"), reasoningTextType); ok {
				edits = append(edits, e)
			}
		}
		return true
	})
	return edits
}

// isMiscastReasoningPart is the exact boundary of the fix: type
// "output_text", a string text, and no member but those two and an
// optional empty annotations array.
func isMiscastReasoningPart(part gjson.Result) bool {
	if !part.IsObject() || !isString(part.Get("type"), "output_text") || part.Get("text").Type != gjson.String {
		return false
	}
	n, repeated := memberCount(part)
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
