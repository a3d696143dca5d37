package interp

import (
	"strings"
	"testing"
)

// FuzzParse checks that no input panics or hangs the parser or the
// evaluator, and the invariants callers rely on.
func FuzzParse(f *testing.F) {
	for _, c := range omegaconfTopCases {
		f.Add(c.in)
	}
	for _, c := range omegaconfValueCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tpl, err := Parse(s)
		if err == nil {
			if !HasInterpolation(s) && (len(tpl.Parts) > 1 || len(tpl.Parts) == 1 && tpl.Parts[0].Text != s) {
				t.Fatalf("text without ${ changed: %+v", tpl.Parts)
			}
			checkParts(t, s, tpl.Parts)
			v, err := tpl.Eval(newFakeEnv())
			if err == nil && tpl.Single() == nil && v.Kind.String() != "string" {
				t.Fatalf("concatenation gave a %s", v.Kind)
			}
			if err == nil {
				_ = PythonRepr(v)
			}
		} else if _, ok := err.(*GrammarError); !ok {
			t.Fatalf("Parse error of type %T: %v", err, err)
		}
		if v, err := DecodeString(s, newFakeEnv()); err == nil {
			_ = PythonRepr(v)
		}
	})
}

// checkParts verifies that interpolations carry their own source text and
// that literal parts are never empty or adjacent.
func checkParts(t *testing.T, s string, parts []Part) {
	for i, p := range parts {
		if p.Interp == nil {
			if p.Text == "" || i > 0 && parts[i-1].Interp == nil {
				t.Fatalf("bad literal parts %+v", parts)
			}
			continue
		}
		in := p.Interp
		if !strings.HasPrefix(s[in.Pos:], in.Text) || !strings.HasPrefix(in.Text, "${") || (in.Ref == nil) == (in.Call == nil) {
			t.Fatalf("bad interpolation %+v in %q", in, s)
		}
	}
}
