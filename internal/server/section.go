package server

import (
	"github.com/nemo-gym-go/gym/internal/config"

	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Section reads typed values from a server's resolved config section. Its
// errors name the instance and key, and what was found instead. Values are
// read the way Pydantic reads NeMo Gym's config models in lax mode, so a
// string such as an `${oc.env:...}` interpolation yields is accepted where
// it spells a number or a boolean.
type Section struct {
	Instance string
	Node     *tree.Node
}

func (s Section) errorf(key, format string, args ...any) error {
	return fmt.Errorf("%s.%s: "+format, append([]any{s.Instance, key}, args...)...)
}

func (s Section) get(key string) *tree.Node {
	n := s.Node.Get(key)
	if n == nil || n.Kind == tree.Null {
		return nil
	}
	return n
}

// String is a required string. The error gives only the kind of a wrong
// value, which may be a secret.
func (s Section) String(key string) (string, error) {
	n := s.Node.Get(key)
	if n == nil {
		return "", s.errorf(key, "a string is required, got nothing")
	}
	if n.Kind != tree.String {
		return "", s.errorf(key, "a string is required, got %s", n.Kind)
	}
	return n.Str, nil
}

// BaseURL is a required http(s) URL with a host, trailing slash removed, so
// that paths such as /responses can be appended.
func (s Section) BaseURL(key string) (string, error) {
	v, err := s.String(key)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", s.errorf(key, "must be an http(s) URL with a host, such as https://api.openai.com/v1, got %q", config.RedactURL(v))
	}
	return strings.TrimRight(v, "/"), nil
}

// Bool is an optional boolean.
func (s Section) Bool(key string, def bool) (bool, error) {
	n := s.get(key)
	if n == nil {
		return def, nil
	}
	if b, ok := config.LaxBoolOK(n); ok {
		return b, nil
	}
	return false, s.errorf(key, "a boolean is required, got %s", describe(n))
}

// Int is an optional integer of at least min; absent or null gives def.
func (s Section) Int(key string, def, min int) (int, error) {
	n := s.get(key)
	if n == nil {
		return def, nil
	}
	v, ok := int64(0), false
	switch n.Kind {
	case tree.Int:
		v, ok = n.Int, true
	case tree.String:
		i, err := strconv.ParseInt(strings.TrimSpace(n.Str), 10, 64)
		v, ok = i, err == nil
	case tree.Float:
		// Pydantic's lax int takes a float with no fractional part.
		v, ok = int64(n.Float), n.Float == math.Trunc(n.Float) && math.Abs(n.Float) < math.MaxInt32
	}
	if !ok || v < int64(min) || v > math.MaxInt32 {
		return 0, s.errorf(key, "an integer of at least %d is required, got %s", min, describe(n))
	}
	return int(v), nil
}

// Seconds is an optional non-negative duration in seconds (fractions
// allowed); absent or null gives def.
func (s Section) Seconds(key string, def time.Duration) (time.Duration, error) {
	n := s.get(key)
	if n == nil {
		return def, nil
	}
	v, ok := 0.0, false
	switch n.Kind {
	case tree.Int:
		v, ok = float64(n.Int), true
	case tree.Float:
		v, ok = n.Float, true
	case tree.String:
		f, err := strconv.ParseFloat(strings.TrimSpace(n.Str), 64)
		v, ok = f, err == nil
	}
	// A year is far beyond any sensible timeout, and keeps the conversion
	// clear of overflow.
	if !ok || math.IsNaN(v) || v < 0 || v > 365*24*3600 {
		return 0, s.errorf(key, "a number of seconds ≥ 0 is required, got %s", describe(n))
	}
	return time.Duration(v * float64(time.Second)), nil
}

// StringList is an optional list of strings.
func (s Section) StringList(key string) ([]string, error) {
	n := s.get(key)
	if n == nil {
		return nil, nil
	}
	if n.Kind != tree.List {
		return nil, s.errorf(key, "a list of strings is required, got %s", describe(n))
	}
	out := make([]string, len(n.Items))
	for i, it := range n.Items {
		if it.Kind != tree.String {
			return nil, s.errorf(key+"["+strconv.Itoa(i)+"]", "a string is required, got %s", describe(it))
		}
		out[i] = it.Str
	}
	return out, nil
}

// StringMap is an optional map of strings, in the config's order.
func (s Section) StringMap(key string) ([][2]string, error) {
	n := s.get(key)
	if n == nil {
		return nil, nil
	}
	if n.Kind != tree.Map {
		return nil, s.errorf(key, "a map of strings is required, got %s", describe(n))
	}
	out := make([][2]string, len(n.Entries))
	for i, e := range n.Entries {
		if e.Value.Kind != tree.String {
			return nil, s.errorf(key+"."+e.Key, "a string is required (quote it in YAML), got %s", describe(e.Value))
		}
		out[i] = [2]string{e.Key, e.Value.Str}
	}
	return out, nil
}

// JSONObject is an optional map rendered as a JSON object, keys in the
// config's order; nil when absent, null or empty.
func (s Section) JSONObject(key string) ([]byte, error) {
	n := s.get(key)
	if n == nil {
		return nil, nil
	}
	if n.Kind != tree.Map {
		return nil, s.errorf(key, "a map is required, got %s", describe(n))
	}
	if n.Len() == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	if err := writeConfigJSON(&b, n, key); err != nil {
		return nil, s.errorf(key, "%v", err)
	}
	return b.Bytes(), nil
}

// writeConfigJSON renders a config value as JSON the way NeMo Gym's client
// serialises the same dict: floats as Python writes them.
func writeConfigJSON(b *bytes.Buffer, n *tree.Node, at string) error {
	switch n.Kind {
	case tree.Null:
		b.WriteString("null")
	case tree.Bool:
		b.WriteString(strconv.FormatBool(n.Bool))
	case tree.Int, tree.BigInt:
		b.WriteString(n.IntText())
	case tree.Float:
		if math.IsNaN(n.Float) || math.IsInf(n.Float, 0) {
			return fmt.Errorf("%s is %s, which JSON cannot carry", at, tree.PythonFloatRepr(n.Float))
		}
		b.WriteString(tree.PythonFloatRepr(n.Float))
	case tree.String:
		b.Write(quoteJSON(n.Str))
	case tree.List:
		b.WriteByte('[')
		for i, it := range n.Items {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeConfigJSON(b, it, at+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case tree.Map:
		b.WriteByte('{')
		for i, e := range n.Entries {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(quoteJSON(e.Key))
			b.WriteByte(':')
			if err := writeConfigJSON(b, e.Value, at+"."+e.Key); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("%s holds a %s, which JSON cannot carry", at, n.Kind)
	}
	return nil
}

// Float is an optional finite number.
func (s Section) Float(key string, def float64) (float64, error) {
	n := s.get(key)
	if n == nil {
		return def, nil
	}
	v, ok := number(n)
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, s.errorf(key, "a finite number is required, got %s", describe(n))
	}
	return v, nil
}

// PositiveFloat is an optional number greater than 0.
func (s Section) PositiveFloat(key string, def float64) (float64, error) {
	v, err := s.Float(key, def)
	if err == nil && v <= 0 {
		err = s.errorf(key, "a number greater than 0 is required, got %s", describe(s.get(key)))
	}
	return v, err
}

// PositiveInt is an optional integer greater than 0.
func (s Section) PositiveInt(key string, def int) (int, error) {
	return s.Int(key, def, 1)
}

func number(n *tree.Node) (float64, bool) {
	switch n.Kind {
	case tree.Int:
		return float64(n.Int), true
	case tree.Float:
		return n.Float, true
	case tree.String:
		f, err := strconv.ParseFloat(strings.TrimSpace(n.Str), 64)
		return f, err == nil
	}
	return 0, false
}

// Enum is an optional string that must be one of allowed; absent or null
// gives "".
func (s Section) Enum(key string, allowed []string) (string, error) {
	n := s.get(key)
	if n == nil {
		return "", nil
	}
	if n.Kind == tree.String {
		for _, a := range allowed {
			if n.Str == a {
				return a, nil
			}
		}
	}
	// Pydantic's wording for a Literal: 'a', 'b' or 'c'.
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = "'" + a + "'"
	}
	choices := quoted[len(quoted)-1]
	if len(quoted) > 1 {
		choices = strings.Join(quoted[:len(quoted)-1], ", ") + " or " + choices
	}
	return "", s.errorf(key, "must be %s, got %s", choices, describe(n))
}

// ServerRef is a required reference to another server instance,
// {type: <wantType>, name: <instance>}; it returns the instance name.
func (s Section) ServerRef(key, wantType string) (string, error) {
	n := s.get(key)
	if n == nil || n.Kind != tree.Map {
		return "", s.errorf(key, "a server reference {type: %s, name: <instance>} is required, got %s", wantType, describe(n))
	}
	typ, name := n.Get("type"), n.Get("name")
	if typ == nil || typ.Kind != tree.String || typ.Str != wantType {
		return "", s.errorf(key+".type", "must be %s, got %s", wantType, describe(typ))
	}
	if name == nil || name.Kind != tree.String || name.Str == "" || name.Str == "???" {
		return "", s.errorf(key+".name", "the name of a %s instance is required, got %s", wantType, describe(name))
	}
	return name.Str, nil
}

// RequiredJSONObject is JSONObject for a map that must be present (it may
// be empty: then "{}").
func (s Section) RequiredJSONObject(key string) ([]byte, error) {
	n := s.get(key)
	if n == nil || n.Kind != tree.Map {
		return nil, s.errorf(key, "a map is required, got %s", describe(n))
	}
	b, err := s.JSONObject(key)
	if b == nil && err == nil {
		b = []byte("{}")
	}
	return b, err
}

// quoteJSON encodes s as a JSON string, without the HTML escaping Go adds
// by default and Python does not.
func quoteJSON(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// ObjectJSON renders a config map set at key (a top-level setting, such as
// responses_create_params) as JSON the way JSONObject does; nil when n is
// nil or empty.
func ObjectJSON(key string, n *tree.Node) ([]byte, error) {
	if n == nil {
		return nil, nil
	}
	holder := tree.NewMap()
	holder.Set(key, n)
	return Section{Instance: "config", Node: holder}.JSONObject(key)
}
