package interp

import "github.com/nemo-gym-go/gym/internal/config/tree"

// DecodeString implements oc.decode: it parses s as one OmegaConf grammar
// element and evaluates it, so "123" gives the int 123, "[1, 2]" a list,
// "{a: 1}" a map, "'x'" the string x, and "${k}" the value env has at k.
// Unlike a config value, s is not text around interpolations: "a b" is the
// string "a b", but `"a" b` and "" are grammar errors.
func DecodeString(s string, env Env) (*tree.Node, error) {
	p, err := newParser(s, modeValue)
	if err != nil {
		return nil, err
	}
	if !startsElement(p.peekKind(0)) {
		return nil, p.unexpected(p.peek(), "a value")
	}
	e, err := p.element()
	if err != nil {
		return nil, err
	}
	if err := p.expect(tEOF, "end of input"); err != nil {
		return nil, err
	}
	return e.eval(env)
}
