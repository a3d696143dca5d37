package config

import (
	"bytes"
	"encoding/base64"
	"errors"
	"regexp"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// secretMask replaces secret values in `gym env resolve` output.
const secretMask = "****"

// IsSecretKey reports whether a key names a secret (any case): it contains
// "key", "secret", "password", "passwd" or "credential"; it ends in "token"
// or "cookie" (Cookie, Set-Cookie, X-Auth-Token); or it contains "auth"
// (auth, basic_auth, oauth_*, Authorization, Proxy-Authorization) where that
// "auth" is not just the start of "author"/"authority" (author, authors,
// authority name people and URL authorities, not credentials). Unlike NeMo
// Gym, counters such as max_output_tokens are not secrets.
func IsSecretKey(key string) bool {
	k := strings.ToLower(key)
	for _, s := range []string{"key", "secret", "password", "passwd", "credential"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return strings.HasSuffix(k, "token") || strings.HasSuffix(k, "cookie") || hasAuth(k)
}

// hasAuth reports whether the lower-case key k contains an "auth" that is
// not the start of "author…" — except "authoriz…"/"authoris…", which is
// authorization.
func hasAuth(k string) bool {
	for i := 0; ; {
		j := strings.Index(k[i:], "auth")
		if j < 0 {
			return false
		}
		rest := k[i+j:]
		if !strings.HasPrefix(rest, "author") || strings.HasPrefix(rest, "authoriz") || strings.HasPrefix(rest, "authoris") {
			return true
		}
		i += j + 1
	}
}

// Value shapes that carry a credential whatever key holds them.
var (
	// urlUserinfo: scheme://user:password@ — the password (non-empty, up to
	// the last @ of the authority) is masked, the user is kept.
	urlUserinfo = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://[^/?#@\s:]*:)[^/?#\s]+@`)
	// bearerCred: the Bearer scheme and a token68 credential.
	bearerCred = regexp.MustCompile(`(?i)\b(bearer\s+)[a-z0-9\-._~+/]+=*`)
	// basicCred: the Basic scheme and what may be its credential; masked
	// only when it is base64 of user:password, as "Basic" is also a word.
	basicCred = regexp.MustCompile(`(?i)\b(basic\s+)([a-z0-9+/]+={0,2})([^a-z0-9+/=\-._~]|$)`)
)

// maskSecretShapes masks, in any string, the credentials recognisable by
// shape: a URL's userinfo password (http://user:****@host), a Bearer token
// (Bearer ****) and a Basic credential that is base64 of user:password
// (Basic ****).
func maskSecretShapes(s string) string {
	if strings.Contains(s, "://") {
		s = urlUserinfo.ReplaceAllString(s, "${1}"+secretMask+"@")
	}
	ls := strings.ToLower(s)
	if strings.Contains(ls, "bearer") {
		s = bearerCred.ReplaceAllString(s, "${1}"+secretMask)
	}
	if strings.Contains(ls, "basic") {
		s = basicCred.ReplaceAllStringFunc(s, func(m string) string {
			sub := basicCred.FindStringSubmatch(m)
			if !isBasicCredential(sub[2]) {
				return m
			}
			return sub[1] + secretMask + sub[3]
		})
	}
	return s
}

func isBasicCredential(c string) bool {
	if len(c)%4 != 0 {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(c)
	return err == nil && bytes.IndexByte(b, ':') >= 0
}

// maskShapesIn applies maskSecretShapes to every string value below n and
// to every command-line origin token.
func maskShapesIn(n *tree.Node) {
	if n.Kind == tree.String {
		n.Str = maskSecretShapes(n.Str)
	}
	if n.Origin.Kind == tree.FromCLI {
		n.Origin.Token = maskSecretShapes(n.Origin.Token)
	}
	for _, e := range n.Entries {
		maskShapesIn(e.Value)
	}
	for _, it := range n.Items {
		maskShapesIn(it)
	}
}

// maskSecrets replaces, in place, every scalar under a secret key with
// "****" and every list under one with a list of masks; maps under a secret
// key are walked, not masked, as upstream does. Masking happens before
// interpolation, so a value that interpolates a secret prints masked too.
func maskSecrets(n *tree.Node) {
	switch n.Kind {
	case tree.Map:
		for i, e := range n.Entries {
			if !IsSecretKey(e.Key) {
				maskSecrets(e.Value)
				continue
			}
			switch e.Value.Kind {
			case tree.Map:
				maskSecrets(e.Value)
			case tree.List:
				for j, it := range e.Value.Items {
					e.Value.Items[j] = masked(it)
				}
			default:
				n.Entries[i].Value = masked(e.Value)
			}
		}
	case tree.List:
		for _, it := range n.Items {
			if it.Kind == tree.Map {
				maskSecrets(it)
			}
		}
	}
}

// readAsMasking resolves, in maskSecrets' order, every value the masking
// walk passes: each value of a map it walks (secret ones included) and each
// item of a list it walks. NeMo Gym's walk reads values the same way, so an
// unresolvable secret fails `env resolve` there although it would print
// masked; items of a list under a secret key are only counted, not read.
func readAsMasking(rv *resolver, n *tree.Node, at *trail) error {
	switch n.Kind {
	case tree.Map:
		for _, e := range n.Entries {
			if (e.Value.Kind == tree.List && IsSecretKey(e.Key)) || (e.Value.IsScalar() && !hasInterpolation(e.Value)) {
				continue
			}
			if err := readAsMasking(rv, e.Value, at.key(e.Key, e.Value)); err != nil {
				return err
			}
		}
	case tree.List:
		for i, it := range n.Items {
			if it.IsScalar() && !hasInterpolation(it) {
				continue
			}
			if it.Kind == tree.Map {
				if err := readAsMasking(rv, it, at.index(i, it)); err != nil {
					return err
				}
				continue
			}
			if _, err := rv.valueAt(it, at.index(i, it)); err != nil {
				return err
			}
		}
	default:
		_, err := rv.valueAt(n, at)
		return err
	}
	return nil
}

// secretPath reports whether the value at at is masked: its nearest key
// names a secret.
func secretPath(at *trail) bool {
	k, ok := at.lastKey()
	return ok && IsSecretKey(k)
}

func masked(n *tree.Node) *tree.Node {
	m := tree.NewString(secretMask)
	m.Origin = n.Origin
	return m
}

// redactToken hides the value of an override token that sets a secret (or a
// map holding one), so --show-origin and error messages never print a key.
// A token that does not parse is judged by its whole text, erring on the
// side of hiding.
func redactToken(token string) string {
	key, value, hasValue := strings.Cut(token, "=")
	if !hasValue || value == "" {
		return token
	}
	secret := IsSecretKey(token)
	if ov, err := override.Parse(token); err == nil {
		secret = holdsSecret(ov.Value)
		for _, p := range ov.Path {
			secret = secret || IsSecretKey(p)
		}
	}
	if secret {
		return key + "=" + secretMask
	}
	return maskSecretShapes(token)
}

func holdsSecret(n *tree.Node) bool {
	if n == nil {
		return false
	}
	for _, e := range n.Entries {
		if IsSecretKey(e.Key) || holdsSecret(e.Value) {
			return true
		}
	}
	for _, it := range n.Items {
		if holdsSecret(it) {
			return true
		}
	}
	return false
}

// redactOrigins rewrites every command-line origin below n with its secret
// values hidden.
func redactOrigins(n *tree.Node, seen map[string]string) {
	if n.Origin.Kind == tree.FromCLI {
		r, ok := seen[n.Origin.Token]
		if !ok {
			r = redactToken(n.Origin.Token)
			seen[n.Origin.Token] = r
		}
		n.Origin.Token = r
	}
	for _, e := range n.Entries {
		redactOrigins(e.Value, seen)
	}
	for _, it := range n.Items {
		redactOrigins(it, seen)
	}
}

// redactOverrideError hides a secret override's value in the error it caused.
func redactOverrideError(err error) error {
	var token string
	var parseErr *override.ParseError
	var applyErr *override.ApplyError
	switch {
	case errors.As(err, &parseErr):
		token = parseErr.Token
	case errors.As(err, &applyErr):
		token = applyErr.Token
	default:
		return &Error{Class: ClassOverride, Msg: err.Error(), Err: err}
	}
	msg := err.Error()
	if red := redactToken(token); red != token {
		_, value, _ := strings.Cut(token, "=")
		msg = strings.ReplaceAll(strings.ReplaceAll(msg, token, red), value, secretMask)
	}
	return &Error{Class: ClassOverride, Msg: msg}
}

// Masked is a copy of a resolved tree with secrets masked as gym env
// resolve masks them: by key, and by value shape anywhere.
func Masked(n *tree.Node) *tree.Node {
	c := n.Clone()
	maskSecrets(c)
	maskShapesIn(c)
	return c
}
