package config

import (
	"strings"

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

func masked(n *tree.Node) *tree.Node {
	m := tree.NewString(secretMask)
	m.Origin = n.Origin
	return m
}
