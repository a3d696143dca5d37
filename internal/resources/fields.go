package resources

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Kind is the JSON type a declared field holds.
type Kind uint8

const (
	Any    Kind = iota // any JSON value
	String             // str
	Int                // int: integral numbers, and numeric strings (Pydantic's lax mode)
	Number             // float: numbers, and numeric strings
	Bool               // bool: true/false, 0/1 and the words Pydantic accepts
	List               // list
	Object             // dict
)

// FieldSpec declares one field of a request model, as the Pydantic model of
// the NeMo Gym server does: its type, whether it is required, and the value
// it takes when absent. Requests are validated against it and answered
// with FastAPI's 422 body when they do not fit.
type FieldSpec struct {
	Name     string
	Kind     Kind
	Required bool // absent → 422 "Field required"
	Nullable bool // Optional[...]: null is accepted
	// Default is the JSON value of an absent optional field; empty means
	// null.
	Default json.RawMessage
	// Enum lists the values of a Literal string field.
	Enum []string
	// Items is the element kind of a List field (Any: unchecked).
	Items Kind
	// Model names the Pydantic model an Object field holds, for its error
	// message; empty for a plain dict.
	Model string
	// NumberAsString takes a number given for a String field as its text.
	// gsm8k's prepare.py writes numeric expected answers, which Pydantic
	// would reject; a Go server accepts them.
	NumberAsString bool
}

var null = json.RawMessage("null")

// ValidateFields checks a JSON object body against specs and returns each
// declared field's value (normalised as Pydantic would coerce it, defaults
// filled in). Undeclared fields are ignored, as Pydantic ignores extras.
// Failures are a *server.ValidationError listing every bad field.
func ValidateFields(body json.RawMessage, specs []FieldSpec) (map[string]json.RawMessage, error) {
	obj, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	return validateDecoded(body, obj, specs)
}

// decodeObject is the body's top-level members, raw, as json.Unmarshal
// into a map gives them (keys unescaped, the last of a repeated key),
// found in the one read that validates the body instead of by
// encoding/json's reflection over the whole body.
func decodeObject(body json.RawMessage) (map[string]json.RawMessage, error) {
	var scratch [16]jsonl.Member
	members, object, valid := jsonl.Members(body, scratch[:0])
	if !valid || !object {
		return nil, notAnObject(body)
	}
	return objectOf(body, members), nil
}

// objectOf is decodeObject of an object whose members jsonl.Members found.
func objectOf(body []byte, members []jsonl.Member) map[string]json.RawMessage {
	obj := make(map[string]json.RawMessage, max(len(members), 8))
	for _, m := range members {
		name := string(m.Name(body))
		if !utf8.ValidString(name) {
			// encoding/json's spelling of a key that is not UTF-8.
			json.Unmarshal(body[m.KeyStart:m.KeyEnd], &name)
		}
		obj[name] = json.RawMessage(m.Value(body))
	}
	return obj
}

// requireObject refuses a body server.DecodeJSON has read unless it is an
// object, as decoding it into a model would.
func requireObject(body json.RawMessage) error {
	if !jsonl.OpensObject(body) {
		return notAnObject(body)
	}
	return nil
}

func notAnObject(body json.RawMessage) error {
	return &server.ValidationError{Details: []server.ValidationDetail{{
		Type: "model_attributes_type", Loc: []any{"body"},
		Msg: "Input should be a valid dictionary or object to extract fields from", Input: body,
	}}}
}

func validateDecoded(body json.RawMessage, obj map[string]json.RawMessage, specs []FieldSpec) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(specs))
	var details []server.ValidationDetail
	for _, f := range specs {
		raw, ok := obj[f.Name]
		if !ok {
			if f.Required {
				details = append(details, server.ValidationDetail{Type: "missing", Loc: []any{"body", f.Name}, Msg: "Field required", Input: body})
				continue
			}
			out[f.Name] = f.Default
			if out[f.Name] == nil {
				out[f.Name] = null
			}
			continue
		}
		v, d := f.check(raw, []any{"body", f.Name})
		if d != nil {
			details = append(details, *d)
			continue
		}
		out[f.Name] = v
	}
	if len(details) > 0 {
		return nil, &server.ValidationError{Details: details}
	}
	return out, nil
}

func (f FieldSpec) check(raw json.RawMessage, loc []any) (json.RawMessage, *server.ValidationDetail) {
	if string(raw) == "null" && f.Nullable {
		return raw, nil
	}
	if len(f.Enum) > 0 {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			for _, e := range f.Enum {
				if s == e {
					return raw, nil
				}
			}
		}
		expected := enumText(f.Enum)
		return nil, &server.ValidationDetail{Type: "literal_error", Loc: loc, Msg: "Input should be " + expected, Input: raw, Ctx: map[string]any{"expected": expected}}
	}
	bad := func(typ, msg string) (json.RawMessage, *server.ValidationDetail) {
		return nil, &server.ValidationDetail{Type: typ, Loc: loc, Msg: msg, Input: raw}
	}
	first := raw[0]
	switch f.Kind {
	case String:
		if first == '"' {
			return raw, nil
		}
		if f.NumberAsString && (first == '-' || (first >= '0' && first <= '9')) {
			s, _ := json.Marshal(string(raw))
			return s, nil
		}
		return bad("string_type", "Input should be a valid string")
	case Int:
		switch {
		case first == '"':
			var s string
			json.Unmarshal(raw, &s)
			if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
				return json.RawMessage(strconv.FormatInt(n, 10)), nil
			}
			return bad("int_parsing", "Input should be a valid integer, unable to parse string as an integer")
		case first == '-' || (first >= '0' && first <= '9'):
			if isIntLiteral(string(raw)) {
				return raw, nil
			}
			x, err := strconv.ParseFloat(string(raw), 64)
			if err == nil && x == math.Trunc(x) && math.Abs(x) < 1<<63 {
				return json.RawMessage(strconv.FormatInt(int64(x), 10)), nil
			}
			return bad("int_from_float", "Input should be a valid integer, got a number with a fractional part")
		case string(raw) == "true" || string(raw) == "false":
			// Pydantic's lax int takes a bool as 0 or 1.
			if string(raw) == "true" {
				return json.RawMessage("1"), nil
			}
			return json.RawMessage("0"), nil
		}
		return bad("int_type", "Input should be a valid integer")
	case Number:
		switch {
		case first == '"':
			var s string
			json.Unmarshal(raw, &s)
			if x, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && !math.IsNaN(x) && !math.IsInf(x, 0) {
				return appendFloat(nil, x), nil
			}
			return bad("float_parsing", "Input should be a valid number, unable to parse string as a number")
		case first == '-' || (first >= '0' && first <= '9'):
			return raw, nil
		}
		return bad("float_type", "Input should be a valid number")
	case Bool:
		switch string(raw) {
		case "true", "false":
			return raw, nil
		case "1":
			return json.RawMessage("true"), nil
		case "0":
			return json.RawMessage("false"), nil
		}
		if first == '"' {
			var s string
			json.Unmarshal(raw, &s)
			switch strings.ToLower(s) {
			case "1", "on", "t", "true", "y", "yes":
				return json.RawMessage("true"), nil
			case "0", "off", "f", "false", "n", "no":
				return json.RawMessage("false"), nil
			}
			return bad("bool_parsing", "Input should be a valid boolean, unable to interpret input")
		}
		return bad("bool_type", "Input should be a valid boolean")
	case List:
		if first != '[' {
			return bad("list_type", "Input should be a valid list")
		}
		if f.Items == Any {
			return raw, nil
		}
		var items []json.RawMessage
		json.Unmarshal(raw, &items)
		elem := FieldSpec{Kind: f.Items, NumberAsString: f.NumberAsString}
		changed := false
		for i, it := range items {
			v, d := elem.check(it, append(append([]any{}, loc...), i))
			if d != nil {
				return nil, d
			}
			if string(v) != string(it) {
				items[i], changed = v, true
			}
		}
		if changed {
			out, _ := json.Marshal(items)
			return out, nil
		}
		return raw, nil
	case Object:
		switch {
		case first == '{':
		case f.Model != "":
			return bad("model_type", "Input should be a valid dictionary or instance of "+f.Model)
		default:
			return bad("dict_type", "Input should be a valid dictionary")
		}
	}
	return raw, nil
}

// enumText renders a Literal's choices as Pydantic words its error:
// 'a', 'b' or 'c'.
func enumText(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = "'" + v + "'"
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
