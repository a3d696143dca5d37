package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Keys of the model pairing check (nemo-gym 0.7.0).
const (
	// allowedModelTypesKey, on a resources server, lists the model adapter
	// types (implementations under responses_api_models) that can carry its
	// workload. Absent or empty means any.
	allowedModelTypesKey = "allowed_model_types"
	// AllowUnsupportedPairingKey waives the check when truthy.
	AllowUnsupportedPairingKey = "allow_unsupported_pairing"
	// AllowUnsupportedPairingEnv waives it when set to anything but "",
	// "0" or "false" (any case).
	AllowUnsupportedPairingEnv = "NEMO_GYM_ALLOW_UNSUPPORTED_PAIRING"

	pairingBypassHint = "Or pass --allow-unsupported-pairing (or set " + AllowUnsupportedPairingEnv + "=1) to bypass the check."
)

// agentInstance is a top-level block holding exactly one agent
// implementation whose config is a map, valid server or not.
type agentInstance struct {
	name, agentType string
	config          *tree.Node
}

// agentInstances lists the agent instances of cfg in key order, as NeMo
// Gym finds them: unresolved top-level values, reserved keys skipped.
func agentInstances(cfg *tree.Node) []agentInstance {
	var out []agentInstance
	for _, e := range cfg.Entries {
		if IsReserved(e.Key) || e.Value.Kind != tree.Map {
			continue
		}
		agents := e.Value.Get(AgentsType)
		if agents == nil || agents.Kind != tree.Map || agents.Len() != 1 {
			continue
		}
		impl := agents.Entries[0]
		if impl.Value.Kind != tree.Map {
			continue
		}
		out = append(out, agentInstance{name: e.Key, agentType: impl.Key, config: impl.Value})
	}
	return out
}

// pairingWaived reports whether allow_unsupported_pairing or
// NEMO_GYM_ALLOW_UNSUPPORTED_PAIRING turns the pairing checks off.
func pairingWaived(rv *resolver) (bool, error) {
	if n := rv.root.Get(AllowUnsupportedPairingKey); n != nil {
		v, err := rv.value(n, Path{{Key: AllowUnsupportedPairingKey}})
		if err != nil {
			return false, err
		}
		if Truthy(v) {
			return true, nil
		}
	}
	v, _ := rv.env.LookupEnv(AllowUnsupportedPairingEnv)
	switch strings.ToLower(v) {
	case "", "0", "false":
		return false, nil
	}
	return true, nil
}

// serverRefAt resolves the reference block key of an agent's config and
// returns the name it gives when it is a map whose type is typ.
func serverRefAt(rv *resolver, in agentInstance, key, typ string) (string, bool, error) {
	at := Path{{Key: in.name}, {Key: AgentsType}, {Key: in.agentType}, {Key: key}}
	n := in.config.Get(key)
	if n == nil {
		return "", false, nil
	}
	ref, err := rv.value(n, at)
	if err != nil || ref.Kind != tree.Map {
		return "", false, err
	}
	t, err := rv.value(ref.Get("type"), at.Key("type"))
	if err != nil || t == nil || t.Kind != tree.String || t.Str != typ {
		return "", false, err
	}
	name, err := rv.value(ref.Get("name"), at.Key("name"))
	if err != nil || name == nil || name.Kind != tree.String {
		return "", false, err
	}
	return name.Str, true, nil
}

// soleImplementation returns the one implementation under typ of the
// top-level block name, when there is exactly one.
func soleImplementation(rv *resolver, name, typ string) (string, *tree.Node, error) {
	block, err := rv.value(rv.root.Get(name), Path{{Key: name}})
	if err != nil || block == nil || block.Kind != tree.Map {
		return "", nil, err
	}
	impls, err := rv.value(block.Get(typ), Path{{Key: name}, {Key: typ}})
	if err != nil || impls == nil || impls.Kind != tree.Map || impls.Len() != 1 {
		return "", nil, err
	}
	return impls.Entries[0].Key, impls.Entries[0].Value, nil
}

// declaredTypes returns the list resources server name declares under key
// (allowed_model_types, allowed_agents) and where, or nil when it declares
// none. A bare string is one entry. what names the entries for the error.
func declaredTypes(rv *resolver, name, key, what string) ([]string, tree.Origin, error) {
	impl, inner, err := soleImplementation(rv, name, ResourcesType)
	if err != nil || inner == nil || inner.Kind != tree.Map {
		return nil, tree.Origin{}, err
	}
	at := Path{{Key: name}, {Key: ResourcesType}, {Key: impl}, {Key: key}}
	declared, err := rv.value(inner.Get(key), at)
	if err != nil || declared == nil || !Truthy(declared) {
		return nil, tree.Origin{}, err
	}
	switch declared.Kind {
	case tree.String:
		return []string{declared.Str}, declared.Origin, nil
	case tree.List:
		types := make([]string, len(declared.Items))
		for i, it := range declared.Items {
			v, err := rv.value(it, at.Index(i))
			if err != nil {
				return nil, tree.Origin{}, err
			}
			types[i] = interp.PythonStr(v)
		}
		return types, declared.Origin, nil
	}
	return nil, tree.Origin{}, errorf(ClassConfig, declared.Origin, "'%s' must be a list of %s, got %s.", at, what, declared.Kind)
}

// checkModelPairings rejects an agent whose resources server declares
// allowed_model_types that leave out the type of the agent's model server,
// before anything starts (nemo-gym 0.7.0 raise_on_unsupported_model_pairings).
func checkModelPairings(rv *resolver) error {
	if waived, err := pairingWaived(rv); waived || err != nil {
		return err
	}
	var restrictions [][]string
	var rejected []string
	for _, agent := range agentInstances(rv.root) {
		rs, ok, err := serverRefAt(rv, agent, "resources_server", ResourcesType)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		allowed, where, err := declaredTypes(rv, rs, allowedModelTypesKey, "model types")
		if err != nil {
			return err
		}
		if allowed == nil {
			continue
		}
		model, ok, err := serverRefAt(rv, agent, "model_server", ModelsType)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		modelType, _, err := soleImplementation(rv, model, ModelsType)
		if err != nil {
			return err
		}
		// The placeholder model of commands that need no model is not a
		// choice of adapter.
		if modelType == "" || modelType == "dummy_model" {
			continue
		}
		restrictions = append(restrictions, allowed)
		if !slices.Contains(allowed, modelType) {
			line := fmt.Sprintf("  - agent '%s' uses model server '%s' (type '%s'), but resources server '%s' accepts only: %s",
				agent.name, model, modelType, rs, strings.Join(allowed, ", "))
			if o := where.String(); o != "" {
				line += " (" + allowedModelTypesKey + " at " + o + ")"
			}
			rejected = append(rejected, line)
		}
	}
	if len(rejected) == 0 {
		return nil
	}
	var supported []string
	for _, t := range restrictions[0] {
		all := true
		for _, r := range restrictions[1:] {
			all = all && slices.Contains(r, t)
		}
		if all {
			supported = append(supported, t)
		}
	}
	remedy := "No single model type satisfies all of these resources servers."
	if len(supported) > 0 {
		remedy = fmt.Sprintf("Select a compatible model adapter (for example, --model-type %s). Supported model types: %s.",
			supported[0], strings.Join(supported, ", "))
	}
	return &Error{Class: ClassUnsupportedModelPairing, Msg: fmt.Sprintf(
		"The selected Gym model-server adapter is not compatible with this workload:\n%s\n\n%s %s",
		strings.Join(rejected, "\n"), remedy, pairingBypassHint)}
}
