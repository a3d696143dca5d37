package rollout

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/openai"
)

// Prompt is a prompt config: NeMo Gym's `{user: str, system: str}` YAML,
// whose templates use Python's str.format_map over a data row.
type Prompt struct {
	Path      string
	System    string
	HasSystem bool // an empty system template still gives a system message
	User      string
}

// LoadPrompt reads a prompt config file.
func LoadPrompt(path string) (*Prompt, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &InputError{Path: path, Msg: fmt.Sprintf("cannot read the prompt config (--prompt-config): %v", err)}
	}
	root, err := pyyaml.Load(data, path)
	if err != nil {
		return nil, err
	}
	if root == nil || root.Kind != tree.Map {
		return nil, &InputError{Path: path, Msg: "a prompt config is a mapping with a `user` template and an optional `system` one"}
	}
	p := &Prompt{Path: path}
	for _, e := range root.Entries {
		switch e.Key {
		case "user", "system":
			if e.Key == "system" && e.Value.Kind == tree.Null {
				continue
			}
			if e.Value.Kind != tree.String {
				return nil, &InputError{Path: path, Line: e.Value.Origin.Line, Msg: fmt.Sprintf("%s must be a string template, got %s", e.Key, e.Value.Kind)}
			}
			if e.Key == "user" {
				p.User = e.Value.Str
			} else {
				p.System, p.HasSystem = e.Value.Str, true
			}
		default:
			return nil, &InputError{Path: path, Line: e.Value.Origin.Line, Msg: fmt.Sprintf("unknown key %q; a prompt config has only `user` and `system`", e.Key)}
		}
	}
	if root.Get("user") == nil {
		return nil, &InputError{Path: path, Msg: "the `user` template is required"}
	}
	for _, t := range []string{p.System, p.User} {
		if _, err := formatMap(t, gjson.Parse("{}")); err != nil {
			if _, missing := err.(*missingFieldError); !missing {
				return nil, &InputError{Path: path, Msg: err.Error()}
			}
		}
	}
	return p, nil
}

// hasInput reports whether a row already has a non-empty
// responses_create_params.input, which a prompt config must not replace.
func hasInput(row gjson.Result) bool {
	in := row.Get(ParamsKey + ".input")
	return in.Exists() && nonEmpty(in)
}

// apply sets row's responses_create_params.input to the prompt rendered
// from parsed (row's parsed form), keeping the other params (an absent
// object becomes one).
func (p *Prompt) apply(row []byte, parsed gjson.Result) ([]byte, error) {
	input, err := p.input(parsed)
	if err != nil {
		return nil, err
	}
	params := []byte("{}")
	if v := parsed.Get(ParamsKey); v.IsObject() {
		params = []byte(v.Raw)
	}
	if params, err = sjson.SetRawBytes(params, "input", input); err != nil {
		return nil, err
	}
	return sjson.SetRawBytes(row, ParamsKey, params)
}

// Messages renders the prompt's templates over row (a JSON object), as
// NeMo Gym's fill_prompt does: the system text (when the prompt has a
// system template) and the user text.
func (p *Prompt) Messages(row gjson.Result) (system string, hasSystem bool, user string, err error) {
	if p.HasSystem {
		if system, err = formatMap(p.System, row); err != nil {
			return "", false, "", err
		}
	}
	if user, err = formatMap(p.User, row); err != nil {
		return "", false, "", err
	}
	return system, p.HasSystem, user, nil
}

// input renders the prompt for row as a Responses input list.
func (p *Prompt) input(row gjson.Result) ([]byte, error) {
	b := []byte{'['}
	if p.HasSystem {
		s, err := formatMap(p.System, row)
		if err != nil {
			return nil, err
		}
		b = append(b, `{"role":"system","content":`...)
		b = openai.AppendJSONString(b, s)
		b = append(b, "},"...)
	}
	u, err := formatMap(p.User, row)
	if err != nil {
		return nil, err
	}
	b = append(b, `{"role":"user","content":`...)
	b = openai.AppendJSONString(b, u)
	return append(b, "}]"...), nil
}

// missingFieldError is NeMo Gym's KeyError for a template field the row
// lacks.
type missingFieldError struct {
	field  string
	fields []string
}

func (e *missingFieldError) Error() string {
	quoted := make([]string, len(e.fields))
	for i, f := range e.fields {
		quoted[i] = interp.PythonRepr(tree.NewString(f))
	}
	return fmt.Sprintf("Prompt template references field '%s' but the data row only has fields: [%s]", e.field, strings.Join(quoted, ", "))
}

// formatMap is Python's str.format_map(row) for a JSON object row: {name},
// {name[key]}, {name[0]}, conversions !s !r !a, a format spec of fill,
// align, width and precision, and {{ }} as literal braces.
func formatMap(tmpl string, row gjson.Result) (string, error) {
	var b strings.Builder
	for i := 0; i < len(tmpl); {
		c := tmpl[i]
		switch {
		case c == '{' && i+1 < len(tmpl) && tmpl[i+1] == '{':
			b.WriteByte('{')
			i += 2
		case c == '}' && i+1 < len(tmpl) && tmpl[i+1] == '}':
			b.WriteByte('}')
			i += 2
		case c == '}':
			return "", fmt.Errorf("Single '}' encountered in format string")
		case c == '{':
			end := strings.IndexByte(tmpl[i+1:], '}')
			if end < 0 {
				return "", fmt.Errorf("Single '{' encountered in format string")
			}
			field := tmpl[i+1 : i+1+end]
			if strings.ContainsRune(field, '{') {
				return "", fmt.Errorf("nested replacement fields in %q are not supported", "{"+field+"}")
			}
			s, err := replacement(field, row)
			if err != nil {
				return "", err
			}
			b.WriteString(s)
			i += end + 2
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

func replacement(field string, row gjson.Result) (string, error) {
	spec := ""
	if k := strings.IndexByte(field, ':'); k >= 0 {
		field, spec = field[:k], field[k+1:]
	}
	conv := byte('s')
	if k := strings.IndexByte(field, '!'); k >= 0 {
		if len(field) != k+2 || !strings.ContainsRune("sra", rune(field[k+1])) {
			return "", fmt.Errorf("invalid conversion in {%s}: expected !s, !r or !a", field)
		}
		field, conv = field[:k], field[k+1]
	}
	name, rest := field, ""
	if k := strings.IndexAny(field, ".["); k >= 0 {
		name, rest = field[:k], field[k:]
	}
	if name == "" || isDigits(name) {
		return "", fmt.Errorf("Format string contains positional fields: {%s}", field)
	}
	v := row.Get(gjson.Escape(name))
	if !v.Exists() {
		var fields []string
		row.ForEach(func(k, _ gjson.Result) bool { fields = append(fields, k.Str); return true })
		return "", &missingFieldError{field: name, fields: fields}
	}
	for rest != "" {
		if rest[0] == '.' {
			attr := rest[1:]
			if k := strings.IndexAny(attr, ".["); k >= 0 {
				attr = attr[:k]
			}
			return "", fmt.Errorf("'%s' object has no attribute '%s' (in {%s}); use {%s[%s]} for a key", pyType(v), attr, field, name, attr)
		}
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return "", fmt.Errorf("Missing ']' in format string")
		}
		key := rest[1:end]
		rest = rest[end+1:]
		if rest != "" && rest[0] != '.' && rest[0] != '[' {
			return "", fmt.Errorf("Only '.' or '[' may follow ']' in format field specifier")
		}
		switch {
		case v.IsArray() && isDigits(key):
			idx, _ := strconv.Atoi(key)
			arr := v.Array()
			if idx >= len(arr) {
				return "", fmt.Errorf("list index out of range in {%s}", field)
			}
			v = arr[idx]
		case v.IsObject() && !isDigits(key):
			nv := v.Get(gjson.Escape(key))
			if !nv.Exists() {
				return "", fmt.Errorf("KeyError: '%s' (in {%s})", key, field)
			}
			v = nv
		default:
			return "", fmt.Errorf("cannot index %s with [%s] (in {%s})", pyType(v), key, field)
		}
	}
	var s string
	switch conv {
	case 's':
		s = interp.PythonStr(pyValue(v))
	case 'r':
		s = interp.PythonRepr(pyValue(v))
	case 'a':
		s = pyASCII(interp.PythonRepr(pyValue(v)))
	}
	return applySpec(s, spec, field, conv == 's' && v.Type == gjson.Number)
}

// applySpec applies the string part of Python's format mini-language:
// [[fill]align][width][.precision]. Numeric presentation types are not
// supported, and say so rather than render something else. Numbers align
// right by default, as in Python.
func applySpec(s, spec, field string, numeric bool) (string, error) {
	if spec == "" {
		return s, nil
	}
	fill, align := " ", byte('<')
	if numeric {
		align = '>'
	}
	r, size := utf8.DecodeRuneInString(spec)
	if len(spec) > size && strings.IndexByte("<>^", spec[size]) >= 0 {
		fill, align, spec = string(r), spec[size], spec[size+1:]
	} else if strings.IndexByte("<>^", spec[0]) >= 0 {
		align, spec = spec[0], spec[1:]
	}
	width, precision := 0, -1
	digits := strings.IndexFunc(spec, func(r rune) bool { return r < '0' || r > '9' })
	if digits < 0 {
		digits = len(spec)
	}
	if digits > 0 {
		width, _ = strconv.Atoi(spec[:digits])
		spec = spec[digits:]
	}
	if strings.HasPrefix(spec, ".") && len(spec) > 1 && isDigits(spec[1:]) {
		precision, _ = strconv.Atoi(spec[1:])
		spec = ""
	}
	if (spec != "" && spec != "s") || (numeric && (precision >= 0 || spec != "")) {
		return "", fmt.Errorf("format spec in {%s} is not supported by gym: only fill, align (<>^), width and .precision", field)
	}
	if precision >= 0 && utf8.RuneCountInString(s) > precision {
		s = string([]rune(s)[:precision])
	}
	pad := width - utf8.RuneCountInString(s)
	if pad <= 0 {
		return s, nil
	}
	switch align {
	case '>':
		return strings.Repeat(fill, pad) + s, nil
	case '^':
		return strings.Repeat(fill, pad/2) + s + strings.Repeat(fill, pad-pad/2), nil
	}
	return s + strings.Repeat(fill, pad), nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func pyType(v gjson.Result) string {
	switch {
	case v.IsObject():
		return "dict"
	case v.IsArray():
		return "list"
	case v.Type == gjson.String:
		return "str"
	case v.Type == gjson.Number:
		if isIntLiteral(v.Raw) {
			return "int"
		}
		return "float"
	case v.Type == gjson.True, v.Type == gjson.False:
		return "bool"
	}
	return "NoneType"
}

func isIntLiteral(raw string) bool {
	return !strings.ContainsAny(raw, ".eE")
}

// pyValue is the config tree of the value json.loads gives for v, so that
// str() and repr() come from the one Python rendering gym has
// (interp.PythonStr / PythonRepr). An integer beyond int64 becomes a float.
func pyValue(v gjson.Result) *tree.Node {
	switch {
	case v.IsObject():
		m := tree.NewMap()
		v.ForEach(func(k, val gjson.Result) bool {
			m.Set(k.Str, pyValue(val))
			return true
		})
		return m
	case v.IsArray():
		l := tree.NewList()
		for _, item := range v.Array() {
			l.Items = append(l.Items, pyValue(item))
		}
		return l
	}
	switch v.Type {
	case gjson.String:
		return tree.NewString(v.Str)
	case gjson.Number:
		if isIntLiteral(v.Raw) {
			if n, err := tree.ParseDecimal(v.Raw); err == nil {
				return n
			}
		}
		return tree.NewFloat(v.Num)
	case gjson.True:
		return tree.NewBool(true)
	case gjson.False:
		return tree.NewBool(false)
	}
	return tree.NewNull()
}

// pyASCII is ascii(): repr with every non-ASCII character escaped.
func pyASCII(repr string) string {
	var b strings.Builder
	for _, r := range repr {
		switch {
		case r < 0x80:
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	return b.String()
}
