// Package config is NeMo Gym's global config, parsed as NeMo Gym parses it
// (spec/config.md): the layers (config_paths files, env.yaml, the
// +key=value overrides and a programmatic seed) merged in NeMo Gym's order;
// the _inherit_from, _copy and _delete_key directives; server instances
// validated and their defaults and ports filled; every ${...} resolved on
// demand; secrets masked when printed. Every value keeps its origin
// (file:line, the override token, a default) for errors and --show-origin.
//
// Load is the entry point; Settings reads a command's own keys from the
// result. The subpackages are its parts: pyyaml (YAML with PyYAML's typing),
// override (Hydra's override grammar), interp (OmegaConf interpolation) and
// tree (the value tree they share).
package config
