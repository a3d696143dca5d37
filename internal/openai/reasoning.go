package openai

import (
	"bytes"

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
// Most answers need no fix, and come back as they are after one read of
// them: the walk that looks for miscast parts is also the check that the
// answer is valid JSON, skipping what it does not look into with
// jsonl.ValueEnd, as jsonl.Valid would.
func FixProviderReasoning(resp []byte) []byte {
	if !mayHaveReasoningItem(resp) {
		return resp
	}
	return fixWhole(resp, answerFixes)
}

// fixer reads the object at b[open], nesting at most depth containers, as
// jsonl.ValueEnd would: the index just past it (-1 when it is not valid),
// and edits with its fixes added.
type fixer func(b []byte, open, depth int, edits []edit) (int, []edit)

// fixWhole applies fix to doc, an object with nothing but white space
// around it, when doc is valid JSON; otherwise, or when fix finds nothing,
// it returns doc itself.
func fixWhole(doc []byte, fix fixer) []byte {
	open := jsonl.SkipSpace(doc, 0)
	if byteAt(doc, open) != '{' {
		return doc
	}
	end, edits := fix(doc, open, jsonl.MaxDepth, nil)
	if end < 0 || jsonl.SkipSpace(doc, end) != len(doc) {
		return doc
	}
	return splice(doc, edits)
}

// answerFixes reads a Responses object at b[open] as outputFixes reads a
// value: the fixes of the reasoning items in its first `output`.
func answerFixes(b []byte, open, depth int, edits []edit) (int, []edit) {
	seenOutput := false
	end := eachMember(b, open, depth, func(name []byte, at, depth int) (valueEnd int) {
		if seenOutput || !stringIs(name, "output") {
			return jsonl.ValueEnd(b, at, depth)
		}
		seenOutput = true
		valueEnd, edits = outputFixes(b, at, depth, edits)
		return valueEnd
	})
	return end, edits
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
func FixReasoningItem(item []byte) []byte { return fixWhole(item, itemFixes) }

// FixReasoningPart applies the fix to one content part of a reasoning item,
// as carried by a `response.content_part.added`/`.done` event; the caller
// knows from the event's output_index that the part belongs to reasoning.
func FixReasoningPart(part []byte) []byte { return fixWhole(part, partFix) }

// outputFixes reads the value of `output` at b[at], nesting at most depth
// containers: the index just past it (-1 when it is not valid JSON), and
// edits with the fixes of its reasoning items added.
func outputFixes(b []byte, at, depth int, edits []edit) (int, []edit) {
	if byteAt(b, at) != '[' {
		return jsonl.ValueEnd(b, at, depth), edits
	}
	return elementFixes(b, at, depth, edits, itemFixes)
}

// elementFixes reads the array at b[open] as outputFixes reads a value,
// giving each element that is an object to fix.
func elementFixes(b []byte, open, depth int, edits []edit, fix fixer) (int, []edit) {
	if depth == 0 {
		return -1, edits
	}
	i, end := jsonl.Enter(b, open, '[')
	for end == 0 {
		var elemEnd int
		if byteAt(b, i) == '{' {
			elemEnd, edits = fix(b, i, depth-1, edits)
		} else {
			elemEnd = jsonl.ValueEnd(b, i, depth-1)
		}
		if elemEnd < 0 {
			return -1, edits
		}
		i, end = jsonl.Next(b, elemEnd, ']')
	}
	return end, edits
}

// itemFixes is outputFixes for one item, an object at b[open]: the fixes
// of its content parts when its first `type` is "reasoning". The content
// is walked as it is read when the type came before it, as it does in
// every answer seen; otherwise it is walked again once the type is known.
func itemFixes(b []byte, open, depth int, edits []edit) (int, []edit) {
	seenType, reasoning, seenContent := false, false, false
	later := -1 // where the content starts, when it came before the type
	end := eachMember(b, open, depth, func(name []byte, at, depth int) (valueEnd int) {
		switch {
		case !seenType && stringIs(name, "type"):
			seenType = true
			valueEnd = jsonl.ValueEnd(b, at, depth)
			reasoning = valueEnd >= 0 && stringIs(b[at:valueEnd], "reasoning")
			return valueEnd
		case !seenContent && stringIs(name, "content"):
			seenContent = true
			switch {
			case byteAt(b, at) == '[' && reasoning:
				valueEnd, edits = elementFixes(b, at, depth, edits, partFix)
				return valueEnd
			case byteAt(b, at) == '[' && !seenType:
				later = at
			}
		}
		return jsonl.ValueEnd(b, at, depth)
	})
	if end >= 0 && reasoning && later >= 0 {
		_, edits = elementFixes(b, later, depth-1, edits, partFix)
	}
	return end, edits
}

// partFix reads one content part, an object at b[open], and adds its fix
// to edits when it is miscast. That is the exact boundary of the fix: type
// "output_text", a string text, and no member but those two and an
// optional empty annotations array. A part with a name twice is left
// alone (parsers read a repeated name differently): with at most three
// members, the names a fix needs leave no room for one.
func partFix(b []byte, open, depth int, edits []edit) (int, []edit) {
	n := 0
	typeAt, typeEnd := -1, -1
	text, emptyAnnotations := false, false
	end := eachMember(b, open, depth, func(name []byte, at, depth int) int {
		valueEnd := jsonl.ValueEnd(b, at, depth)
		if valueEnd < 0 {
			return -1
		}
		switch {
		case stringIs(name, "type"):
			typeAt, typeEnd = at, valueEnd
		case stringIs(name, "text"):
			text = b[at] == '"'
		case stringIs(name, "annotations"):
			emptyAnnotations = b[at] == '[' && b[jsonl.SkipSpace(b, at+1)] == ']'
		}
		n++
		return valueEnd
	})
	if end < 0 || typeAt < 0 || !text || !stringIs(b[typeAt:typeEnd], "output_text") || !(n == 2 || n == 3 && emptyAnnotations) {
		return end, edits
	}
	return end, append(edits, edit{start: typeAt, end: typeEnd, repl: reasoningTextType})
}

// eachMember reads the object at b[open], nesting at most depth
// containers, as jsonl.ValueEnd would, except that each member's value is
// read by value, given the member's name (a JSON string token) and where
// its value starts; value returns the index just past it, or -1 when it
// is not valid. eachMember returns the index just past the object, or -1.
func eachMember(b []byte, open, depth int, value func(name []byte, at, depth int) int) int {
	if depth == 0 {
		return -1
	}
	i, end := jsonl.Enter(b, open, '{')
	for end == 0 {
		keyEnd, at := jsonl.MemberKey(b, i)
		if at < 0 {
			return -1
		}
		valueEnd := value(b[i:keyEnd], jsonl.SkipSpace(b, at), depth-1)
		if valueEnd < 0 {
			return -1
		}
		i, end = jsonl.Next(b, valueEnd, '}')
	}
	return end
}

// stringIs reports whether the token tok, already read as valid, is a
// JSON string that decodes to s.
func stringIs(tok []byte, s string) bool {
	return len(tok) >= 2 && tok[0] == '"' && string(jsonl.Unquote(tok)) == s
}

// byteAt is b[i], or 0 past its end, where a value is missing.
func byteAt(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}
