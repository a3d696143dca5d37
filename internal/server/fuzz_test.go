package server

import (
	"net/url"
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
