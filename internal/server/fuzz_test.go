package server

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func FuzzRolloutPrefix(f *testing.F) {
	for _, s := range []string{
		"/", "/v1/responses", "/ng-rollout", "/ng-rollout/", "/ng-rollout//x",
		"/ng-rollout/17-3/v1/responses", "/ng-rollout/0-0/training-token-capture/v1/responses",
		"/ng-rollout/x/training-token-capture", "/ng-rollout/x/training-token-captured/y",
		"/ng-rollout/a%2Fb/c", "/ng-rollout/a%zz/c", "/ng-rollout/x/v1/a%2Fb", "/ng-rollout/x/%zz",
		"/ng-rollout/%C3%A9/x", "/ng-rollout/" + strings.Repeat("a", 201),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, escaped string) {
		rr, prefixed, err := parseRolloutPath(escaped)
		if prefixed != strings.HasPrefix(escaped, rolloutPrefix) {
			t.Fatalf("prefixed = %v for %q", prefixed, escaped)
		}
		if !prefixed || err != nil {
			if rr != (rolloutRoute{}) {
				t.Fatalf("a rejected or unprefixed path returned a route %+v", rr)
			}
			return
		}
		if checkRolloutID(rr.ID) != nil {
			t.Fatalf("accepted an invalid id %q", rr.ID)
		}
		if !strings.HasPrefix(rr.Path, "/") {
			t.Fatalf("route %q does not start with /", rr.Path)
		}
		rest := rr.RawPath
		if rest == "" {
			rest = rr.Path
		}
		if p, err := url.PathUnescape(rest); err != nil || p != rr.Path {
			t.Fatalf("RawPath %q does not unescape to Path %q", rr.RawPath, rr.Path)
		}
		// Rebuilding the prefixed path parses back to the same route.
		again := rolloutPrefix + url.PathEscape(rr.ID)
		if rr.Capture {
			again += tokenCaptureSegment
		}
		again += rest
		rr2, ok, err := parseRolloutPath(again)
		if !ok || err != nil || rr2 != rr {
			t.Fatalf("%q → %+v; rebuilt %q → %+v, %v", escaped, rr, again, rr2, err)
		}
	})
}

// FuzzSetCookies holds SetCookies.Cookies to net/http's reading of the
// same Set-Cookie lines (one per line of the input), name, value and
// quoting, in order.
func FuzzSetCookies(f *testing.F) {
	for _, s := range []string{
		"", ";", "=", "a=", "=b", "a=b", " a = b ", "a= b ;Path=/", `a="b"`, `a="`, `a=""`, `a="b`, `a="b"c"`,
		"SimpleAgent___agent=eyJzZXNzaW9uX2lkIjogIngifQ==.Zx.sig; Path=/; SameSite=lax",
		"a=b\nc=d; HttpOnly\n\ne f=g", "a\x00=b", "a=b\x7f", "a=b\\", "a=b,c", "a(b=c", "\ta=b\r",
		"a=b;Max-Age=x;Expires=nonsense;Domain=.x;Partitioned", "é=b", "a=é",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		lines := strings.Split(in, "\n")
		got := SetCookies(lines).Cookies()
		want := (&http.Response{Header: http.Header{"Set-Cookie": lines}}).Cookies()
		if len(got) != len(want) {
			t.Fatalf("%q: %d cookies, net/http reads %d", lines, len(got), len(want))
		}
		for i, w := range want {
			if g := got[i]; g.Name != w.Name || g.Value != w.Value || g.Quoted != w.Quoted {
				t.Fatalf("%q: cookie %d is %q=%q (quoted %v), net/http reads %q=%q (quoted %v)", lines, i, g.Name, g.Value, g.Quoted, w.Name, w.Value, w.Quoted)
			}
		}
	})
}

func TestSetCookiesPastTheFastPath(t *testing.T) {
	lines := make(SetCookies, maxSetCookies+1)
	for i := range lines {
		lines[i] = "c" + strconv.Itoa(i) + `="v"; Path=/`
	}
	got := lines.Cookies()
	if len(got) != len(lines) || got[maxSetCookies].Name != "c"+strconv.Itoa(maxSetCookies) || got[0].Value != "v" || !got[0].Quoted || got[0].Path != "" {
		t.Fatalf("%d lines read as %d cookies, the last %+v, the first %+v", len(lines), len(got), got[len(got)-1], got[0])
	}
}
