package dataset

import (
	"fmt"
	"math"
	"math/big"
	"slices"

	"github.com/nemo-gym-go/gym/internal/pyjson"
)

// paramsFields are the keys NeMo Gym's NeMoGymResponseCreateParamsNonStreaming
// accepts (it forbids any other).
var paramsFields = []string{
	"background", "include", "input", "instructions", "max_output_tokens", "max_tool_calls", "metadata",
	"model", "parallel_tool_calls", "previous_response_id", "prompt", "reasoning", "service_tier", "store",
	"context_management", "conversation", "moderation", "prompt_cache_key", "prompt_cache_retention",
	"safety_identifier", "stream_options", "temperature", "text", "tool_choice", "tools", "top_logprobs",
	"top_p", "truncation", "user", "stream",
}

// fieldKinds are the JSON kinds the scalar and list fields of the params
// take ("null" when they are optional).
var fieldKinds = map[string][]string{
	"background": {"bool", "null"}, "include": {"list", "null"}, "instructions": {"string", "null"},
	"max_output_tokens": {"int", "null"}, "max_tool_calls": {"int", "null"}, "metadata": {"object", "null"},
	"model": {"string", "null"}, "parallel_tool_calls": {"bool"}, "previous_response_id": {"string", "null"},
	"prompt": {"object", "null"}, "reasoning": {"object", "null"}, "store": {"bool", "null"},
	"context_management": {"list", "null"}, "conversation": {"string", "object", "null"},
	"moderation": {"object", "null"}, "prompt_cache_key": {"string", "null"}, "safety_identifier": {"string", "null"},
	"stream_options": {"object", "null"}, "temperature": {"number", "null"}, "text": {"object", "null"},
	"tool_choice": {"string", "object"}, "tools": {"list"}, "top_logprobs": {"int", "null"},
	"top_p": {"number", "null"}, "user": {"string", "null"},
}

// enumFields are the params whose value is one of a few strings.
var enumFields = map[string][]string{
	"service_tier":           {"auto", "default", "flex", "scale", "priority"},
	"prompt_cache_retention": {"in_memory", "24h"},
	"truncation":             {"auto", "disabled"},
}

// kindOf names a json.loads value's kind as fieldKinds does; an integral
// float counts as an int (Pydantic's lax int accepts it).
func kindOf(v any) []string {
	switch v := v.(type) {
	case nil:
		return []string{"null"}
	case bool:
		return []string{"bool"}
	case int64, *big.Int:
		return []string{"int", "number"}
	case float64:
		if v == math.Trunc(v) && !math.IsInf(v, 0) {
			return []string{"int", "number"}
		}
		return []string{"number"}
	case string:
		return []string{"string"}
	case []any:
		return []string{"list"}
	}
	return []string{"object"}
}

// sampleProblem is why a row is not a valid run request: NeMo Gym leaves
// such a row out of the metrics (it still collates it).
type sampleProblem string

// checkSample is NeMo Gym's compute_sample_metrics for a row that is not a
// materialized task: the row must be a run request (BaseRunRequest), whose
// responses_create_params gym checks for the keys, kinds and required
// input that NeMo Gym's model checks; the metrics are those of the params.
func checkSample(row any) (sampleMetrics, sampleProblem) {
	var s sampleMetrics
	obj, ok := row.(pyjson.Object)
	if !ok {
		return s, sampleProblem(fmt.Sprintf("the row is %s, not a JSON object", describe(row)))
	}
	if id, ok := obj.Get("_ng_rollout_id"); ok && id != nil {
		if _, isStr := id.(string); !isStr {
			return s, "_ng_rollout_id must be a string"
		}
	}
	raw, ok := obj.Get(paramsKey)
	if !ok {
		return s, sampleProblem(paramsKey + " is missing")
	}
	params, ok := raw.(pyjson.Object)
	if !ok {
		return s, sampleProblem(fmt.Sprintf("%s is %s, not a JSON object", paramsKey, describe(raw)))
	}
	for _, m := range params {
		if !slices.Contains(paramsFields, m.Key) {
			return s, sampleProblem(fmt.Sprintf("%s.%s is not a Responses create parameter (extra keys are forbidden)", paramsKey, m.Key))
		}
		if kinds, ok := fieldKinds[m.Key]; ok && !slices.ContainsFunc(kindOf(m.Value), func(k string) bool { return slices.Contains(kinds, k) }) {
			return s, sampleProblem(fmt.Sprintf("%s.%s is %s; it must be %s", paramsKey, m.Key, describe(m.Value), orList(kinds)))
		}
		if values, ok := enumFields[m.Key]; ok && m.Value != nil {
			if str, isStr := m.Value.(string); !isStr || !slices.Contains(values, str) {
				return s, sampleProblem(fmt.Sprintf("%s.%s must be one of %s or null", paramsKey, m.Key, pyStrList(values)))
			}
		}
	}
	if v, ok := params.Get("stream"); ok && v != nil && v != false {
		return s, sampleProblem(paramsKey + ".stream must be false or null")
	}
	input, ok := params.Get(inputKey)
	if !ok {
		return s, sampleProblem(paramsKey + ".input is missing")
	}
	var turns int
	switch in := input.(type) {
	case string:
		turns = 1
	case []any:
		for i, item := range in {
			msg, ok := item.(pyjson.Object)
			if !ok {
				return s, sampleProblem(fmt.Sprintf("%s.input[%d] is %s, not an input item object", paramsKey, i, describe(item)))
			}
			if role, _ := msg.Get("role"); role == "user" {
				turns++
			}
		}
	default:
		return s, sampleProblem(fmt.Sprintf("%s.input is %s; it must be a string or a list of input items", paramsKey, describe(input)))
	}
	if turns > 0 {
		t := float64(turns)
		s.turns = &t
	}
	if tools, ok := params.Get("tools"); ok {
		n := float64(len(tools.([]any)))
		s.tools = &n
	}
	if t, ok := params.Get("temperature"); ok && t != nil {
		f := toFloat(t)
		s.temperature = &f
	}
	dumped, err := pyjson.Dumps(params, false)
	if err != nil {
		return s, sampleProblem(err.Error())
	}
	words := float64(wordCount(dumped))
	s.words = &words
	return s, ""
}

func toFloat(v any) float64 {
	switch v := v.(type) {
	case int64:
		return float64(v)
	case *big.Int:
		f, _ := new(big.Float).SetInt(v).Float64()
		return f
	case float64:
		return v
	}
	return 0
}

func orList(kinds []string) string {
	switch len(kinds) {
	case 1:
		return kinds[0]
	case 2:
		return kinds[0] + " or " + kinds[1]
	}
	return kinds[0] + ", " + orList(kinds[1:])
}
