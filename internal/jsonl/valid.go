package jsonl

import (
	"bytes"
	"unsafe"

	"github.com/tidwall/gjson"
)

// MaxDepth is the deepest nesting Valid accepts: encoding/json's limit.
const MaxDepth = 10000

// Valid is whether b is one JSON value as encoding/json accepts it,
// nesting limits included. gjson's validator, which it uses, recurses once
// per level of nesting: a line of ten million '[' would overflow the
// goroutine stack and crash the process, so the depth is checked first,
// without recursion.
func Valid(b []byte) bool { return shallow(b) && gjson.ValidBytes(b) }

// ValidString is Valid of a string.
func ValidString(s string) bool {
	return Valid(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// shallow is whether b's brackets, outside its strings, nest no deeper
// than MaxDepth. Strings are skipped to their closing quote with
// bytes.IndexByte.
func shallow(b []byte) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			end := StringEnd(b, i)
			if end > len(b) {
				return true // unterminated: gjson says no
			}
			i = end - 1
		case '[', '{':
			if depth++; depth > MaxDepth {
				return false
			}
		case ']', '}':
			depth--
		}
	}
	return true
}

// StringEnd is the index just past the JSON string that opens at
// b[open], found with bytes.IndexByte rather than a byte at a time
// (strings are most of a rollout); len(b)+1 when it does not close.
func StringEnd(b []byte, open int) int {
	for j := open + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b) + 1
		}
		j += k
		backslashes := 0
		for p := j - 1; p > open && b[p] == '\\'; p-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return j + 1
		}
		j++
	}
}
