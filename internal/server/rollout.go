package server

import (
	"fmt"
	"net/url"
	"strings"
)

// Rollout correlation paths (spec §7): an agent reaches a model or resources
// server under /ng-rollout/<id>[/training-token-capture]/<route>.
const (
	rolloutPrefix       = "/ng-rollout/"
	tokenCaptureSegment = "/training-token-capture"
	// Model servers name capture files <id>.capture.incomplete, so a longer
	// id would not fit a 255-byte file name.
	maxRolloutIDLen = 200
)

type rolloutRoute struct {
	ID      string // unescaped
	Capture bool
	Path    string // the route the request is served by, unescaped
	RawPath string // its escaped form when it differs, as url.URL keeps it
}

// parseRolloutPath splits an escaped request path. It reports false for a
// path without the prefix, and an error for a prefixed path whose id is not
// a plausible rollout id; ids name files and headers downstream.
// Legitimate ids match ^[A-Za-z0-9][A-Za-z0-9._-]*$ (spec §7.1); the check
// is looser so that whatever id a Python agent forwards is still served.
func parseRolloutPath(escaped string) (rolloutRoute, bool, error) {
	after, ok := strings.CutPrefix(escaped, rolloutPrefix)
	if !ok {
		return rolloutRoute{}, false, nil
	}
	seg, rest, found := strings.Cut(after, "/")
	rest = "/" + rest
	if !found {
		rest = "/"
	}
	id, err := url.PathUnescape(seg)
	if err != nil {
		return rolloutRoute{}, true, fmt.Errorf("invalid rollout id %s in the request path: %v", quoteShort(seg), err)
	}
	if err := checkRolloutID(id); err != nil {
		return rolloutRoute{}, true, err
	}
	rr := rolloutRoute{ID: id}
	if tail, ok := strings.CutPrefix(rest, tokenCaptureSegment); ok && (tail == "" || tail[0] == '/') {
		rr.Capture = true
		rest = tail
		if rest == "" {
			rest = "/"
		}
	}
	if rr.Path, err = url.PathUnescape(rest); err != nil {
		return rolloutRoute{}, true, fmt.Errorf("invalid request path %s after the rollout prefix: %v", quoteShort(rest), err)
	}
	if rr.Path != rest {
		rr.RawPath = rest
	}
	return rr, true, nil
}

func checkRolloutID(id string) error {
	if id == "" || len(id) > maxRolloutIDLen {
		return fmt.Errorf("invalid rollout id %s in the request path: it must be 1 to %d characters long, not %d", quoteShort(id), maxRolloutIDLen, len(id))
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' || c == '/' || c == '\\' {
			return fmt.Errorf("invalid rollout id %s in the request path: only printable ASCII other than space, '/' and '\\' is allowed", quoteShort(id))
		}
	}
	return nil
}

// quoteShort quotes s for an error message, cut so that a hostile path
// cannot make the message huge.
func quoteShort(s string) string {
	const max = 64
	if len(s) > max {
		return fmt.Sprintf("%q...", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
