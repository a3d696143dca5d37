package resources

import (
	"strings"
	"unicode"

	"github.com/tidwall/gjson"
)

// OutputText is the Responses API's output_text of a response body: the
// text of every output_text part of every message item, joined with
// nothing between them (the OpenAI SDK's property that NeMo Gym's verifiers
// read). Reasoning items and tool calls do not count.
func OutputText(response []byte) string {
	var b strings.Builder
	gjson.GetBytes(response, "output").ForEach(func(_, item gjson.Result) bool {
		if item.Get("type").Str != "message" {
			return true
		}
		item.Get("content").ForEach(func(_, part gjson.Result) bool {
			if part.Get("type").Str == "output_text" {
				b.WriteString(part.Get("text").Str)
			}
			return true
		})
		return true
	})
	return b.String()
}

// IsPySpace reports whether Python's str.isspace() holds for r, which is
// what str.strip() and str.split() without arguments go by: Unicode white
// space plus the ASCII information separators U+001C–U+001F.
func IsPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// PyStrip is Python's str.strip() with no arguments.
func PyStrip(s string) string { return strings.TrimFunc(s, IsPySpace) }

// PySpaceClass is a regexp character class matching what Python's \s
// matches in a str pattern; Go's \s is ASCII only.
const PySpaceClass = `[\t\n\v\f\r \x{1c}-\x{1f}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]`
