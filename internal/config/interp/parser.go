package interp

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Parse parses a config string value in OmegaConf's top-level mode. A
// string without "${" is returned as one literal part (OmegaConf never
// parses those, so backslashes in them are not escapes); "" gives a
// template with no parts.
func Parse(s string) (*Template, error) {
	if !HasInterpolation(s) {
		t := &Template{Source: s}
		if s != "" {
			t.Parts = []Part{{Text: s}}
		}
		return t, nil
	}
	p, err := newParser(s, modeTop)
	if err != nil {
		return nil, err
	}
	parts, err := p.text()
	if err != nil {
		return nil, err
	}
	if err := p.expect(tEOF, "end of input"); err != nil {
		return nil, err
	}
	return &Template{Source: s, Parts: parts}, nil
}

type parser struct {
	src   string
	toks  []token
	pos   int
	depth int
}

func newParser(s string, m mode) (*parser, error) {
	toks, err := lex(s, m)
	if err != nil {
		return nil, err
	}
	return &parser{src: s, toks: toks}, nil
}

func (p *parser) peek() token                { return p.toks[p.pos] }
func (p *parser) peekKind(ahead int) tokKind { return p.toks[min(p.pos+ahead, len(p.toks)-1)].kind }
func (p *parser) tokText(t token) string     { return p.src[t.start:t.end] }

// lastEnd is where the most recently consumed token ends.
func (p *parser) lastEnd() int { return p.toks[p.pos-1].end }

func (p *parser) fail(t token, format string, args ...any) error {
	return &GrammarError{Input: p.src, Pos: t.start, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) unexpected(t token, want string) error {
	if t.kind == tEOF {
		return p.fail(t, "expected %s, found end of input", want)
	}
	if name := tokNames[t.kind]; strings.HasPrefix(name, "'") {
		return p.fail(t, "expected %s, found %s", want, name)
	}
	return p.fail(t, "expected %s, found %s %q", want, tokNames[t.kind], p.tokText(t))
}

func (p *parser) expect(k tokKind, want string) error {
	if t := p.peek(); t.kind != k {
		return p.unexpected(t, want)
	}
	p.pos++
	return nil
}

// enter nests an interpolation, list or dict. OmegaConf hits Python's
// recursion limit long before tree.MaxDepth; the bound keeps hostile input
// from growing the stack without limit.
func (p *parser) enter() error {
	p.depth++
	if p.depth > tree.MaxDepth {
		return p.fail(p.peek(), "%s", tree.DepthProblem())
	}
	return nil
}

func isTextTok(k tokKind) bool {
	switch k {
	case tAnyStr, tEsc, tEscInter, tTopEsc, tQuotedEsc:
		return true
	}
	return false
}

// text parses OmegaConf's `text` rule (top level and inside quotes) and
// unescapes it as the visitor's _unescape does: backslash runs are halved
// only where they escape something, so `a\\b` keeps both backslashes while
// `\\${x}` gives one backslash and the value of x.
func (p *parser) text() ([]Part, error) {
	var parts []Part
	var buf strings.Builder
	flush := func() {
		if buf.Len() > 0 {
			parts = append(parts, Part{Text: buf.String()})
			buf.Reset()
		}
	}
	for {
		t := p.peek()
		raw := p.tokText(t)
		switch t.kind {
		case tInterOpen:
			in, err := p.interpolation()
			if err != nil {
				return nil, err
			}
			flush()
			parts = append(parts, Part{Interp: in})
			continue
		case tAnyStr:
			buf.WriteString(raw)
		case tEsc:
			buf.WriteString(everyOther(raw))
		case tEscInter:
			// An odd run of backslashes then "${": halve the run and drop the
			// backslash that escapes the "${".
			buf.WriteString(raw[len(raw)-(len(raw)/2+1):])
		case tTopEsc:
			if p.peekKind(1) == tInterOpen {
				raw = everyOther(raw)
			}
			buf.WriteString(raw)
		case tQuotedEsc:
			if next := p.peekKind(1); next == tInterOpen || !isTextTok(next) {
				raw = everyOther(raw)
			}
			buf.WriteString(raw)
		default:
			flush()
			return parts, nil
		}
		p.pos++
	}
}

// everyOther is Python's s[1::2], OmegaConf's way of unescaping a token
// made of backslash pairs.
func everyOther(s string) string {
	b := make([]byte, 0, len(s)/2)
	for i := 1; i < len(s); i += 2 {
		b = append(b, s[i])
	}
	return string(b)
}

// interpolation parses `${...}`. Node references and resolver calls share
// their start (`${a.b` could be either), so the keys are read first and the
// token after them decides.
func (p *parser) interpolation() (*Interp, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	open := p.peek()
	p.pos++
	dots := 0
	for p.peekKind(0) == tDot {
		dots++
		p.pos++
	}
	// A resolver name is dotted IDs or interpolations: no leading dots, no
	// brackets, no INTER_KEY characters such as '@' or a leading digit.
	callable := dots == 0
	var keys []KeyPart
	for {
		t := p.peek()
		switch {
		case t.kind == tBracketOpen:
			p.pos++
			k, _, err := p.configKey()
			if err != nil {
				return nil, err
			}
			if err := p.expect(tBracketClose, "']'"); err != nil {
				return nil, err
			}
			k.Bracket = true
			keys = append(keys, k)
			callable = false
			continue
		case len(keys) > 0 && t.kind == tDot:
			p.pos++
		case len(keys) > 0 && t.kind == tInterClose:
			p.pos++
			in := &Interp{Text: p.src[open.start:t.end], Pos: open.start}
			in.Ref = newRefExpr(dots, keys, in.Text)
			return in, nil
		case len(keys) > 0 && t.kind == tColon && callable:
			p.pos++
			return p.call(open, keys)
		case len(keys) > 0 && t.kind == tColon:
			return nil, p.fail(t, "invalid resolver name %q", p.src[open.end:t.start])
		case len(keys) > 0:
			return nil, p.unexpected(t, "'.', '[', ':' or '}'")
		}
		k, id, err := p.configKey()
		if err != nil {
			return nil, err
		}
		callable = callable && id
		keys = append(keys, k)
	}
}

// configKey parses a key: a name or a nested interpolation. callable
// reports whether it may also be part of a resolver name.
func (p *parser) configKey() (k KeyPart, callable bool, err error) {
	t := p.peek()
	switch t.kind {
	case tID, tInterKey:
		p.pos++
		return KeyPart{Name: p.tokText(t)}, t.kind == tID, nil
	case tInterOpen:
		in, err := p.interpolation()
		return KeyPart{Interp: in}, true, err
	}
	return KeyPart{}, false, p.unexpected(t, "a key")
}

func (p *parser) call(open token, name []KeyPart) (*Interp, error) {
	c := &CallExpr{Name: name}
	static := make([]string, 0, len(name))
	for _, k := range name {
		if k.Interp != nil {
			static = nil
			break
		}
		static = append(static, k.Name)
	}
	c.static = strings.Join(static, ".")
	if p.peekKind(0) != tBraceClose {
		args, err := p.sequence()
		if err != nil {
			return nil, err
		}
		c.Args = args
	}
	if err := p.expect(tBraceClose, "',' or '}'"); err != nil {
		return nil, err
	}
	return &Interp{Text: p.src[open.start:p.lastEnd()], Pos: open.start, Call: c}, nil
}

func startsElement(k tokKind) bool {
	switch k {
	case tQuoteOpenSingle, tQuoteOpenDouble, tBracketOpen, tBraceOpen:
		return true
	}
	return isPrimitiveTok(k)
}

func isPrimitiveTok(k tokKind) bool {
	switch k {
	case tID, tNull, tInt, tFloat, tBool, tUnquotedChar, tColon, tEsc, tWS, tInterOpen:
		return true
	}
	return false
}

// sequence parses comma-separated elements where any may be missing
// (`a,,b`, `a,`); OmegaConf turns a missing one into "" (with a deprecation
// warning). The caller has checked that the sequence is not empty.
func (p *parser) sequence() ([]*Element, error) {
	var elems []*Element
	for {
		if startsElement(p.peekKind(0)) {
			e, err := p.element()
			if err != nil {
				return nil, err
			}
			elems = append(elems, e)
		} else {
			elems = append(elems, &Element{Kind: ElemValue, Value: tree.NewString("")})
		}
		if p.peekKind(0) != tComma {
			return elems, nil
		}
		p.pos++
	}
}

func (p *parser) element() (*Element, error) {
	start := p.peek()
	var e *Element
	var err error
	switch start.kind {
	case tQuoteOpenSingle, tQuoteOpenDouble:
		e, err = p.quoted()
	case tBracketOpen:
		e, err = p.list()
	case tBraceOpen:
		e, err = p.dict()
	default:
		e, err = p.primitive()
	}
	if err != nil {
		return nil, err
	}
	e.Raw = p.src[start.start:p.lastEnd()]
	return e, nil
}

func (p *parser) quoted() (*Element, error) {
	p.pos++
	parts, err := p.text()
	if err != nil {
		return nil, err
	}
	if err := p.expect(tQuoteClose, "closing quote"); err != nil {
		return nil, err
	}
	return stringElement(parts), nil
}

// stringElement makes the element for text rendered with str(), folding it
// to a constant when nothing needs evaluating.
func stringElement(parts []Part) *Element {
	var b strings.Builder
	for _, pt := range parts {
		if pt.Interp != nil {
			return &Element{Kind: ElemString, Parts: parts}
		}
		b.WriteString(pt.Text)
	}
	return &Element{Kind: ElemValue, Value: tree.NewString(b.String())}
}

func (p *parser) list() (*Element, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++
	e := &Element{Kind: ElemList}
	if p.peekKind(0) != tBracketClose {
		items, err := p.sequence()
		if err != nil {
			return nil, err
		}
		e.Items = items
	}
	return e, p.expect(tBracketClose, "',' or ']'")
}

func (p *parser) dict() (*Element, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++
	e := &Element{Kind: ElemDict}
	if p.peekKind(0) == tBraceClose {
		p.pos++
		return e, nil
	}
	var slots keySlots
	for {
		key, err := p.dictKey()
		if err != nil {
			return nil, err
		}
		if err := p.expect(tColon, "':'"); err != nil {
			return nil, err
		}
		if !startsElement(p.peekKind(0)) {
			return nil, p.unexpected(p.peek(), "a value")
		}
		v, err := p.element()
		if err != nil {
			return nil, err
		}
		e.Entries = append(e.Entries, DictEntry{Key: keyText(key), KeyKind: key.Kind, Value: v})
		e.slots = append(e.slots, slots.of(key))
		if p.peekKind(0) != tComma {
			return e, p.expect(tBraceClose, "',' or '}'")
		}
		p.pos++
	}
}

func isDictKeyTok(k tokKind) bool {
	switch k {
	case tID, tNull, tInt, tFloat, tBool, tUnquotedChar, tEsc, tWS:
		return true
	}
	return false
}

// dictKey parses a key, typed like a primitive but without quotes, colons
// or interpolations.
func (p *parser) dictKey() (*tree.Node, error) {
	start := p.pos
	for isDictKeyTok(p.peekKind(0)) {
		p.pos++
	}
	switch p.pos - start {
	case 0:
		return nil, p.unexpected(p.peek(), "a dict key")
	case 1:
		return p.typed(p.toks[start])
	}
	var b strings.Builder
	for _, t := range p.toks[start:p.pos] {
		b.WriteString(p.unescapedTok(t))
	}
	return tree.NewString(b.String()), nil
}

// keySlots numbers a dict's distinct keys in order. A key shares the slot
// of the first earlier key equal to it under Python's == (numbers by value
// across bool, int and float, so True, 1 and 1.0 are one key; nan equals
// nothing) or with the same text, since tree keys are text and cannot tell
// "null" from null. Both are looked up by hash, so many keys stay linear.
type keySlots struct {
	n        int
	byText   map[string]int
	byNumber map[string]int
}

func (s *keySlots) of(key *tree.Node) int {
	if s.byText == nil {
		s.byText, s.byNumber = map[string]int{}, map[string]int{}
	}
	text := keyText(key)
	num, numeric := numberKey(key)
	slot, ok := s.byText[text]
	if numeric {
		if j, found := s.byNumber[num]; found && (!ok || j < slot) {
			slot, ok = j, true
		}
	}
	if ok {
		return slot
	}
	slot = s.n
	s.n++
	s.byText[text] = slot
	if numeric {
		s.byNumber[num] = slot
	}
	return slot
}

// numberKey is the identity of a number under Python's ==: the decimal
// integer for bools, ints and integral floats, the bits of any other float.
// nan, equal to nothing, has none.
func numberKey(k *tree.Node) (string, bool) {
	switch k.Kind {
	case tree.Bool:
		if k.Bool {
			return "1", true
		}
		return "0", true
	case tree.Int, tree.BigInt:
		return k.IntText(), true
	case tree.Float:
		switch f := k.Float; {
		case math.IsNaN(f):
			return "", false
		case f == math.Trunc(f) && !math.IsInf(f, 0):
			return tree.FloatToInt(f).IntText(), true
		default:
			return "f" + strconv.FormatUint(math.Float64bits(f), 16), true
		}
	}
	return "", false
}

func keyText(k *tree.Node) string {
	switch k.Kind {
	case tree.Null:
		return "null"
	case tree.Bool:
		return strconv.FormatBool(k.Bool)
	case tree.Int, tree.BigInt:
		return k.IntText()
	case tree.Float:
		return tree.PythonFloatRepr(k.Float)
	}
	return k.Str
}

func (p *parser) unescapedTok(t token) string {
	if t.kind == tEsc {
		return everyOther(p.tokText(t))
	}
	return p.tokText(t)
}

// primitive parses an unquoted value. A single token is typed (`1`, `1.5`,
// `true`, `null`, `foo`) and a single interpolation keeps its result's
// type; several pieces (`a b`, `1_000_`, `x${y}`) make a string.
func (p *parser) primitive() (*Element, error) {
	start := p.pos
	var parts []Part
	var buf strings.Builder
	children := 0
	for ; isPrimitiveTok(p.peekKind(0)); children++ {
		t := p.peek()
		if t.kind != tInterOpen {
			buf.WriteString(p.unescapedTok(t))
			p.pos++
			continue
		}
		in, err := p.interpolation()
		if err != nil {
			return nil, err
		}
		if buf.Len() > 0 {
			parts = append(parts, Part{Text: buf.String()})
			buf.Reset()
		}
		parts = append(parts, Part{Interp: in})
	}
	if buf.Len() > 0 {
		parts = append(parts, Part{Text: buf.String()})
	}
	single := children == 1
	switch {
	case single && len(parts) == 1 && parts[0].Interp != nil:
		return &Element{Kind: ElemInterp, Interp: parts[0].Interp}, nil
	case single:
		v, err := p.typed(p.toks[start])
		return &Element{Kind: ElemValue, Value: v}, err
	}
	return stringElement(parts), nil
}

// typed converts a lone token the way OmegaConf's _createPrimitive does.
func (p *parser) typed(t token) (*tree.Node, error) {
	raw := p.tokText(t)
	switch t.kind {
	case tNull:
		return tree.NewNull(), nil
	case tBool:
		return tree.NewBool(strings.EqualFold(raw, "true")), nil
	case tInt:
		// Python ints are unbounded, but int() reads at most 4300 digits.
		n, err := tree.ParseDecimal(raw)
		if err != nil {
			return nil, p.fail(t, "ValueError: %v", err)
		}
		return n, nil
	case tFloat:
		f, err := parseFloat(raw)
		if err != nil {
			return nil, p.fail(t, "%v", err)
		}
		return tree.NewFloat(f), nil
	case tWS:
		// OmegaConf's visitor asserts this cannot happen; it can, through
		// oc.decode of a blank string, and fails there.
		return nil, p.fail(t, "a value cannot be only whitespace")
	}
	return tree.NewString(p.unescapedTok(t)), nil
}

// parseFloat converts a FLOAT token as Python's float() does: underscores
// between digits, "inf" and "nan" in any case, and overflow to infinity.
func parseFloat(raw string) (float64, error) {
	s := strings.ReplaceAll(raw, "_", "")
	body := strings.TrimLeft(s, "+-")
	neg := strings.HasPrefix(s, "-")
	switch strings.ToLower(body) {
	case "inf":
		if neg {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	case "nan":
		return math.NaN(), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if errors.Is(err, strconv.ErrRange) {
		return f, nil
	}
	return f, err
}
