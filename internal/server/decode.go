package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/nemo-gym-go/gym/internal/jsonl"
)

// ValidationError is a request that failed validation. Handle answers it
// with FastAPI's 422 body, {"detail": [...]}, which clients of NeMo Gym
// servers already parse.
type ValidationError struct {
	Details []ValidationDetail
}

// ValidationDetail is one entry of FastAPI's 422 "detail" list.
type ValidationDetail struct {
	Type  string         `json:"type"`
	Loc   []any          `json:"loc"`
	Msg   string         `json:"msg"`
	Input any            `json:"input"`
	Ctx   map[string]any `json:"ctx,omitempty"`
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Details))
	for i, d := range e.Details {
		loc := make([]string, len(d.Loc))
		for j, l := range d.Loc {
			loc[j] = fmt.Sprint(l)
		}
		parts[i] = strings.Join(loc, ".") + ": " + d.Msg
		if msg, ok := d.Ctx["error"].(string); ok {
			parts[i] += " (" + msg + ")"
		}
	}
	return "invalid request: " + strings.Join(parts, "; ")
}

func (e *ValidationError) body() []byte {
	b, err := json.Marshal(struct {
		Detail []ValidationDetail `json:"detail"`
	}{e.Details})
	if err != nil {
		// A detail built by a component holds something JSON cannot
		// carry; the 422 still says what failed.
		return jsonString(e.Error())
	}
	return b
}

// DecodeJSON reads the request body into v (a json.RawMessage keeps it
// raw). A body that is not JSON, or does not fit v, is a *ValidationError
// shaped as FastAPI reports it: json_invalid with the character offset of
// the fault, a missing body, or a type mismatch at the field's location.
func DecodeJSON(r *http.Request, v any) error {
	body, err := readJSONBody(r)
	if err != nil {
		return err
	}
	// Raw targets are the common case (servers keep bodies as raw JSON);
	// a validity scan is much cheaper than decoding into a RawMessage,
	// which re-scans and copies.
	if raw, ok := v.(*json.RawMessage); ok && jsonl.Valid(body) {
		*raw = body
		return nil
	}
	return unmarshalBody(body, v)
}

// DecodeJSONObject is DecodeJSON into a json.RawMessage that also finds,
// in the same read, the members of a body that is an object (as
// jsonl.Members does, appending them to scratch); object says whether it
// is one.
func DecodeJSONObject(r *http.Request, scratch []jsonl.Member) (body []byte, members []jsonl.Member, object bool, err error) {
	if body, err = readJSONBody(r); err != nil {
		return nil, scratch, false, err
	}
	members, object, valid := jsonl.Members(body, scratch)
	if !valid {
		var raw json.RawMessage
		return nil, scratch, false, unmarshalBody(body, &raw)
	}
	return body, members, object, nil
}

// readJSONBody reads a request body that must not be empty.
func readJSONBody(r *http.Request) ([]byte, error) {
	body, err := ReadAll(r.Body, r.ContentLength)
	if err != nil {
		return nil, fmt.Errorf("reading the request body: %w", err)
	}
	if len(body) == 0 {
		return nil, &ValidationError{Details: []ValidationDetail{{Type: "missing", Loc: []any{"body"}, Msg: "Field required"}}}
	}
	return body, nil
}

// unmarshalBody decodes body into v, its errors worded as FastAPI words
// them.
func unmarshalBody(body []byte, v any) error {
	err := json.Unmarshal(body, v)
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &syn):
		return jsonInvalid(body, syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		return typeMismatch(typ)
	}
	return err
}

// jsonInvalid reports a syntax error where Python's json module would: it
// counts characters, not bytes, and points at the offending character
// itself, while Go's offset counts the bytes read including it.
func jsonInvalid(body []byte, offset int64, msg string) *ValidationError {
	pos := min(max(offset, 1), int64(len(body)))
	if offset <= int64(len(body)) && !strings.Contains(msg, "unexpected end") {
		pos--
	}
	return &ValidationError{Details: []ValidationDetail{{
		Type:  "json_invalid",
		Loc:   []any{"body", utf8.RuneCount(body[:pos])},
		Msg:   "JSON decode error",
		Input: map[string]any{},
		Ctx:   map[string]any{"error": msg},
	}}}
}

// typeMismatch words a type error as Pydantic does for the target's kind.
func typeMismatch(e *json.UnmarshalTypeError) *ValidationError {
	typ, msg := "model_attributes_type", "Input should be a valid dictionary or object to extract fields from"
	switch k := e.Type.Kind(); {
	case k == reflect.String:
		typ, msg = "string_type", "Input should be a valid string"
	case k == reflect.Bool:
		typ, msg = "bool_type", "Input should be a valid boolean"
	case k >= reflect.Int && k <= reflect.Uint64:
		typ, msg = "int_type", "Input should be a valid integer"
	case k == reflect.Float32 || k == reflect.Float64:
		typ, msg = "float_type", "Input should be a valid number"
	case k == reflect.Slice || k == reflect.Array:
		typ, msg = "list_type", "Input should be a valid list"
	case k == reflect.Map:
		typ, msg = "dict_type", "Input should be a valid dictionary"
	}
	loc := []any{"body"}
	if e.Field != "" {
		for _, f := range strings.Split(e.Field, ".") {
			loc = append(loc, f)
		}
	}
	// Go does not keep the offending value, so input is null.
	return &ValidationError{Details: []ValidationDetail{{Type: typ, Loc: loc, Msg: msg}}}
}
