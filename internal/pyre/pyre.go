// Package pyre runs Python `re` patterns with Python's semantics, for the
// patterns NeMo Gym's data carries (a row's template_metadata.output_regex):
// lookahead, lookbehind, named groups, backreferences, inline flags, \Z, and
// \d, \s, \w and \b over Unicode as Python's str patterns have them. A
// pattern is translated to the syntax of regexp2 (a backtracking engine with
// .NET's syntax, github.com/dlclark/regexp2/v2); what Python refuses is
// refused with Python's reason, and what the translation cannot carry is
// refused saying so.
package pyre

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// IgnoreCase is re.IGNORECASE.
const IgnoreCase = 1

// matchTimeout bounds one match: Python has none, and a pattern that
// backtracks without end would hang a verifier.
const matchTimeout = 2 * time.Second

// Regexp is a compiled pattern.
type Regexp struct {
	re     *regexp2.Regexp
	groups int
}

// Error is a pattern Python refuses, or one gym cannot run.
type Error struct {
	Pattern, Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("regular expression %q: %s", e.Pattern, e.Msg) }

// ErrTimeout is a match that took longer than matchTimeout.
var ErrTimeout = errors.New("the match took too long")

// The classes Python gives \s, \w and \d in a str pattern (Unicode) and in
// ASCII mode ((?a)).
const (
	pySpace      = `\t\n\v\f\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000`
	pyWord       = `\p{L}\p{N}_`
	pyDigit      = `\p{Nd}`
	asciiSpace   = `\t\n\v\f\r `
	asciiWord    = `a-zA-Z0-9_`
	asciiDigit   = `0-9`
	knownEscapes = "AbBdDsSwWZafnrtvxuUN0123456789"
)

// Compile compiles a Python pattern with flags (IgnoreCase or 0).
func Compile(pattern string, flags int) (*Regexp, error) {
	t := &translator{src: pattern}
	out, err := t.translate()
	if err != nil {
		return nil, &Error{Pattern: pattern, Msg: err.Error()}
	}
	opts := regexp2.None
	if flags&IgnoreCase != 0 {
		opts |= regexp2.IgnoreCase
	}
	re, err := regexp2.Compile(out, opts)
	if err != nil {
		return nil, &Error{Pattern: pattern, Msg: err.Error()}
	}
	re.MatchTimeout = matchTimeout
	return &Regexp{re: re, groups: t.groups}, nil
}

// FindAll is re.findall for patterns with at most one group: every
// non-overlapping match, left to right, as the text of group 1 when the
// pattern has groups ("" where it did not take part), else of the match.
// With several groups it gives group 1 too, where Python gives tuples.
func (r *Regexp) FindAll(text string) ([]string, error) {
	var out []string
	m, err := r.re.FindStringMatch(text)
	for ; m != nil && err == nil; m, err = r.re.FindNextMatch(m) {
		if r.groups == 0 {
			out = append(out, m.String())
			continue
		}
		g := m.GroupByNumber(1)
		if g == nil || len(g.Captures) == 0 {
			out = append(out, "")
			continue
		}
		out = append(out, g.String())
	}
	if err != nil {
		if strings.Contains(err.Error(), "timeout") {
			return out, ErrTimeout
		}
		return out, err
	}
	return out, nil
}

type translator struct {
	src   string
	i     int
	b     strings.Builder
	ascii bool
	// groups counts the capturing groups opened so far; named ones are
	// written unnamed, since .NET numbers named groups after the others
	// where Python numbers every group in order.
	groups int
	names  map[string]int
	// atom is where the last atom written starts, for a possessive
	// quantifier to wrap it.
	atom int
	// verbose is (?x): whitespace and # comments outside classes are not
	// part of the pattern.
	verbose bool
}

// skipVerbose passes over whitespace or a comment at t.i in verbose mode,
// reporting whether there was one.
func (t *translator) skipVerbose() bool {
	switch c := t.src[t.i]; {
	case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
		t.i++
		return true
	case c == '#':
		if end := strings.IndexByte(t.src[t.i:], '\n'); end >= 0 {
			t.i += end + 1
		} else {
			t.i = len(t.src)
		}
		return true
	}
	return false
}

func (t *translator) translate() (string, error) {
	var open []int // where each open group starts in the output
	for t.i < len(t.src) {
		c := t.src[t.i]
		if t.verbose && t.skipVerbose() {
			continue
		}
		switch c {
		case '*', '+', '?':
			t.b.WriteByte(c)
			t.i++
			if err := t.quantified(); err != nil {
				return "", err
			}
			continue
		case '{':
			if q, ok := quantifier(t.src[t.i:]); ok {
				t.b.WriteString(q.text)
				t.i += q.length
				if err := t.quantified(); err != nil {
					return "", err
				}
				continue
			}
		case ')':
			if len(open) > 0 {
				t.atom, open = open[len(open)-1], open[:len(open)-1]
			}
			t.b.WriteByte(')')
			t.i++
			continue
		case '|':
			t.b.WriteByte('|')
			t.i++
			continue
		}
		t.atom = t.b.Len()
		var err error
		switch c {
		case '\\':
			err = t.escape(false)
		case '[':
			err = t.class()
		case '(':
			before := t.b.Len()
			var opened bool
			opened, err = t.group()
			if opened {
				open = append(open, before)
			}
		default:
			r, n := utf8.DecodeRuneInString(t.src[t.i:])
			t.b.WriteRune(r)
			t.i += n
		}
		if err != nil {
			return "", err
		}
	}
	return t.b.String(), nil
}

// quantified follows a quantifier just written: a lazy '?' is kept, a
// possessive '+' (Python 3.11) becomes an atomic group around the atom.
func (t *translator) quantified() error {
	if t.i >= len(t.src) {
		return nil
	}
	switch t.src[t.i] {
	case '?':
		t.b.WriteByte('?')
		t.i++
	case '+':
		out := t.b.String()
		t.b.Reset()
		t.b.WriteString(out[:t.atom] + "(?>" + out[t.atom:] + ")")
		t.i++
	}
	return nil
}

type quant struct {
	text   string
	length int
}

// quantifier reads {m}, {m,}, {m,n} or {,n} at the start of s, as Python
// does ({,n} is {0,n}); anything else is a literal brace.
func quantifier(s string) (quant, bool) {
	end := strings.IndexByte(s, '}')
	if end < 0 {
		return quant{}, false
	}
	body := s[1:end]
	lo, hi, comma := strings.Cut(body, ",")
	digits := func(d string) bool {
		for _, c := range d {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	if !digits(lo) || !digits(hi) || (lo == "" && (!comma || hi == "")) {
		return quant{}, false
	}
	if lo == "" {
		lo = "0"
	}
	text := "{" + lo
	if comma {
		text += "," + hi
	}
	return quant{text: text + "}", length: end + 1}, true
}

func (t *translator) classes() (space, word, digit string) {
	if t.ascii {
		return asciiSpace, asciiWord, asciiDigit
	}
	return pySpace, pyWord, pyDigit
}

// escape handles a backslash at t.i, inside a class or not.
func (t *translator) escape(inClass bool) error {
	if t.i+1 >= len(t.src) {
		return errors.New("bad escape (end of pattern)")
	}
	e := t.src[t.i+1]
	t.i += 2
	space, word, digit := t.classes()
	isLetter := e >= 'a' && e <= 'z' || e >= 'A' && e <= 'Z'
	if isLetter && !strings.ContainsRune(knownEscapes, rune(e)) {
		return fmt.Errorf("bad escape \\%c", e)
	}
	set := func(in, out string) {
		if inClass {
			t.b.WriteString(in)
		} else {
			t.b.WriteString(out)
		}
	}
	switch e {
	case 'd':
		set(digit, "["+digit+"]")
	case 'D':
		t.b.WriteString("[^" + digit + "]")
	case 's':
		set(space, "["+space+"]")
	case 'w':
		set(word, "["+word+"]")
	case 'S', 'W':
		if e == 'S' {
			t.b.WriteString("[^" + space + "]")
		} else {
			t.b.WriteString("[^" + word + "]")
		}
	case 'b':
		if inClass {
			t.b.WriteString(`\b`) // backspace, in Python and .NET alike
			return nil
		}
		w := "[" + word + "]"
		t.b.WriteString("(?:(?<=" + w + ")(?!" + w + ")|(?<!" + w + ")(?=" + w + "))")
	case 'B':
		if inClass {
			return errors.New("bad escape \\B")
		}
		w := "[" + word + "]"
		t.b.WriteString("(?:(?<=" + w + ")(?=" + w + ")|(?<!" + w + ")(?!" + w + "))")
	case 'A':
		if inClass {
			return errors.New("bad escape \\A")
		}
		t.b.WriteString(`\A`)
	case 'Z':
		if inClass {
			return errors.New("bad escape \\Z")
		}
		t.b.WriteString(`\z`)
	case 'u', 'U', 'x':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
		if t.i+n > len(t.src) {
			return fmt.Errorf("incomplete escape \\%c%s", e, t.src[t.i:])
		}
		v, err := strconv.ParseUint(t.src[t.i:t.i+n], 16, 32)
		if err != nil || v > utf8.MaxRune {
			return fmt.Errorf("bad escape \\%c%s", e, t.src[t.i:t.i+n])
		}
		t.i += n
		t.b.WriteString(fmt.Sprintf(`\u%04x`, v))
		if v > 0xffff {
			return errors.New("escapes beyond U+FFFF are not supported by gym")
		}
	case 'N':
		return errors.New(`\N{...} escapes are not supported by gym`)
	case '_':
		t.b.WriteByte('_') // a literal in Python; regexp2 refuses the escape
	default:
		if e >= utf8.RuneSelf {
			// An escaped non-ASCII character is itself.
			t.i--
			r, n := utf8.DecodeRuneInString(t.src[t.i:])
			t.b.WriteRune(r)
			t.i += n
			return nil
		}
		t.b.WriteByte('\\')
		t.b.WriteByte(e)
	}
	return nil
}

// class copies a character class, keeping Python's reading: a '[' inside
// is a literal (where .NET would read a subtraction), and \W, \S and \D
// inside one are Python's classes (by .NET's class subtraction).
func (t *translator) class() error {
	t.i++
	negated := false
	if t.i < len(t.src) && t.src[t.i] == '^' {
		negated = true
		t.i++
	}
	outer := t.b
	t.b = strings.Builder{}
	var complements []string // the sets of \W, \S and \D met in the class
	first := true
	done := false
	for t.i < len(t.src) && !done {
		c := t.src[t.i]
		switch {
		case c == ']' && !first:
			t.i++
			done = true
		case c == ']':
			t.b.WriteString(`\]`)
			t.i++
		case c == '[':
			t.b.WriteString(`\[`)
			t.i++
		case c == '\\' && t.i+1 < len(t.src) && strings.IndexByte("WSD", t.src[t.i+1]) >= 0:
			space, word, digit := t.classes()
			complements = append(complements, map[byte]string{'W': word, 'S': space, 'D': digit}[t.src[t.i+1]])
			t.i += 2
		case c == '\\':
			if err := t.escape(true); err != nil {
				t.b = outer
				return err
			}
		default:
			r, n := utf8.DecodeRuneInString(t.src[t.i:])
			t.b.WriteRune(r)
			t.i += n
		}
		first = false
	}
	items := t.b.String()
	if strings.HasPrefix(items, "^") {
		items = `\` + items // a member, where it would negate the class it is put in
	}
	t.b = outer
	if !done {
		return errors.New("unterminated character set")
	}
	switch {
	case len(complements) == 0 && negated:
		t.b.WriteString("[^" + items + "]")
	case len(complements) == 0:
		t.b.WriteString("[" + items + "]")
	case negated:
		// Outside the items and inside every complemented set.
		t.b.WriteString("(?:")
		for _, c := range complements[1:] {
			t.b.WriteString("(?=[" + c + "])")
		}
		if items == "" {
			t.b.WriteString("[" + complements[0] + "]")
		} else {
			t.b.WriteString("[" + complements[0] + "-[" + items + "]]")
		}
		t.b.WriteString(")")
	default:
		t.b.WriteString("(?:")
		if items != "" {
			t.b.WriteString("[" + items + "]|")
		}
		for i, c := range complements {
			if i > 0 {
				t.b.WriteByte('|')
			}
			t.b.WriteString("[^" + c + "]")
		}
		t.b.WriteString(")")
	}
	return nil
}

// group handles '(' at t.i: Python's extensions in .NET's spelling. It
// reports whether what it wrote waits for a ')' of the pattern.
func (t *translator) group() (bool, error) {
	rest := t.src[t.i:]
	switch {
	case strings.HasPrefix(rest, "(?P<"):
		end := strings.IndexByte(rest, '>')
		if end < 0 {
			return false, errors.New("missing >, unterminated name")
		}
		name := rest[4:end]
		if !validName(name) {
			return false, fmt.Errorf("bad character in group name %q", name)
		}
		if _, dup := t.names[name]; dup {
			return false, fmt.Errorf("redefinition of group name %q", name)
		}
		t.groups++
		if t.names == nil {
			t.names = map[string]int{}
		}
		t.names[name] = t.groups
		t.b.WriteString("(")
		t.i += end + 1
		return true, nil
	case strings.HasPrefix(rest, "(?P="):
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return false, errors.New("missing ), unterminated name")
		}
		n, ok := t.names[rest[4:end]]
		if !ok {
			return false, fmt.Errorf("unknown group name %q", rest[4:end])
		}
		t.b.WriteString(`(?:\` + strconv.Itoa(n) + ")")
		t.i += end + 1
		return false, nil
	case strings.HasPrefix(rest, "(?<=") || strings.HasPrefix(rest, "(?<!") || strings.HasPrefix(rest, "(?=") ||
		strings.HasPrefix(rest, "(?!") || strings.HasPrefix(rest, "(?:") || strings.HasPrefix(rest, "(?>"):
		n := 3
		if rest[2] == '<' {
			n = 4
		}
		t.b.WriteString(rest[:n])
		t.i += n
		return true, nil
	case strings.HasPrefix(rest, "(?#"):
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return false, errors.New("missing ), unterminated comment")
		}
		t.i += end + 1
		return false, nil
	case strings.HasPrefix(rest, "(?("):
		// The condition is a group's number or name; names are numbers
		// here, as the groups are.
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return false, errors.New("missing ), unterminated name")
		}
		cond := rest[3:end]
		if n, ok := t.names[cond]; ok {
			cond = strconv.Itoa(n)
		} else if _, err := strconv.Atoi(cond); err != nil {
			return false, fmt.Errorf("bad character in group name %q", cond)
		}
		t.b.WriteString("(?(" + cond + ")")
		t.i += end + 1
		return true, nil
	case strings.HasPrefix(rest, "(?"):
		return t.flags(rest)
	default:
		t.groups++
		t.b.WriteByte('(')
		t.i++
		return true, nil
	}
}

// flags handles (?flags) and (?flags-flags:...).
func (t *translator) flags(rest string) (bool, error) {
	j := 2
	for j < len(rest) && strings.IndexByte("aiLmsux-", rest[j]) >= 0 {
		j++
	}
	if j >= len(rest) || (rest[j] != ')' && rest[j] != ':') {
		if j < len(rest) {
			return false, fmt.Errorf("unknown extension ?%c", rest[j])
		}
		return false, errors.New("missing -, : or )")
	}
	spec := rest[2:j]
	if strings.ContainsRune(spec, 'L') {
		return false, errors.New("bad inline flags: cannot use 'L' flag with a str pattern")
	}
	if rest[j] == ')' {
		if t.i != 0 && !t.onlyFlagsBefore() {
			return false, errors.New("global flags not at the start of the expression")
		}
		if strings.ContainsRune(spec, 'a') {
			t.ascii = true
		}
		if strings.ContainsRune(spec, 'x') {
			t.verbose = true // the translation drops the whitespace and comments
		}
		keep := strings.NewReplacer("a", "", "u", "", "x", "").Replace(spec)
		if keep != "" {
			t.b.WriteString("(?" + keep + ")")
		}
		t.i += j + 1
		return false, nil
	}
	if strings.ContainsAny(spec, "aux") {
		return false, errors.New("scoped ASCII, Unicode or verbose flags are not supported by gym")
	}
	t.b.WriteString("(?" + spec + ":")
	t.i += j + 1
	return true, nil
}

// onlyFlagsBefore is whether everything before t.i is global flags, which
// Python allows to follow each other at the start.
func (t *translator) onlyFlagsBefore() bool {
	before := t.src[:t.i]
	for before != "" {
		if !strings.HasPrefix(before, "(?") {
			return false
		}
		end := strings.IndexByte(before, ')')
		if end < 0 {
			return false
		}
		for _, c := range before[2:end] {
			if !strings.ContainsRune("aiLmsux", c) {
				return false
			}
		}
		before = before[end+1:]
	}
	return true
}

func validName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
