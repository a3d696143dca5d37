package catalog

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// Metadata is what a listing shows about a config beyond its name.
type Metadata struct {
	Domain      string // "" when the config declares none
	Description string
}

func (m *Metadata) complete() bool { return m.Domain != "" && m.Description != "" }

// unsetForListing stands in for values only a run supplies (API keys,
// endpoints), so that a config still resolves far enough to be described.
const unsetForListing = "__unset_for_listing__"

// ReadMetadata is NeMo Gym's read_config_metadata (spec §2.9): the first
// truthy domain and description of any server mapping in the raw file;
// then, for what is still missing, the same scan over the file loaded as a
// whole config (config_paths, _inherit_from, _copy and ${...} applied, the
// dummy policy model added), which is how a benchmark gets the domain of
// the resources server it inherits. It never fails: a config that cannot be
// read or resolved keeps what the raw scan found.
func ReadMetadata(path string, roots *resolve.Roots) Metadata {
	var m Metadata
	raw := loadRaw(path)
	fillMetadata(raw, &m, nil)
	if m.complete() || raw == nil || roots == nil {
		return m
	}
	if res := resolveForListing(raw, roots); res != nil {
		fillMetadata(res.Config, &m, res)
	}
	return m
}

// fillMetadata sets what m still lacks from the server mappings of n. With
// res, n is res.Config and each candidate is resolved first, as OmegaConf
// resolves a value when it is read.
func fillMetadata(n *tree.Node, m *Metadata, res *config.Result) {
	for _, s := range servers(n) {
		if m.Domain == "" {
			m.Domain = text(serverValue(s, "domain", res))
		}
		if m.Description == "" {
			m.Description = text(serverValue(s, "description", res))
		}
	}
}

func serverValue(s server, key string, res *config.Result) *tree.Node {
	v := s.body.Get(key)
	if res == nil || v == nil || v.Kind != tree.String || !interp.HasInterpolation(v.Str) {
		return v
	}
	parts := []string{s.instance, s.group, s.impl, key}
	for _, p := range parts {
		if strings.Contains(p, ".") {
			// A dotted key cannot be addressed by a dotted path.
			return nil
		}
	}
	resolved, err := config.ResolveGlobal(res.Config, strings.Join(parts, "."), res.LookupEnv)
	if err != nil {
		return nil
	}
	return resolved
}

// PythonCheck lists the servers of a loaded config that need Python under
// builtin_servers: prefer, each with why, or says why a server cannot be
// started at all (launcher.PythonServers with this binary's built-ins).
type PythonCheck func(res *config.Result) ([]string, error)

// errNoLoad is a config the listings cannot load far enough to judge.
var errNoLoad = errors.New("its config does not load")

// PythonServers says which servers of the entry's config need Python under
// builtin_servers: prefer, loading the config as the listings do; the
// error says why that cannot be told.
func (e *Entry) PythonServers(roots *resolve.Roots, check PythonCheck) ([]string, error) {
	raw := loadRaw(e.Config)
	if raw == nil {
		return nil, errNoLoad
	}
	res := resolveForListing(raw, roots)
	if res == nil {
		return nil, errNoLoad
	}
	return check(res)
}

// reUnsetKey finds the undefined key of an interpolation error. Like
// OmegaConf's, internal/config's error carries the key only in its message
// (NeMo Gym reads it the same way); TestReadMetadata notices a rewording.
var reUnsetKey = regexp.MustCompile(`references '([^']+)', which is not set`)

// resolveForListing loads a raw config file as NeMo Gym's metadata reader
// does: the file is the programmatic layer, with the dummy policy model
// when it has no policy_model, every `???` filled with a placeholder, and
// each undefined interpolation key given one in turn until it resolves.
// It returns nil when the config still does not load.
//
// Unlike NeMo Gym this also reads env.yaml (config loading always does); so
// that an env.yaml config_paths cannot attribute other configs' metadata to
// this one, the file's own config_paths (none) always wins.
func resolveForListing(raw *tree.Node, roots *resolve.Roots) *config.Result {
	seed := raw.Clone()
	if !seed.Has("config_paths") {
		seed.Set("config_paths", tree.NewList())
	}
	if !seed.Has("policy_model") {
		for _, k := range []string{"policy_base_url", "policy_api_key", "policy_model_name"} {
			seed.Set(k, tree.NewString(""))
		}
		model := tree.NewMap()
		model.Set("entrypoint", tree.NewString("app.py"))
		models := tree.NewMap()
		models.Set("dummy_model", model)
		policy := tree.NewMap()
		policy.Set(config.ModelsType, models)
		seed.Set("policy_model", policy)
	}
	fillMissing(seed)
	injected := map[string]bool{}
	for {
		res, err := config.Load(context.Background(), config.Env{Roots: roots}, config.Request{Seed: seed, Offline: true})
		if err == nil {
			return res
		}
		var cfgErr *config.Error
		if !errors.As(err, &cfgErr) || cfgErr.Class != config.ClassInterpolation {
			return nil
		}
		m := reUnsetKey.FindStringSubmatch(cfgErr.Msg)
		if m == nil || injected[m[1]] {
			return nil
		}
		injected[m[1]] = true
		withKey := tree.NewMap()
		withKey.Set(m[1], tree.NewString(unsetForListing))
		for _, e := range seed.Entries {
			withKey.SetEntry(e)
		}
		seed = withKey
	}
}

// fillMissing replaces every `???` in n with the listing placeholder.
func fillMissing(n *tree.Node) {
	switch n.Kind {
	case tree.Map:
		for i := range n.Entries {
			if v := n.Entries[i].Value; v.Kind == tree.String && v.Str == "???" {
				n.Entries[i].Value = tree.NewString(unsetForListing)
			} else {
				fillMissing(v)
			}
		}
	case tree.List:
		for i, v := range n.Items {
			if v.Kind == tree.String && v.Str == "???" {
				n.Items[i] = tree.NewString(unsetForListing)
			} else {
				fillMissing(v)
			}
		}
	}
}
