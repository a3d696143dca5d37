package interp

import (
	"fmt"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF tokKind = iota

	// Text tokens (top level and inside quotes).
	tAnyStr    // ANY_STR, and the backslashes and dollars typed as it
	tEsc       // ESC: value-mode escapes, and escaped quotes inside quotes
	tEscInter  // ESC_INTER: an odd run of backslashes before "${"
	tTopEsc    // TOP_ESC: an even run of backslashes at top level
	tQuotedEsc // QUOTED_ESC: an even run of backslashes inside quotes

	tInterOpen  // "${"
	tInterClose // "}" ending a node interpolation
	tBraceOpen
	tBraceClose // "}" ending a dict or a resolver call
	tQuoteOpenSingle
	tQuoteOpenDouble
	tQuoteClose
	tComma
	tBracketOpen
	tBracketClose
	tColon
	tDot
	tFloat
	tInt
	tBool
	tNull
	tUnquotedChar
	tID
	tInterKey
	tWS
)

var tokNames = [...]string{
	tEOF: "end of input", tAnyStr: "text", tEsc: "escape", tEscInter: "escaped '${'",
	tTopEsc: "backslashes", tQuotedEsc: "backslashes", tInterOpen: "'${'", tInterClose: "'}'",
	tBraceOpen: "'{'", tBraceClose: "'}'", tQuoteOpenSingle: "quote", tQuoteOpenDouble: "quote",
	tQuoteClose: "closing quote", tComma: "','", tBracketOpen: "'['", tBracketClose: "']'",
	tColon: "':'", tDot: "'.'", tFloat: "float", tInt: "int", tBool: "bool", tNull: "null",
	tUnquotedChar: "character", tID: "name", tInterKey: "key", tWS: "whitespace",
}

type token struct {
	kind       tokKind
	start, end int
}

// mode mirrors the ANTLR lexer modes; which tokens exist depends on it.
type mode uint8

const (
	modeTop mode = iota
	modeValue
	modeInterp
	modeQuoteSingle
	modeQuoteDouble
)

// lex tokenises all of s up front. ANTLR lexes lazily, but both grammar
// entry points end in EOF, so every token is read either way and the first
// lexer or parser error fails the parse all the same.
func lex(s string, start mode) ([]token, error) {
	lx := lexer{s: s, stack: []mode{start}}
	toks := make([]token, 0, 8)
	for lx.i < len(s) {
		t, err := lx.next()
		if err != nil {
			return nil, err
		}
		toks = append(toks, t)
		lx.i = t.end
	}
	return append(toks, token{kind: tEOF, start: len(s), end: len(s)}), nil
}

type lexer struct {
	s     string
	i     int
	stack []mode
}

func (lx *lexer) push(m mode) { lx.stack = append(lx.stack, m) }

func (lx *lexer) pop() error {
	if len(lx.stack) == 1 {
		// ANTLR raises "Empty Stack" here, which OmegaConf reports as a
		// GrammarParseError.
		return lx.errAt(lx.i, "unmatched '}'")
	}
	lx.stack = lx.stack[:len(lx.stack)-1]
	return nil
}

func (lx *lexer) errAt(pos int, format string, args ...any) error {
	return &GrammarError{Input: lx.s, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (lx *lexer) badChar() error {
	r, _ := utf8.DecodeRuneInString(lx.s[lx.i:])
	return lx.errAt(lx.i, "unexpected character %q", r)
}

func (lx *lexer) next() (token, error) {
	switch lx.stack[len(lx.stack)-1] {
	case modeTop:
		return lx.top(), nil
	case modeValue:
		return lx.value()
	case modeInterp:
		return lx.interp()
	case modeQuoteSingle:
		return lx.quoted('\'')
	default:
		return lx.quoted('"')
	}
}

func (lx *lexer) tok(k tokKind, end int) token { return token{kind: k, start: lx.i, end: end} }

func isWS(c byte) bool { return c == ' ' || c == '\t' }

func skipWS(s string, i int) int {
	for i < len(s) && isWS(s[i]) {
		i++
	}
	return i
}

func (lx *lexer) interOpenAt(i int) bool {
	return i+1 < len(lx.s) && lx.s[i] == '$' && lx.s[i+1] == '{'
}

// strEnd is where ANY_STR (`~[$]* ~[\\$]`, plus the quote inside quotes)
// starting at lx.i ends: before the next stop character, minus any trailing
// backslashes, which are left to the escape rules. It returns lx.i when no
// such token fits.
func (lx *lexer) strEnd(quote byte) int {
	j := lx.i
	for j < len(lx.s) && lx.s[j] != '$' && (quote == 0 || lx.s[j] != quote) {
		j++
	}
	for j > lx.i && lx.s[j-1] == '\\' {
		j--
	}
	return j
}

// backslashes handles a run of backslashes at top level (quote 0) or inside
// quotes, where the longest-match winner depends on the run's parity and on
// what follows it.
func (lx *lexer) backslashes(quote byte) token {
	j := lx.i
	for j < len(lx.s) && lx.s[j] == '\\' {
		j++
	}
	if end := lx.strEnd(quote); end > j {
		return lx.tok(tAnyStr, end)
	}
	odd := (j-lx.i)%2 == 1
	switch {
	case odd && lx.interOpenAt(j):
		return lx.tok(tEscInter, j+2)
	case odd && quote != 0 && j < len(lx.s) && lx.s[j] == quote:
		return lx.tok(tEsc, j+1)
	case odd:
		return lx.tok(tAnyStr, j)
	case quote == 0:
		return lx.tok(tTopEsc, j)
	}
	return lx.tok(tQuotedEsc, j)
}

func (lx *lexer) top() token {
	switch {
	case lx.interOpenAt(lx.i):
		lx.push(modeInterp)
		return lx.tok(tInterOpen, skipWS(lx.s, lx.i+2))
	case lx.s[lx.i] == '$':
		return lx.tok(tAnyStr, lx.i+1)
	case lx.s[lx.i] == '\\':
		return lx.backslashes(0)
	}
	return lx.tok(tAnyStr, lx.strEnd(0))
}

func (lx *lexer) quoted(q byte) (token, error) {
	switch c := lx.s[lx.i]; {
	case lx.interOpenAt(lx.i):
		lx.push(modeInterp)
		return lx.tok(tInterOpen, skipWS(lx.s, lx.i+2)), nil
	case c == q:
		return lx.tok(tQuoteClose, lx.i+1), lx.pop()
	case c == '$':
		return lx.tok(tAnyStr, lx.i+1), nil
	case c == '\\':
		return lx.backslashes(q), nil
	}
	return lx.tok(tAnyStr, lx.strEnd(q)), nil
}

func (lx *lexer) interp() (token, error) {
	s, i := lx.s, lx.i
	c := s[i]
	if isWS(c) {
		j := skipWS(s, i)
		if j < len(s) && s[j] == ':' {
			lx.stack[len(lx.stack)-1] = modeValue
			return lx.tok(tColon, skipWS(s, j+1)), nil
		}
		if j < len(s) && s[j] == '}' {
			return lx.tok(tInterClose, j+1), lx.pop()
		}
		return token{}, lx.badChar()
	}
	switch c {
	case ':':
		lx.stack[len(lx.stack)-1] = modeValue
		return lx.tok(tColon, skipWS(s, i+1)), nil
	case '}':
		return lx.tok(tInterClose, i+1), lx.pop()
	case '.':
		return lx.tok(tDot, i+1), nil
	case '[':
		return lx.tok(tBracketOpen, i+1), nil
	case ']':
		return lx.tok(tBracketClose, i+1), nil
	}
	if lx.interOpenAt(i) {
		lx.push(modeInterp)
		return lx.tok(tInterOpen, skipWS(s, i+2)), nil
	}
	j := i
	for j < len(s) && !isKeyStop(s[j]) {
		j++
	}
	if j == i {
		return token{}, lx.badChar()
	}
	if idEnd(s, i) == j {
		return lx.tok(tID, j), nil
	}
	return lx.tok(tInterKey, j), nil
}

// isKeyStop reports the characters INTER_KEY excludes.
func isKeyStop(c byte) bool {
	switch c {
	case '\\', '{', '}', '(', ')', '[', ']', ':', '.', ' ', '\t', '\'', '"':
		return true
	}
	return false
}

func (lx *lexer) value() (token, error) {
	s, i := lx.s, lx.i
	c := s[i]
	if isWS(c) {
		// Whitespace belongs to a following '}', ',', ']' or ':' token when
		// there is one, which is how OmegaConf strips it around elements.
		j := skipWS(s, i)
		if j < len(s) {
			switch s[j] {
			case '}':
				return lx.tok(tBraceClose, j+1), lx.pop()
			case ',':
				return lx.tok(tComma, skipWS(s, j+1)), nil
			case ']':
				return lx.tok(tBracketClose, j+1), nil
			case ':':
				return lx.tok(tColon, skipWS(s, j+1)), nil
			}
		}
		return lx.tok(tWS, j), nil
	}
	switch c {
	case '$':
		if lx.interOpenAt(i) {
			lx.push(modeInterp)
			return lx.tok(tInterOpen, skipWS(s, i+2)), nil
		}
		return lx.tok(tUnquotedChar, i+1), nil
	case '{':
		lx.push(modeValue)
		return lx.tok(tBraceOpen, skipWS(s, i+1)), nil
	case '}':
		return lx.tok(tBraceClose, i+1), lx.pop()
	case '\'':
		lx.push(modeQuoteSingle)
		return lx.tok(tQuoteOpenSingle, i+1), nil
	case '"':
		lx.push(modeQuoteDouble)
		return lx.tok(tQuoteOpenDouble, i+1), nil
	case ',':
		return lx.tok(tComma, skipWS(s, i+1)), nil
	case '[':
		return lx.tok(tBracketOpen, skipWS(s, i+1)), nil
	case ']':
		return lx.tok(tBracketClose, i+1), nil
	case ':':
		return lx.tok(tColon, skipWS(s, i+1)), nil
	case '\\':
		j := i
		for j+1 < len(s) && s[j] == '\\' && isEscapable(s[j+1]) {
			j += 2
		}
		if j > i {
			return lx.tok(tEsc, j), nil
		}
		return lx.tok(tUnquotedChar, i+1), nil
	}
	return lx.word()
}

// isEscapable reports the characters ESC accepts after a backslash.
func isEscapable(c byte) bool {
	switch c {
	case '\\', '(', ')', '[', ']', '{', '}', ':', '=', ',', ' ', '\t':
		return true
	}
	return false
}

func isUnquotedChar(c byte) bool {
	switch c {
	case '/', '-', '\\', '+', '.', '$', '%', '*', '@', '?', '|':
		return true
	}
	return false
}

// word picks the longest of FLOAT, INT, BOOL, NULL, UNQUOTED_CHAR and ID,
// earlier rules winning ties as in ANTLR: "inf" is a float and "true" a
// bool, but "info" and "true_false" are names.
func (lx *lexer) word() (token, error) {
	s, i := lx.s, lx.i
	best, kind := 0, tEOF
	consider := func(n int, k tokKind) {
		if n > best {
			best, kind = n, k
		}
	}
	consider(floatLen(s, i), tFloat)
	consider(intLen(s, i), tInt)
	consider(max(wordLen(s, i, "true"), wordLen(s, i, "false")), tBool)
	consider(wordLen(s, i, "null"), tNull)
	if isUnquotedChar(s[i]) {
		consider(1, tUnquotedChar)
	}
	consider(idEnd(s, i)-i, tID)
	if best == 0 {
		return token{}, lx.badChar()
	}
	return lx.tok(kind, i+best), nil
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// idEnd is the end of ID (`[a-zA-Z_][a-zA-Z0-9_-]*`) at i, or i if none.
func idEnd(s string, i int) int {
	if i >= len(s) || !(isLetter(s[i]) || s[i] == '_') {
		return i
	}
	j := i + 1
	for j < len(s) && (isLetter(s[j]) || isDigit(s[j]) || s[j] == '_' || s[j] == '-') {
		j++
	}
	return j
}

// wordLen is len(w) when s has w at i, ignoring ASCII case, else 0.
func wordLen(s string, i int, w string) int {
	if len(s)-i < len(w) {
		return 0
	}
	for k := 0; k < len(w); k++ {
		if s[i+k]|0x20 != w[k] {
			return 0
		}
	}
	return len(w)
}

// digitsEnd matches `DIGIT (('_')? DIGIT)*` at i, returning its end or -1.
// Greedy is enough: what may follow (a '.', an exponent, the end) never
// starts with a digit or '_'.
func digitsEnd(s string, i int) int {
	if i >= len(s) || !isDigit(s[i]) {
		return -1
	}
	j := i + 1
	for j < len(s) {
		switch {
		case isDigit(s[j]):
			j++
		case s[j] == '_' && j+1 < len(s) && isDigit(s[j+1]):
			j += 2
		default:
			return j
		}
	}
	return j
}

// uintEnd matches INT_UNSIGNED (`'0' | [1-9] (('_')? DIGIT)*`) at i.
func uintEnd(s string, i int) int {
	if i >= len(s) || !isDigit(s[i]) {
		return -1
	}
	if s[i] == '0' {
		return i + 1
	}
	return digitsEnd(s, i)
}

func signEnd(s string, i int) int {
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		return i + 1
	}
	return i
}

func intLen(s string, i int) int {
	if e := uintEnd(s, signEnd(s, i)); e >= 0 {
		return e - i
	}
	return 0
}

// floatLen matches FLOAT: a sign, then inf, nan, a point float (`1.`,
// `.5`, `1.5`) or either of those or an int with an exponent.
func floatLen(s string, i int) int {
	p := signEnd(s, i)
	if n := max(wordLen(s, p, "inf"), wordLen(s, p, "nan")); n > 0 {
		return p + n - i
	}
	intEnd := uintEnd(s, p)
	point := -1
	q := max(intEnd, p)
	if q < len(s) && s[q] == '.' {
		if d := digitsEnd(s, q+1); d >= 0 {
			point = d
		} else if intEnd >= 0 {
			point = q + 1
		}
	}
	mant := point
	if mant < 0 {
		mant = intEnd
	}
	if mant >= 0 && mant < len(s) && (s[mant] == 'e' || s[mant] == 'E') {
		if d := digitsEnd(s, signEnd(s, mant+1)); d >= 0 {
			return d - i
		}
	}
	if point >= 0 {
		return point - i
	}
	return 0
}
