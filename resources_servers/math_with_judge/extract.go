package mathwithjudge

import (
	"math/big"
	"regexp"
	"sort"
	"strings"

	"github.com/nemo-gym-go/gym/internal/resources"
)

// Answer extraction follows Math-Verify's parse() with the targets NeMo
// Gym configures (LaTeX for the gold; LaTeX and plain expressions for the
// prediction): candidate spans are tried by priority — a \boxed{} answer,
// then spans after the word "answer", then any LaTeX environment or number
// — the rightmost first within a priority, and the first that parses wins.
// The text of the very first candidate is kept as a fallback, compared as a
// string when parsing fails, as Math-Verify's first_match fallback is.

// maxTries bounds the parse attempts per priority, so a long output full of
// numbers costs a bounded amount of work.
const maxTries = 64

type extracted struct {
	ans      *answer // the first candidate that parsed, or nil
	fallback string  // the first candidate's text; "" when nothing matched
}

func (x extracted) found() bool { return x.ans != nil || x.fallback != "" }

// stripDelimiters removes one outer \( \) pair and then one outer $ $ pair
// of an expected answer, which would keep \boxed{} from parsing.
func stripDelimiters(s string) string {
	s = resources.PyStrip(s)
	if strings.HasPrefix(s, `\(`) && strings.HasSuffix(s, `\)`) && len(s) >= 4 {
		s = resources.PyStrip(s[2 : len(s)-2])
	}
	if strings.HasPrefix(s, "$") && strings.HasSuffix(s, "$") && len(s) > 1 {
		s = resources.PyStrip(s[1 : len(s)-1])
	}
	return s
}

// extractGold reads the expected answer as \boxed{<answer>}. An empty
// answer gives nothing, which Math-Verify treats as an error (reward 0).
func extractGold(expected string) extracted {
	s := stripDelimiters(expected)
	if s == "" {
		return extracted{}
	}
	norm := normalizeLatex(`\boxed{`+s+`}`, boxedLast)
	return extracted{ans: parseLatex(norm), fallback: norm}
}

// parseLatex parses normalised LaTeX, or failing that the last part of an
// equation chain; nil when neither parses.
func parseLatex(norm string) *answer {
	if a, err := parseAnswer(norm); err == nil {
		return a
	}
	if last := lastEquation(norm); last != norm {
		if a, err := parseAnswer(last); err == nil {
			return a
		}
	}
	return nil
}

type spanKind uint8

const (
	spanLatex  spanKind = iota // LaTeX: text is the environment's content
	spanNumber                 // a plain number: text is its digits
	spanExpr                   // a plain expression such as 3/4
)

// span is a candidate answer in the text.
type span struct {
	kind         spanKind
	start, end   int // of the whole match, which decides the order
	vstart, vend int // of the value itself
	text         string
	percent      bool
	boxed        bool
}

// extractPred reads the model's answer.
func extractPred(text string) extracted {
	var out extracted
	var failed [][2]int
	try := func(group []span) bool {
		for _, sp := range rightmost(group, maxTries) {
			if sp.kind != spanLatex && overlaps(sp, failed) {
				continue
			}
			a, str := parseSpan(sp)
			if out.fallback == "" {
				out.fallback = str
			}
			if a != nil {
				out.ans = a
				return true
			}
			if sp.kind == spanLatex {
				failed = append(failed, [2]int{sp.vstart, sp.vend})
			}
		}
		return false
	}
	if b, ok := boxedSpan(text); ok && try([]span{b}) {
		return out
	}
	envs := latexEnvs(text)
	nums := numbers(text)
	all := append(append([]span{}, envs...), nums...)
	colon, any := answerSpans(text, all)
	if try(colon) || try(any) || try(all) {
		return out
	}
	return out
}

// rightmost returns up to n candidates in the order Math-Verify tries them:
// by end, last first, then by start, first first, then as found.
func rightmost(group []span, n int) []span {
	before := func(a, b span) bool {
		if a.end != b.end {
			return a.end > b.end
		}
		return a.start < b.start
	}
	best := make([]span, 0, min(n, len(group)))
	for _, sp := range group {
		if len(best) == n && !before(sp, best[n-1]) {
			continue
		}
		i := sort.Search(len(best), func(i int) bool { return before(sp, best[i]) })
		if len(best) < n {
			best = append(best, span{})
		}
		copy(best[i+1:], best[i:len(best)-1])
		best[i] = sp
	}
	return best
}

func overlaps(sp span, failed [][2]int) bool {
	for _, f := range failed {
		if sp.vstart < f[1] && sp.vend > f[0] {
			return true
		}
	}
	return false
}

// parseSpan turns a candidate into an answer and its fallback text.
func parseSpan(sp span) (*answer, string) {
	switch sp.kind {
	case spanLatex:
		mode := boxedAll
		if sp.boxed {
			mode = boxedLast
		}
		norm := normalizeLatex(sp.text, mode)
		a := parseLatex(norm)
		if a != nil && sp.percent && a.kind == aExpr {
			a = &answer{kind: aExpr, expr: &expr{kind: nPercent, args: []*expr{a.expr}}}
		}
		return a, norm
	case spanNumber:
		neg := strings.HasPrefix(sp.text, "-")
		v, ok := new(big.Rat).SetString(strings.TrimPrefix(sp.text, "-"))
		if !ok {
			return nil, sp.text
		}
		e := &expr{kind: nNum, num: v, float: strings.Contains(sp.text, ".")}
		if neg {
			e = &expr{kind: nNeg, args: []*expr{e}}
		}
		if sp.percent {
			e = &expr{kind: nPercent, args: []*expr{e}}
		}
		return &answer{kind: aExpr, expr: e}, sp.text
	}
	a, err := parseAnswer(strings.ReplaceAll(strings.ReplaceAll(sp.text, "\n", " "), "**", "^"))
	if err != nil || a.kind != aExpr {
		return nil, sp.text
	}
	return a, sp.text
}

// boxedSpan is Math-Verify's \boxed{.+} match: from the first \boxed{ to
// the last closing brace of the text, whose last box (and the boxes right
// before it) normalisation then extracts.
func boxedSpan(text string) (span, bool) {
	start := strings.Index(text, `\boxed{`)
	if start < 0 {
		return span{}, false
	}
	end := strings.LastIndexByte(text, '}')
	if end < start+len(`\boxed{`)+1 {
		return span{}, false
	}
	return span{kind: spanLatex, start: start, end: end + 1, vstart: start, vend: end + 1, text: text[start : end+1], boxed: true}, true
}

var (
	latexPercent = regexp.MustCompile(`^` + pySpace + `*(?:\\?%|[Pp]ercent|[Pp]ercentage|[Pp]ct)`)
	latexFrac    = regexp.MustCompile(`^-?\\frac\{-?\d+(?:[.,]\d+)?\}\{-?\d+(?:[.,]\d+)?\}`)
)

// latexEnvs finds $$..$$, \[..\], $..$, \(..\), " [..] " and bare
// \frac{n}{m}, left to right without overlap, each with an optional
// percent sign after it.
func latexEnvs(text string) []span {
	var out []span
	sc := envScanner{text: text, dd: finder{pat: "$$"}, bracket: finder{pat: `\]`}, paren: finder{pat: `\)`}, newline: finder{pat: "\n"}}
	for i := 0; i < len(text); {
		sp, ok := sc.at(i)
		if !ok {
			i++
			continue
		}
		if m := latexPercent.FindString(text[sp.end:]); m != "" {
			sp.percent = true
			sp.end += len(m)
		}
		out = append(out, sp)
		i = sp.end
	}
	return out
}

// finder finds the next occurrence of pat at or after a position,
// remembering its last answer: positions only grow during a scan, so a
// text full of unclosed delimiters costs linear time, not quadratic.
type finder struct {
	pat       string
	from, hit int // the last search started at from and found hit (-1: none)
	searched  bool
}

func (f *finder) next(text string, from int) int {
	if f.searched && from >= f.from && (f.hit < 0 || f.hit >= from) {
		return f.hit
	}
	f.searched, f.from, f.hit = true, from, -1
	if from <= len(text) {
		if k := strings.Index(text[from:], f.pat); k >= 0 {
			f.hit = from + k
		}
	}
	return f.hit
}

type envScanner struct {
	text                        string
	dd, bracket, paren, newline finder
}

func (sc *envScanner) at(i int) (span, bool) {
	text := sc.text
	escaped := i > 0 && text[i-1] == '\\'
	rest := text[i:]
	// env is the environment whose content is text[open:close] and whose
	// closing delimiter ends at end.
	env := func(open, close, end int) (span, bool) {
		return span{kind: spanLatex, start: i, end: end, vstart: open, vend: close, text: text[open:close]}, true
	}
	switch {
	case strings.HasPrefix(rest, "$$") && !escaped:
		if k := sc.dd.next(text, i+3); k >= 0 && text[k-1] != '\\' {
			return env(i+2, k, k+2)
		}
	case strings.HasPrefix(rest, `\[`) && !escaped:
		if k := sc.bracket.next(text, i+3); k >= 0 && text[k-1] != '\\' {
			return env(i+2, k, k+2)
		}
	case rest != "" && rest[0] == '$' && !escaped && !(i > 0 && isDigit(text[i-1])):
		// Runs to the next unescaped $, so scans never overlap.
		for k := i + 1; k < len(text); k++ {
			switch text[k] {
			case '\\':
				if k+1 < len(text) && text[k+1] == '$' {
					k++
				}
			case '\n':
				return span{}, false
			case '$':
				if k == i+1 {
					return span{}, false
				}
				return env(i+1, k, k+1)
			}
		}
	case strings.HasPrefix(rest, `\(`) && !escaped:
		k, nl := sc.paren.next(text, i+2), sc.newline.next(text, i+2)
		if k > i+2 && (nl < 0 || k < nl) {
			return env(i+2, k, k+2)
		}
	case rest != "" && strings.ContainsRune(" \t\n\r\f\v", rune(rest[0])) && strings.HasPrefix(rest[1:], "["):
		// Runs to the next bracket or line end, so scans never overlap.
		k := strings.IndexAny(text[i+2:], "\n[]")
		if k > 0 && text[i+2+k] == ']' && i+3+k < len(text) && strings.ContainsRune(" \t\n\r\f\v", rune(text[i+3+k])) {
			return env(i+2, i+2+k, i+4+k)
		}
	default:
		if m := latexFrac.FindString(rest); m != "" {
			return span{kind: spanLatex, start: i, end: i + len(m), vstart: i, vend: i + len(m), text: m}, true
		}
	}
	return span{}, false
}

// The plain number and expression patterns of Math-Verify's expression
// target: a number needs white space, "=" or the start before it (and may
// follow a currency sign); an expression also needs punctuation, white
// space or the end after it.
var (
	numberRe = regexp.MustCompile(`(?:^|` + pySpace + `|=)(?:\*\*)?[$€£¥₹₽₪₩₫฿₡₢₣₤₥₦₧₨₭₮₯₰₱₲₳₴₵₶₷₸₺₻₼₾₿]?` +
		`(?:(?P<i1>-?[1-9]\d{0,2}(?:[ ,]\d{3})+)(?P<d1>\.\d+)?|(?P<i2>-?\d+)(?P<d2>[.,]\d+)|(?P<d3>\.\d+)|(?P<i3>-?\d+))` +
		`(?P<pct>` + pySpace + `*(?:%|[Pp]ercent|` + pySpace + `*[Pp]ercentage|` + pySpace + `*[Pp]ct))?`)
	exprChar = `(?:[\d.+\-*×/^()÷]|` + pySpace + `)`
	exprRe   = regexp.MustCompile(`(?:^|` + pySpace + `|=)(?:\*\*)?(?P<expr>-?\(?-?\d` + exprChar + `*[+\-*×/^()÷]` + exprChar + `+\)?)(?:\*\*)?(?:\.|,|:|` + pySpace + `|\)|\$|$)`)
)

var thousands = strings.NewReplacer(",", "", " ", "")

// numbers finds plain numbers and expressions.
func numbers(text string) []span {
	var out []span
	names := numberRe.SubexpNames()
	for _, m := range numberRe.FindAllStringSubmatchIndex(text, -1) {
		var integer, decimal string
		vstart, vend := -1, m[1]
		sp := span{kind: spanNumber, start: m[0], end: m[1]}
		for g, name := range names {
			if m[2*g] < 0 || name == "" {
				continue
			}
			val := text[m[2*g]:m[2*g+1]]
			switch name[0] {
			case 'i':
				integer = val
			case 'd':
				decimal = val
			case 'p':
				sp.percent = true
				vend = m[2*g]
				continue
			}
			if vstart < 0 || m[2*g] < vstart {
				vstart = m[2*g]
			}
		}
		neg := strings.HasPrefix(integer, "-")
		integer = strings.TrimLeft(thousands.Replace(strings.TrimPrefix(integer, "-")), "0")
		if integer == "" {
			integer = "0"
		}
		if neg {
			integer = "-" + integer
		}
		sp.text = integer + strings.Replace(decimal, ",", ".", 1)
		sp.vstart, sp.vend = vstart, vend
		out = append(out, sp)
	}
	for _, m := range exprRe.FindAllStringSubmatchIndex(text, -1) {
		out = append(out, span{kind: spanExpr, start: m[0], end: m[1], vstart: m[2], vend: m[3], text: text[m[2]:m[3]]})
	}
	return out
}

var answerWord = regexp.MustCompile(`(?i)answer`)

// answerSpans are the candidates after the word "answer": for each
// occurrence, the first LaTeX environment and the first number or
// expression (an expression before a number at the same place) starting
// within 50 characters. Those after "answer:" are tried first. Each match
// runs from the word to the candidate's end.
func answerSpans(text string, candidates []span) (colon, any []span) {
	words := answerWord.FindAllStringIndex(text, -1)
	if len(words) == 0 {
		return nil, nil
	}
	byStart := append([]span{}, candidates...)
	sort.SliceStable(byStart, func(a, b int) bool {
		if byStart[a].start != byStart[b].start {
			return byStart[a].start < byStart[b].start
		}
		return byStart[a].kind == spanExpr && byStart[b].kind != spanExpr
	})
	next := 0 // candidates before it start before every later word
	for _, w := range words {
		from := w[1]
		hasColon := from < len(text) && text[from] == ':'
		if hasColon {
			from++
		}
		var latexFound, plainFound bool
		for next < len(byStart) && byStart[next].start < from {
			next++
		}
		for _, c := range byStart[next:] {
			if c.start > from+50 || (latexFound && plainFound) {
				break
			}
			isLatex := c.kind == spanLatex
			if (isLatex && latexFound) || (!isLatex && plainFound) {
				continue
			}
			latexFound, plainFound = latexFound || isLatex, plainFound || !isLatex
			c.start = w[0]
			if hasColon {
				colon = append(colon, c)
			}
			any = append(any, c)
		}
	}
	return colon, any
}
