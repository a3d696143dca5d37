package config

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Settings reads a command's own keys (output_jsonl_fpath, limit, …) from a
// resolved config, so a flag and its +key=value override are one thing, as
// in NeMo Gym. A key that is absent or null reads as unset.
type Settings struct{ Result *Result }

// Node is the key's value; nil when unset.
func (s Settings) Node(key string) (*tree.Node, error) {
	n, err := s.Result.Value(key)
	if err != nil || n == nil || n.Kind == tree.Null {
		return nil, err
	}
	return n, nil
}

// String reads a string (an integer reads as its digits); "" when unset.
func (s Settings) String(key string) (string, error) {
	n, err := s.Node(key)
	if err != nil || n == nil {
		return "", err
	}
	switch n.Kind {
	case tree.String:
		return n.Str, nil
	case tree.Int:
		return strconv.FormatInt(n.Int, 10), nil
	}
	return "", &InvalidSettingError{Key: key, Want: "a string", Got: n}
}

// Strings reads each key into its target (String's rules); the required
// keys must be set, and those unset are named together.
func (s Settings) Strings(required []string, into map[string]*string) error {
	for _, k := range slices.Sorted(maps.Keys(into)) {
		v, err := s.String(k)
		if err != nil {
			return err
		}
		*into[k] = v
	}
	var missing []string
	for _, k := range required {
		if *into[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return &MissingSettingsError{Keys: missing}
	}
	return nil
}

// Int reads a whole number, or a string that holds one; def when unset.
func (s Settings) Int(key string, def int) (int, error) {
	n, err := s.Node(key)
	if err != nil || n == nil {
		return def, err
	}
	switch n.Kind {
	case tree.Int:
		return int(n.Int), nil
	case tree.String:
		if v, err := strconv.Atoi(strings.TrimSpace(n.Str)); err == nil {
			return v, nil
		}
	}
	return 0, &InvalidSettingError{Key: key, Want: "an integer", Got: n}
}

// Float reads a number, or a string that holds one; def when unset.
func (s Settings) Float(key string, def float64) (float64, error) {
	n, err := s.Node(key)
	if err != nil || n == nil {
		return def, err
	}
	switch n.Kind {
	case tree.Int:
		return float64(n.Int), nil
	case tree.Float:
		return n.Float, nil
	case tree.String:
		if v, err := strconv.ParseFloat(strings.TrimSpace(n.Str), 64); err == nil {
			return v, nil
		}
	}
	return 0, &InvalidSettingError{Key: key, Want: "a number", Got: n}
}

// Bool reads a flag with Python's truthiness, as NeMo Gym's `if config.x`
// does; false when unset.
func (s Settings) Bool(key string) (bool, error) {
	n, err := s.Node(key)
	if err != nil || n == nil {
		return false, err
	}
	return Truthy(n), nil
}

// InvalidSettingError is a key whose value has the wrong type.
type InvalidSettingError struct {
	Key  string
	Want string
	Got  *tree.Node
}

func (e *InvalidSettingError) Error() string {
	return fmt.Sprintf("invalid configuration: %s must be %s, got %s", e.Key, e.Want, DescribeValue(e.Got))
}

// MissingSettingsError names required keys that are unset: a usage error.
type MissingSettingsError struct{ Keys []string }

func (e *MissingSettingsError) Error() string {
	return fmt.Sprintf("missing required configuration: %s. Provide each via its flag (see --help) or as a +<key>=<value> override.", strings.Join(e.Keys, ", "))
}

// DescribeValue shows a value in an error: scalars as written, others by
// kind.
func DescribeValue(n *tree.Node) string {
	switch n.Kind {
	case tree.String:
		return strconv.Quote(n.Str)
	case tree.Int:
		return strconv.FormatInt(n.Int, 10)
	case tree.Float:
		return tree.PythonFloatRepr(n.Float)
	case tree.Bool:
		return strconv.FormatBool(n.Bool)
	}
	return n.Kind.String()
}

// BadSettingError is a value that means nothing for its key, such as a
// shard of 3/2: a usage error, as the flag that sets it would be.
type BadSettingError struct {
	Key, Flag string
	Value     *tree.Node
	Reason    error
}

func (e *BadSettingError) Error() string {
	return fmt.Sprintf("invalid configuration: %s (%s) is %s: %v", e.Key, e.Flag, DescribeValue(e.Value), e.Reason)
}

func (e *BadSettingError) Unwrap() error { return e.Reason }
