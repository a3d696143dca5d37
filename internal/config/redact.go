package config

import (
	"net/url"
	"strings"
)

// redactedMark replaces a secret in a URL, as url.URL.Redacted writes it.
const redactedMark = "xxxxx"

// RedactURL is raw as it may be shown in a log line, an error or an HTTP
// body: a userinfo password becomes xxxxx (user:xxxxx@host), as
// url.URL.Redacted has it; a userinfo with no password is masked whole
// (xxxxx@host), since https://<token>@host is how a bare token is written;
// and the value of every query parameter whose name is secret-like (what
// `gym env resolve` masks: *key*, *token, *secret*, *password*, *auth*,
// *credential*; plus sig and *signature*, the signatures of pre-signed
// URLs) becomes xxxxx, so api-key=, key=, token= and access_token= are
// hidden while api-version= stays readable. Everything else keeps its
// bytes, and a string that does not parse as a URL is redacted the same
// way, since such strings end up in error messages too.
func RedactURL(raw string) string {
	rest := raw
	var b strings.Builder
	b.Grow(len(raw))
	if i := strings.Index(rest, "://"); i >= 0 {
		b.WriteString(rest[:i+3])
		rest = rest[i+3:]
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		if user, _, ok := strings.Cut(authority[:at], ":"); ok {
			b.WriteString(user + ":" + redactedMark)
		} else {
			b.WriteString(redactedMark)
		}
		rest = rest[at:]
	}
	q := strings.IndexByte(rest, '?')
	if q < 0 {
		b.WriteString(rest)
		return b.String()
	}
	b.WriteString(rest[:q+1])
	query, fragment := rest[q+1:], ""
	if i := strings.IndexByte(query, '#'); i >= 0 {
		query, fragment = query[:i], query[i:]
	}
	for i, param := range strings.Split(query, "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		name, _, hasValue := strings.Cut(param, "=")
		if hasValue && secretParam(name) {
			b.WriteString(name + "=" + redactedMark)
		} else {
			b.WriteString(param)
		}
	}
	b.WriteString(fragment)
	return b.String()
}

func secretParam(name string) bool {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	n := strings.ToLower(name)
	return IsSecretKey(n) || n == "sig" || strings.Contains(n, "signature")
}
