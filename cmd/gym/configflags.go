package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/launcher"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// configFlags are the flags every config-reading command shares; each
// becomes a Hydra override token as NeMo Gym's CLI translates it.
type configFlags struct {
	configs                 []string
	searchDirs              []string
	benchmarks              []string
	environments            []string
	resourcesServers        []string
	modelType               string
	agentType               string
	allowUnsupportedPairing bool
	model                   string
	modelURL                string
	modelAPIKey             string
	builtinServers          string
}

// register declares the flags in NeMo Gym's declaration order, which is
// also the order their tokens take.
func (c *configFlags) register(fs *pflag.FlagSet) {
	c.registerSelectors(fs)
	fs.StringVarP(&c.model, "model", "m", "", "policy model name (sets policy_model_name)")
	fs.StringVar(&c.modelURL, "model-url", "", "policy model base URL (sets policy_base_url)")
	fs.StringVar(&c.modelAPIKey, "model-api-key", "", "policy model API key (sets policy_api_key)")
}

// registerSelectors declares the config files, selectors and search dirs
// without the policy model flags, for a command that calls no policy model
// (NeMo Gym's eval reverify takes these six).
func (c *configFlags) registerSelectors(fs *pflag.FlagSet) {
	fs.StringArrayVar(&c.configs, "config", nil, "config file to load (repeatable; relative to the search roots)")
	fs.StringArrayVar(&c.benchmarks, "benchmark", nil, "load benchmarks/`NAME`/config.yaml (NAME/flavor picks benchmarks/NAME/flavor.yaml; repeatable: several compose)")
	fs.StringArrayVar(&c.environments, "environment", nil, "load environments/`NAME`/config.yaml (repeatable)")
	fs.StringArrayVar(&c.resourcesServers, "resources-server", nil, "load resources_servers/`NAME`/configs/NAME.yaml (NAME/flavor for another config; repeatable)")
	fs.StringVar(&c.modelType, "model-type", "", "load responses_api_models/`NAME`/configs/NAME.yaml (NAME/flavor for another config)")
	fs.StringArrayVar(&c.searchDirs, "search-dir", nil, "extra search root, searched before NEMO_GYM_EXTRA_ROOTS, the cwd and the install root (repeatable)")
}

// registerAgentType declares --agent-type and --allow-unsupported-pairing,
// for the commands that compose a run's servers.
func (c *configFlags) registerAgentType(fs *pflag.FlagSet) {
	fs.StringVar(&c.agentType, "agent-type", "", "load responses_api_agents/`NAME`/configs/NAME.yaml (NAME/flavor for another config): that agent runs the selected environment or benchmark in place of its own")
	fs.BoolVar(&c.allowUnsupportedPairing, "allow-unsupported-pairing", false, "run even if the resources server does not declare support for the agent or model type (sets allow_unsupported_pairing)")
}

// registerFilesOnly declares only --config and --search-dir, for a command
// that reads where the servers are but selects and calls none of them.
func (c *configFlags) registerFilesOnly(fs *pflag.FlagSet) {
	fs.StringArrayVar(&c.configs, "config", nil, "config file to load (repeatable; relative to the search roots)")
	fs.StringArrayVar(&c.searchDirs, "search-dir", nil, "extra search root, searched before NEMO_GYM_EXTRA_ROOTS, the cwd and the install root (repeatable)")
}

// registerBuiltinServers declares --builtin-servers, for the commands that
// start servers.
func (c *configFlags) registerBuiltinServers(fs *pflag.FlagSet) {
	fs.StringVar(&c.builtinServers, "builtin-servers", "", "shadow: the earliest search root's server runs, as in NeMo Gym (the default); prefer: gym's Go built-in runs in place of a Python server of the same kind when it reads every key of its config (sets builtin_servers)")
}

// overrides translates the flags and the passthrough tokens into the
// override list, as spec/config.md §3.1 describes: +verbose first, then one
// coalesced +config_paths=[...] (--config paths verbatim, then selectors as
// absolute paths, then any raw +config_paths=[..] tokens), then the model
// flags, then the passthrough tokens in order.
func (c *configFlags) overrides(roots *resolve.Roots, verbose bool, passthrough []string) (tokens, warnings []string, err error) {
	for _, t := range passthrough {
		if strings.HasPrefix(t, "-") {
			return nil, nil, usageErrorf("unrecognized arguments: %s", t)
		}
	}
	paths := append([]string{}, c.configs...)
	for _, sel := range []struct {
		kind   resolve.Selector
		values []string
	}{
		{resolve.Benchmark, c.benchmarks},
		{resolve.Environment, c.environments},
		{resolve.ResourcesServer, c.resourcesServers},
		{resolve.ModelType, []string{c.modelType}},
		{resolve.AgentType, []string{c.agentType}},
	} {
		for _, value := range sel.values {
			if value == "" {
				continue
			}
			p, warn, err := roots.Select(sel.kind, value)
			if err != nil {
				return nil, nil, err
			}
			warnings = append(warnings, warn...)
			paths = append(paths, p)
		}
	}
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = hydraListItem(p)
	}
	var rest []string
	for _, t := range passthrough {
		if inner, ok := strings.CutPrefix(t, "+config_paths=["); ok && strings.HasSuffix(inner, "]") {
			for _, p := range strings.Split(strings.TrimSuffix(inner, "]"), ",") {
				if p != "" {
					quoted = append(quoted, p)
				}
			}
			continue
		}
		rest = append(rest, t)
	}
	if verbose {
		tokens = append(tokens, "+verbose=true")
	}
	if len(quoted) > 0 {
		tokens = append(tokens, "+config_paths=["+strings.Join(quoted, ",")+"]")
	}
	if c.allowUnsupportedPairing {
		tokens = append(tokens, "+"+config.AllowUnsupportedPairingKey+"=true")
	}
	for _, kv := range []struct{ key, value string }{
		{"policy_model_name", c.model},
		{"policy_base_url", c.modelURL},
		{"policy_api_key", c.modelAPIKey},
	} {
		if kv.value != "" {
			tokens = append(tokens, "+"+kv.key+"="+override.Quote(kv.value))
		}
	}
	switch c.builtinServers {
	case "":
	case launcher.BuiltinShadow, launcher.BuiltinPrefer:
		tokens = append(tokens, "++"+launcher.BuiltinServersKey+"="+c.builtinServers)
	default:
		return nil, nil, usageErrorf("--builtin-servers is %q; it must be %s or %s", c.builtinServers, launcher.BuiltinShadow, launcher.BuiltinPrefer)
	}
	return append(tokens, rest...), warnings, nil
}

// hydraPlain reports whether s reads back as the same string when written
// unquoted in a Hydra override.
func hydraPlain(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("_-/.+@%:", r):
		default:
			return false
		}
	}
	return true
}

// hydraListItem writes a path into a +config_paths=[...] token, quoting only
// when Hydra would otherwise misread it.
func hydraListItem(s string) string {
	if hydraPlain(s) && !strings.Contains(s, ":") {
		return s
	}
	return override.Quote(s)
}
