package pyyaml

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// This file follows PyYAML's Emitter (emitter.py) for the events OmegaConf's
// dump produces: block mappings and sequences, `{}`/`[]` for empty ones, and
// untagged scalars in plain, single- or double-quoted style. Column
// bookkeeping counts code points, as Python's len does, since folding
// depends on it.

const (
	bestIndent = 2
	bestWidth  = 80
	noIndent   = -1 // PyYAML's indent of None, before the root node
)

type emitter struct {
	// out doubles as it grows, where append grows a large slice by a
	// quarter, allocating several times the output in all.
	out     bytes.Buffer
	opts    Options
	indents []int
	indent  int
	column  int
	// whitespace: the last character written was whitespace, so an
	// indicator needs no separating space.
	whitespace bool
	// indention: only indentation and indicators are on the current line.
	indention bool
	openEnded bool
}

// context is what PyYAML's expect_node records about where a node sits.
type context struct {
	root, mapping, simpleKey bool
}

func (e *emitter) value(n *tree.Node, ctx context) {
	switch {
	case n.Kind == tree.Map && len(n.Entries) > 0:
		e.blockMapping(n)
	case n.Kind == tree.List && len(n.Items) > 0:
		e.blockSequence(n, ctx)
	case n.Kind == tree.Map:
		// An empty collection is the only flow collection default_flow_style
		// =False produces; nothing is written between its brackets.
		e.writeIndicator("{", true, true, false)
		e.writeIndicator("}", false, false, false)
		e.leafComment(n)
	case n.Kind == tree.List:
		e.writeIndicator("[", true, true, false)
		e.writeIndicator("]", false, false, false)
		e.leafComment(n)
	default:
		e.scalar(valueScalar(n), ctx)
		e.leafComment(n)
	}
}

func (e *emitter) leafComment(n *tree.Node) {
	if e.opts.LeafComment == nil {
		return
	}
	text := e.opts.LeafComment(n)
	if text == "" {
		return
	}
	if strings.ContainsAny(text, "\r\n") {
		text = oneLine.Replace(text)
	}
	e.writeString("  # ")
	e.writeString(text)
}

// oneLine keeps a comment on its line: a line break would end the comment
// and corrupt the YAML.
var oneLine = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

func (e *emitter) increaseIndent(flow, indentless bool) {
	e.indents = append(e.indents, e.indent)
	switch {
	case e.indent == noIndent && flow:
		e.indent = bestIndent
	case e.indent == noIndent:
		e.indent = 0
	case !indentless:
		e.indent += bestIndent
	}
}

func (e *emitter) popIndent() {
	e.indent = e.indents[len(e.indents)-1]
	e.indents = e.indents[:len(e.indents)-1]
}

func (e *emitter) blockSequence(n *tree.Node, ctx context) {
	// A sequence that is a mapping value starts on the key's line's indent,
	// which is why lists under keys are not indented.
	e.increaseIndent(false, ctx.mapping && !e.indention)
	for _, it := range n.Items {
		e.writeIndent()
		e.writeIndicator("-", true, false, true)
		e.value(it, context{})
	}
	e.popIndent()
}

func (e *emitter) blockMapping(n *tree.Node) {
	e.increaseIndent(false, false)
	for _, entry := range n.Entries {
		e.writeIndent()
		k := keyScalar(entry)
		if k.simpleKey() {
			e.scalar(k, context{mapping: true, simpleKey: true})
			e.writeIndicator(":", false, false, false)
		} else {
			e.writeIndicator("?", true, false, true)
			e.scalar(k, context{mapping: true})
			e.writeIndent()
			e.writeIndicator(":", true, false, true)
		}
		e.value(entry.Value, context{mapping: true})
	}
	e.popIndent()
}

// simpleKey is check_simple_key for a scalar: short, one line, not empty.
// PyYAML counts the tag it would write (such as "!!str") towards the 128
// characters even though the tag is then left out.
func (s scalar) simpleKey() bool {
	return len(s.text)+len(s.tagText) < 128 && !s.empty && !s.multiline
}

func (e *emitter) scalar(s scalar, ctx context) {
	e.increaseIndent(true, false)
	split := !ctx.simpleKey
	switch s.chooseStyle(ctx) {
	case '"':
		e.writeDoubleQuoted(s.text, split)
	case '\'':
		e.writeSingleQuoted(s.text, split)
	default:
		e.writePlain(s.text, split, ctx.root)
	}
	e.popIndent()
}

// chooseStyle is choose_scalar_style outside flow context, for scalars that
// never ask for block styles.
func (s scalar) chooseStyle(ctx context) byte {
	if !s.forceSingle && s.plainOK && !(ctx.simpleKey && (s.empty || s.multiline)) && s.allowBlockPlain {
		return 0
	}
	if s.allowSingleQuoted && !(ctx.simpleKey && s.multiline) {
		return '\''
	}
	return '"'
}

// analysis is PyYAML's ScalarAnalysis, less the fields no chosen style
// reads here.
type analysis struct {
	empty, multiline  bool
	allowBlockPlain   bool
	allowSingleQuoted bool
}

func isBreak(r rune) bool {
	return r == '\n' || r == '\x85' || r == '\u2028' || r == '\u2029'
}

func isSpaceOrBreak(r rune) bool {
	return r == 0 || r == ' ' || r == '\t' || r == '\r' || isBreak(r)
}

// isPrintableUnicode is the range analyze_scalar lets through raw under
// allow_unicode.
func isPrintableUnicode(r rune) bool {
	return r == '\x85' || (r >= 0xA0 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) ||
		(r >= 0x10000 && r < 0x10FFFF)
}

// analyze is Emitter.analyze_scalar with allow_unicode on.
func analyze(text []rune) analysis {
	if len(text) == 0 {
		return analysis{empty: true, allowBlockPlain: true, allowSingleQuoted: true}
	}
	var blockIndicators, lineBreaks, specialCharacters bool
	var leadingSpace, leadingBreak, trailingSpace, trailingBreak, breakSpace, spaceBreak bool
	if s := string(text[:min(3, len(text))]); s == "---" || s == "..." {
		blockIndicators = true
	}
	precededByWhitespace := true
	followedByWhitespace := len(text) == 1 || isSpaceOrBreak(text[1])
	previousSpace, previousBreak := false, false
	for i, ch := range text {
		if i == 0 {
			switch {
			case strings.ContainsRune("#,[]{}&*!|>'\"%@`", ch):
				blockIndicators = true
			case ch == '?' || ch == ':' || ch == '-':
				if followedByWhitespace {
					blockIndicators = true
				}
			}
		} else if (ch == ':' && followedByWhitespace) || (ch == '#' && precededByWhitespace) {
			blockIndicators = true
		}
		if isBreak(ch) {
			lineBreaks = true
		}
		if !(ch == '\n' || (ch >= 0x20 && ch <= 0x7E)) && !(isPrintableUnicode(ch) && ch != 0xFEFF) {
			specialCharacters = true
		}
		switch {
		case ch == ' ':
			leadingSpace = leadingSpace || i == 0
			trailingSpace = trailingSpace || i == len(text)-1
			breakSpace = breakSpace || previousBreak
			previousSpace, previousBreak = true, false
		case isBreak(ch):
			leadingBreak = leadingBreak || i == 0
			trailingBreak = trailingBreak || i == len(text)-1
			spaceBreak = spaceBreak || previousSpace
			previousSpace, previousBreak = false, true
		default:
			previousSpace, previousBreak = false, false
		}
		precededByWhitespace = isSpaceOrBreak(ch)
		followedByWhitespace = i+2 >= len(text) || isSpaceOrBreak(text[i+2])
	}
	a := analysis{multiline: lineBreaks, allowBlockPlain: true, allowSingleQuoted: true}
	if leadingSpace || leadingBreak || trailingSpace || trailingBreak || lineBreaks || blockIndicators {
		a.allowBlockPlain = false
	}
	if breakSpace || spaceBreak || specialCharacters {
		a.allowBlockPlain, a.allowSingleQuoted = false, false
	}
	return a
}

// writeRaw appends text and advances the column, as every PyYAML write of
// scalar text does.
func (e *emitter) writeRaw(text []rune) {
	for _, r := range text {
		e.out.WriteRune(r)
	}
	e.column += len(text)
}

// writeString is writeRaw for text held as a string, as Python holds it:
// bytes that are not UTF-8 each become U+FFFD, as []rune would make them.
func (e *emitter) writeString(s string) {
	if utf8.ValidString(s) {
		e.out.WriteString(s)
		e.column += utf8.RuneCountInString(s)
		return
	}
	for _, r := range s {
		e.out.WriteRune(r)
		e.column++
	}
}

func (e *emitter) writeIndicator(indicator string, needWhitespace, whitespace, indention bool) {
	if !e.whitespace && needWhitespace {
		indicator = " " + indicator
	}
	e.whitespace = whitespace
	e.indention = e.indention && indention
	e.openEnded = false
	e.writeString(indicator)
}

func (e *emitter) writeIndent() {
	indent := max(e.indent, 0)
	if !e.indention || e.column > indent || (e.column == indent && !e.whitespace) {
		e.writeLineBreak('\n')
	}
	if e.column < indent {
		e.whitespace = true
		for range indent - e.column {
			e.out.WriteByte(' ')
		}
		e.column = indent
	}
}

func (e *emitter) writeLineBreak(br rune) {
	e.whitespace = true
	e.indention = true
	e.column = 0
	e.out.WriteRune(br)
}

// writeBreaks writes a run of line breaks the way PyYAML's quoted writers
// do: a leading '\n' is doubled, because a single line break inside a
// flow scalar would fold to a space when read back.
func (e *emitter) writeBreaks(breaks []rune) {
	if breaks[0] == '\n' {
		e.writeLineBreak('\n')
	}
	for _, br := range breaks {
		e.writeLineBreak(br)
	}
	e.writeIndent()
}

// writePlain is write_plain for text without line breaks (analysis never
// allows a multi-line plain scalar). A single space past the width becomes
// a fold to the next line.
func (e *emitter) writePlain(text []rune, split, root bool) {
	if root {
		e.openEnded = true
	}
	if len(text) == 0 {
		return
	}
	if !e.whitespace {
		e.writeRaw([]rune{' '})
	}
	e.whitespace, e.indention = false, false
	spaces := false
	start := 0
	for end := 0; end <= len(text); end++ {
		ch := rune(-1)
		if end < len(text) {
			ch = text[end]
		}
		if spaces {
			if ch != ' ' {
				if start+1 == end && e.column > bestWidth && split {
					e.writeIndent()
					e.whitespace, e.indention = false, false
				} else {
					e.writeRaw(text[start:end])
				}
				start = end
			}
		} else if ch == -1 || ch == ' ' || isBreak(ch) {
			e.writeRaw(text[start:end])
			start = end
		}
		if ch != -1 {
			spaces = ch == ' '
		}
	}
}

func (e *emitter) writeSingleQuoted(text []rune, split bool) {
	e.writeIndicator("'", true, false, false)
	spaces, breaks := false, false
	start := 0
	for end := 0; end <= len(text); end++ {
		ch := rune(-1)
		if end < len(text) {
			ch = text[end]
		}
		switch {
		case spaces:
			if ch != ' ' {
				if start+1 == end && e.column > bestWidth && split && start != 0 && end != len(text) {
					e.writeIndent()
				} else {
					e.writeRaw(text[start:end])
				}
				start = end
			}
		case breaks:
			if ch == -1 || !isBreak(ch) {
				e.writeBreaks(text[start:end])
				start = end
			}
		default:
			if (ch == -1 || ch == ' ' || isBreak(ch) || ch == '\'') && start < end {
				e.writeRaw(text[start:end])
				start = end
			}
		}
		if ch == '\'' {
			e.writeString("''")
			start = end + 1
		}
		if ch != -1 {
			spaces, breaks = ch == ' ', isBreak(ch)
		}
	}
	e.writeIndicator("'", false, false, false)
}

var doubleQuotedEscapes = map[rune]string{
	0: "0", '\x07': "a", '\x08': "b", '\t': "t", '\n': "n", '\x0B': "v",
	'\x0C': "f", '\r': "r", '\x1B': "e", '"': "\"", '\\': "\\",
	'\x85': "N", '\xA0': "_", '\u2028': "L", '\u2029': "P",
}

// needsEscape is write_double_quoted's test under allow_unicode. Unlike
// the analysis, it escapes everything beyond the Basic Multilingual Plane.
func needsEscape(ch rune) bool {
	switch ch {
	case '"', '\\', '\x85', '\u2028', '\u2029', '\uFEFF':
		return true
	}
	return !((ch >= 0x20 && ch <= 0x7E) || (ch >= 0xA0 && ch <= 0xD7FF) || (ch >= 0xE000 && ch <= 0xFFFD))
}

func escape(ch rune) string {
	if s, ok := doubleQuotedEscapes[ch]; ok {
		return `\` + s
	}
	switch {
	case ch <= 0xFF:
		return fmt.Sprintf(`\x%02X`, ch)
	case ch <= 0xFFFF:
		return fmt.Sprintf(`\u%04X`, ch)
	}
	return fmt.Sprintf(`\U%08X`, ch)
}

// writeDoubleQuoted folds past the width with an escaped line break
// (a trailing backslash), escaping a space that would start the next line.
func (e *emitter) writeDoubleQuoted(text []rune, split bool) {
	e.writeIndicator(`"`, true, false, false)
	start := 0
	for end := 0; end <= len(text); end++ {
		ch := rune(-1)
		if end < len(text) {
			ch = text[end]
		}
		if ch == -1 || needsEscape(ch) {
			if start < end {
				e.writeRaw(text[start:end])
				start = end
			}
			if ch != -1 {
				e.writeString(escape(ch))
				start = end + 1
			}
		}
		if 0 < end && end < len(text)-1 && (ch == ' ' || start >= end) &&
			e.column+(end-start) > bestWidth && split {
			// After an escape start is already past end, and Python's slice
			// is then empty.
			var chunk []rune
			if start < end {
				chunk = text[start:end:end]
				start = end
			}
			e.writeRaw(append(chunk, '\\'))
			e.writeIndent()
			e.whitespace, e.indention = false, false
			if text[start] == ' ' {
				e.writeRaw([]rune{'\\'})
			}
		}
	}
	e.writeIndicator(`"`, false, false, false)
}
