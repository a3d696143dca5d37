package dataset

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/pyjson"
	"github.com/nemo-gym-go/gym/internal/rollout"
)

// Keys of a row that rendering reads and writes.
const (
	paramsKey     = "responses_create_params"
	promptUsedKey = "prompt_config_used"
	agentRefKey   = "agent_ref"
	taskSourceKey = "task_source"
	inputKey      = "input"
)

// RenderOptions are the inputs of Render.
type RenderOptions struct {
	Input  string // raw JSONL, as NeMo Gym opens it (relative to the cwd)
	Prompt *rollout.Prompt
	// PromptUsed is the prompt config's resolved path, recorded in every
	// row's prompt_config_used.
	PromptUsed string
	Output     string
}

// Render is NeMo Gym's materialize_prompts: every row of Input gets its
// responses_create_params.input built from the prompt and
// prompt_config_used set, and is written to Output as json.dumps writes
// it. A row that already has an input is an error (the prompt would
// replace it); all such rows are listed. It returns the number of rows.
func Render(ctx context.Context, o RenderOptions) (int, error) {
	// NeMo Gym makes the output's directory before it reads anything.
	if err := os.MkdirAll(filepath.Dir(o.Output), 0o777); err != nil {
		return 0, err
	}
	lr, closer, err := openLines(o.Input)
	if err != nil {
		return 0, fmt.Errorf("cannot read the input (input_jsonl_fpath): %w", err)
	}
	defer closer.Close()
	var rows []any
	var lines []int
	var conflicting []string
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		row, err := lr.loadRow(line)
		if err != nil {
			return 0, err
		}
		has, err := hasInput(row)
		if err != nil {
			return 0, lr.errorf("%v", err)
		}
		if has {
			conflicting = append(conflicting, fmt.Sprint(len(rows)))
		}
		rows = append(rows, row)
		lines = append(lines, lr.line)
	}
	if len(conflicting) > 0 {
		return 0, fmt.Errorf("%s: Some rows have %s.input but prompt_config is also specified. These are mutually exclusive. Use one or the other. Violating rows: [%s]",
			o.Input, paramsKey, strings.Join(conflicting, ", "))
	}
	err = jsonl.WriteFileAtomic(o.Output, func(w *bufio.Writer) error {
		for i, row := range rows {
			out, err := applyPrompt(row.(pyjson.Object), o.Prompt)
			if err != nil {
				return &rollout.InputError{Path: o.Input, Line: lines[i], Msg: err.Error()}
			}
			out = out.Set(promptUsedKey, o.PromptUsed)
			b, err := pyjson.Dumps(out, false)
			if err != nil {
				return err
			}
			w.Write(b)
			w.WriteByte('\n')
		}
		return nil
	})
	return len(rows), err
}

// hasInput is NeMo Gym's check row.get("responses_create_params",
// {}).get("input"): whether the row carries a truthy input. What Python
// would fail on (a row or params that is not an object) is an error.
func hasInput(row any) (bool, error) {
	obj, ok := row.(pyjson.Object)
	if !ok {
		return false, fmt.Errorf("the row is %s, not a JSON object", describe(row))
	}
	params, ok := obj.Get(paramsKey)
	if !ok {
		return false, nil
	}
	p, ok := params.(pyjson.Object)
	if !ok {
		return false, fmt.Errorf("%s is %s, not a JSON object", paramsKey, describe(params))
	}
	in, _ := p.Get(inputKey)
	return truthy(in), nil
}

// applyPrompt is NeMo Gym's apply_prompt_to_row: the row with
// responses_create_params.input set to the rendered messages, the other
// params kept (params that are not an object become {}).
func applyPrompt(row pyjson.Object, p *rollout.Prompt) (pyjson.Object, error) {
	compact, err := pyjson.Dumps(row, false)
	if err != nil {
		return nil, err
	}
	system, hasSystem, user, err := p.Messages(gjson.ParseBytes(compact))
	if err != nil {
		return nil, err
	}
	var messages []any
	if hasSystem {
		messages = append(messages, pyjson.Object{{Key: "role", Value: "system"}, {Key: "content", Value: system}})
	}
	messages = append(messages, pyjson.Object{{Key: "role", Value: "user"}, {Key: "content", Value: user}})
	out := append(pyjson.Object(nil), row...)
	params := pyjson.Object{}
	if v, ok := out.Get(paramsKey); ok {
		if obj, ok := v.(pyjson.Object); ok {
			params = append(params, obj...)
		}
	}
	params = params.Set(inputKey, messages)
	return out.Set(paramsKey, params), nil
}

// truthy is Python's bool(v) for a json.loads value.
func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case int64:
		return v != 0
	case float64:
		return v != 0
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case pyjson.Object:
		return len(v) > 0
	}
	return true // a *big.Int is never zero
}

// describe names a JSON value's kind for an error.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "a list"
	case pyjson.Object:
		return "an object"
	}
	return "a number"
}
