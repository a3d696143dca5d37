package config

import (
	"fmt"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Class names the kind of a configuration error. The names are NeMo Gym's
// exception classes, so users can search for them in either project's docs.
type Class string

const (
	ClassConfig               Class = "ConfigError"
	ClassMalformedConfigPaths Class = "MalformedConfigPathsError"
	ClassConfigPathNotFound   Class = "ConfigPathNotFoundError"
	ClassInheritPathNotFound  Class = "InheritPathNotFoundError"
	ClassMissingValues        Class = "ConfigMissingValuesError"
	ClassInterpolation        Class = "ConfigInterpolationError"
	ClassAlmostServer         Class = "AlmostServerError"
	ClassServerRefNotFound    Class = "ServerRefNotFoundError"
	ClassNoServerInstances    Class = "NoServerInstancesError"
	ClassOverride             Class = "OverrideError"
	ClassMerge                Class = "ConfigMergeError"
	ClassPort                 Class = "PortAllocationError"
	// ClassUnsupportedModelPairing: a resources server's allowed_model_types
	// leave out its agent's model server type.
	ClassUnsupportedModelPairing Class = "UnsupportedModelPairingError"
	// ClassUnsupportedAgentPairing: a resources server's allowed_agents leave
	// out the agent composed onto it.
	ClassUnsupportedAgentPairing Class = "UnsupportedAgentPairingError"
	// ClassAgentComposition: an unbound agent cannot be composed onto the
	// config's other agents.
	ClassAgentComposition Class = "AgentCompositionError"
)

// Error is every failure of config loading. The CLI prints it and exits 1.
type Error struct {
	Class Class
	Msg   string
	// Where is the location of the offending value when known; it is added
	// to the message unless the message already names it.
	Where tree.Origin
	Err   error
}

func (e *Error) Error() string {
	msg := e.Msg
	if where := e.Where.String(); where != "" && !strings.Contains(msg, where) {
		msg += "\n  (at " + where + ")"
	}
	// A value quoted in a message never shows a credential its shape gives away.
	return maskSecretShapes(msg)
}

func (e *Error) Unwrap() error { return e.Err }

func errorf(class Class, where tree.Origin, format string, args ...any) *Error {
	return &Error{Class: class, Msg: fmt.Sprintf(format, args...), Where: where}
}
