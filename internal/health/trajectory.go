package health

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// The canonical trajectory of a rollout (NeMo Gym's TrajectoryRecord,
// under the record's ng_trajectory key), validated as NeMo Gym's pydantic
// model validates it — unknown fields refused at every level, values
// coerced as pydantic's lax mode coerces them — and kept only in the parts
// the checks read.

type modelRef struct{ typ, name string }

type callRef struct {
	modelCallID *string
	modelRef    *modelRef
	responseID  *string
}

type turn struct {
	turnNo     int64
	answer     any
	reasoning  any
	modelCalls []callRef
}

// call is one captured model call, normalized as the checks read it.
type call struct {
	index          int
	startedAt      *float64
	modelCallID    *string
	responseID     *string
	modelRef       *modelRef
	statusCode     *int64
	responseStatus *string
	finishReason   *string
	errorCategory  *string
	tokensIn       *int64
	tokensOut      *int64
	response       any
}

type gap struct {
	code         string
	invocationID *string
	detail       *string
}

type trajectory struct {
	turns       []turn
	calls       []call
	invocations [][]callRef
	gaps        []gap
}

func (t *trajectory) hasGap(codes ...string) bool {
	for _, g := range t.gaps {
		for _, c := range codes {
			if g.code == c {
				return true
			}
		}
	}
	return false
}

// errValidation is pydantic's ValidationError: the record's trajectory is
// unreadable, and the finding names the error type only.
var errValidation = errors.New("ValidationError")

type fields map[string]any

// object checks v is an object with only the allowed keys.
func object(v any, allowed ...string) (fields, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errValidation
	}
	for k := range m {
		found := false
		for _, a := range allowed {
			if k == a {
				found = true
				break
			}
		}
		if !found {
			return nil, errValidation
		}
	}
	return m, nil
}

func (f fields) str(k string, required bool) (*string, error) {
	v, ok := f[k]
	if !ok {
		if required {
			return nil, errValidation
		}
		return nil, nil
	}
	if v == nil {
		if required {
			return nil, errValidation
		}
		return nil, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return nil, errValidation
	}
	return &s, nil
}

func (f fields) literal(k string, allowed ...string) error {
	v, ok := f[k]
	if !ok {
		return nil
	}
	s, isStr := v.(string)
	if !isStr {
		return errValidation
	}
	for _, a := range allowed {
		if s == a {
			return nil
		}
	}
	return errValidation
}

func (f fields) optLiteral(k string, allowed ...string) error {
	if v, ok := f[k]; ok && v == nil {
		return nil
	}
	return f.literal(k, allowed...)
}

func (f fields) int(k string, required bool, min *int64) (*int64, error) {
	v, ok := f[k]
	if !ok || v == nil {
		if required {
			return nil, errValidation
		}
		return nil, nil
	}
	n, err := laxInt(v)
	if err != nil || (min != nil && n < *min) {
		return nil, errValidation
	}
	return &n, nil
}

func (f fields) float(k string, required, nonNegative bool) (*float64, error) {
	v, ok := f[k]
	if !ok || v == nil {
		if required {
			return nil, errValidation
		}
		return nil, nil
	}
	x, err := laxFloat(v)
	if err != nil || (nonNegative && !(x >= 0)) {
		return nil, errValidation
	}
	return &x, nil
}

func (f fields) bool(k string) error {
	v, ok := f[k]
	if !ok || v == nil {
		return nil
	}
	switch b := v.(type) {
	case bool:
		return nil
	case json.Number:
		if x, err := b.Float64(); err == nil && (x == 0 || x == 1) {
			return nil
		}
	case string:
		switch strings.ToLower(strings.TrimSpace(b)) {
		case "0", "off", "f", "false", "n", "no", "1", "on", "t", "true", "y", "yes":
			return nil
		}
	}
	return errValidation
}

func (f fields) list(k string) ([]any, error) {
	v, ok := f[k]
	if !ok {
		return nil, nil
	}
	l, isList := v.([]any)
	if !isList {
		return nil, errValidation
	}
	return l, nil
}

// laxInt is pydantic's lax int: an integer, a bool, a float with no
// fraction, or a string of one.
func laxInt(v any) (int64, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n, nil
		}
		f, err := x.Float64()
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
			return 0, errValidation
		}
		return int64(f), nil
	case string:
		s := strings.TrimSpace(x)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
			return 0, errValidation
		}
		return int64(f), nil
	}
	return 0, errValidation
}

// laxFloat is pydantic's lax float: a number, a bool or a numeric string.
func laxFloat(v any) (float64, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case json.Number:
		return x.Float64()
	case string:
		return strconv.ParseFloat(strings.TrimSpace(x), 64)
	}
	return 0, errValidation
}

func parseModelRef(v any) (*modelRef, error) {
	if v == nil {
		return nil, nil
	}
	// ModelServerRef ignores what it does not know.
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errValidation
	}
	f := fields(m)
	if t, isStr := f["type"].(string); !isStr || t != "responses_api_models" {
		return nil, errValidation
	}
	name, err := f.str("name", true)
	if err != nil {
		return nil, err
	}
	return &modelRef{typ: "responses_api_models", name: *name}, nil
}

func parseCallRefs(v any) ([]callRef, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, errValidation
	}
	out := make([]callRef, 0, len(l))
	for _, item := range l {
		f, err := object(item, "model_call_id", "model_ref", "response_id")
		if err != nil {
			return nil, err
		}
		var r callRef
		if r.modelCallID, err = f.str("model_call_id", false); err != nil {
			return nil, err
		}
		if r.modelRef, err = parseModelRef(f["model_ref"]); err != nil {
			return nil, err
		}
		if r.responseID, err = f.str("response_id", false); err != nil {
			return nil, err
		}
		if !truthyStr(r.modelCallID) && !(r.modelRef != nil && truthyStr(r.responseID)) {
			return nil, errValidation
		}
		out = append(out, r)
	}
	return out, nil
}

func optCallRefs(f fields, k string) ([]callRef, error) {
	v, ok := f[k]
	if !ok {
		return nil, nil
	}
	return parseCallRefs(v)
}

func truthyStr(s *string) bool { return s != nil && *s != "" }

func nonNeg() *int64 { z := int64(0); return &z }

// inputItemTypes are the item types NeMo Gym's Responses input union
// takes (a message may also leave its type out).
var inputItemTypes = map[string]bool{
	"message": true, "function_call": true, "function_call_output": true, "reasoning": true, "mcp_call": true,
	"mcp_list_tools": true, "mcp_approval_request": true, "mcp_approval_response": true, "file_search_call": true,
	"web_search_call": true, "computer_call": true, "computer_call_output": true, "image_generation_call": true,
	"code_interpreter_call": true, "local_shell_call": true, "local_shell_call_output": true, "custom_tool_call": true,
	"custom_tool_call_output": true, "additional_tools": true, "apply_patch_call": true, "apply_patch_call_output": true,
	"compaction": true, "compaction_trigger": true, "shell_call": true, "shell_call_output": true,
	"tool_search_call": true, "tool_search_output": true,
}

func parseTrajectory(v any) (*trajectory, error) {
	f, err := object(v, "schema_version", "task_id", "rollout_id", "invocations", "turns", "model_calls", "tool_calls", "gaps")
	if err != nil {
		return nil, err
	}
	if err := f.literal("schema_version", "1.0"); err != nil {
		return nil, err
	}
	taskID, err := f.str("task_id", true)
	if err != nil {
		return nil, err
	}
	rolloutID, err := f.str("rollout_id", true)
	if err != nil {
		return nil, err
	}
	t := &trajectory{}
	invocations, err := f.list("invocations")
	if err != nil {
		return nil, err
	}
	seenInv := map[string]bool{}
	for _, item := range invocations {
		inv, err := object(item, "kind", "invocation_id", "parent_invocation_id", "spawned_by_tool_call_id", "status", "duration_ms", "error_type", "model_calls", "conversation")
		if err != nil {
			return nil, err
		}
		if err := inv.literal("kind", "agent_invocation"); err != nil {
			return nil, err
		}
		id, err := inv.str("invocation_id", true)
		if err != nil {
			return nil, err
		}
		if seenInv[*id] {
			return nil, errValidation
		}
		seenInv[*id] = true
		for _, k := range []string{"parent_invocation_id", "spawned_by_tool_call_id", "error_type"} {
			if _, err := inv.str(k, false); err != nil {
				return nil, err
			}
		}
		if err := inv.literal("status", "completed", "failed", "incomplete", "unknown"); err != nil {
			return nil, err
		}
		if _, err := inv.float("duration_ms", false, true); err != nil {
			return nil, err
		}
		refs, err := optCallRefs(inv, "model_calls")
		if err != nil {
			return nil, err
		}
		conv, err := inv.list("conversation")
		if err != nil {
			return nil, err
		}
		for _, c := range conv {
			m, ok := c.(map[string]any)
			if !ok {
				return nil, errValidation
			}
			switch typ := m["type"].(type) {
			case nil:
			case string:
				if !inputItemTypes[typ] {
					return nil, errValidation
				}
			default:
				return nil, errValidation
			}
		}
		t.invocations = append(t.invocations, refs)
	}
	turns, err := f.list("turns")
	if err != nil {
		return nil, err
	}
	type turnKey struct {
		inv string
		no  int64
	}
	seenTurn := map[turnKey]bool{}
	one := int64(1)
	for _, item := range turns {
		tf, err := object(item, "invocation_id", "task_id", "rollout_id", "turn_no", "timestamp", "question", "answer", "reasoning_content", "resolved", "step_count", "model_calls")
		if err != nil {
			return nil, err
		}
		inv, err := tf.str("invocation_id", true)
		if err != nil {
			return nil, err
		}
		tTask, err := tf.str("task_id", true)
		if err != nil {
			return nil, err
		}
		tRollout, err := tf.str("rollout_id", true)
		if err != nil {
			return nil, err
		}
		no, err := tf.int("turn_no", true, &one)
		if err != nil {
			return nil, err
		}
		if _, err := tf.float("timestamp", true, false); err != nil {
			return nil, err
		}
		if err := tf.bool("resolved"); err != nil {
			return nil, err
		}
		if _, err := tf.int("step_count", true, nonNeg()); err != nil {
			return nil, err
		}
		refs, err := optCallRefs(tf, "model_calls")
		if err != nil {
			return nil, err
		}
		if *tTask != *taskID || *tRollout != *rolloutID {
			return nil, errValidation
		}
		key := turnKey{*inv, *no}
		if seenTurn[key] {
			return nil, errValidation
		}
		seenTurn[key] = true
		t.turns = append(t.turns, turn{turnNo: *no, answer: tf["answer"], reasoning: tf["reasoning_content"], modelCalls: refs})
	}
	calls, err := f.list("model_calls")
	if err != nil {
		return nil, err
	}
	seenCall := map[string]bool{}
	for i, item := range calls {
		c, err := parseCall(item, i)
		if err != nil {
			return nil, err
		}
		if truthyStr(c.modelCallID) {
			if seenCall[*c.modelCallID] {
				return nil, errValidation
			}
			seenCall[*c.modelCallID] = true
		}
		t.calls = append(t.calls, c)
	}
	tools, err := f.list("tool_calls")
	if err != nil {
		return nil, err
	}
	for _, item := range tools {
		if err := checkToolCall(item); err != nil {
			return nil, err
		}
	}
	gaps, err := f.list("gaps")
	if err != nil {
		return nil, err
	}
	for _, item := range gaps {
		gf, err := object(item, "code", "invocation_id", "detail")
		if err != nil {
			return nil, err
		}
		var g gap
		code, err := gf.str("code", true)
		if err != nil {
			return nil, err
		}
		g.code = *code
		if g.invocationID, err = gf.str("invocation_id", false); err != nil {
			return nil, err
		}
		if g.detail, err = gf.str("detail", false); err != nil {
			return nil, err
		}
		t.gaps = append(t.gaps, g)
	}
	return t, nil
}

func parseCall(item any, index int) (call, error) {
	f, err := object(item, "model_call_id", "started_at", "completed_at", "duration_ms", "request", "response", "response_metadata", "token_stats")
	if err != nil {
		return call{}, err
	}
	c := call{index: index, response: f["response"]}
	if c.modelCallID, err = f.str("model_call_id", false); err != nil {
		return c, err
	}
	if c.startedAt, err = f.float("started_at", false, false); err != nil {
		return c, err
	}
	if _, err = f.float("completed_at", false, false); err != nil {
		return c, err
	}
	if _, err = f.float("duration_ms", false, true); err != nil {
		return c, err
	}
	if v, ok := f["response_metadata"]; ok {
		m, err := object(v, "response_id", "model_ref", "model", "dialect", "status_code", "response_status", "finish_reason",
			"upstream_attempted", "response_source", "upstream_status_code", "local_response_reason", "error_category", "latency_ttft_ms")
		if err != nil {
			return c, err
		}
		if c.responseID, err = m.str("response_id", false); err != nil {
			return c, err
		}
		if c.modelRef, err = parseModelRef(m["model_ref"]); err != nil {
			return c, err
		}
		for _, k := range []string{"model", "dialect", "local_response_reason"} {
			if _, err := m.str(k, false); err != nil {
				return c, err
			}
		}
		if c.statusCode, err = m.int("status_code", false, nil); err != nil {
			return c, err
		}
		if c.responseStatus, err = m.str("response_status", false); err != nil {
			return c, err
		}
		if c.finishReason, err = m.str("finish_reason", false); err != nil {
			return c, err
		}
		if c.errorCategory, err = m.str("error_category", false); err != nil {
			return c, err
		}
		if err := m.bool("upstream_attempted"); err != nil {
			return c, err
		}
		if err := m.optLiteral("response_source", "upstream", "local"); err != nil {
			return c, err
		}
		if _, err := m.int("upstream_status_code", false, nil); err != nil {
			return c, err
		}
		if _, err := m.float("latency_ttft_ms", false, true); err != nil {
			return c, err
		}
	}
	if v, ok := f["token_stats"]; ok {
		m, err := object(v, "prompt_tokens", "completion_tokens", "reasoning_tokens", "total_tokens", "cached_tokens")
		if err != nil {
			return c, err
		}
		if c.tokensIn, err = m.int("prompt_tokens", false, nonNeg()); err != nil {
			return c, err
		}
		if c.tokensOut, err = m.int("completion_tokens", false, nonNeg()); err != nil {
			return c, err
		}
		for _, k := range []string{"reasoning_tokens", "total_tokens", "cached_tokens"} {
			if _, err := m.int(k, false, nonNeg()); err != nil {
				return c, err
			}
		}
	}
	return c, nil
}

func checkToolCall(item any) error {
	f, err := object(item, "kind", "invocation_id", "tool_call_id", "sandbox_id", "tool_name", "started_at", "completed_at", "duration_ms", "timing_source", "status", "error_type", "output")
	if err != nil {
		return err
	}
	if err := f.literal("kind", "tool_call"); err != nil {
		return err
	}
	for _, k := range []string{"invocation_id", "tool_call_id"} {
		if _, err := f.str(k, true); err != nil {
			return err
		}
	}
	for _, k := range []string{"sandbox_id", "tool_name", "error_type"} {
		if _, err := f.str(k, false); err != nil {
			return err
		}
	}
	started, err := f.float("started_at", false, false)
	if err != nil {
		return err
	}
	completed, err := f.float("completed_at", false, false)
	if err != nil {
		return err
	}
	if _, err := f.float("duration_ms", false, true); err != nil {
		return err
	}
	if err := f.optLiteral("timing_source", "executor", "artifact", "harness"); err != nil {
		return err
	}
	if err := f.literal("status", "completed", "failed", "timeout", "cancelled", "incomplete", "unknown"); err != nil {
		return err
	}
	if started != nil && completed != nil && *completed < *started {
		return errValidation
	}
	return nil
}

// pyStr is Python's str() of a JSON value.
func pyStr(v any) string {
	switch x := v.(type) {
	case string:
		return x
	default:
		return pyRepr(v)
	}
}

func pyRepr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		return pyQuote(x)
	case json.Number:
		if isIntText(string(x)) {
			return string(x)
		}
		f, _ := x.Float64()
		return floatRepr(f)
	case []any:
		parts := make([]string, len(x))
		for i, it := range x {
			parts[i] = pyRepr(it)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		parts := make([]string, 0, len(x))
		for _, k := range sortedKeys(x) {
			parts = append(parts, pyQuote(k)+": "+pyRepr(x[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

func isIntText(s string) bool { return !strings.ContainsAny(s, ".eE") }

func pyQuote(s string) string { return interp.PythonStrRepr(s) }

func floatRepr(f float64) string { return tree.PythonFloatRepr(f) }

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
