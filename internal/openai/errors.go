package openai

import "fmt"

// UnrepresentableError reports a request or response construct that the
// target format cannot carry. A server answers it with HTTP 400: the client
// asked for something this backend cannot do faithfully, and guessing would
// silently change what the model sees.
type UnrepresentableError struct {
	Field  string // where, as a path into the payload: "input[3].caller", "tools[0].allowed_callers"
	Reason string
}

func (e *UnrepresentableError) Error() string {
	return fmt.Sprintf("%s: %s", e.Field, e.Reason)
}

// InvalidError reports a payload that is not the shape its API defines:
// not JSON, a required field missing, a value of the wrong type. For a
// request the server answers 400; for an upstream response it is the
// upstream's fault, not the client's.
type InvalidError struct {
	Field  string // "" for the payload as a whole
	Reason string
}

func (e *InvalidError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Reason)
}
