package config

import (
	"errors"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// secretMask replaces secret values in `gym env resolve` output.
const secretMask = "****"

// IsSecretKey reports whether a key names a secret: it contains "key",
// "secret" or "password", or ends in "token" (any case). Unlike NeMo Gym,
// counters such as max_output_tokens are not secrets.
func IsSecretKey(key string) bool {
	k := strings.ToLower(key)
	return strings.Contains(k, "key") || strings.Contains(k, "secret") ||
		strings.Contains(k, "password") || strings.HasSuffix(k, "token")
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
func readAsMasking(rv *resolver, n *tree.Node, at Path) error {
	switch n.Kind {
	case tree.Map:
		for _, e := range n.Entries {
			if e.Value.Kind == tree.List && IsSecretKey(e.Key) {
				continue
			}
			if err := readAsMasking(rv, e.Value, at.Key(e.Key)); err != nil {
				return err
			}
		}
	case tree.List:
		for i, it := range n.Items {
			if it.Kind == tree.Map {
				if err := readAsMasking(rv, it, at.Index(i)); err != nil {
					return err
				}
				continue
			}
			if _, err := rv.value(it, at.Index(i)); err != nil {
				return err
			}
		}
	default:
		_, err := rv.value(n, at)
		return err
	}
	return nil
}

// secretPath reports whether the value at p is masked: its nearest key
// names a secret.
func secretPath(p Path) bool {
	for i := len(p) - 1; i >= 0; i-- {
		if !p[i].IsIndex {
			return IsSecretKey(p[i].Key)
		}
	}
	return false
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
	return token
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
