package override

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// FuzzParse checks that Parse never panics, always answers a *ParseError
// with a sane column when it refuses, answers the same thing twice, and
// that an accepted + or ++ override lands in an empty layer exactly as
// parsed.
func FuzzParse(f *testing.F) {
	for _, tok := range typicalTokens {
		f.Add(tok)
	}
	for _, tok := range []string{
		"k=v", "~k", "~k=", "+k=", "++a.0.b=1", "+$x-y=1", "0=1", "+1.=1", "+a..b=1", "a@b=1", "a/b=c",
		"+k=1_000", "+k=010", "+k=-1.5e+2", "+k=1.e5", "+k=.5", "+k=-inf", "+k=NaN", "+k=TrUe", "+k=NULL",
		"+k=http://h:1/v1", "+k= a : b ", "+k=a b\tc ", `+k=\,\ \(\)\[\]\{\}\:\=\\`, `+k=\a`,
		`+k='a\'b'`, `+k="a\\"`, `+k="abc\\\"def\\\'ghi\\\\"`, `+k='x`, `+k="`, "+k='café'", "+k=café",
		"+k=${a}", "+k=${a:${b}}", `+k="${a:${b}}"`, "+k=${}", "+k=${", "+k=[${a},${b}]",
		"+k=[]", "+k=[1,[2,[3]]]", "+k={a:{b:{c:1}}}", "+k={1:a,1.5:b,true:c,null:d}", "+k=[1,2] ",
		"+k=a,b", "+k=choice(a,b)", "+k=range(1,10,2)", "+k=sort([3,1,2])", "+k=[choice(1,2)]",
		"+k=int(10.5)", "+k=str(1e16)", "+k=float('1_0.5')", "+k=bool(null)", "+k=int(value=1,2)", "+k=int(x=1)",
		"+k=foo(1)", "+k=int(1,2)", "+k=str({1:2})", "+k=99999999999999999999", "+k=int(1e300)",
		"+hydra.run.dir=x", "+k=a\nb", "+k=\xff", "+k=" + strings.Repeat("[", 50),
		// ints beyond 64 bits, and Python's 4300-digit limit
		"+k=123456789012345678901234567890", "+k=-9223372036854775809", "+k=[1_000_000_000_000_000_000_000]",
		"+k={123456789012345678901234567890:a,123456789012345678901234567890.0:b}", "~k=18446744073709551616.0",
		"+k=float(" + strings.Repeat("9", 400) + ")", "+k=str(-123456789012345678901234567890)",
		"+k=bool(9223372036854775808)", "+k=int('-123456789012345678901234567890')", "+k=int(-1e19)",
		"+k=" + strings.Repeat("9", 4300), "+k=" + strings.Repeat("9", 4301), "+k=int('" + strings.Repeat("1", 4301) + "')",
	} {
		f.Add(tok)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		ov, err := Parse(tok)
		again, errAgain := Parse(tok)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError: %v", err, err)
			}
			if pe.Token != tok || pe.Column < 1 || pe.Column > utf8.RuneCountInString(tok)+1 {
				t.Fatalf("bad error %#v for %q", pe, tok)
			}
			if errAgain == nil || errAgain.Error() != err.Error() {
				t.Fatalf("second parse of %q: %v, first: %v", tok, errAgain, err)
			}
			return
		}
		if errAgain != nil || again.Op != ov.Op || again.Key != ov.Key || !same(again.Value, ov.Value) {
			t.Fatalf("second parse of %q differs: %+v / %v vs %+v", tok, again, errAgain, ov)
		}
		if ov.Token != tok || strings.Join(ov.Path, ".") != ov.Key || ov.Key == "" {
			t.Fatalf("bad override %+v", ov)
		}
		if ov.Value == nil && ov.Op != Delete {
			t.Fatalf("%q: no value", tok)
		}
		layer := tree.NewMap()
		err = Apply(layer, ov)
		if ov.Op == Change || ov.Op == Delete {
			if err == nil {
				t.Fatalf("%q applied to an empty layer", tok)
			}
			return
		}
		if ov.Key == "hydra" || strings.HasPrefix(ov.Key, "hydra.") {
			if err == nil {
				t.Fatalf("%q: hydra key accepted", tok)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q on an empty layer: %v", tok, err)
		}
		n := layer
		for _, p := range ov.Path {
			n = n.Get(p)
		}
		if !same(n, ov.Value) {
			t.Fatalf("%q: layer holds %s, parsed %s", tok, show(n), show(ov.Value))
		}
	})
}
