package rollout

import (
	"errors"

	"github.com/tidwall/gjson"
)

// ErrPromptAndInput is a row that has its own responses_create_params.input
// while a prompt config is given (NeMo Gym's validate_prompt_compatibility).
var ErrPromptAndInput = errors.New("Some rows have responses_create_params.input but prompt_config is also specified. These are mutually exclusive. Use one or the other.")

// Apply renders the prompt into one row as NeMo Gym's apply_prompt_to_row
// does, for checks that materialize a row without writing it.
func (p *Prompt) Apply(row []byte) ([]byte, error) {
	parsed := gjson.ParseBytes(row)
	if hasInput(parsed) {
		return nil, ErrPromptAndInput
	}
	return p.apply(row, parsed)
}
