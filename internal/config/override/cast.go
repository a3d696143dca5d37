package override

import (
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// sweepFuncs are Hydra's functions that build (or reorder) sweeps.
var sweepFuncs = map[string]bool{
	"choice": true, "range": true, "interval": true, "glob": true,
	"tag": true, "sort": true, "shuffle": true,
}

// casts are Hydra's cast functions (grammar_functions.cast_*).
var casts = map[string]func(*tree.Node) (*tree.Node, *pyError){
	"int":   castInt,
	"float": castFloat,
	"str":   castStr,
	"bool":  castBool,
}

// pyError is the Python exception a cast raises in Hydra; its type name is
// part of the message users see.
type pyError struct {
	typ, msg string
}

// evalFunc evaluates a function call like Hydra's visitFunction: arguments
// first, left to right, then the function.
func (p *parser) evalFunc(f *ast) (*tree.Node, *sweep, *ParseError) {
	name := p.src[f.pos : f.pos+idLen(p.src, f.pos)]
	text := p.src[f.pos:f.end]
	var args []*tree.Node
	var argSweeps []*sweep
	var value *tree.Node
	var valueSweep *sweep
	seenKeyword, unexpected := false, ""
	for i, a := range f.items {
		argName := f.argNames[i]
		if argName == "" && seenKeyword {
			return nil, nil, p.errAt(token{pos: f.pos}, "positional argument follows keyword argument")
		}
		v, sw, err := p.eval(a)
		if err != nil {
			return nil, nil, err
		}
		if argName == "" {
			args = append(args, v)
			argSweeps = append(argSweeps, sw)
			continue
		}
		seenKeyword = true
		switch {
		case argName == "value":
			value, valueSweep = v, sw
		case unexpected == "":
			unexpected = argName
		}
	}
	cast, isCast := casts[name]
	switch {
	case sweepFuncs[name]:
		return nil, &sweep{fn: name, pos: f.pos, end: f.end}, nil
	case !isCast:
		return nil, nil, p.errAt(token{pos: f.pos}, "Unknown function '"+name+"' in '"+text+"'\n"+
			"Available: bool,float,int,str (Hydra's sweep functions choice, glob, interval, range, shuffle, sort and tag need --multirun, which gym does not support)")
	}
	if unexpected != "" {
		return nil, nil, p.evalError(f, &pyError{"TypeError", "got an unexpected keyword argument '" + unexpected + "'"})
	}
	// Hydra's _normalize_cast_value treats value=null as no value at all.
	hasValue := valueSweep != nil || value != nil && value.Kind != tree.Null
	switch {
	case hasValue && len(args) > 0:
		return nil, nil, p.evalError(f, &pyError{"TypeError", "cannot use both position and named arguments"})
	case !hasValue && len(args) == 0:
		return nil, nil, p.evalError(f, &pyError{"TypeError", "No positional args or value specified"})
	case len(args) > 1:
		// Several values make a simple choice sweep of casts.
		return nil, &sweep{simple: true, pos: f.pos, end: f.end}, nil
	case len(args) == 1:
		value, valueSweep = args[0], argSweeps[0]
	}
	if valueSweep != nil {
		// Casting a sweep casts each choice; it is still a sweep.
		return nil, valueSweep, nil
	}
	out, perr := castDeep(value, cast)
	if perr != nil {
		return nil, nil, p.evalError(f, perr)
	}
	return out, nil, nil
}

func (p *parser) evalError(f *ast, e *pyError) *ParseError {
	return p.errAt(token{pos: f.pos}, e.typ+" while evaluating '"+p.src[f.pos:f.end]+"': "+e.msg)
}

// castDeep applies a cast to a scalar, to every item of a list, or to every
// value of a map (keys stay as they are), failing on the first bad element.
func castDeep(n *tree.Node, cast func(*tree.Node) (*tree.Node, *pyError)) (*tree.Node, *pyError) {
	switch n.Kind {
	case tree.List:
		out := tree.NewList()
		for _, it := range n.Items {
			v, err := castDeep(it, cast)
			if err != nil {
				return nil, err
			}
			out.Items = append(out.Items, v)
		}
		return out, nil
	case tree.Map:
		out := tree.NewMap()
		for _, e := range n.Entries {
			v, err := castDeep(e.Value, cast)
			if err != nil {
				return nil, err
			}
			out.SetEntry(tree.Entry{Key: e.Key, KeyKind: e.KeyKind, Value: v})
		}
		return out, nil
	}
	return cast(n)
}

// Hydra's casts assert that the value is a bool, number or string; null
// fails that assertion (except in bool(), which is Python's bool(None)).
var castNull = &pyError{"AssertionError", "null cannot be cast"}

func castInt(n *tree.Node) (*tree.Node, *pyError) {
	switch n.Kind {
	case tree.Int, tree.BigInt:
		return n, nil
	case tree.Bool:
		if n.Bool {
			return tree.NewInt(1), nil
		}
		return tree.NewInt(0), nil
	case tree.Float:
		return floatToInt(n.Float)
	case tree.String:
		return pyInt(n.Str)
	}
	return nil, castNull
}

// floatToInt is Python's int(float): truncation toward zero, of any size.
func floatToInt(f float64) (*tree.Node, *pyError) {
	switch {
	case math.IsNaN(f):
		return nil, &pyError{"ValueError", "cannot convert float NaN to integer"}
	case math.IsInf(f, 0):
		return nil, &pyError{"OverflowError", "cannot convert float infinity to integer"}
	}
	return tree.FloatToInt(f), nil
}

func castFloat(n *tree.Node) (*tree.Node, *pyError) {
	switch n.Kind {
	case tree.Float:
		return n, nil
	case tree.Int:
		return tree.NewFloat(float64(n.Int)), nil
	case tree.BigInt:
		f, ok := tree.IntToFloat(n.Big)
		if !ok {
			return nil, &pyError{"OverflowError", "int too large to convert to float"}
		}
		return tree.NewFloat(f), nil
	case tree.Bool:
		if n.Bool {
			return tree.NewFloat(1), nil
		}
		return tree.NewFloat(0), nil
	case tree.String:
		return pyFloat(n.Str)
	}
	return nil, castNull
}

func castStr(n *tree.Node) (*tree.Node, *pyError) {
	switch n.Kind {
	case tree.String:
		return n, nil
	case tree.Int, tree.BigInt:
		return tree.NewString(n.IntText()), nil
	case tree.Float:
		return tree.NewString(tree.PythonFloatRepr(n.Float)), nil
	case tree.Bool:
		// Hydra lower-cases, unlike Python's str(True).
		return tree.NewString(strconv.FormatBool(n.Bool)), nil
	}
	return nil, castNull
}

func castBool(n *tree.Node) (*tree.Node, *pyError) {
	switch n.Kind {
	case tree.Bool:
		return n, nil
	case tree.Int:
		return tree.NewBool(n.Int != 0), nil
	case tree.BigInt:
		return tree.NewBool(true), nil // never zero
	case tree.Float:
		return tree.NewBool(n.Float != 0), nil // NaN is true, as in Python
	case tree.String:
		switch strings.ToLower(n.Str) {
		case "true":
			return tree.NewBool(true), nil
		case "false":
			return tree.NewBool(false), nil
		}
		return nil, &pyError{"ValueError", "Cannot cast '" + n.Str + "' to bool"}
	}
	return tree.NewBool(false), nil
}

// pyStrip is str.strip(): Python's whitespace includes the ASCII
// separators U+001C..U+001F, which Go's unicode.IsSpace does not.
func pyStrip(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f })
}

// digitRun reports whether s is DIGIT ('_'? DIGIT)*, the digit syntax
// Python's int() and float() accept.
func digitRun(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch {
		case isDigit(s[i]):
		case s[i] == '_' && i > 0 && i+1 < len(s) && isDigit(s[i+1]) && isDigit(s[i-1]):
		default:
			return false
		}
	}
	return true
}

// pyInt is Python's int(str) in base 10.
func pyInt(s string) (*tree.Node, *pyError) {
	t := pyStrip(s)
	digits := strings.TrimLeft(t, "+-")
	if len(t)-len(digits) > 1 || !digitRun(digits) {
		return nil, &pyError{"ValueError", "invalid literal for int() with base 10: " + pyQuote(s)}
	}
	n, err := tree.ParseDecimal(t)
	if err != nil {
		return nil, &pyError{"ValueError", err.Error()}
	}
	return n, nil
}

// pyFloat is Python's float(str).
func pyFloat(s string) (*tree.Node, *pyError) {
	t := pyStrip(s)
	sign, body := "", t
	if t != "" && (t[0] == '+' || t[0] == '-') {
		sign, body = t[:1], t[1:]
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		if sign == "-" {
			return tree.NewFloat(math.Inf(-1)), nil
		}
		return tree.NewFloat(math.Inf(1)), nil
	case "nan":
		return tree.NewFloat(math.NaN()), nil
	}
	if !pyFloatSyntax(strings.ToLower(body)) {
		return nil, &pyError{"ValueError", "could not convert string to float: " + pyQuote(s)}
	}
	f, _ := strconv.ParseFloat(sign+strings.ReplaceAll(body, "_", ""), 64)
	return tree.NewFloat(f), nil
}

// pyFloatSyntax checks an unsigned decimal float as Python reads one:
// digits with an optional point and an optional exponent.
func pyFloatSyntax(s string) bool {
	mant, exp, hasExp := strings.Cut(s, "e")
	if hasExp {
		if exp != "" && (exp[0] == '+' || exp[0] == '-') {
			exp = exp[1:]
		}
		if !digitRun(exp) {
			return false
		}
	}
	whole, frac, hasPoint := strings.Cut(mant, ".")
	if !hasPoint {
		return digitRun(whole)
	}
	return (whole != "" || frac != "") && (whole == "" || digitRun(whole)) && (frac == "" || digitRun(frac))
}
