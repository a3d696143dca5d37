package pyyaml

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// SyntaxError is a YAML file that NeMo Gym would refuse to load: malformed
// syntax, or content PyYAML's constructor or OmegaConf rejects (duplicate
// keys, bad tags, recursive aliases).
type SyntaxError struct {
	File    string
	Line    int // 1-based; 0 when unknown
	Column  int // 1-based; 0 when unknown
	Problem string
}

func (e *SyntaxError) Error() string {
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("Malformed YAML in '%s' at line %d, column %d: %s", e.File, e.Line, e.Column, e.Problem)
	case e.Line > 0:
		// yaml.v3 reports lines but not columns for its own syntax errors.
		return fmt.Sprintf("Malformed YAML in '%s' at line %d: %s", e.File, e.Line, e.Problem)
	}
	return fmt.Sprintf("Malformed YAML in '%s': %s", e.File, e.Problem)
}

var reV3Error = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// v3ParserProblems are the problems libyaml's parser (as opposed to its
// scanner) reports. For these yaml.v3 prints a 0-based line number, and
// omits it on the first line.
var v3ParserProblems = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"found undefined tag handle",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found duplicate %TAG directive",
}

// v3ReaderProblems come from decoding the byte stream, before any position
// is tracked.
var v3ReaderProblems = []string{
	"invalid leading UTF-8 octet",
	"incomplete UTF-8 octet sequence",
	"invalid trailing UTF-8 octet",
	"invalid length of a UTF-8 sequence",
	"invalid Unicode character",
	"control characters are not allowed",
	"input is too long",
}

// fromV3Error turns a yaml.v3 parse error into a SyntaxError, recovering
// the 1-based line where yaml.v3's message allows it.
func fromV3Error(file string, err error) *SyntaxError {
	msg := firstLine(err.Error())
	m := reV3Error.FindStringSubmatch(msg)
	if m == nil {
		return &SyntaxError{File: file, Problem: msg}
	}
	problem := m[2]
	if name, ok := strings.CutPrefix(problem, "unknown anchor '"); ok {
		name, _, _ = strings.Cut(name, "'")
		return &SyntaxError{File: file, Problem: "found undefined alias '" + name + "'"}
	}
	for _, p := range v3ReaderProblems {
		if strings.HasPrefix(problem, p) {
			return &SyntaxError{File: file, Problem: problem}
		}
	}
	line, _ := strconv.Atoi(m[1]) // 0 when absent: the problem is on the first line
	if line == 0 || isParserProblem(problem) {
		line++
	}
	return &SyntaxError{File: file, Line: line, Problem: problem}
}

func isParserProblem(problem string) bool {
	for _, p := range v3ParserProblems {
		if problem == p {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
