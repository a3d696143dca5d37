package config

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Server types are the literal keys that make a top-level block a server.
// nemo-gym 0.7.0 added environment servers, which front agents for its
// rollout collection.
const (
	ModelsType       = "responses_api_models"
	ResourcesType    = "resources_servers"
	AgentsType       = "responses_api_agents"
	EnvironmentsType = "environment_servers"
)

// ServerTypes in NeMo Gym's order.
var ServerTypes = []string{ModelsType, ResourcesType, AgentsType, EnvironmentsType}

func isServerType(s string) bool {
	return s == ModelsType || s == ResourcesType || s == AgentsType || s == EnvironmentsType
}

// reservedKeys are top-level keys never treated as server ids (spec §10.1).
var reservedKeys = map[string]bool{
	"config_paths": true, "entrypoint": true, "default_host": true, "head_server": true,
	"disallowed_ports": true, "head_server_deps": true, "python_version": true,
	"pip_install_verbose": true, "use_absolute_ip": true, "uv_pip_set_python": true,
	"skip_venv_if_present": true, "hf_token": true, "ray_head_node_address": true,
	"port_range_low": true, "port_range_high": true, "dry_run": true,
	"model_endpoint_readiness_timeout_seconds": true, "server_spinup_timeout_seconds": true, "uv_lock_timeout_seconds": true, "nemo_gym_version": true, "allow_openai_version_skew": true,
	"uv_cache_dir": true, "uv_venv_dir": true, "results_dir": true, "cache_dir": true,
	"_inherit_from": true, "_copy": true, "nemo_gym_log_dir": true, "verbose": true,
	"json": true, "query": true, "observability_enabled": true, "model_call_capture_dir": true,
	"token_id_capture": true, "component_name": true, "skip_verification": true,
	"skip_verification_reward": true, AllowUnsupportedPairingKey: true,
}

// IsReserved reports whether a top-level key is one of NeMo Gym's reserved keys.
func IsReserved(key string) bool { return reservedKeys[key] }

// Domains a resources server may declare.
var Domains = []string{"math", "coding", "agent", "knowledge", "instruction_following",
	"long_context", "safety", "games", "translation", "e2e", "rlhf", "other"}

// Licenses a train/validation/example dataset may declare.
var Licenses = []string{"Apache 2.0", "MIT", "Creative Commons Attribution 4.0 International",
	"Creative Commons Attribution-ShareAlike 4.0 International", "CC BY-SA 4.0", "CC BY-NC 3.0",
	"NVIDIA Internal Use Only, Do Not Distribute", "NVIDIA Evaluation Dataset License Agreement",
	"TBD", "GNU General Public License v3.0"}

// Instance is one valid server instance of the merged config.
type Instance struct {
	Name           string     // top-level id, e.g. policy_model
	Type           string     // server type
	Implementation string     // directory name under the server type
	Config         *tree.Node // the inner config map (live: host/port land here)
}

// fieldError is one pydantic-style validation failure.
type fieldError struct {
	loc []string
	msg string
}

func (f fieldError) String() string { return strings.Join(f.loc, " -> ") + ": " + f.msg }

// classify decides whether a top-level block is a server, an almost-server
// (it looks like one, having an entrypoint, but fails validation) or plain
// data. value resolves a scalar's interpolation so `port: ${oc.env:P}` is
// validated as the port it becomes.
func classify(id string, block *tree.Node, value func(*tree.Node, Path) (*tree.Node, error)) (inst *Instance, problems []fieldError, looksLikeServer bool, err error) {
	if block.Kind != tree.Map {
		return nil, nil, false, nil
	}
	var types []string
	for _, e := range block.Entries {
		if isServerType(e.Key) && e.Value.Kind == tree.Map {
			types = append(types, e.Key)
			for _, impl := range e.Value.Entries {
				if impl.Value.Kind == tree.Map && impl.Value.Has("entrypoint") {
					looksLikeServer = true
				}
			}
		}
	}
	if len(types) == 0 {
		return nil, nil, false, nil
	}
	if len(types) > 1 {
		return nil, []fieldError{{[]string{id}, "has more than one server type (" + strings.Join(types, ", ") + "); a server block holds exactly one"}}, looksLikeServer, nil
	}
	st := types[0]
	impls := block.Get(st)
	if impls.Len() != 1 {
		return nil, []fieldError{{[]string{st}, fmt.Sprintf("must hold exactly one implementation, found %d", impls.Len())}}, looksLikeServer, nil
	}
	impl := impls.Entries[0]
	loc := []string{st, impl.Key}
	if impl.Value.Kind != tree.Map {
		return nil, []fieldError{{loc, "Input should be a valid dictionary"}}, looksLikeServer, nil
	}
	at := Path{{Key: id}, {Key: st}, {Key: impl.Key}}
	problems, err = validateInner(st, impl.Value, loc, at, value)
	if err != nil || len(problems) > 0 {
		return nil, problems, looksLikeServer, err
	}
	return &Instance{Name: id, Type: st, Implementation: impl.Key, Config: impl.Value}, nil, true, nil
}

func validateInner(serverType string, inner *tree.Node, loc []string, at Path, value func(*tree.Node, Path) (*tree.Node, error)) ([]fieldError, error) {
	var problems []fieldError
	field := func(name string) (*tree.Node, error) {
		n := inner.Get(name)
		if n == nil {
			return nil, nil
		}
		return value(n, at.Key(name))
	}
	sub := func(name string) []string { return append(append([]string{}, loc...), name) }

	ep, err := field("entrypoint")
	if err != nil {
		return nil, err
	}
	switch {
	case ep == nil:
		problems = append(problems, fieldError{sub("entrypoint"), "Field required"})
	case ep.Kind != tree.String:
		problems = append(problems, fieldError{sub("entrypoint"), "Input should be a valid string"})
	}
	if h, err := field("host"); err != nil {
		return nil, err
	} else if h != nil && h.Kind != tree.String && h.Kind != tree.Null {
		problems = append(problems, fieldError{sub("host"), "Input should be a valid string"})
	}
	for _, name := range []string{"port", "num_workers"} {
		n, err := field(name)
		if err != nil {
			return nil, err
		}
		if n != nil && n.Kind != tree.Null {
			if msg := laxInt(n); msg != "" {
				problems = append(problems, fieldError{sub(name), msg})
			}
		}
	}
	dom, err := field("domain")
	if err != nil {
		return nil, err
	}
	switch {
	case dom == nil || dom.Kind == tree.Null:
		if serverType == ResourcesType {
			problems = append(problems, fieldError{sub("domain"), "Assertion failed, A domain is required for resources servers."})
		}
	case dom.Kind != tree.String || !contains(Domains, dom.Str):
		problems = append(problems, fieldError{sub("domain"), "Input should be " + oneOf(Domains)})
	}
	if ds := inner.Get("datasets"); ds != nil && ds.Kind != tree.Null {
		if ds.Kind != tree.List {
			problems = append(problems, fieldError{sub("datasets"), "Input should be a valid list"})
		} else {
			for i, d := range ds.Items {
				problems = append(problems, validateDataset(d, append(sub("datasets"), strconv.Itoa(i)))...)
			}
		}
	}
	return problems, nil
}

// laxInt accepts what pydantic's lax int mode does: ints, integral floats
// and numeric strings. It returns the pydantic message otherwise.
func laxInt(n *tree.Node) string {
	switch n.Kind {
	case tree.Int, tree.BigInt, tree.Bool:
		return ""
	case tree.Float:
		if n.Float == math.Trunc(n.Float) && !math.IsInf(n.Float, 0) {
			return ""
		}
		return "Input should be a valid integer, got a number with a fractional part"
	case tree.String:
		if _, ok := new(big.Int).SetString(strings.TrimSpace(n.Str), 10); ok {
			return "" // of any size, as for Python
		}
		return "Input should be a valid integer, unable to parse string as an integer"
	}
	return "Input should be a valid integer"
}

func validateDataset(d *tree.Node, loc []string) []fieldError {
	sub := func(name string) []string { return append(append([]string{}, loc...), name) }
	if d.Kind != tree.Map {
		return []fieldError{{loc, "Input should be a valid dictionary"}}
	}
	typ := d.Get("type")
	if typ == nil {
		return []fieldError{{loc, "Unable to extract tag using discriminator 'type'"}}
	}
	kinds := []string{"train", "validation", "example", "benchmark"}
	if typ.Kind != tree.String || !contains(kinds, typ.Str) {
		return []fieldError{{loc, fmt.Sprintf("Input tag %s found using 'type' does not match any of the expected tags: %s", interp.PythonRepr(typ), quotedList(kinds))}}
	}
	var problems []fieldError
	requireString := func(name string) {
		switch n := d.Get(name); {
		case n == nil:
			problems = append(problems, fieldError{sub(name), "Field required"})
		case n.Kind != tree.String:
			problems = append(problems, fieldError{sub(name), "Input should be a valid string"})
		}
	}
	requireString("name")
	requireString("jsonl_fpath")
	if n := d.Get("num_repeats"); n != nil {
		if msg := laxInt(n); msg != "" {
			problems = append(problems, fieldError{sub("num_repeats"), msg})
		} else if i, ok := integerValue(n); !ok || i.Sign() < 1 {
			problems = append(problems, fieldError{sub("num_repeats"), "Input should be greater than or equal to 1"})
		}
	}
	if typ.Str == "benchmark" {
		// Benchmark entries ignore unknown keys, license included (errata 9).
		// prepare_script may be left out (NeMo Gym requires it) by a
		// benchmark whose data ships with it, as gym's built-in ones do.
		if n := d.Get("prepare_script"); n != nil && n.Kind != tree.String {
			problems = append(problems, fieldError{sub("prepare_script"), "Input should be a valid string"})
		}
		return problems
	}
	name := interp.PythonStr(d.Get("name"))
	switch lic := d.Get("license"); {
	case lic == nil || lic.Kind == tree.Null:
		if typ.Str == "train" || typ.Str == "validation" {
			problems = append(problems, fieldError{sub("license"), "Assertion failed, A license is required for " + name})
		}
	case lic.Kind != tree.String || !contains(Licenses, lic.Str):
		problems = append(problems, fieldError{sub("license"), "Input should be " + oneOf(Licenses)})
	}
	legacy := d.Has("gitlab_identifier") || d.Has("huggingface_identifier")
	if src := d.Get("source"); src != nil && src.Kind != tree.Null {
		if legacy {
			problems = append(problems, fieldError{loc, "Value error, Specify a dataset source once for '" + name + "': use 'source' and drop gitlab_identifier/huggingface_identifier"})
		}
		problems = append(problems, validateSource(src, sub("source"))...)
	}
	return problems
}

func validateSource(src *tree.Node, loc []string) []fieldError {
	if src.Kind != tree.Map {
		return []fieldError{{loc, "Input should be a valid dictionary"}}
	}
	required := map[string][]string{
		"gitlab":      {"dataset_name", "version", "artifact_fpath"},
		"huggingface": {"repo_id"},
	}
	typ := src.Get("type")
	if typ == nil || typ.Kind != tree.String || required[typ.Str] == nil {
		return []fieldError{{loc, "Input tag " + interp.PythonRepr(typ) + " found using 'type' does not match any of the expected tags: 'gitlab', 'huggingface'"}}
	}
	var problems []fieldError
	for _, f := range required[typ.Str] {
		if !src.Has(f) {
			problems = append(problems, fieldError{append(append([]string{}, loc...), typ.Str, f), "Field required"})
		}
	}
	return problems
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func quotedList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = interp.PythonRepr(tree.NewString(s))
	}
	return strings.Join(q, ", ")
}

// oneOf renders pydantic's enum message tail: 'a', 'b' or 'c'.
func oneOf(list []string) string {
	q := quotedList(list[:len(list)-1])
	return q + " or " + interp.PythonRepr(tree.NewString(list[len(list)-1]))
}

// refHint suggests the closest instance names of the referenced type.
func refHint(name, serverType string, sameType []string, closeMatches func(string, []string, int, float64) []string) string {
	if m := closeMatches(name, sameType, 3, 0.6); len(m) > 0 {
		return "Did you mean: " + quotedList(m) + "?"
	}
	if len(sameType) == 0 {
		return "Available " + serverType + ": (none)"
	}
	sorted := append([]string{}, sameType...)
	sort.Strings(sorted)
	return "Available " + serverType + ": " + quotedList(sorted)
}
