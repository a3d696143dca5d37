package resources

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/nemo-gym-go/gym/internal/openai"
	"math"
	"strconv"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// appendJSON writes v as NeMo Gym's servers serialise the same value:
// floats in Python's repr (a reward of 1 reads 1.0), strings without HTML
// escaping (Starlette's JSONResponse), ordered objects in their order.
// Raw messages are trusted to be valid JSON: they come from parsed input.
func appendJSON(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case float64:
		return appendFloat(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case string:
		return openai.AppendJSONString(b, x), nil
	case json.RawMessage:
		if x == nil {
			return append(b, "null"...), nil
		}
		return append(b, x...), nil
	case *Metrics:
		return x.appendJSON(b)
	case []string:
		return appendList(b, len(x), func(b []byte, i int) ([]byte, error) { return openai.AppendJSONString(b, x[i]), nil })
	case []float64:
		return appendList(b, len(x), func(b []byte, i int) ([]byte, error) { return appendFloat(b, x[i]), nil })
	case []json.RawMessage:
		return appendList(b, len(x), func(b []byte, i int) ([]byte, error) { return appendJSON(b, x[i]) })
	case []*Metrics:
		return appendList(b, len(x), func(b []byte, i int) ([]byte, error) { return x[i].appendJSON(b) })
	case []any:
		return appendList(b, len(x), func(b []byte, i int) ([]byte, error) { return appendJSON(b, x[i]) })
	}
	// Anything else (a tool's reply struct, say) goes through encoding/json,
	// still without HTML escaping.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return b, fmt.Errorf("encoding a %T as JSON: %w", v, err)
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

func appendList(b []byte, n int, item func([]byte, int) ([]byte, error)) ([]byte, error) {
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = item(b, i); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// appendFloat writes f as Python's json module does. JSON has no NaN or
// infinity; NeMo Gym drops NaN statistics before they get here, so a
// non-finite value that still arrives is written as null rather than
// failing the whole reply.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return append(b, tree.PythonFloatRepr(f)...)
}
