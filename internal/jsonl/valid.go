package jsonl

import (
	"bytes"
	"unsafe"
)

// MaxDepth is the deepest nesting Valid accepts: encoding/json's limit.
const MaxDepth = 10000

// Valid is whether b is one JSON value as encoding/json accepts it,
// nesting limits included. It reads b once, keeping the open containers
// on a stack of its own rather than recursing, so that a line of ten
// million '[' gets an answer instead of overflowing the goroutine stack.
func Valid(b []byte) bool {
	var fixed [64]byte
	open := fixed[:0] // '{' or '[' for each container not yet closed
	i, haveValue := 0, false
	for {
		if !haveValue {
			if i = skipSpace(b, i); i >= len(b) {
				return false
			}
			switch c := b[i]; {
			case c == '{' || c == '[':
				if len(open) == MaxDepth {
					return false
				}
				open = append(open, c)
				i = skipSpace(b, i+1)
				if i < len(b) && b[i] == c+2 { // '}' or ']', empty
					open = open[:len(open)-1]
					i++
					haveValue = true
				} else if c == '{' {
					if i = memberKey(b, i); i < 0 {
						return false
					}
				}
				continue
			case c == '"':
				i = stringEnd(b, i)
			case c == '-' || c >= '0' && c <= '9':
				i = numberEnd(b, i)
			case c == 't':
				i = literalEnd(b, i, "true")
			case c == 'f':
				i = literalEnd(b, i, "false")
			case c == 'n':
				i = literalEnd(b, i, "null")
			default:
				return false
			}
			if i < 0 {
				return false
			}
			haveValue = true
		}
		i = skipSpace(b, i)
		if len(open) == 0 {
			return i == len(b)
		}
		if i >= len(b) {
			return false
		}
		top := open[len(open)-1]
		switch b[i] {
		case ',':
			haveValue = false
			if top == '{' {
				if i = memberKey(b, skipSpace(b, i+1)); i < 0 {
					return false
				}
			} else {
				i++
			}
		case top + 2: // the closer of the innermost container
			open = open[:len(open)-1]
			i++
		default:
			return false
		}
	}
}

// ValidString is Valid of a string.
func ValidString(s string) bool {
	return Valid(unsafe.Slice(unsafe.StringData(s), len(s)))
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// memberKey reads an object member's key and its colon from b[i]; the
// index after the colon, or -1.
func memberKey(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = stringEnd(b, i); i < 0 {
		return -1
	}
	if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return i + 1
}

// stringChar marks the bytes a string cannot hold as they are: the
// quote, the backslash and the control characters.
var stringChar = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// stringEnd is the index just past the string that opens at b[i], or -1
// when it is not a valid one.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		c := b[i]
		if !stringChar[c] {
			continue
		}
		switch c {
		case '"':
			return i + 1
		case '\\':
			if i++; i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return -1
				}
				i += 4
			default:
				return -1
			}
		default:
			return -1 // a control character
		}
	}
	return -1
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// numberEnd is the index just past the number that starts at b[i], or -1.
func numberEnd(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digitsEnd(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if j := digitsEnd(b, i+1); j > i+1 {
			i = j
		} else {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if j := digitsEnd(b, i); j > i {
			i = j
		} else {
			return -1
		}
	}
	return i
}

func digitsEnd(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// literalEnd is the index just past word at b[i], or -1.
func literalEnd(b []byte, i int, word string) int {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
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
