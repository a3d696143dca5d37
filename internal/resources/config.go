package resources

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Config reads typed keys of a resources server's resolved config section
// the way Pydantic reads NeMo Gym's config models in lax mode. Errors name
// the instance and key and say what was found.
type Config struct {
	Instance string
	Node     *tree.Node
}

func (c Config) errorf(key, format string, args ...any) error {
	return fmt.Errorf("%s.%s: "+format, append([]any{c.Instance, key}, args...)...)
}

func (c Config) get(key string) *tree.Node {
	if c.Node == nil {
		return nil
	}
	n := c.Node.Get(key)
	if n == nil || n.Kind == tree.Null {
		return nil
	}
	return n
}

// Bool is an optional boolean; absent or null gives def.
func (c Config) Bool(key string, def bool) (bool, error) {
	n := c.get(key)
	if n == nil {
		return def, nil
	}
	switch n.Kind {
	case tree.Bool:
		return n.Bool, nil
	case tree.Int:
		if n.Int == 0 || n.Int == 1 {
			return n.Int == 1, nil
		}
	case tree.String:
		switch strings.ToLower(strings.TrimSpace(n.Str)) {
		case "1", "true", "t", "yes", "y", "on":
			return true, nil
		case "0", "false", "f", "no", "n", "off":
			return false, nil
		}
	}
	return false, c.errorf(key, "a boolean is required, got %s", describeNode(n))
}

// Enum is an optional string that must be one of allowed; absent or null
// gives "".
func (c Config) Enum(key string, allowed []string) (string, error) {
	n := c.get(key)
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
	return "", c.errorf(key, "must be %s, got %s", enumText(allowed), describeNode(n))
}

// ServerRef is a required reference to another server instance,
// {type: <wantType>, name: <instance>}; it returns the instance name.
func (c Config) ServerRef(key, wantType string) (string, error) {
	n := c.get(key)
	if n == nil || n.Kind != tree.Map {
		return "", c.errorf(key, "a server reference {type: %s, name: <instance>} is required, got %s", wantType, describeNode(n))
	}
	typ, name := n.Get("type"), n.Get("name")
	if typ == nil || typ.Kind != tree.String || typ.Str != wantType {
		return "", c.errorf(key+".type", "must be %s, got %s", wantType, describeNode(typ))
	}
	if name == nil || name.Kind != tree.String || name.Str == "" {
		return "", c.errorf(key+".name", "the name of a %s instance is required, got %s", wantType, describeNode(name))
	}
	return name.Str, nil
}

// JSONObject is a required map, rendered as a JSON object in the config's
// key order.
func (c Config) JSONObject(key string) (json.RawMessage, error) {
	n := c.get(key)
	if n == nil || n.Kind != tree.Map {
		return nil, c.errorf(key, "a map is required, got %s", describeNode(n))
	}
	b, err := appendTree(nil, n, key)
	if err != nil {
		return nil, c.errorf(key, "%v", err)
	}
	return b, nil
}

// PositiveFloat is an optional number > 0; absent or null gives def.
func (c Config) PositiveFloat(key string, def float64) (float64, error) {
	n := c.get(key)
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
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0, c.errorf(key, "a number greater than 0 is required, got %s", describeNode(n))
	}
	return v, nil
}

// PositiveInt is an optional integer > 0; absent or null gives def.
func (c Config) PositiveInt(key string, def int) (int, error) {
	n := c.get(key)
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
	}
	if !ok || v <= 0 || v > math.MaxInt32 {
		return 0, c.errorf(key, "an integer greater than 0 is required, got %s", describeNode(n))
	}
	return int(v), nil
}

func describeNode(n *tree.Node) string {
	if n == nil {
		return "nothing"
	}
	return n.Kind.String() + " " + n.GoString()
}

// appendTree renders a config value as JSON, floats as Python writes them,
// which is how NeMo Gym sends the same dict.
func appendTree(b []byte, n *tree.Node, at string) ([]byte, error) {
	switch n.Kind {
	case tree.Null:
		return append(b, "null"...), nil
	case tree.Bool:
		return strconv.AppendBool(b, n.Bool), nil
	case tree.Int:
		return strconv.AppendInt(b, n.Int, 10), nil
	case tree.Float:
		if math.IsNaN(n.Float) || math.IsInf(n.Float, 0) {
			return b, fmt.Errorf("%s is %s, which JSON cannot carry", at, tree.PythonFloatRepr(n.Float))
		}
		return appendFloat(b, n.Float), nil
	case tree.String:
		return appendString(b, n.Str), nil
	case tree.List:
		return appendList(b, len(n.Items), func(b []byte, i int) ([]byte, error) {
			return appendTree(b, n.Items[i], at+"["+strconv.Itoa(i)+"]")
		})
	case tree.Map:
		b = append(b, '{')
		for i, e := range n.Entries {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, e.Key)
			b = append(b, ':')
			var err error
			if b, err = appendTree(b, e.Value, at+"."+e.Key); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	}
	return b, fmt.Errorf("%s holds a %s, which JSON cannot carry", at, n.Kind)
}
