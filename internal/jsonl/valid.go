package jsonl

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"unsafe"
)

// MaxDepth is the deepest nesting Valid accepts: encoding/json's limit.
const MaxDepth = 10000

// Valid is whether b is one JSON value as encoding/json accepts it,
// nesting limits included. It reads b once, keeping the open containers
// on a stack of its own rather than recursing, so that a line of ten
// million '[' gets an answer instead of overflowing the goroutine stack.
func Valid(b []byte) bool {
	i := ValueEnd(b, 0, MaxDepth)
	return i >= 0 && SkipSpace(b, i) == len(b)
}

// ValidString is Valid of a string.
func ValidString(s string) bool {
	return Valid(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// OpensObject is whether the first byte of b past white space opens an
// object: for valid JSON, whether it is one.
func OpensObject(b []byte) bool {
	i := SkipSpace(b, 0)
	return i < len(b) && b[i] == '{'
}

// Member is where one member of an object is in its line: the key with
// its quotes, and the value.
type Member struct {
	KeyStart, KeyEnd, ValueStart, ValueEnd int
}

// Key is the member's key as written, without its quotes (escapes are
// left as they are).
func (m Member) Key(b []byte) []byte { return b[m.KeyStart+1 : m.KeyEnd-1 : m.KeyEnd-1] }

// Name is the member's key as a JSON decoder reads it (Unquote).
func (m Member) Name(b []byte) []byte { return Unquote(b[m.KeyStart:m.KeyEnd]) }

// Unquote is the string token tok, already read as valid (its quotes
// included), as a JSON decoder reads it: the bytes between its quotes,
// unless they have escapes, which are decoded (into new storage).
func Unquote(tok []byte) []byte {
	k := tok[1 : len(tok)-1 : len(tok)-1]
	if bytes.IndexByte(k, '\\') < 0 {
		return k
	}
	var s string
	if json.Unmarshal(tok, &s) != nil {
		return k // not reached for a valid token
	}
	return []byte(s)
}

// Value is the member's value as written. Its capacity ends with it, so
// that an append to it never writes over the rest of b.
func (m Member) Value(b []byte) []byte { return b[m.ValueStart:m.ValueEnd:m.ValueEnd] }

// Members is Valid that also finds, when b is an object, where each of its
// own members is (nested objects' members are not listed), in the same
// single read of b: the members are appended to dst. object says whether b
// is an object; both are meaningful only when valid.
func Members(b []byte, dst []Member) (members []Member, object, valid bool) {
	members, object, valid, _ = MembersLayout(b, dst)
	return members, object, valid
}

// MembersLayout is Members that also says, in the same read, whether b has
// white space outside its strings (before or after the value included).
// When valid b has none, it and each of its values are already what
// json.Compact would make of them.
func MembersLayout(b []byte, dst []Member) (members []Member, object, valid, spaced bool) {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		end, spaced := layoutEnd(b, i, MaxDepth)
		return dst, false, end >= 0 && SkipSpace(b, end) == len(b), spaced || i > 0 || end != len(b)
	}
	members, _, _, end, spaced := membersAt(b, i, dst, MaxDepth, false, "", nil)
	return members, true, end >= 0 && SkipSpace(b, end) == len(b), spaced || i > 0 || end != len(b)
}

// MembersWithin is Members that also finds, in the same read, the members
// of b's last member named name (keys compared as decoded) when that is an
// object, appended to within: nil when it is not one or there is none.
// The members of a transcript's response, most of a record, come with the
// record's own.
func MembersWithin(b []byte, name string, dst, within []Member) (members, inner []Member, object, valid bool) {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		end, _ := layoutEnd(b, i, MaxDepth)
		return dst, nil, false, end >= 0 && SkipSpace(b, end) == len(b)
	}
	members, inner, found, end, _ := membersAt(b, i, dst, MaxDepth, true, name, within)
	switch {
	case !found:
		inner = nil
	case inner == nil: // an empty object, and no storage given
		inner = []Member{}
	}
	return members, inner, true, end >= 0 && SkipSpace(b, end) == len(b)
}

// MembersAt is Members of the object that opens at b[open], which more of
// b may follow: its members appended to dst, and the index just past it;
// end is -1 when it is not a valid object.
func MembersAt(b []byte, open int, dst []Member) (members []Member, end int) {
	members, _, _, end, _ = membersAt(b, open, dst, MaxDepth, false, "", nil)
	return members, end
}

// membersAt is MembersAt of an object that may nest depth containers,
// itself included, that also says whether it has white space outside its
// strings and, when expand, reads the members of its last member named
// name into within when that is an object (found).
func membersAt(b []byte, open int, dst []Member, depth int, expand bool, name string, within []Member) (members, inner []Member, found bool, end int, spaced bool) {
	i, end := Enter(b, open, '{')
	spaced = end == 0 && i != open+1 || end > open+2
	for end == 0 {
		m := Member{KeyStart: i}
		if m.KeyEnd, i = MemberKey(b, i); i < 0 {
			return dst, inner, found, -1, spaced
		}
		m.ValueStart = SkipSpace(b, i)
		var valueSpaced bool
		named := expand && keyIs(b[m.KeyStart:m.KeyEnd], name)
		if named {
			found = m.ValueStart < len(b) && b[m.ValueStart] == '{'
		}
		if named && found {
			inner, _, _, m.ValueEnd, valueSpaced = membersAt(b, m.ValueStart, within[:0], depth-1, false, "", nil)
		} else {
			m.ValueEnd, valueSpaced = layoutEnd(b, m.ValueStart, depth-1)
		}
		if m.ValueEnd < 0 {
			return dst, inner, found, -1, spaced
		}
		spaced = spaced || valueSpaced || m.KeyEnd+1 != i || m.ValueStart != i
		dst = append(dst, m)
		at := m.ValueEnd
		i, end = Next(b, at, '}')
		spaced = spaced || end == 0 && i != at+1 || end > at+1
	}
	return dst, inner, found, end, spaced
}

// keyIs says whether the key token tok decodes to name. An escaped key is
// decoded from a copy: Unquote's decoder would move what it is given, and
// so a whole line held on the stack, to the heap.
func keyIs(tok []byte, name string) bool {
	if k := tok[1 : len(tok)-1]; bytes.IndexByte(k, '\\') < 0 {
		return string(k) == name
	}
	return string(Unquote(bytes.Clone(tok))) == name
}

// Span is where a value is in its line.
type Span struct{ Start, End int }

// Elements is where each element of the array that opens at b[open] is,
// appended to dst, and the index just past the array; end is -1 when it
// is not a valid array.
func Elements(b []byte, open int, dst []Span) (elements []Span, end int) {
	i, end := Enter(b, open, '[')
	for end == 0 {
		e := Span{Start: SkipSpace(b, i)}
		if e.End = ValueEnd(b, e.Start, MaxDepth-1); e.End < 0 {
			return dst, -1
		}
		dst = append(dst, e)
		i, end = Next(b, e.End, ']')
	}
	return dst, end
}

// Enter opens the container that b[open] opens with opener: i is where
// its first entry starts, and end 0, or end is just past it when it is
// empty, or -1 when it does not open there.
func Enter(b []byte, open int, opener byte) (i, end int) {
	if open < 0 || open >= len(b) || b[open] != opener {
		return 0, -1
	}
	if i = SkipSpace(b, open+1); i < len(b) && b[i] == opener+2 { // '}' or ']'
		return 0, i + 1
	}
	return i, 0
}

// Next reads what follows an entry of a container that ends at b[at]: the
// start of the next entry (end 0), or end just past the container's
// closer, or -1 when neither follows.
func Next(b []byte, at int, closer byte) (i, end int) {
	if at = SkipSpace(b, at); at >= len(b) {
		return 0, -1
	}
	switch b[at] {
	case ',':
		return SkipSpace(b, at+1), 0
	case closer:
		return 0, at + 1
	}
	return 0, -1
}

// Lookup is the index among an object's members of the first named name,
// as gjson.Get finds a top-level key (keys compared as decoded), or -1.
func Lookup(b []byte, members []Member, name string) int {
	for i, m := range members {
		if string(m.Name(b)) == name {
			return i
		}
	}
	return -1
}

// ValueEnd is the index just past the JSON value that starts at or after
// white space at b[i], nesting at most depth containers, or -1 when there
// is no valid one.
func ValueEnd(b []byte, i, depth int) int {
	end, _ := layoutEnd(b, i, depth)
	return end
}

// layoutEnd is valueEnd that also says whether the value has white space
// outside its strings, or before it from b[i].
func layoutEnd(b []byte, i, depth int) (end int, spaced bool) {
	var fixed [64]byte
	open := fixed[:0] // '{' or '[' for each container not yet closed
	for {
		// A value starts here.
		j := SkipSpace(b, i)
		i, spaced = j, spaced || j != i
		if i >= len(b) {
			return -1, spaced
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(open) == depth {
				return -1, spaced
			}
			j := SkipSpace(b, i+1)
			i, spaced = j, spaced || j != i+1
			if i < len(b) && b[i] == c+2 { // '}' or ']', empty
				i++
				break
			}
			open = append(open, c)
			if c == '{' {
				keyEnd, j := MemberKey(b, i)
				if j < 0 {
					return -1, spaced
				}
				i, spaced = j, spaced || j != keyEnd+1
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
			return -1, spaced
		}
		if i < 0 {
			return -1, spaced
		}
		// A value ended here: close the containers it ends, up to the
		// next element.
		for next := false; !next; {
			if len(open) == 0 {
				return i, spaced
			}
			j := SkipSpace(b, i)
			i, spaced = j, spaced || j != i
			if i >= len(b) {
				return -1, spaced
			}
			switch top := open[len(open)-1]; b[i] {
			case ',':
				next = true
				if top == '{' {
					at := SkipSpace(b, i+1)
					keyEnd, j := MemberKey(b, at)
					if j < 0 {
						return -1, spaced
					}
					i, spaced = j, spaced || at != i+1 || j != keyEnd+1
				} else {
					i++
				}
			case top + 2: // the closer of the innermost container
				open = open[:len(open)-1]
				i++
			default:
				return -1, spaced
			}
		}
	}
}

// SkipSpace is the index of the first byte of b at or after i that is not
// JSON white space (len(b) when there is none).
func SkipSpace(b []byte, i int) int {
	// Every byte that may follow white space in valid JSON is above ' ':
	// one comparison passes it.
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// MemberKey reads an object member's key and its colon from b[i]: the
// index just past the key's closing quote and the one after the colon,
// or -1 for the second.
func MemberKey(b []byte, i int) (keyEnd, next int) {
	if i >= len(b) || b[i] != '"' {
		return 0, -1
	}
	if keyEnd = stringEnd(b, i); keyEnd < 0 {
		return 0, -1
	}
	if i = SkipSpace(b, keyEnd); i >= len(b) || b[i] != ':' {
		return 0, -1
	}
	return keyEnd, i + 1
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

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// specialBytes marks, with its high bit, each of the 8 bytes of w that
// stringChar marks: a zero byte in w^quotes or w^backslashes, or a byte
// under 0x20 (the classic tests for a zero or a small byte). A borrow can
// mark a byte above a marked one too, never below: the lowest mark is
// exact.
func specialBytes(w uint64) uint64 {
	q, bs := w^(ones*'"'), w^(ones*'\\')
	return ((q-ones)&^q | (bs-ones)&^bs | (w-ones*0x20)&^w) & highs
}

// stringEnd is the index just past the string that opens at b[i], or -1
// when it is not a valid one. Strings are most of a rollout's bytes, so
// they are read 8 bytes at a time, jumping to the first that needs a look.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		for i+8 <= len(b) {
			special := specialBytes(binary.LittleEndian.Uint64(b[i:]))
			if special != 0 {
				i += bits.TrailingZeros64(special) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			break
		}
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

// IndexEither is the index of the first x or y in b, or -1. Two
// bytes.IndexByte scans (the second only up to the first's find) beat a
// byte loop, or bytes.IndexAny, several times over on long input.
func IndexEither(b []byte, x, y byte) int {
	i := bytes.IndexByte(b, x)
	before := b
	if i >= 0 {
		before = b[:i]
	}
	if j := bytes.IndexByte(before, y); j >= 0 {
		return j
	}
	return i
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
