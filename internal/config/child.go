package config

import (
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Child environment variables: how `gym env start` hands the global config
// to each server process, exactly as NeMo Gym does.
const (
	ConfigDictEnv = "NEMO_GYM_CONFIG_DICT" // the whole config as YAML, interpolations unresolved
	ConfigPathEnv = "NEMO_GYM_CONFIG_PATH" // the server's instance name
)

// ParseChildConfig reads the global config a server process received in
// NEMO_GYM_CONFIG_DICT. Like upstream children it takes the YAML as is: no
// merging, defaults or validation.
func ParseChildConfig(yamlText string) (*tree.Node, error) {
	n, err := pyyaml.Load([]byte(yamlText), ConfigDictEnv)
	if err != nil {
		return nil, &Error{Class: ClassConfig, Msg: err.Error(), Err: err}
	}
	if n.Kind != tree.Map {
		return nil, errorf(ClassConfig, n.Origin, "%s must hold a YAML mapping, got a %s", ConfigDictEnv, n.Kind)
	}
	return n, nil
}

// InstanceSection returns a server's own config from the global config: the
// map under <instance> → its first value (server type) → that value's first
// value (implementation), fully resolved against the global config in this
// process's environment, with `name: <instance>` added. It also returns the
// server type and implementation names.
func InstanceSection(global *tree.Node, instance string, lookupEnv func(string) (string, bool)) (section *tree.Node, serverType, implementation string, err error) {
	block := global.Get(instance)
	if block == nil || block.Kind != tree.Map || block.Len() == 0 {
		return nil, "", "", errorf(ClassConfig, tree.Origin{}, "the config has no server instance '%s' (%s=%s)", instance, ConfigPathEnv, instance)
	}
	typeEntry := block.Entries[0]
	if typeEntry.Value.Kind != tree.Map || typeEntry.Value.Len() == 0 {
		return nil, "", "", errorf(ClassConfig, block.Origin, "'%s' is not a server block: expected %s.<server type>.<implementation>", instance, instance)
	}
	implEntry := typeEntry.Value.Entries[0]
	at := Path{{Key: instance}, {Key: typeEntry.Key}, {Key: implEntry.Key}}
	r := newResolver(global, Env{LookupEnv: lookupEnv}.withDefaults())
	resolved, err := r.full(implEntry.Value, at)
	if err != nil {
		return nil, "", "", err
	}
	if resolved.Kind != tree.Map {
		return nil, "", "", errorf(ClassConfig, implEntry.Value.Origin, "'%s' must be a mapping, got a %s", at, resolved.Kind)
	}
	resolved.Set("name", tree.NewString(instance))
	return resolved, typeEntry.Key, implEntry.Key, nil
}

// Dump renders a config as NeMo Gym writes it for children and the head
// server: PyYAML block style, secrets and interpolations untouched.
func Dump(n *tree.Node) string { return string(pyyaml.Dump(n, pyyaml.Options{})) }

// ResolveGlobal resolves the value at a dotted top-level path of a child's
// global config in this process's environment, as NeMo Gym resolves a key
// when a server reads it. It returns nil when the path is absent.
func ResolveGlobal(global *tree.Node, dotted string, lookupEnv func(string) (string, bool)) (*tree.Node, error) {
	var at Path
	n := global
	for _, k := range strings.Split(dotted, ".") {
		if n = n.Get(k); n == nil {
			return nil, nil
		}
		at = at.Key(k)
	}
	return newResolver(global, Env{LookupEnv: lookupEnv}.withDefaults()).full(n, at)
}
