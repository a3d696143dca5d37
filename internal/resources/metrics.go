package resources

import "github.com/nemo-gym-go/gym/internal/openai"

// Metrics is a JSON object that keeps its keys in the order they were first
// set, as the Python dicts NeMo Gym builds metrics in do: agent metrics read
// mean/…, max/…, min/…, median/…, std/… and then the benchmark's own keys.
// Setting an existing key replaces its value in place (dict.update).
//
// Values are float64 (written as Python writes floats), int64, int, bool,
// string, nil, json.RawMessage, *Metrics, or slices of these.
type Metrics struct {
	keys []string
	vals map[string]any
}

// NewMetrics returns an empty Metrics.
func NewMetrics() *Metrics { return &Metrics{vals: map[string]any{}} }

// Set sets key to v, appending key if it is new.
func (m *Metrics) Set(key string, v any) {
	if _, ok := m.vals[key]; !ok {
		m.keys = append(m.keys, key)
	}
	m.vals[key] = v
}

// Get returns key's value.
func (m *Metrics) Get(key string) (any, bool) {
	if m == nil {
		return nil, false
	}
	v, ok := m.vals[key]
	return v, ok
}

// Float returns key's value when it is a number.
func (m *Metrics) Float(key string) (float64, bool) {
	v, _ := m.Get(key)
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	}
	return 0, false
}

// Delete removes key.
func (m *Metrics) Delete(key string) {
	if _, ok := m.vals[key]; !ok {
		return
	}
	delete(m.vals, key)
	for i, k := range m.keys {
		if k == key {
			m.keys = append(m.keys[:i], m.keys[i+1:]...)
			break
		}
	}
}

// Keys returns the keys in order. The slice must not be modified.
func (m *Metrics) Keys() []string {
	if m == nil {
		return nil
	}
	return m.keys
}

// Len is the number of keys.
func (m *Metrics) Len() int {
	if m == nil {
		return 0
	}
	return len(m.keys)
}

// Update sets every key of o in m, in o's order (dict.update).
func (m *Metrics) Update(o *Metrics) {
	for _, k := range o.Keys() {
		m.Set(k, o.vals[k])
	}
}

// MarshalJSON writes the object in key order.
func (m *Metrics) MarshalJSON() ([]byte, error) { return m.appendJSON(nil) }

func (m *Metrics) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	for i, k := range m.Keys() {
		if i > 0 {
			b = append(b, ',')
		}
		b = openai.AppendJSONString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendJSON(b, m.vals[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}
