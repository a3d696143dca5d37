package override

import (
	"strings"
	"unicode/utf8"
)

// kind is a token type of Hydra 1.3's OverrideLexer.g4. The lexer has two
// modes: the key mode up to the first '=', the value mode after it.
type kind uint8

const (
	kEOF kind = iota

	// Key mode.
	kPlus
	kTilde
	kAt
	kSlash
	kKey // ID, KEY_SPECIAL or DOT_PATH: Hydra's grammar treats them alike for a plain key

	// Both modes.
	kEqual
	kColon

	// Value mode.
	kPOpen
	kComma
	kPClose
	kBracketOpen
	kBracketClose
	kBraceOpen
	kBraceClose
	kFloat
	kInt
	kBool
	kNull
	kUnquoted
	kID
	kEsc
	kWS
	kQuoted
	kInterp
)

// token is a span of the override text; pos and end are byte offsets.
type token struct {
	kind     kind
	pos, end int
}

// lexError is ANTLR's "token recognition error": no lexer rule matches at
// pos. text is what ANTLR shows: from pos up to and including the character
// where the longest attempt died.
type lexError struct {
	pos  int
	text string
}

// lex splits s into tokens the way Hydra's generated lexer does: longest
// match wins, ties go to the rule listed first in the grammar.
func lex(s string) ([]token, *lexError) {
	toks := make([]token, 0, 8)
	i := 0
	for i < len(s) {
		switch c := s[i]; c {
		case '=':
			end := i + 1 + wsLen(s, i+1)
			toks = append(toks, token{kEqual, i, end})
			return lexValue(s, end, toks)
		case '+', '~', '@', '/', ':':
			toks = append(toks, token{keyPunct[c], i, i + 1})
			i++
		default:
			end, fail := keyPath(s, i)
			if end < 0 {
				return nil, &lexError{pos: i, text: s[i:charEnd(s, fail)]}
			}
			toks = append(toks, token{kKey, i, end})
			i = end
		}
	}
	return append(toks, token{kEOF, len(s), len(s)}), nil
}

var keyPunct = map[byte]kind{'+': kPlus, '~': kTilde, '@': kAt, '/': kSlash, ':': kColon}

func lexValue(s string, i int, toks []token) ([]token, *lexError) {
	lastClose := strings.LastIndexByte(s, '}')
	for i < len(s) {
		k, n := matchValue(s, i, lastClose)
		if n == 0 {
			if s[i] == '\'' || s[i] == '"' {
				// An unterminated quote: ANTLR's attempt runs to the end.
				return nil, &lexError{pos: i, text: s[i:]}
			}
			return nil, &lexError{pos: i, text: s[i:charEnd(s, i)]}
		}
		toks = append(toks, token{k, i, i + n})
		i += n
	}
	return append(toks, token{kEOF, len(s), len(s)}), nil
}

// matchValue returns the VALUE_MODE token at i and its length, 0 when no
// rule matches. Rules are tried in grammar order and only a strictly longer
// match replaces an earlier one, which is ANTLR's tie-break. lastClose is
// the offset of the last '}' in s, -1 if none.
func matchValue(s string, i, lastClose int) (kind, int) {
	best, n := kEOF, 0
	try := func(k kind, m int) {
		if m > n {
			best, n = k, m
		}
	}
	ws := wsLen(s, i)
	if p := i + ws; p < len(s) {
		// These rules start with optional blanks (except '[' and '{'), so
		// blanks next to punctuation belong to the punctuation, not to a
		// value.
		switch s[p] {
		case '(':
			try(kPOpen, ws+1+wsLen(s, p+1))
		case ',':
			try(kComma, ws+1+wsLen(s, p+1))
		case ')':
			try(kPClose, ws+1)
		case '[':
			if ws == 0 {
				try(kBracketOpen, 1+wsLen(s, p+1))
			}
		case ']':
			try(kBracketClose, ws+1)
		case '{':
			if ws == 0 {
				try(kBraceOpen, 1+wsLen(s, p+1))
			}
		case '}':
			try(kBraceClose, ws+1)
		case ':':
			try(kColon, ws+1+wsLen(s, p+1))
		case '=':
			try(kEqual, ws+1+wsLen(s, p+1))
		}
	}
	try(kFloat, floatLen(s, i))
	try(kInt, intLen(s, i))
	try(kBool, max(foldPrefixLen(s, i, "true"), foldPrefixLen(s, i, "false")))
	try(kNull, foldPrefixLen(s, i, "null"))
	if strings.IndexByte(`/-\+.$%*@?|`, s[i]) >= 0 {
		try(kUnquoted, 1)
	}
	try(kID, idLen(s, i))
	try(kEsc, escLen(s, i))
	try(kWS, ws)
	try(kQuoted, quotedLen(s, i))
	try(kInterp, interpLen(s, i, lastClose))
	return best, n
}

func wsLen(s string, i int) int {
	j := i
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	return j - i
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// idLen matches ID: (CHAR|'_') (CHAR|DIGIT|'_'|'-')*.
func idLen(s string, i int) int {
	if i >= len(s) || !(isLetter(s[i]) || s[i] == '_') {
		return 0
	}
	j := i + 1
	for j < len(s) && (isLetter(s[j]) || isDigit(s[j]) || s[j] == '_' || s[j] == '-') {
		j++
	}
	return j - i
}

// digitsEnd matches DIGIT (('_')? DIGIT)* at i and returns its end, or -1.
// It also returns fail, the index of the character that stopped the match,
// which a lexer error message shows.
func digitsEnd(s string, i int) (end, fail int) {
	if i >= len(s) || !isDigit(s[i]) {
		return -1, i
	}
	j := i + 1
	for j < len(s) {
		switch {
		case isDigit(s[j]):
			j++
		case s[j] == '_' && j+1 < len(s) && isDigit(s[j+1]):
			j += 2
		case s[j] == '_':
			return j, j + 1
		default:
			return j, j
		}
	}
	return j, j
}

// intUnsignedEnd matches INT_UNSIGNED: '0' | [1-9] (('_')? DIGIT)*.
func intUnsignedEnd(s string, i int) (end, fail int) {
	switch {
	case i >= len(s):
		return -1, i
	case s[i] == '0':
		return i + 1, i + 1
	case s[i] >= '1' && s[i] <= '9':
		return digitsEnd(s, i)
	}
	return -1, i
}

func signLen(s string, i int) int {
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		return 1
	}
	return 0
}

// intLen matches INT: [+-]? INT_UNSIGNED.
func intLen(s string, i int) int {
	end, _ := intUnsignedEnd(s, i+signLen(s, i))
	if end < 0 {
		return 0
	}
	return end - i
}

// floatLen matches FLOAT: [+-]? (POINT_FLOAT | EXPONENT_FLOAT | inf | nan).
// Only the longest mantissa can be followed by an exponent (a shorter one
// is followed by a digit or '.'), so one pass finds the longest match.
func floatLen(s string, i int) int {
	p := i + signLen(s, i)
	end := -1
	if foldPrefixLen(s, p, "inf") > 0 || foldPrefixLen(s, p, "nan") > 0 {
		end = p + 3
	}
	mantissa, point := -1, -1 // any mantissa; one with a decimal point
	if e, _ := intUnsignedEnd(s, p); e >= 0 {
		mantissa = e
		if e < len(s) && s[e] == '.' {
			point = e + 1
			if d, _ := digitsEnd(s, e+1); d >= 0 {
				point = d
			}
		}
	} else if p < len(s) && s[p] == '.' {
		if d, _ := digitsEnd(s, p+1); d >= 0 {
			point = d
		}
	}
	if point >= 0 {
		mantissa = point
		end = max(end, point)
	}
	if mantissa >= 0 && mantissa < len(s) && (s[mantissa] == 'e' || s[mantissa] == 'E') {
		q := mantissa + 1
		q += signLen(s, q)
		if d, _ := digitsEnd(s, q); d >= 0 {
			end = max(end, d)
		}
	}
	if end < 0 {
		return 0
	}
	return end - i
}

func foldPrefixLen(s string, i int, word string) int {
	if len(s)-i >= len(word) && strings.EqualFold(s[i:i+len(word)], word) {
		return len(word)
	}
	return 0
}

// escLen matches ESC: a run of backslash escapes of \ ( ) [ ] { } : = ,
// space and tab.
func escLen(s string, i int) int {
	j := i
	for j+1 < len(s) && s[j] == '\\' && strings.IndexByte("\\()[]{}:=, \t", s[j+1]) >= 0 {
		j += 2
	}
	return j - i
}

// quotedLen matches QUOTED_VALUE. Hydra's rule is non-greedy: the value ends
// at the first matching quote preceded by an even number of backslashes
// (an odd number escapes the quote).
func quotedLen(s string, i int) int {
	q := s[i]
	if q != '\'' && q != '"' {
		return 0
	}
	backslashes := 0
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case q:
			if backslashes%2 == 0 {
				return j + 1 - i
			}
			backslashes = 0
		case '\\':
			backslashes++
		default:
			backslashes = 0
		}
	}
	return 0
}

// interpLen matches INTERPOLATION: '${' ~('}')+ '}'. It ends at the first
// '}', so an unquoted nested interpolation is cut short, as in Hydra.
// Knowing where the last '}' is keeps a long run of unclosed '${' linear.
func interpLen(s string, i, lastClose int) int {
	if i+2 >= lastClose || !strings.HasPrefix(s[i:], "${") {
		return 0
	}
	if k := strings.IndexByte(s[i+2:], '}'); k > 0 {
		return k + 3
	}
	return 0
}

// keyPath matches a key-mode name: ID / KEY_SPECIAL
// ((CHAR|'_'|'$') (CHAR|DIGIT|'_'|'-'|'$')*) alone, or DOT_PATH, dotted
// segments that are KEY_SPECIAL or INT_UNSIGNED. end is -1 when nothing
// matches; fail is then where the longest attempt died.
func keyPath(s string, i int) (end, fail int) {
	end = -1
	segEnd, fail := keySegment(s, i)
	if segEnd < 0 {
		return -1, fail
	}
	if !isDigit(s[i]) {
		end = segEnd // a single KEY_SPECIAL is a token; a lone number is not
	}
	p := segEnd
	for p < len(s) && s[p] == '.' {
		e, f := keySegment(s, p+1)
		fail = max(fail, f)
		if e < 0 {
			break
		}
		p, end = e, e
	}
	return end, max(fail, p)
}

func keySegment(s string, i int) (end, fail int) {
	if i < len(s) && (isLetter(s[i]) || s[i] == '_' || s[i] == '$') {
		j := i + 1
		for j < len(s) && (isLetter(s[j]) || isDigit(s[j]) || strings.IndexByte("_-$", s[j]) >= 0) {
			j++
		}
		return j, j
	}
	return intUnsignedEnd(s, i)
}

// charEnd returns the end of the character at i (one byte for invalid
// UTF-8), or len(s) at the end.
func charEnd(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	_, n := utf8.DecodeRuneInString(s[i:])
	return i + n
}

// display renders token text as ANTLR's getErrorDisplay does, plus \xNN for
// bytes that are not UTF-8 so that messages stay valid text.
func display(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x` + hex(uint64(text[i]), 2))
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		default:
			b.WriteString(text[i : i+n])
		}
		i += n
	}
	return b.String()
}
