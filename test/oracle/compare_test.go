package oracle

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseTypesScalarsAsNeMoGymReadsThem(t *testing.T) {
	doc := `
yes_bool: yes
on_bool: On
quoted_yes: 'yes'
octal: 010
hex: 0x1F
sexagesimal: 1:30
underscored: 1_000
exp_no_dot: 1e3
pyyaml_float: 1.0e-06
dot_float: .5
inf: -.inf
nan: .nan
tilde: ~
empty:
date: 2020-01-01
quoted_false: 'False'
double_quoted: "10"
folded: >
  a
  b
plain_long: this is a long plain string that PyYAML folds at about eighty columns
  onto the next line
version: 0.0.1
`
	n, err := Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"yes_bool":      {"bool", "true"},
		"on_bool":       {"bool", "true"},
		"quoted_yes":    {"str", "yes"},
		"octal":         {"int", "8"},
		"hex":           {"int", "31"},
		"sexagesimal":   {"int", "90"},
		"underscored":   {"int", "1000"},
		"exp_no_dot":    {"float", "1000"},
		"pyyaml_float":  {"float", "1e-06"},
		"dot_float":     {"float", "0.5"},
		"inf":           {"float", "-inf"},
		"nan":           {"float", "nan"},
		"tilde":         {"null", "null"},
		"empty":         {"null", "null"},
		"date":          {"str", "2020-01-01"},
		"quoted_false":  {"str", "False"},
		"double_quoted": {"str", "10"},
		"folded":        {"str", "a b\n"},
		"plain_long":    {"str", "this is a long plain string that PyYAML folds at about eighty columns onto the next line"},
		"version":       {"str", "0.0.1"},
	}
	for k, w := range want {
		v := n.Get(k)
		if v == nil {
			t.Errorf("%s: missing", k)
			continue
		}
		if got := [2]string{v.Tag, v.Value}; got != w {
			t.Errorf("%s: got %v, want %v", k, got, w)
		}
	}
	if got, wantKeys := len(n.Keys), len(want); got != wantKeys {
		t.Errorf("parsed %d keys, want %d", got, wantKeys)
	}
}

func TestParseRejectsDuplicateKeys(t *testing.T) {
	if _, err := Parse("a: 1\na: 2\n"); err == nil || !strings.Contains(err.Error(), "duplicate key") {
		t.Fatalf("want a duplicate key error, got %v", err)
	}
}

func TestParseEmptyDocumentIsAnEmptyMap(t *testing.T) {
	n, err := Parse("")
	if err != nil || n.Kind != MapNode || len(n.Keys) != 0 {
		t.Fatalf("got %+v, %v", n, err)
	}
}

func mustParse(t *testing.T, s string) *Node {
	t.Helper()
	n, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func diffStrings(ds []Difference) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.String())
	}
	return out
}

func TestCompare(t *testing.T) {
	tests := []struct {
		name       string
		nemo, ours string
		exclusions []Exclusion
		want       []string
	}{
		{
			name: "identical trees, different formatting",
			nemo: "a:\n  b: 'x'\n  c:\n  - 1\n  - 2\nd: 1.0\n",
			ours: "a: {b: x, c: [1, 2]}\nd: 1.0\n",
			want: []string{},
		},
		{
			name: "changed scalar with its type",
			nemo: "a:\n  drop: 'False'\n  n: 600\n",
			ours: "a:\n  drop: false\n  n: '600'\n",
			want: []string{
				`a.drop: NeMo Gym "False" (str), ours false (bool)`,
				`a.n: NeMo Gym 600 (int), ours "600" (str)`,
			},
		},
		{
			name: "missing and extra keys",
			nemo: "a: 1\nb: {c: 2}\n",
			ours: "a: 1\nb: {}\nz: [1]\n",
			want: []string{
				`b.c: missing in ours; NeMo Gym has 2 (int)`,
				`z: extra in ours ([1]); NeMo Gym has no such key`,
			},
		},
		{
			name: "list items by index",
			nemo: "p:\n- 11000\n- 12001\n- 12002\n",
			ours: "p:\n- 11000\n- 12002\n",
			want: []string{
				`p[1]: NeMo Gym 12001 (int), ours 12002 (int)`,
				`p[2]: missing in ours; NeMo Gym has 12002 (int)`,
			},
		},
		{
			name: "nested path through a list",
			nemo: "a:\n  ds:\n  - name: x\n    type: example\n",
			ours: "a:\n  ds:\n  - name: x\n    type: train\n",
			want: []string{`a.ds[0].type: NeMo Gym "example" (str), ours "train" (str)`},
		},
		{
			name: "map against scalar",
			nemo: "a: {b: 1}\n",
			ours: "a: '{b: 1}'\n",
			want: []string{`a: NeMo Gym {b: 1}, ours "{b: 1}" (str)`},
		},
		{
			name: "key order",
			nemo: "a: 1\nb: 2\nc: 3\n",
			ours: "b: 2\na: 1\nc: 3\n",
			want: []string{"<root>: key order differs\n      NeMo Gym: a, b, c\n      ours:     b, a, c"},
		},
		{
			name: "key order over the common keys only",
			nemo: "a: 1\nonly_nemo: 0\nb: 2\n",
			ours: "a: 1\nb: 2\nonly_ours: 0\n",
			want: []string{
				`only_nemo: missing in ours; NeMo Gym has 0 (int)`,
				`only_ours: extra in ours (0 (int)); NeMo Gym has no such key`,
			},
		},
		{
			name:       "an excluded key takes no part, not even in order",
			nemo:       "python_version: 3.13.1\na: 1\nb: 2\n",
			ours:       "a: 1\nb: 2\n",
			exclusions: []Exclusion{{Pattern: MustPattern("python_version"), Why: "test"}},
			want:       []string{},
		},
		{
			name:       "an exclusion matches only its path",
			nemo:       "x:\n  python_version: 1\npython_version: 2\n",
			ours:       "x: {}\n",
			exclusions: []Exclusion{{Pattern: MustPattern("python_version"), Why: "test"}},
			want:       []string{`x.python_version: missing in ours; NeMo Gym has 1 (int)`},
		},
		{
			name: "masked on one side only",
			nemo: "a:\n  api_key: '****'\n",
			ours: "a:\n  api_key: sk-1\n",
			want: []string{`a.api_key: NeMo Gym "****" (str), ours "sk-1" (str) (masked on one side only: the two sides mask different keys)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := diffStrings(Compare(mustParse(t, tt.nemo), mustParse(t, tt.ours), tt.exclusions))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

func TestPattern(t *testing.T) {
	tests := []struct {
		pattern string
		path    Path
		want    bool
	}{
		{"head_server_deps", Path{"head_server_deps"}, true},
		{"head_server_deps", Path{"head_server_deps", "[0]"}, false},
		{"head_server_deps.**", Path{"head_server_deps", "[0]"}, true},
		{"head_server_deps.**", Path{"head_server_deps"}, true},
		{"disallowed_ports[*]", Path{"disallowed_ports", "[3]"}, true},
		{"disallowed_ports[2]", Path{"disallowed_ports", "[3]"}, false},
		{"disallowed_ports[3]", Path{"disallowed_ports", "[3]"}, true},
		{"*.environment_servers.*.port", Path{"x_environment_server", "environment_servers", "legacy_agent", "port"}, true},
		{"*.environment_servers.*.port", Path{"x", "resources_servers", "legacy_agent", "port"}, false},
		{"**.port", Path{"a", "b", "c", "port"}, true},
		{"**.port", Path{"a", "port", "c"}, false},
		{"a.*", Path{"a"}, false},
	}
	for _, tt := range tests {
		if got := MustPattern(tt.pattern).Match(tt.path); got != tt.want {
			t.Errorf("%q.Match(%s) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestPathString(t *testing.T) {
	if got := (Path{"a", "ds", "[0]", "type"}).String(); got != "a.ds[0].type" {
		t.Errorf("got %q", got)
	}
	if got := (Path{}).String(); got != "<root>" {
		t.Errorf("got %q", got)
	}
}
