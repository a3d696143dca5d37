package pyyaml

import (
	"bytes"
	"sort"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// checkSource reports the first thing in the text that PyYAML's
// pure-Python scanner (the one OmegaConf's loader uses) rejects but yaml.v3,
// following libyaml, accepts:
//
//   - a tab anywhere but inside quoted scalars, block scalar bodies and
//     comments: that scanner only ever skips spaces, so `key:<TAB>value` or a
//     trailing tab fails under NeMo Gym;
//   - the escape `\'` in a double-quoted scalar;
//   - a block scalar header not followed by a space or line break (`|#`).
func checkSource(data []byte, content *yaml.Node, file string) error {
	s := &sourceCheck{data: data, firstBad: -1}
	if bytes.IndexByte(data, '\t') >= 0 {
		s.legal = make([]bool, len(data))
	}
	s.starts = lineStarts(data)
	if content != nil {
		s.scalars(content)
	}
	if s.legal != nil {
		s.tabs()
	}
	if s.firstBad < 0 {
		return nil
	}
	line, col := s.position(s.firstBad)
	return &SyntaxError{File: file, Line: line, Column: col, Problem: s.problem}
}

// lineStarts returns the byte offset of each line, breaking lines where
// both PyYAML and yaml.v3 do: at \r\n, \r, \n, NEL, LS and PS.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i := 0; i < len(data); i++ {
		switch {
		case data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n':
			i++
		case data[i] == '\r', data[i] == '\n':
		case data[i] == 0xC2 && i+1 < len(data) && data[i+1] == 0x85:
			i++
		case data[i] == 0xE2 && i+2 < len(data) && data[i+1] == 0x80 && (data[i+2] == 0xA8 || data[i+2] == 0xA9):
			i += 2
		default:
			continue
		}
		starts = append(starts, i+1)
	}
	return starts
}

// lineEnd is the offset just past line (0-based), its break included.
func (s *sourceCheck) lineEnd(line int) int {
	if line+1 < len(s.starts) {
		return s.starts[line+1]
	}
	return len(s.data)
}

type sourceCheck struct {
	data   []byte
	starts []int  // byte offset of each line
	legal  []bool // where a tab may stand; nil when the text has none
	last   cursor // the position offset last found

	firstBad int
	problem  string
}

type cursor struct{ line, col, off int }

func (s *sourceCheck) bad(off int, problem string) {
	if s.firstBad < 0 || off < s.firstBad {
		s.firstBad, s.problem = off, problem
	}
}

// position converts a byte offset to a 1-based line and column counted in
// characters, as PyYAML's marks are.
func (s *sourceCheck) position(off int) (line, col int) {
	// Each block scalar asks, so a scan from the top would be quadratic.
	line = sort.SearchInts(s.starts, off+1) - 1
	return line + 1, utf8.RuneCount(s.data[s.starts[line]:off]) + 1
}

// offset converts a 1-based line and column in characters to a byte
// offset. Scalars come in document order, so counting on from the last
// position asked for keeps a line of many scalars linear.
func (s *sourceCheck) offset(line, column int) int {
	off, col := s.starts[line-1], 1
	if last := s.last; last.line == line && last.col <= column {
		off, col = last.off, last.col
	}
	for ; col < column && off < len(s.data); col++ {
		_, size := utf8.DecodeRune(s.data[off:])
		off += size
	}
	s.last = cursor{line, col, off}
	return off
}

func (s *sourceCheck) scalars(n *yaml.Node) {
	for _, c := range n.Content {
		s.scalars(c)
	}
	quoted := n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0
	block := n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0
	if n.Kind != yaml.ScalarNode || n.Line < 1 || n.Line > len(s.starts) || !(quoted || block) {
		return
	}
	// The node starts at its anchor or tag, if any; the scalar itself is
	// the first quote or block indicator after them.
	off := s.offset(n.Line, n.Column)
	for off < len(s.data) && bytes.IndexByte([]byte(`'"|>`), s.data[off]) < 0 {
		off++
	}
	if off >= len(s.data) {
		return
	}
	switch s.data[off] {
	case '\'':
		s.singleQuoted(off)
	case '"':
		s.doubleQuoted(off)
	default:
		s.blockScalar(off)
	}
}

func (s *sourceCheck) allow(from, to int) {
	if s.legal != nil {
		for i := from; i < to && i < len(s.legal); i++ {
			s.legal[i] = true
		}
	}
}

func (s *sourceCheck) singleQuoted(off int) {
	i := off + 1
	for ; i < len(s.data); i++ {
		if s.data[i] == '\'' {
			if i+1 < len(s.data) && s.data[i+1] == '\'' {
				i++
				continue
			}
			break
		}
	}
	s.allow(off, i+1)
}

func (s *sourceCheck) doubleQuoted(off int) {
	i := off + 1
	for ; i < len(s.data); i++ {
		if s.data[i] == '\\' && i+1 < len(s.data) {
			i++
			if s.data[i] == '\'' {
				s.bad(i, `found unknown escape character "'"`)
			}
			continue
		}
		if s.data[i] == '"' {
			break
		}
	}
	s.allow(off, i+1)
}

// blockScalar checks a block scalar's header and allows tabs in its body:
// the body's indentation is that of its first non-blank line, and it ends
// at the first non-blank line indented less.
func (s *sourceCheck) blockScalar(off int) {
	i := off + 1
	for i < len(s.data) && bytes.IndexByte([]byte("+-123456789"), s.data[i]) >= 0 {
		i++
	}
	if i < len(s.data) && bytes.IndexByte([]byte(" \t\r\n"), s.data[i]) < 0 && !isBreakAt(s.data, i) {
		r, _ := utf8.DecodeRune(s.data[i:])
		s.bad(i, "expected chomping or indentation indicators, but found "+pyRepr(r))
	}
	if s.legal == nil {
		return
	}
	header, _ := s.position(off)
	indent := -1
	for line := header; line < len(s.starts); line++ {
		start, end := s.starts[line], s.lineEnd(line)
		spaces := 0
		for start+spaces < end && s.data[start+spaces] == ' ' {
			spaces++
		}
		if blank := start+spaces == end || isBreakAt(s.data, start+spaces); !blank {
			if indent < 0 {
				indent = max(spaces, 1)
			}
			if spaces < indent {
				return
			}
		}
		s.allow(start, end)
	}
}

// isBreakAt reports whether a line break starts at data[i].
func isBreakAt(data []byte, i int) bool {
	switch {
	case data[i] == '\r' || data[i] == '\n':
		return true
	case data[i] == 0xC2:
		return i+1 < len(data) && data[i+1] == 0x85
	case data[i] == 0xE2:
		return i+2 < len(data) && data[i+1] == 0x80 && (data[i+2] == 0xA8 || data[i+2] == 0xA9)
	}
	return false
}

// pyRepr quotes a character as Python's %r does for the common cases.
func pyRepr(r rune) string {
	if r == '\'' {
		return `"'"`
	}
	return "'" + string(r) + "'"
}

// tabs flags the first tab outside the allowed places and comments.
func (s *sourceCheck) tabs() {
	for line, start := range s.starts {
		end := s.lineEnd(line)
		for i := start; i < end; i++ {
			if s.legal[i] {
				continue
			}
			c := s.data[i]
			if c == '#' && (i == start || isCommentLead(s.data[i-1]) || s.legal[i-1]) {
				break
			}
			if c == '\t' {
				s.bad(i, `found character '\t' that cannot start any token`)
				return
			}
		}
	}
}

// isCommentLead reports whether '#' after c starts a comment: after
// whitespace, or after a flow indicator that ended the previous token.
func isCommentLead(c byte) bool {
	switch c {
	case ' ', '\t', ',', '[', ']', '{', '}':
		return true
	}
	return false
}
