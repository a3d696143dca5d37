// Package override reads the Hydra 1.3 command-line overrides that NeMo Gym
// accepts (`+k=v`, `++k=v`, `k=v`, `~k`, `~k=v`) and applies them to the CLI
// layer. NeMo Gym hands these tokens to hydra.main with no config of its own,
// so everything a user can observe comes from two places that this package
// follows: Hydra's override grammar and value typing (OverrideLexer.g4,
// OverrideParser.g4, the override visitor and its cast functions), and
// ConfigLoaderImpl._apply_overrides_to_config, which applies each override
// with OmegaConf.select / OmegaConf.update on a struct-mode config.
//
// Hydra features that need a runtime gym does not have are refused with a
// clear error instead of being half-supported: sweeps (no --multirun),
// config groups and packages (no config search path), and hydra.* keys (no
// Hydra runtime config).
package override

import (
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Op is what an override does, chosen by its prefix.
type Op uint8

const (
	// Change is `k=v`: k must already exist in the layer.
	Change Op = iota
	// Add is `+k=v`.
	Add
	// ForceAdd is `++k=v`: add or overwrite.
	ForceAdd
	// Delete is `~k` or `~k=v`.
	Delete
)

func (o Op) String() string {
	switch o {
	case Change:
		return "change"
	case Add:
		return "add"
	case ForceAdd:
		return "force-add"
	case Delete:
		return "delete"
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Override is one parsed command-line token.
type Override struct {
	Op    Op
	Key   string     // as typed, e.g. "a.b.0"
	Path  []string   // Key split on '.'
	Value *tree.Node // nil only for `~k` without a value
	Token string     // the whole token as typed
}

// ParseError is a token that is not a valid override. Msg may span several
// lines; Column is 1-based and counts characters.
type ParseError struct {
	Token  string
	Column int
	Msg    string

	// sweep marks a well-formed sweep, which Hydra rejects only after every
	// token has parsed (validate_sweep_overrides_legal), so ParseAll
	// reports a later syntax error first.
	sweep bool
}

func (e *ParseError) Error() string {
	first, rest, more := strings.Cut(e.Msg, "\n")
	s := "Error parsing override '" + e.Token + "': " + first + " (column " + strconv.Itoa(e.Column) + ")"
	if more {
		s += "\n" + rest
	}
	return s
}

// ApplyError is an override that parsed but cannot be applied to the layer.
// Msg carries Hydra's wording where Hydra has one.
type ApplyError struct {
	Token string
	Key   string
	Msg   string
}

func (e *ApplyError) Error() string { return e.Msg }

// ParseAll parses every token, then applies them left to right to a fresh
// empty map, which is NeMo Gym's CLI layer. As in Hydra, a malformed token
// anywhere is reported before a sweep, and both before any apply error.
func ParseAll(tokens []string) (*tree.Node, error) {
	ovs := make([]Override, 0, len(tokens))
	var sweep *ParseError
	for _, tok := range tokens {
		ov, err := Parse(tok)
		if err != nil {
			pe := err.(*ParseError)
			if !pe.sweep {
				return nil, pe
			}
			if sweep == nil {
				sweep = pe
			}
			continue
		}
		ovs = append(ovs, ov)
	}
	if sweep != nil {
		return nil, sweep
	}
	layer := tree.NewMap()
	for _, ov := range ovs {
		if err := Apply(layer, ov); err != nil {
			return nil, err
		}
	}
	return layer, nil
}
