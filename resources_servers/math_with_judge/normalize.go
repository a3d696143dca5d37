package mathwithjudge

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nemo-gym-go/gym/internal/resources"
)

// The LaTeX clean-up Math-Verify applies before parsing (latex2sympy2's
// normalize_latex with basic_latex, units, malformed_operators and nits on),
// rule for rule, so that the same answers parse.

// pySpace is Python's \s, which the patterns below are written with.
const pySpace = resources.PySpaceClass

var (
	leftDelim  = regexp.MustCompile(`\\m?left(\\\{|\{|\\\||\||\[|\(|\\rbracl|\\lgroup|\\lbrace|\\lbrack|\\vert|\\lvert|\\lceil|\\lfloor|\\vert|\\lvert|\\langle|\\llcorner|\\ulcorner)`)
	rightDelim = regexp.MustCompile(`\\m?right(\\\}|\}|\\\||\||\]|\)|\\rbrack|\\rgroup|\\rbrace|\\rbrack|\\vert|\\rvert|\\rceil|\\rfloor|\\vert|\\rvert|\\rangle|\\lrcorner|\\urcorner)`)
	// (n)_{k} is the falling factorial n!/(n-k)!.
	permutation  = regexp.MustCompile(`\(([a-zA-Z0-9+\-*/\\ ]+?)\)_\{([a-zA-Z0-9+\-*/\\ ]+?)\}`)
	uselessLatex = regexp.MustCompile(`\\mathrm\{th\}|\\!` + pySpace + `*|\\text` + pySpace + `*\{` + pySpace + `*\}|\\\$|\$|\\displaystyle`)
	unitSuperExp = regexp.MustCompile(`(\\(?:text|mbox)\{.*?\})(\^\d|\{\^\d\})?$`)
	unitWords    = regexp.MustCompile(`(\d|\}|` + pySpace + `)` + pySpace + `*(?:` + strings.Join(units, "|") + `)(?:s|es)?` + pySpace + `*$`)
	malformed    = []struct {
		re   *regexp.Regexp
		repl string
	}{
		{regexp.MustCompile(`\^` + pySpace + `?\((.*?)\)`), `^{$1}`},
		{regexp.MustCompile(`sqrt` + pySpace + `?\((.*?)\)`), `\sqrt{$1}`},
		{regexp.MustCompile(`\\frac` + pySpace + `?(\d)` + pySpace + `?(\d+)`), `\frac{$1}{$2}`},
		{regexp.MustCompile(`\\log_` + pySpace + `?(\d)` + pySpace + `?(\d+)`), `\log_{$1}{$2}`},
		{regexp.MustCompile(`\\frac` + pySpace + `?\{(.*?)\}` + pySpace + `?(\d)`), `\frac{$1}{$2}`},
		{regexp.MustCompile(`\\frac` + pySpace + `?(\d)` + pySpace + `?\{(.*?)\}`), `\frac{$1}{$2}`},
		{regexp.MustCompile(`\\sqrt` + pySpace + `?(\d)`), `\sqrt{$1}`},
	}
	validSeparator = regexp.MustCompile(`\b(and|or)\b|,|;`)
)

// units are the unit words stripped from the end of an answer, in
// latex2sympy2's order (which decides the match, and keeps its quirks:
// "integer" "point" is one word, and "." matches any character).
var units = []string{
	"integerpoint", "feet", "sue", "digit", "pound", "meal", "edge", "student", "children ticket", "multiple",
	"east", "degree", "mph", "kmph", "ft", "m square", " m east", "sq m", "deg", "mile", "q .", "monkey", "prime",
	"ratio", "profit of rs", "rd", "o", "gm", "p . m", "lb", "tile", "per", "dm", "lt", "gain", "ab", "way", "west",
	"a .", "b .", "c .", "d .", "e .", "f .", "g .", "h .", "t", "h", "no change", "men", "soldier", "pie", "bc",
	"excess", "st", "inches", "noon", "cent", "by", "gal", "kmh", "c", "acre", "rise", "a . m", "th", "π r 2", "sq",
	"mark", "l", "toy", "coin", "sq . m", "gallon", "° f", "profit", "minw", "yr", "women", "am", "pm", "hr",
	"cu cm", "square", "v â € ™", "are", "rupee", "rounds", "cubic", "cc", "mtr", "s", "ohm", "number", "kmph",
	"day", "hour", "minute", "min", "second", "man", "woman", "sec", "cube", "mt", "sq inch", "mp", "∏ cm ³",
	"hectare", "more", "sec", "unit", "cu . m", "cm 2", "rs .", "rs", "kg", "g", "month", "km", "m", "cm", "mm",
	"apple", "liter", "loss", "yard", "pure", "year", "increase", "decrease", "d", "less", "Surface", "litre",
	"pi sq m", "s .", "metre", "meter", "inch",
}

type boxedMode uint8

const (
	boxedAll  boxedMode = iota // every \boxed{} content, joined by commas
	boxedLast                  // the last box, with boxes right before it
)

// normalizeLatex is normalize_latex with Math-Verify's configuration.
func normalizeLatex(text string, mode boxedMode) string {
	text = extractBoxedContent(text, mode)

	text = strings.NewReplacer(`\mathrm{T}`, "T", `\mathrm{d}`, "d", `{\rm d}`, "d",
		`\left[\begin{matrix}`, `\begin{bmatrix}`, `\end{matrix}\right]`, `\end{bmatrix}`).Replace(text)
	text = leftDelim.ReplaceAllString(text, "$1")
	text = rightDelim.ReplaceAllString(text, "$1")
	text = permutation.ReplaceAllString(text, `\frac{($1)!}{(($1)-($2))!}`)
	text = removeQuotes(uselessLatex.ReplaceAllString(text, ""))
	text = replaceInLatex(text)
	text = strings.NewReplacer("\n", " ", "\t", " ").Replace(text)
	if !strings.Contains(text, "matrix") {
		text = fixDoubledBackslashes(text)
	}

	if t := resources.PyStrip(unitSuperExp.ReplaceAllString(text, "")); t != "" && t != text {
		text = t
	}
	for range 2 {
		if t := unitWords.ReplaceAllString(text, "$1"); t != "" && t != text {
			text = t
		}
	}

	if strings.HasPrefix(text, ".") {
		text = "0" + text
	}
	if text == "0.5" {
		text = `\frac{1}{2}`
	}

	for _, m := range malformed {
		text = m.re.ReplaceAllString(text, m.repl)
	}
	text = strings.ReplaceAll(text, " sqrt", `\sqrt`)
	text = fixSqrt(text)
	text = fixFracs(text)
	text = fixSlash(text)
	return resources.PyStrip(text)
}

// removeQuotes drops quotes not escaped by a backslash.
func removeQuotes(text string) string {
	if !strings.ContainsAny(text, `"'`) {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		if (text[i] == '"' || text[i] == '\'') && (i == 0 || text[i-1] != '\\') {
			continue
		}
		b.WriteByte(text[i])
	}
	return b.String()
}

// fixDoubledBackslashes turns \\cmd into \cmd.
func fixDoubledBackslashes(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		if text[i] == '\\' && i+2 < len(text) && text[i+1] == '\\' && isLetter(text[i+2]) {
			continue
		}
		b.WriteByte(text[i])
	}
	return b.String()
}

// extractBoxedContent finds \boxed{...} and \fbox{...} from the right. In
// boxedLast mode it keeps the last box and any box just before it (fewer
// than 10 characters between, or fewer than 70 with "and", "or", "," or ";"
// and a different content); in boxedAll mode every box. Contents are joined
// with commas; text without boxes is returned as it is.
func extractBoxedContent(text string, mode boxedMode) string {
	var results []string
	current, maxPos, lastStart := len(text), len(text), -1
	for {
		boxed := strings.LastIndex(text[:current], `\boxed`)
		fbox := strings.LastIndex(text[:current], `\fbox`)
		if boxed < 0 && fbox < 0 {
			break
		}
		start := max(boxed, fbox)
		next := start + len(`\fbox`)
		if boxed > fbox {
			next = start + len(`\boxed`)
		}
		for next < maxPos && resources.IsPySpace(rune(text[next])) {
			next++
		}
		if next >= maxPos {
			break
		}
		if text[next] != '{' {
			if len(results) == 0 {
				results = append(results, text[next:])
			}
			break
		}
		end := closingBrace(text, next, maxPos)
		if end < 0 {
			if len(results) == 0 {
				results = append(results, text[next:])
			}
			break
		}
		content := resources.PyStrip(text[next+1 : end])
		if mode == boxedLast && lastStart >= 0 {
			prev := ""
			if len(results) > 0 {
				prev = results[len(results)-1]
			}
			between := text[end+1 : lastStart]
			n := utf8.RuneCountInString(between)
			if !(n < 10 || (prev != content && n < 70 && validSeparator.MatchString(between))) {
				break
			}
		}
		if len(results) == 0 || results[len(results)-1] != content {
			results = append(results, content)
		}
		lastStart, maxPos, current = start, start, start
	}
	if len(results) == 0 {
		return text
	}
	for i, j := 0, len(results)-1; i < j; i, j = i+1, j-1 {
		results[i], results[j] = results[j], results[i]
	}
	return strings.Join(results, ",")
}

// closingBrace is the } matching the { at open, searching before maxPos.
func closingBrace(text string, open, maxPos int) int {
	depth := 1
	for i := open + 1; i < maxPos; i++ {
		switch text[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// replaceInLatex applies latex2sympy2's replacement table in one left to
// right pass: at each position the first rule that matches there wins.
func replaceInLatex(text string) string {
	var b strings.Builder
	for i := 0; i < len(text); {
		n, repl := replacementAt(text, i)
		if n > 0 {
			b.WriteString(repl)
			i += n
			continue
		}
		b.WriteByte(text[i])
		i++
	}
	return b.String()
}

// spacesAt is the length of the white space at text[i:].
func spacesAt(text string, i int) int {
	j := i
	for j < len(text) {
		r, size := utf8.DecodeRuneInString(text[j:])
		if !resources.IsPySpace(r) {
			break
		}
		j += size
	}
	return j - i
}

func isWordByte(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' }

// wordAt matches \s*\b<word>\b at i.
func wordAt(text string, i int, word string) int {
	sp := spacesAt(text, i)
	j := i + sp
	if !strings.HasPrefix(text[j:], word) {
		return 0
	}
	if sp == 0 && i > 0 && isWordByte(text[i-1]) {
		return 0
	}
	if end := j + len(word); end < len(text) && isWordByte(text[end]) {
		return 0
	}
	return sp + len(word)
}

func replacementAt(text string, i int) (int, string) {
	rest := text[i:]
	prefix := func(options ...string) int {
		for _, o := range options {
			if strings.HasPrefix(rest, o) {
				return len(o)
			}
		}
		return 0
	}
	if n := prefix(`\mathrm`, `\mathit`, `\mathbf`); n > 0 {
		return n, `\text`
	}
	if n := prefix(`\textnormal`, `\textbf`, `\textit`, `\textrm`); n > 0 {
		return n, `\text`
	}
	if n := prefix(`\dfrac`, `\tfrac`, `\cfrac`); n > 0 {
		return n, `\frac`
	}
	if r, size := utf8.DecodeRuneInString(rest); resources.IsPySpace(r) && strings.HasPrefix(rest[size:], ".") {
		return size + 1, " 0."
	}
	if strings.HasPrefix(rest, "{.") {
		return 2, "{0."
	}
	if strings.HasPrefix(rest, "~=") {
		return 2, `\approx`
	}
	if n := commaInBracesAt(text, i); n > 0 {
		return n, ","
	}
	if n := andOrAt(text, i); n > 0 {
		return n, ","
	}
	if n := andOrTextAt(text, i); n > 0 {
		return n, ","
	}
	if strings.HasPrefix(rest, `\`) && (i == 0 || text[i-1] != '\\') {
		if sp := spacesAt(text, i+1); sp > 0 {
			_, size := utf8.DecodeRuneInString(text[i+1:])
			return 1 + size, " "
		}
	}
	if strings.HasPrefix(rest, "infinity") {
		return len("infinity"), `\infty`
	}
	if strings.HasPrefix(rest, `,\ldots`) {
		return len(`,\ldots`), " "
	}
	if strings.HasPrefix(rest, `\ldots`) {
		return len(`\ldots`), " "
	}
	for _, w := range []string{"percentage", "percent", "pct"} {
		if n := wordAt(text, i, w); n > 0 {
			return n, "%"
		}
	}
	if n := prefix(`\text{percent}`, `\text{pct}`, `\text{percentage}`); n > 0 {
		return n, "%"
	}
	if strings.HasPrefix(rest, "inf") && !strings.HasPrefix(rest, "infinity") && (i == 0 || text[i-1] != '\\') {
		return 3, `\infty`
	}
	if strings.HasPrefix(rest, " sqrt") {
		return len(" sqrt"), `\sqrt`
	}
	return 0, ""
}

// commaInBracesAt matches \s*\{\s*,\s*\} at i: {,} as a thousands comma.
func commaInBracesAt(text string, i int) int {
	j := i + spacesAt(text, i)
	if j >= len(text) || text[j] != '{' {
		return 0
	}
	j++
	j += spacesAt(text, j)
	if j >= len(text) || text[j] != ',' {
		return 0
	}
	j++
	j += spacesAt(text, j)
	if j >= len(text) || text[j] != '}' {
		return 0
	}
	return j + 1 - i
}

// andOrAt matches (?<![a-zA-Z]),?\s*(and|or)(?![a-zA-Z]) at i.
func andOrAt(text string, i int) int {
	if i > 0 && isLetter(text[i-1]) {
		return 0
	}
	j := i
	if j < len(text) && text[j] == ',' {
		j++
	}
	j += spacesAt(text, j)
	for _, w := range []string{"and", "or"} {
		if strings.HasPrefix(text[j:], w) {
			end := j + len(w)
			if end < len(text) && isLetter(text[end]) {
				return 0
			}
			return end - i
		}
	}
	return 0
}

// andOrTextAt matches ,?\s*\\text{\s*(and|or)\s*} at i.
func andOrTextAt(text string, i int) int {
	j := i
	if j < len(text) && text[j] == ',' {
		j++
	}
	j += spacesAt(text, j)
	if !strings.HasPrefix(text[j:], `\text{`) {
		return 0
	}
	j += len(`\text{`)
	j += spacesAt(text, j)
	matched := false
	for _, w := range []string{"and", "or"} {
		if strings.HasPrefix(text[j:], w) {
			j += len(w)
			matched = true
			break
		}
	}
	if !matched {
		return 0
	}
	j += spacesAt(text, j)
	if j >= len(text) || text[j] != '}' {
		return 0
	}
	return j + 1 - i
}

// fixSqrt turns \sqrt3 into \sqrt{3}.
func fixSqrt(text string) string {
	if !strings.Contains(text, `\sqrt`) {
		return text
	}
	parts := strings.Split(text, `\sqrt`)
	var b strings.Builder
	b.WriteString(parts[0])
	for _, part := range parts[1:] {
		part = strings.TrimLeftFunc(part, resources.IsPySpace)
		if part != "" && part[0] != '{' && part[0] != '[' {
			_, size := utf8.DecodeRuneInString(part)
			b.WriteString(`\sqrt{` + part[:size] + "}" + part[size:])
		} else {
			b.WriteString(`\sqrt` + part)
		}
	}
	return b.String()
}

// fixFracs turns \frac12 and \frac1{2} into \frac{1}{2} (the MATH
// dataset's rule).
func fixFracs(text string) string {
	parts := strings.Split(text, `\frac`)
	var b strings.Builder
	b.WriteString(parts[0])
	for _, part := range parts[1:] {
		part = strings.TrimLeftFunc(part, resources.IsPySpace)
		b.WriteString(`\frac`)
		if strings.HasPrefix(part, "{") {
			b.WriteString(part)
			continue
		}
		runes := []rune(part)
		if len(runes) < 2 {
			return text
		}
		a, c := string(runes[0]), string(runes[1])
		tail := string(runes[2:])
		if c != "{" {
			b.WriteString("{" + a + "}{" + c + "}" + tail)
		} else {
			b.WriteString("{" + a + "}" + c + tail)
		}
	}
	return b.String()
}

// fixSlash turns a plain a/b of integers into \frac{a}{b}.
func fixSlash(text string) string {
	num, den, ok := strings.Cut(text, "/")
	if !ok || strings.Contains(den, "/") {
		return text
	}
	a, errA := strconv.Atoi(num)
	b, errB := strconv.Atoi(den)
	if errA != nil || errB != nil || text != strconv.Itoa(a)+"/"+strconv.Itoa(b) {
		return text
	}
	return `\frac{` + strconv.Itoa(a) + "}{" + strconv.Itoa(b) + "}"
}

// lastEquation is the part after the last = of an equation chain a=b=c,
// which Math-Verify parses when the whole does not; lists (a=1, b=2) are
// left alone. An = after \, <, ! or > is not a split point.
func lastEquation(latex string) string {
	if strings.ContainsAny(latex, ",;") {
		return latex
	}
	var parts []string
	last := 0
	for i := 0; i < len(latex); i++ {
		if latex[i] != '=' || (i > 0 && strings.IndexByte(`\<!>`, latex[i-1]) >= 0) {
			continue
		}
		parts = append(parts, latex[last:i])
		last = i + 1
	}
	parts = append(parts, latex[last:])
	if len(parts) > 2 {
		return parts[len(parts)-1]
	}
	return latex
}
