package override

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Parse reads one command-line token with Hydra 1.3's override grammar and
// value typing. Every node of the value carries the token as its origin.
// Errors are *ParseError.
func Parse(token string) (Override, error) {
	toks, lerr := lex(token)
	if lerr != nil {
		return Override{}, &ParseError{
			Token:  token,
			Column: column(token, lerr.pos),
			Msg:    "token recognition error at: '" + display(lerr.text) + "'",
		}
	}
	p := &parser{src: token, toks: toks}
	ov, err := p.override()
	if err != nil {
		return Override{}, err
	}
	return ov, nil
}

type parser struct {
	src   string
	toks  []token
	i     int
	depth int
}

// ast is the parse tree of a value, kept separate from evaluation because
// Hydra reports every syntax error before it evaluates any function.
type ast struct {
	kind     astKind
	toks     []token   // aPrim
	items    []*ast    // aList items, aDict values, aFunc arguments
	keys     [][]token // aDict
	argNames []string  // aFunc, "" for a positional argument
	pos, end int       // aFunc: source span, for messages
}

type astKind uint8

const (
	aPrim astKind = iota
	aList
	aDict
	aFunc
)

func (p *parser) peek() token { return p.toks[p.i] }

// next is the kind of the token after the current one. Callers only look
// past a token that is not EOF, so there is one.
func (p *parser) next() kind { return p.toks[p.i+1].kind }

func (p *parser) text(t token) string { return p.src[t.pos:t.end] }

func (p *parser) override() (Override, *ParseError) {
	ov := Override{Token: p.src}
	switch p.peek().kind {
	case kPlus:
		p.i++
		ov.Op = Add
		if p.peek().kind == kPlus {
			p.i++
			ov.Op = ForceAdd
		}
	case kTilde:
		p.i++
		ov.Op = Delete
	}
	// Hydra's grammar allows an empty key (its "_global_" package), which
	// means nothing for gym's layer.
	switch t := p.peek(); t.kind {
	case kKey:
		p.i++
		ov.Key = p.text(t)
		ov.Path = strings.Split(ov.Key, ".")
		if len(ov.Path) > tree.MaxDepth {
			return ov, p.depthErr(t.pos + segmentOffset(ov.Key, tree.MaxDepth))
		}
		// Each key segment is a map of the CLI layer, so a value's
		// collections start below them.
		p.depth = len(ov.Path)
	case kEqual, kEOF:
		return ov, p.errAt(t, "missing key")
	default:
		return ov, p.mismatch("a key")
	}
	switch t := p.peek(); t.kind {
	case kSlash, kAt:
		return ov, p.errAt(t, "config group and package overrides (group/option, group@package) are not supported: gym has no Hydra config groups")
	case kEqual:
		p.i++
	case kEOF:
		if ov.Op == Delete {
			return ov, nil
		}
		return ov, p.errAt(t, "missing '=' at '<EOF>'")
	default:
		if ov.Op == Delete {
			return ov, p.mismatch("'=' or <EOF>")
		}
		return ov, p.mismatch("'='")
	}
	start := p.peek()
	if start.kind == kEOF {
		ov.Value = tree.NewString("")
	} else {
		elems, err := p.value()
		if err != nil {
			return ov, err
		}
		if ov.Value, err = p.evalValue(elems, start); err != nil {
			return ov, err
		}
	}
	ov.Value.SetOrigin(tree.Origin{Kind: tree.FromCLI, Token: p.src})
	return ov, nil
}

// value parses `element (',' element)*` up to the end of the token.
func (p *parser) value() ([]*ast, *ParseError) {
	var elems []*ast
	for {
		e, err := p.element()
		if err != nil {
			return nil, err
		}
		elems = append(elems, e)
		if p.peek().kind != kComma {
			break
		}
		p.i++
	}
	if t := p.peek(); t.kind != kEOF {
		if p.next() == kEOF {
			return nil, p.errAt(t, "extraneous input '"+p.shown(t)+"' expecting <EOF>"+p.nestedHint())
		}
		return nil, p.mismatch("<EOF>")
	}
	return elems, nil
}

// Token kinds that may continue an unquoted primitive, and a dict key.
var (
	primitiveTok = kindSet(kID, kNull, kInt, kFloat, kBool, kInterp, kUnquoted, kColon, kEsc, kWS)
	dictKeyTok   = kindSet(kID, kNull, kInt, kFloat, kBool, kUnquoted, kEsc, kWS)
)

func kindSet(ks ...kind) (set [kInterp + 1]bool) {
	for _, k := range ks {
		set[k] = true
	}
	return set
}

func (p *parser) element() (*ast, *ParseError) {
	switch t := p.peek(); t.kind {
	case kID:
		if p.next() == kPOpen {
			return p.function()
		}
		return p.primitive(), nil
	case kNull, kInt, kFloat, kBool, kInterp, kUnquoted, kColon, kEsc:
		return p.primitive(), nil
	case kQuoted:
		p.i++
		return &ast{kind: aPrim, toks: []token{t}}, nil
	case kBracketOpen:
		return p.list()
	case kBraceOpen:
		return p.dict()
	}
	return nil, p.mismatch("a value")
}

func (p *parser) primitive() *ast {
	start := p.i
	for primitiveTok[p.peek().kind] {
		p.i++
	}
	toks := p.toks[start:p.i]
	// Hydra strips blanks around an unquoted value. Only trailing ones can
	// occur: every token that may precede a value swallows the blanks
	// after it, and the first token is never a blank.
	if toks[len(toks)-1].kind == kWS {
		toks = toks[:len(toks)-1]
	}
	return &ast{kind: aPrim, toks: toks}
}

// nest enters a list, dict or function call. tree.MaxDepth bounds the
// nesting of the layer the override builds, and with it the stack here;
// functions count too, though they build no level, since they recurse
// alike. Hydra gives up sooner, at Python's recursion limit.
func (p *parser) nest() *ParseError {
	p.depth++
	if p.depth > tree.MaxDepth {
		return p.depthErr(p.peek().pos)
	}
	return nil
}

func (p *parser) depthErr(pos int) *ParseError {
	return &ParseError{Token: p.src, Column: column(p.src, pos), Msg: tree.DepthProblem()}
}

// segmentOffset is the byte offset of dotted segment i of key.
func segmentOffset(key string, i int) int {
	off := 0
	for range i {
		off += strings.IndexByte(key[off:], '.') + 1
	}
	return off
}

func (p *parser) list() (*ast, *ParseError) {
	if err := p.nest(); err != nil {
		return nil, err
	}
	p.i++ // '['
	l := &ast{kind: aList}
	if p.peek().kind != kBracketClose {
		for {
			e, err := p.element()
			if err != nil {
				return nil, err
			}
			l.items = append(l.items, e)
			if p.peek().kind != kComma {
				break
			}
			p.i++
		}
	}
	if p.peek().kind != kBracketClose {
		return nil, p.mismatch("',' or ']'")
	}
	p.i++
	p.depth--
	return l, nil
}

func (p *parser) dict() (*ast, *ParseError) {
	if err := p.nest(); err != nil {
		return nil, err
	}
	p.i++ // '{'
	d := &ast{kind: aDict}
	if p.peek().kind != kBraceClose {
		for {
			start := p.i
			for dictKeyTok[p.peek().kind] {
				p.i++
			}
			if p.i == start {
				return nil, p.mismatch("a dict key")
			}
			key := p.toks[start:p.i]
			if p.peek().kind != kColon {
				return nil, p.mismatch("':'")
			}
			p.i++
			e, err := p.element()
			if err != nil {
				return nil, err
			}
			d.keys = append(d.keys, key)
			d.items = append(d.items, e)
			if p.peek().kind != kComma {
				break
			}
			p.i++
		}
	}
	if p.peek().kind != kBraceClose {
		return nil, p.mismatch("',' or '}'")
	}
	p.i++
	p.depth--
	return d, nil
}

// function parses `name(arg, name=arg, ...)`; the caller saw ID and '('.
func (p *parser) function() (*ast, *ParseError) {
	if err := p.nest(); err != nil {
		return nil, err
	}
	f := &ast{kind: aFunc, pos: p.peek().pos}
	p.i += 2
	if p.peek().kind != kPClose {
		for {
			name := ""
			if p.peek().kind == kID && p.next() == kEqual {
				name = p.text(p.peek())
				p.i += 2
			}
			e, err := p.element()
			if err != nil {
				return nil, err
			}
			f.items = append(f.items, e)
			f.argNames = append(f.argNames, name)
			if p.peek().kind != kComma {
				break
			}
			p.i++
		}
	}
	t := p.peek()
	if t.kind != kPClose {
		return nil, p.mismatch("',' or ')'")
	}
	p.i++
	f.end = t.end
	p.depth--
	return f, nil
}

func column(s string, pos int) int { return utf8.RuneCountInString(s[:pos]) + 1 }

func (p *parser) errAt(t token, msg string) *ParseError {
	return &ParseError{Token: p.src, Column: column(p.src, t.pos), Msg: msg}
}

func (p *parser) shown(t token) string {
	if t.kind == kEOF {
		return "<EOF>"
	}
	return display(p.text(t))
}

// mismatch reports the current token where something else was expected,
// in ANTLR's words.
func (p *parser) mismatch(expecting string) *ParseError {
	t := p.peek()
	return p.errAt(t, "mismatched input '"+p.shown(t)+"' expecting "+expecting+p.nestedHint())
}

// nestedHint explains the commonest surprise of Hydra's lexer: an unquoted
// `${a:${b}}` is read as the interpolation `${a:${b}` and a stray '}'.
func (p *parser) nestedHint() string {
	if p.peek().kind != kBraceClose || p.i == 0 {
		return ""
	}
	prev := p.toks[p.i-1]
	if prev.kind != kInterp || !strings.Contains(p.text(prev)[2:], "${") {
		return ""
	}
	return "\nHydra ends an unquoted ${...} at its first '}', so a nested interpolation must be quoted: key=\"${a:${b}}\""
}

// sweep marks a value that is a Hydra sweep rather than a single value.
type sweep struct {
	simple   bool   // `a,b`, or a cast of several values: Hydra's "simple choice sweep"
	fn       string // the sweep function, when not simple
	pos, end int    // source span
}

// evalValue evaluates the top-level value: one element, or a comma list,
// which is a sweep.
func (p *parser) evalValue(elems []*ast, start token) (*tree.Node, *ParseError) {
	vals := make([]*tree.Node, len(elems))
	var sw *sweep
	for i, e := range elems {
		v, s, err := p.eval(e)
		if err != nil {
			return nil, err
		}
		vals[i], sw = v, s
	}
	if len(elems) > 1 {
		sw = &sweep{simple: true}
	}
	if sw == nil {
		return vals[0], nil
	}
	e := p.errAt(start, "")
	e.sweep = true
	switch {
	case sw.simple:
		e.Msg = "Ambiguous value for argument '" + p.src + "'\n" +
			"1. To use it as a list, use key=[value1,value2]\n" +
			"2. To use it as string, quote the value: key='value1,value2'\n" +
			"3. To sweep over it Hydra needs --multirun, which gym does not support"
	case sw.fn == "sort" || sw.fn == "shuffle":
		e.Msg = sw.fn + "() is not supported: it reorders Hydra sweeps, and gym has no --multirun"
	default:
		e.Msg = "Sweep parameters '" + p.src + "' requires --multirun, which gym does not support"
	}
	return nil, e
}

// eval computes an element's value, applying cast functions as Hydra's
// visitor does. A sweep comes back as a non-nil *sweep instead of a value.
func (p *parser) eval(a *ast) (*tree.Node, *sweep, *ParseError) {
	switch a.kind {
	case aPrim:
		v, err := p.primitiveValue(a.toks)
		return v, nil, err
	case aList:
		l := tree.NewList()
		for _, it := range a.items {
			v, err := p.evalItem(it)
			if err != nil {
				return nil, nil, err
			}
			l.Items = append(l.Items, v)
		}
		return l, nil, nil
	case aDict:
		m := tree.NewMap()
		for i, it := range a.items {
			k, err := p.primitiveValue(a.keys[i])
			if err != nil {
				return nil, nil, err
			}
			v, err := p.evalItem(it)
			if err != nil {
				return nil, nil, err
			}
			// Python's dict() keeps the first position and the last value
			// of a repeated key, as SetEntry does.
			m.SetEntry(tree.Entry{Key: keyText(k), KeyKind: k.Kind, Value: v})
		}
		return m, nil, nil
	}
	return p.evalFunc(a)
}

// evalItem evaluates a list item or dict value, where a sweep cannot go.
func (p *parser) evalItem(a *ast) (*tree.Node, *ParseError) {
	v, sw, err := p.eval(a)
	if err != nil {
		return nil, err
	}
	if sw != nil {
		e := &ParseError{Token: p.src, Column: column(p.src, sw.pos), sweep: true,
			Msg: "'" + p.src[sw.pos:sw.end] + "' is a sweep, which cannot be a list or dict element (and gym does not support sweeps)"}
		return nil, e
	}
	return v, nil
}

// keyText is the canonical text of a typed dict key, as the rest of gym
// spells keys that are not strings.
func keyText(k *tree.Node) string {
	switch k.Kind {
	case tree.Int, tree.BigInt:
		return k.IntText()
	case tree.Float:
		return tree.PythonFloatRepr(k.Float)
	case tree.Bool:
		return strconv.FormatBool(k.Bool)
	case tree.Null:
		return "null"
	}
	return k.Str
}

// primitiveValue types an unquoted or quoted primitive as Hydra's
// _createPrimitive does: several tokens make a string (escapes undone),
// a single token is typed by its kind.
func (p *parser) primitiveValue(toks []token) (*tree.Node, *ParseError) {
	if len(toks) > 1 {
		var b strings.Builder
		for _, t := range toks {
			if t.kind == kEsc {
				b.WriteString(unescape(p.text(t)))
			} else {
				b.WriteString(p.text(t))
			}
		}
		return tree.NewString(b.String()), nil
	}
	t := toks[0]
	s := p.text(t)
	switch t.kind {
	case kQuoted:
		return tree.NewString(unquote(s)), nil
	case kInt:
		// Python's int() has no size limit, only one on digits.
		n, err := tree.ParseDecimal(s)
		if err != nil {
			return nil, p.errAt(t, "ValueError: "+err.Error()+"; quote the value to keep it as a string")
		}
		return n, nil
	case kFloat:
		return tree.NewFloat(parseFloatToken(s)), nil
	case kNull:
		return tree.NewNull(), nil
	case kBool:
		return tree.NewBool(strings.EqualFold(s, "true")), nil
	case kEsc:
		return tree.NewString(unescape(s)), nil
	}
	return tree.NewString(s), nil
}

// parseFloatToken converts a FLOAT token as Python's float() does; the
// lexer has already checked the syntax. Out-of-range values become ±inf or
// zero, as in Python.
func parseFloatToken(s string) float64 {
	s = strings.ToLower(strings.ReplaceAll(s, "_", ""))
	neg := strings.HasPrefix(s, "-")
	switch strings.TrimLeft(s, "+-") {
	case "inf":
		if neg {
			return math.Inf(-1)
		}
		return math.Inf(1)
	case "nan":
		return math.NaN()
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// unescape undoes an ESC token: every escape is a backslash and one char.
func unescape(s string) string {
	b := make([]byte, 0, len(s)/2)
	for i := 1; i < len(s); i += 2 {
		b = append(b, s[i])
	}
	return string(b)
}

// unquote strips the quotes of a QUOTED_VALUE and undoes its escapes as
// Hydra's _unescape_quoted_string does: only backslashes in front of the
// quote character are escapes (each pair is one backslash, an odd one out
// escapes the quote); every other backslash is kept.
func unquote(s string) string {
	q := s[0]
	body := s[1 : len(s)-1]
	if strings.IndexByte(body, '\\') < 0 {
		return body
	}
	var b strings.Builder
	for i := 0; i < len(body); {
		if body[i] != '\\' {
			b.WriteByte(body[i])
			i++
			continue
		}
		j := i
		for j < len(body) && body[j] == '\\' {
			j++
		}
		switch {
		case j == len(body): // before the closing quote; the lexer ensures an even run
			b.WriteString(strings.Repeat(`\`, (j-i)/2))
		case body[j] == q:
			b.WriteString(strings.Repeat(`\`, (j-i)/2))
			b.WriteByte(q)
			j++
		default:
			b.WriteString(body[i:j])
		}
		i = j
	}
	return b.String()
}
