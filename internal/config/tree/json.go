package tree

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// JSON writes a plain tree (no interpolations left) as JSON indented by
// indent spaces, keys in their order; 0 gives compact JSON. A float JSON
// cannot hold (NaN, ±inf) is an error naming where it is.
func JSON(n *Node, indent int) ([]byte, error) {
	b, err := appendJSON(nil, n, "")
	if err != nil || indent == 0 {
		return b, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", fmt.Sprintf("%*s", indent, "")); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func appendJSON(dst []byte, n *Node, at string) ([]byte, error) {
	var err error
	switch n.Kind {
	case Null:
		return append(dst, "null"...), nil
	case Bool:
		return strconv.AppendBool(dst, n.Bool), nil
	case Int, BigInt:
		return append(dst, n.IntText()...), nil
	case Float:
		if math.IsNaN(n.Float) || math.IsInf(n.Float, 0) {
			return nil, fmt.Errorf("%s is %v, which JSON cannot hold", at, n.Float)
		}
		return strconv.AppendFloat(dst, n.Float, 'g', -1, 64), nil
	case String:
		return appendJSONString(dst, n.Str), nil
	case List:
		dst = append(dst, '[')
		for i, it := range n.Items {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendJSON(dst, it, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case Map:
		dst = append(dst, '{')
		for i, e := range n.Entries {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendJSONString(dst, e.Key), ':')
			key := e.Key
			if at != "" {
				key = at + "." + key
			}
			if dst, err = appendJSON(dst, e.Value, key); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	}
	return nil, fmt.Errorf("%s is a %s, which JSON cannot hold", at, n.Kind)
}

func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s)
	return append(dst, b...)
}
