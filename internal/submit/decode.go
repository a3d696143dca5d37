package submit

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// decoder reads the resolved submit config strictly, as NeMo Gym's
// pydantic models (extra="forbid") do, collecting every problem so that
// one run of the command names them all.
type decoder struct {
	missing  []string
	invalid  []string
	hostVars map[string]bool
}

// obj is one mapping of the config being read, with the keys read so far,
// so that done can refuse the rest.
type obj struct {
	d    *decoder
	path string
	n    *tree.Node
	read map[string]bool
}

func (d *decoder) object(path string, n *tree.Node) *obj {
	if n != nil && n.Kind != tree.Map {
		d.bad(path, n, "must be a mapping, got %s", describe(n))
		n = nil
	}
	return &obj{d: d, path: path, n: n, read: map[string]bool{}}
}

func (d *decoder) bad(path string, n *tree.Node, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if n != nil {
		if where := n.Origin.String(); where != "" {
			msg += ", at " + where
		}
	}
	d.invalid = append(d.invalid, fmt.Sprintf("%s (%s)", path, msg))
}

// err is every problem found, in NeMo Gym's wording, or nil.
func (d *decoder) err(file string) error {
	if len(d.missing) == 0 && len(d.invalid) == 0 {
		return nil
	}
	var parts []string
	if len(d.missing) > 0 {
		parts = append(parts, "missing required configuration: "+strings.Join(d.missing, ", "))
	}
	if len(d.invalid) > 0 {
		parts = append(parts, "invalid configuration: "+strings.Join(d.invalid, "; "))
	}
	return &ConfigError{Msg: fmt.Sprintf("Submit config '%s' is invalid: %s.", file, strings.Join(parts, ". "))}
}

func (o *obj) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// get returns the value of key, nil when it is absent or null.
func (o *obj) get(key string) *tree.Node {
	o.read[key] = true
	if o.n == nil {
		return nil
	}
	v := o.n.Get(key)
	if v == nil || v.Kind == tree.Null {
		return nil
	}
	return v
}

func (o *obj) present() bool { return o.n != nil }

func (o *obj) require(key string) *tree.Node {
	v := o.get(key)
	if v == nil && o.n != nil {
		o.d.missing = append(o.d.missing, o.at(key))
	}
	return v
}

func (o *obj) str(key, def string) string {
	v := o.get(key)
	if v == nil {
		return def
	}
	return o.scalar(key, v)
}

func (o *obj) requiredStr(key string) string {
	v := o.require(key)
	if v == nil {
		return ""
	}
	return o.scalar(key, v)
}

func (o *obj) optStr(key string) *string {
	v := o.get(key)
	if v == nil {
		return nil
	}
	s := o.scalar(key, v)
	return &s
}

func (o *obj) scalar(key string, v *tree.Node) string {
	if v.Kind != tree.String {
		o.d.bad(o.at(key), v, "must be a string, got %s", describe(v))
		return ""
	}
	return v.Str
}

func (o *obj) integer(key string, def int) int {
	v := o.get(key)
	if v == nil {
		return def
	}
	n, ok := intOf(v)
	if !ok {
		o.d.bad(o.at(key), v, "must be an integer, got %s", describe(v))
		return def
	}
	return n
}

func (o *obj) optInt(key string) *int {
	v := o.get(key)
	if v == nil {
		return nil
	}
	n, ok := intOf(v)
	if !ok {
		o.d.bad(o.at(key), v, "must be an integer, got %s", describe(v))
		return nil
	}
	return &n
}

func intOf(v *tree.Node) (int, bool) {
	switch v.Kind {
	case tree.Int:
		return int(v.Int), true
	case tree.String:
		n, err := strconv.Atoi(strings.TrimSpace(v.Str))
		return n, err == nil
	}
	return 0, false
}

func (o *obj) boolean(key string, def bool) bool {
	v := o.get(key)
	if v == nil {
		return def
	}
	if v.Kind != tree.Bool {
		o.d.bad(o.at(key), v, "must be a boolean, got %s", describe(v))
		return def
	}
	return v.Bool
}

// strMap reads a mapping of strings, in its order.
func (o *obj) strMap(key string) []KV {
	m := o.d.object(o.at(key), o.get(key))
	var kvs []KV
	if m.n == nil {
		return nil
	}
	for _, e := range m.n.Entries {
		if e.Value.Kind == tree.Map || e.Value.Kind == tree.List || e.Value.Kind == tree.Null {
			o.d.bad(m.at(e.Key), e.Value, "must be a string, got %s", describe(e.Value))
			continue
		}
		kvs = append(kvs, KV{e.Key, scalarText(e.Value)})
	}
	return kvs
}

func (o *obj) strList(key string) []string {
	v := o.get(key)
	if v == nil {
		return nil
	}
	if v.Kind != tree.List {
		o.d.bad(o.at(key), v, "must be a list of strings, got %s", describe(v))
		return nil
	}
	var out []string
	for i, it := range v.Items {
		if it.Kind != tree.String {
			o.d.bad(fmt.Sprintf("%s.%d", o.at(key), i), it, "must be a string, got %s", describe(it))
			continue
		}
		out = append(out, it.Str)
	}
	return out
}

func (o *obj) child(key string) *obj { return o.d.object(o.at(key), o.get(key)) }

// each calls fn for every entry of the mapping at key, in its order.
func (o *obj) each(key string, fn func(name string, v *obj)) {
	m := o.child(key)
	if m.n == nil {
		return
	}
	for _, e := range m.n.Entries {
		c := o.d.object(m.at(e.Key), e.Value)
		fn(e.Key, c)
		c.done()
	}
}

// done refuses every key of the mapping that was not read.
func (o *obj) done() {
	if o.n == nil {
		return
	}
	var extra []string
	for _, e := range o.n.Entries {
		if !o.read[e.Key] {
			extra = append(extra, e.Key)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		o.d.bad(o.at(k), o.n.Get(k), "Extra inputs are not permitted")
	}
}

func scalarText(v *tree.Node) string {
	switch v.Kind {
	case tree.String:
		return v.Str
	case tree.Bool:
		if v.Bool {
			return "true"
		}
		return "false"
	case tree.Int:
		return strconv.FormatInt(v.Int, 10)
	}
	return strings.TrimSpace(v.GoString())
}

func describe(v *tree.Node) string {
	switch v.Kind {
	case tree.Map:
		return "a mapping"
	case tree.List:
		return "a list"
	case tree.Null:
		return "null"
	case tree.String:
		return strconv.Quote(v.Str)
	}
	return v.Kind.String() + " " + scalarText(v)
}
