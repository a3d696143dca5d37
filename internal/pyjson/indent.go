package pyjson

import "strings"

// DumpsIndent is json.dumps(v, indent=indent) (what json.dump(v, f,
// indent=indent) writes): each member on its own line, "," and ": " as
// separators, an empty container as [] or {}. v is built as for Dumps.
func DumpsIndent(v any, indent int) ([]byte, error) {
	return appendIndented(nil, v, strings.Repeat(" ", indent), "\n")
}

func appendIndented(dst []byte, v any, step, nl string) ([]byte, error) {
	inner := nl + step
	switch v := v.(type) {
	case []any:
		if len(v) == 0 {
			return append(dst, "[]"...), nil
		}
		dst = append(dst, '[')
		for i, it := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, inner...)
			var err error
			if dst, err = appendIndented(dst, it, step, inner); err != nil {
				return nil, err
			}
		}
		return append(append(dst, nl...), ']'), nil
	case []string:
		items := make([]any, len(v))
		for i, s := range v {
			items[i] = s
		}
		return appendIndented(dst, items, step, nl)
	case Object:
		if len(v) == 0 {
			return append(dst, "{}"...), nil
		}
		dst = append(dst, '{')
		for i, m := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, inner...)
			dst = AppendString(dst, m.Key)
			dst = append(dst, ": "...)
			var err error
			if dst, err = appendIndented(dst, m.Value, step, inner); err != nil {
				return nil, err
			}
		}
		return append(append(dst, nl...), '}'), nil
	}
	return appendValue(dst, v, false)
}
