package mathwithjudge

import (
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Bounds that keep parsing of any input cheap: answers are short, and a
// model's runaway output must not cost more than a moment.
const (
	maxParseLen = 4096
	maxDepth    = 64
	maxNodes    = 1000
	maxDigits   = 2000
)

type nodeKind uint8

const (
	nNum     nodeKind = iota // a literal; num holds its exact value
	nSym                     // a variable: name
	nPi                      // π
	nE                       // Euler's number
	nI                       // the imaginary unit
	nInf                     // ∞
	nAdd                     // args summed
	nMul                     // args multiplied
	nDiv                     // args[0] / args[1]
	nNeg                     // -args[0]
	nPow                     // args[0] ^ args[1]
	nFunc                    // name(args...): sqrt, root, sin, log, abs, factorial, ...
	nPercent                 // args[0] %
	nTuple                   // a bracketed list; name is its brackets, "()", "[)", ...
	nSet                     // \{ args \}
)

// expr is a parsed expression, kept as written (like latex2sympy's
// evaluate=False) so that it prints close to what NeMo Gym reports.
type expr struct {
	kind  nodeKind
	num   *big.Rat
	float bool // nNum written with a decimal point: a SymPy Float
	name  string
	args  []*expr
}

type answerKind uint8

const (
	aExpr answerKind = iota
	aSet
	aTuple
	aInterval
	aRel
)

// answer is a whole extracted answer: an expression, a set or tuple of
// answers, an interval, or a chain of relations (x = 5, 1 < x < 3).
type answer struct {
	kind         answerKind
	expr         *expr     // aExpr
	items        []*answer // aSet, aTuple
	lo, hi       *expr     // aInterval
	lopen, ropen bool      // aInterval
	sides        []*expr   // aRel: sides[0] ops[0] sides[1] ...
	ops          []string  // aRel: "=", "<", "<=", ">", ">=", "!="
}

var errParse = errors.New("not a math expression this parser reads")

type parser struct {
	s       string
	pos     int
	depth   int
	nodes   int
	complex bool // a standalone i is the imaginary unit
}

// complexHint is Math-Verify's test for answers that use i as the
// imaginary unit rather than as a variable.
var complexHint = regexp.MustCompile(`\\i\b|\bi\b|\\text\{i\}|\\mathrm\{i\}|\\imath\b`)

// parseAnswer parses a normalised LaTeX answer.
func parseAnswer(s string) (*answer, error) {
	if len(s) > maxParseLen {
		return nil, fmt.Errorf("%w: longer than %d bytes", errParse, maxParseLen)
	}
	p := &parser{s: s, complex: complexHint.MatchString(s)}
	a, err := p.list()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos < len(p.s) {
		return nil, fmt.Errorf("%w: unexpected %q at %d", errParse, p.rest(12), p.pos)
	}
	return a, nil
}

func (p *parser) rest(n int) string {
	r := p.s[p.pos:]
	if len(r) > n {
		r = r[:n]
	}
	return r
}

func (p *parser) node(k nodeKind, name string, args ...*expr) (*expr, error) {
	p.nodes++
	if p.nodes > maxNodes {
		return nil, fmt.Errorf("%w: more than %d nodes", errParse, maxNodes)
	}
	return &expr{kind: k, name: name, args: args}, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return fmt.Errorf("%w: nested deeper than %d", errParse, maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// spacing are LaTeX spacing commands, skipped like blanks.
var spacing = []string{`\,`, `\;`, `\:`, `\!`, `\ `, `\quad`, `\qquad`, `\enspace`, `\thinspace`, `~`}

func (p *parser) space() {
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			p.pos++
			continue
		}
		skipped := false
		for _, sp := range spacing {
			if strings.HasPrefix(p.s[p.pos:], sp) && !(len(sp) > 2 && p.pos+len(sp) < len(p.s) && isLetter(p.s[p.pos+len(sp)])) {
				p.pos += len(sp)
				skipped = true
				break
			}
		}
		if !skipped {
			return
		}
	}
}

func (p *parser) peek() byte {
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

func (p *parser) eat(tok string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.pos:], tok) {
		if tok[0] == '\\' && len(tok) > 1 && isLetter(tok[1]) {
			end := p.pos + len(tok)
			if end < len(p.s) && isLetter(p.s[end]) {
				return false // \le must not eat the start of \left
			}
		}
		p.pos += len(tok)
		return true
	}
	return false
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// list is relation (, relation)*: a comma list is a set.
func (p *parser) list() (*answer, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	first, err := p.relation()
	if err != nil {
		return nil, err
	}
	items := []*answer{first}
	for p.eat(",") || p.eat(";") {
		it, err := p.relation()
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	if len(items) == 1 {
		return first, nil
	}
	return &answer{kind: aSet, items: items}, nil
}

// relOps maps relation spellings to their operators, longest first.
var relOps = []struct{ tok, op string }{
	{`\leqslant`, "<="}, {`\geqslant`, ">="}, {`\leq`, "<="}, {`\geq`, ">="}, {`\neq`, "!="},
	{`\le`, "<="}, {`\ge`, ">="}, {`\ne`, "!="}, {`\lt`, "<"}, {`\gt`, ">"}, {`\approx`, "="},
	{"<=", "<="}, {">=", ">="}, {"!=", "!="}, {"≤", "<="}, {"≥", ">="}, {"≠", "!="},
	{"=", "="}, {"<", "<"}, {">", ">"},
}

func (p *parser) relation() (*answer, error) {
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	a := &answer{kind: aRel, sides: []*expr{e}}
	for {
		op := ""
		for _, r := range relOps {
			if p.eat(r.tok) {
				op = r.op
				break
			}
		}
		if op == "" {
			break
		}
		rhs, err := p.expr()
		if err != nil {
			return nil, err
		}
		a.ops = append(a.ops, op)
		a.sides = append(a.sides, rhs)
	}
	if len(a.ops) > 0 {
		return a, nil
	}
	return wholeAnswer(e), nil
}

// wholeAnswer reads a bracketed list standing alone as a tuple or an
// interval, and braces as a set.
func wholeAnswer(e *expr) *answer {
	switch e.kind {
	case nTuple:
		if len(e.args) == 2 {
			return &answer{kind: aInterval, lo: e.args[0], hi: e.args[1], lopen: e.name[0] == '(', ropen: e.name[1] == ')'}
		}
		items := make([]*answer, len(e.args))
		for i, a := range e.args {
			items[i] = wholeAnswer(a)
		}
		return &answer{kind: aTuple, items: items}
	case nSet:
		items := make([]*answer, len(e.args))
		for i, a := range e.args {
			items[i] = wholeAnswer(a)
		}
		return &answer{kind: aSet, items: items}
	}
	return &answer{kind: aExpr, expr: e}
}

func (p *parser) expr() (*expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	var terms []*expr
	neg := false
	if p.eat("-") {
		neg = true
	} else {
		p.eat("+")
	}
	for {
		t, err := p.term()
		if err != nil {
			return nil, err
		}
		if neg {
			if t, err = p.node(nNeg, "", t); err != nil {
				return nil, err
			}
		}
		terms = append(terms, t)
		switch {
		case p.eat("+"):
			neg = false
		case p.eat("-"):
			neg = true
		default:
			if len(terms) == 1 {
				return terms[0], nil
			}
			return p.node(nAdd, "", terms...)
		}
	}
}

func (p *parser) term() (*expr, error) {
	f, err := p.unary()
	if err != nil {
		return nil, err
	}
	factors := []*expr{f}
	flush := func() (*expr, error) {
		if len(factors) == 1 {
			return factors[0], nil
		}
		return p.node(nMul, "", factors...)
	}
	for {
		switch {
		case p.eat("*") || p.eat(`\cdot`) || p.eat(`\times`) || p.eat(`\ast`) || p.eat("×") || p.eat("·"):
			g, err := p.unary()
			if err != nil {
				return nil, err
			}
			factors = append(factors, g)
		case p.eat("/") || p.eat(`\div`) || p.eat("÷"):
			num, err := flush()
			if err != nil {
				return nil, err
			}
			den, err := p.unary()
			if err != nil {
				return nil, err
			}
			d, err := p.node(nDiv, "", num, den)
			if err != nil {
				return nil, err
			}
			factors = []*expr{d}
		case p.startsFactor():
			g, err := p.power()
			if err != nil {
				return nil, err
			}
			factors = append(factors, g)
		default:
			return flush()
		}
	}
}

// startsFactor reports whether what follows can start a factor of an
// implicit product: 2x, 2\sqrt{3}, (a)(b).
func (p *parser) startsFactor() bool {
	p.space()
	if p.pos >= len(p.s) {
		return false
	}
	c := p.s[p.pos]
	switch {
	case isDigit(c) || isLetter(c) || c == '(' || c == '{':
		return true
	case c == '\\':
		name := p.commandName()
		switch name {
		case "cdot", "times", "ast", "div", "pm", "mp", "le", "leq", "leqslant", "ge", "geq", "geqslant",
			"ne", "neq", "lt", "gt", "approx", "right", "rfloor", "rceil", "}", "%", "circ", "degree":
			return false
		}
		return name != ""
	}
	r, _ := utf8.DecodeRuneInString(p.s[p.pos:])
	return r == 'π' || r == '∞' || r == '√'
}

// commandName is the name of the \command at pos, without consuming it.
func (p *parser) commandName() string {
	i := p.pos + 1
	if i >= len(p.s) {
		return ""
	}
	if !isLetter(p.s[i]) {
		return p.s[i : i+1]
	}
	j := i
	for j < len(p.s) && isLetter(p.s[j]) {
		j++
	}
	return p.s[i:j]
}

func (p *parser) unary() (*expr, error) {
	if p.eat("-") {
		u, err := p.unary()
		if err != nil {
			return nil, err
		}
		return p.node(nNeg, "", u)
	}
	p.eat("+")
	return p.power()
}

func (p *parser) power() (*expr, error) {
	base, err := p.postfix()
	if err != nil {
		return nil, err
	}
	for p.eat("^") {
		if p.degreeMark() {
			continue // 30^\circ is 30: NeMo Gym does not convert degrees
		}
		exp, err := p.script()
		if err != nil {
			return nil, err
		}
		if base, err = p.node(nPow, "", base, exp); err != nil {
			return nil, err
		}
		if base, err = p.postfixOps(base); err != nil {
			return nil, err
		}
	}
	return base, nil
}

func (p *parser) degreeMark() bool {
	return p.eat(`\circ`) || p.eat(`{\circ}`) || p.eat(`\degree`) || p.eat(`{\degree}`)
}

// script is the argument of ^ or _: a braced group, or one atom (a whole
// number, as latex2sympy reads 2^10), possibly negated.
func (p *parser) script() (*expr, error) {
	p.space()
	if p.peek() == '{' {
		return p.braced()
	}
	if p.eat("-") {
		a, err := p.script()
		if err != nil {
			return nil, err
		}
		return p.node(nNeg, "", a)
	}
	return p.primary()
}

func (p *parser) postfix() (*expr, error) {
	e, err := p.primary()
	if err != nil {
		return nil, err
	}
	return p.postfixOps(e)
}

func (p *parser) postfixOps(e *expr) (*expr, error) {
	var err error
	for {
		p.space()
		switch {
		case strings.HasPrefix(p.s[p.pos:], "!") && !strings.HasPrefix(p.s[p.pos:], "!="):
			p.pos++
			e, err = p.node(nFunc, "factorial", e)
		case p.eat(`\%`) || p.eat("%"):
			e, err = p.node(nPercent, "", e)
		case p.eat(`\circ`) || p.eat(`\degree`):
		default:
			return e, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// braced parses {expr}.
func (p *parser) braced() (*expr, error) {
	if !p.eat("{") {
		return nil, fmt.Errorf("%w: expected { at %d", errParse, p.pos)
	}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	if !p.eat("}") {
		return nil, fmt.Errorf("%w: expected } at %d", errParse, p.pos)
	}
	return e, nil
}

// arg is a command argument: {expr}, or a single digit or letter as TeX
// reads \frac12.
func (p *parser) arg() (*expr, error) {
	p.space()
	c := p.peek()
	switch {
	case c == '{':
		return p.braced()
	case isDigit(c):
		p.pos++
		e, err := p.node(nNum, "")
		if err != nil {
			return nil, err
		}
		e.num = big.NewRat(int64(c-'0'), 1)
		return e, nil
	}
	return p.primary()
}

func (p *parser) primary() (*expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	p.space()
	if p.pos >= len(p.s) {
		return nil, fmt.Errorf("%w: unexpected end", errParse)
	}
	c := p.s[p.pos]
	switch {
	case isDigit(c) || (c == '.' && p.pos+1 < len(p.s) && isDigit(p.s[p.pos+1])):
		return p.number()
	case isLetter(c):
		return p.symbol()
	case c == '(' || c == '[':
		return p.bracketed()
	case c == '{':
		p.pos++
		items, err := p.items("}")
		if err != nil {
			return nil, err
		}
		if len(items) == 1 {
			return items[0], nil
		}
		return p.node(nSet, "", items...)
	case c == '|':
		p.pos++
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		if !p.eat("|") {
			return nil, fmt.Errorf("%w: unclosed |", errParse)
		}
		return p.node(nFunc, "abs", e)
	case c == '\\':
		return p.command()
	}
	r, size := utf8.DecodeRuneInString(p.s[p.pos:])
	switch r {
	case 'π':
		p.pos += size
		return p.node(nPi, "")
	case '∞':
		p.pos += size
		return p.node(nInf, "")
	case '√':
		p.pos += size
		x, err := p.arg()
		if err != nil {
			return nil, err
		}
		return p.node(nFunc, "sqrt", x)
	}
	return nil, fmt.Errorf("%w: unexpected %q at %d", errParse, p.rest(8), p.pos)
}

// number reads digits, thousands separators (1,234,567) and a decimal part.
func (p *parser) number() (*expr, error) {
	var digits strings.Builder
	start := p.pos
	for p.pos < len(p.s) && isDigit(p.s[p.pos]) {
		digits.WriteByte(p.s[p.pos])
		p.pos++
	}
	if p.pos-start <= 3 {
		for p.pos+3 < len(p.s) && p.s[p.pos] == ',' && isDigit(p.s[p.pos+1]) && isDigit(p.s[p.pos+2]) && isDigit(p.s[p.pos+3]) &&
			(p.pos+4 == len(p.s) || !isDigit(p.s[p.pos+4])) {
			digits.WriteString(p.s[p.pos+1 : p.pos+4])
			p.pos += 4
		}
	}
	isFloat := false
	if p.pos+1 < len(p.s) && p.s[p.pos] == '.' && isDigit(p.s[p.pos+1]) {
		isFloat = true
		digits.WriteByte('.')
		p.pos++
		for p.pos < len(p.s) && isDigit(p.s[p.pos]) {
			digits.WriteByte(p.s[p.pos])
			p.pos++
		}
	}
	if digits.Len() > maxDigits {
		return nil, fmt.Errorf("%w: a number of more than %d digits", errParse, maxDigits)
	}
	text := digits.String()
	if text[0] == '.' {
		text = "0" + text
	}
	v, ok := new(big.Rat).SetString(text)
	if !ok {
		return nil, fmt.Errorf("%w: bad number %q", errParse, text)
	}
	e, err := p.node(nNum, "")
	if err != nil {
		return nil, err
	}
	e.num, e.float = v, isFloat
	return e, nil
}

// symbol reads one letter, with a subscript (x_1, a_{n}) as part of its
// name. e is Euler's number and, in an answer that uses it so, i the
// imaginary unit.
func (p *parser) symbol() (*expr, error) {
	name := p.s[p.pos : p.pos+1]
	p.pos++
	if p.peek() == '_' {
		p.pos++
		sub, err := p.subscriptText()
		if err != nil {
			return nil, err
		}
		return p.node(nSym, name+"_"+sub)
	}
	switch {
	case name == "e":
		return p.node(nE, "")
	case name == "i" && p.complex:
		return p.node(nI, "")
	}
	return p.node(nSym, name)
}

func (p *parser) subscriptText() (string, error) {
	p.space()
	if p.peek() == '{' {
		end := matchingBrace(p.s, p.pos)
		if end < 0 {
			return "", fmt.Errorf("%w: unclosed subscript", errParse)
		}
		sub := strings.Join(strings.Fields(p.s[p.pos+1:end]), "")
		p.pos = end + 1
		return sub, nil
	}
	if p.pos < len(p.s) && (isLetter(p.peek()) || isDigit(p.peek())) {
		p.pos++
		return p.s[p.pos-1 : p.pos], nil
	}
	return "", fmt.Errorf("%w: empty subscript", errParse)
}

// matchingBrace is the index of the } closing the { at open, or -1.
func matchingBrace(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		case '\\':
			if i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '}') {
				i++
			}
		}
	}
	return -1
}

// items parses comma-separated expressions up to one of the closers and
// consumes it.
func (p *parser) items(closers ...string) ([]*expr, error) {
	var out []*expr
	p.space()
	for _, c := range closers {
		if p.eat(c) {
			return out, nil
		}
	}
	for {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		if p.eat(",") {
			continue
		}
		for _, c := range closers {
			if p.eat(c) {
				return out, nil
			}
		}
		return nil, fmt.Errorf("%w: expected one of %q at %d", errParse, closers, p.pos)
	}
}

// bracketed is (e), [e], or a list in brackets: a tuple or an interval.
func (p *parser) bracketed() (*expr, error) {
	open := p.s[p.pos]
	p.pos++
	var closed byte
	items, err := p.items(")", "]")
	if err != nil {
		return nil, err
	}
	closed = p.s[p.pos-1]
	if len(items) == 0 {
		return nil, fmt.Errorf("%w: empty brackets", errParse)
	}
	if len(items) == 1 {
		if (open == '(') != (closed == ')') {
			return nil, fmt.Errorf("%w: mismatched brackets", errParse)
		}
		return items[0], nil
	}
	return p.node(nTuple, string([]byte{open, closed}), items...)
}

// functions maps LaTeX function commands to the names they print as.
var functions = map[string]string{
	"sin": "sin", "cos": "cos", "tan": "tan", "cot": "cot", "sec": "sec", "csc": "csc",
	"arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
	"log": "log", "ln": "log", "lg": "log10", "exp": "exp",
}

var greek = map[string]bool{
	"alpha": true, "beta": true, "gamma": true, "delta": true, "epsilon": true, "varepsilon": true, "zeta": true,
	"eta": true, "theta": true, "vartheta": true, "iota": true, "kappa": true, "lambda": true, "mu": true, "nu": true,
	"xi": true, "rho": true, "sigma": true, "tau": true, "upsilon": true, "phi": true, "varphi": true, "chi": true,
	"psi": true, "omega": true, "Gamma": true, "Delta": true, "Theta": true, "Lambda": true, "Xi": true, "Sigma": true,
	"Phi": true, "Psi": true, "Omega": true,
}

func (p *parser) command() (*expr, error) {
	name := p.commandName()
	p.pos += 1 + len(name)
	switch name {
	case "frac", "dfrac", "tfrac", "cfrac":
		a, err := p.arg()
		if err != nil {
			return nil, err
		}
		b, err := p.arg()
		if err != nil {
			return nil, err
		}
		return p.node(nDiv, "", a, b)
	case "sqrt":
		var index *expr
		if p.eat("[") {
			var err error
			if index, err = p.expr(); err != nil {
				return nil, err
			}
			if !p.eat("]") {
				return nil, fmt.Errorf("%w: unclosed root index", errParse)
			}
		}
		x, err := p.arg()
		if err != nil {
			return nil, err
		}
		if index != nil {
			return p.node(nFunc, "root", x, index)
		}
		return p.node(nFunc, "sqrt", x)
	case "binom", "dbinom", "tbinom":
		a, err := p.arg()
		if err != nil {
			return nil, err
		}
		b, err := p.arg()
		if err != nil {
			return nil, err
		}
		return p.node(nFunc, "binomial", a, b)
	case "pi":
		return p.node(nPi, "")
	case "infty", "infin":
		return p.node(nInf, "")
	case "emptyset", "varnothing":
		return p.node(nSet, "")
	case "{":
		items, err := p.items(`\}`)
		if err != nil {
			return nil, err
		}
		return p.node(nSet, "", items...)
	case "lfloor", "lceil":
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		closer, fn := `\rfloor`, "floor"
		if name == "lceil" {
			closer, fn = `\rceil`, "ceiling"
		}
		if !p.eat(closer) {
			return nil, fmt.Errorf("%w: expected %s", errParse, closer)
		}
		return p.node(nFunc, fn, e)
	case "text", "textbf", "textit", "textrm", "mathrm", "mathbf", "mathit", "mbox", "operatorname":
		return p.text()
	}
	if fn, ok := functions[name]; ok {
		return p.function(fn)
	}
	if greek[name] {
		return p.node(nSym, strings.TrimPrefix(name, "var"))
	}
	return nil, fmt.Errorf("%w: \\%s", errParse, name)
}

// function reads \sin x, \sin^2 x, \log_2 8, \ln(x).
func (p *parser) function(fn string) (*expr, error) {
	var pow, base *expr
	var err error
	for {
		switch {
		case p.eat("^"):
			if pow, err = p.script(); err != nil {
				return nil, err
			}
			continue
		case p.eat("_"):
			if base, err = p.script(); err != nil {
				return nil, err
			}
			continue
		}
		break
	}
	p.space()
	var x *expr
	if p.peek() == '(' {
		x, err = p.bracketed()
	} else {
		x, err = p.power()
	}
	if err != nil {
		return nil, err
	}
	args := []*expr{x}
	if base != nil && fn == "log" {
		args = append(args, base)
	}
	f, err := p.node(nFunc, fn, args...)
	if err != nil || pow == nil {
		return f, err
	}
	// \sin^{-1} x is arcsin x; any other power applies to the value.
	if pow.kind == nNeg && pow.args[0].kind == nNum && pow.args[0].num.Cmp(big.NewRat(1, 1)) == 0 {
		if inv, ok := map[string]string{"sin": "asin", "cos": "acos", "tan": "atan"}[fn]; ok {
			f.name = inv
			return f, nil
		}
	}
	return p.node(nPow, "", f, pow)
}

// text reads \text{...}: a number or expression inside is itself; words
// are a symbol (a textual answer such as \text{Evelyn}).
func (p *parser) text() (*expr, error) {
	p.space()
	if p.peek() != '{' {
		return nil, fmt.Errorf("%w: \\text without braces", errParse)
	}
	end := matchingBrace(p.s, p.pos)
	if end < 0 {
		return nil, fmt.Errorf("%w: unclosed \\text", errParse)
	}
	inner := strings.TrimSpace(p.s[p.pos+1 : end])
	p.pos = end + 1
	if inner == "" {
		return nil, fmt.Errorf("%w: empty \\text", errParse)
	}
	if word := strings.Join(strings.Fields(inner), " "); isWords(word) {
		return p.node(nSym, word)
	}
	sub := &parser{s: inner, depth: p.depth, nodes: p.nodes, complex: p.complex}
	e, err := sub.expr()
	if err != nil {
		return nil, err
	}
	if sub.space(); sub.pos != len(sub.s) {
		return nil, fmt.Errorf("%w: \\text{%s}", errParse, inner)
	}
	p.nodes = sub.nodes
	return e, nil
}

func isWords(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isLetter(s[i]) && s[i] != ' ' {
			return false
		}
	}
	return true
}
