package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// bigIntFiles are two config layers with integers beyond 64 bits in every
// YAML 1.1 form, interpolated, selected, decoded, used as a key and merged.
var bigIntFiles = map[string]string{
	"a.yaml": `big: 123456789012345678901234567890
forms:
  neg: -123456789012345678901234567890
  hex: 0xFFFFFFFFFFFFFFFFFFFF
  oct: 0777777777777777777777777
  bin: 0b11111111111111111111111111111111111111111111111111111111111111111
  under: 1_000_000_000_000_000_000_000
  plus: +9223372036854775808
  sexa: 190:20:30:15:12:12:12:12:12:12:12:12
  edge: -9223372036854775808
123456789012345678901234567890: keyed
ref: ${big}
text: x${big}y
list: ['${big}', 1]
replaced: 1
sel: ${oc.select:nope,123456789012345678901234567890}
dec: ${oc.decode:'-9223372036854775809'}
quoted: '123456789012345678901234567890'
`,
	"b.yaml": `replaced: 98765432109876543210987654321
forms:
  edge: 9223372036854775807
`,
}

var bigIntOverrides = []string{"+n=123456789012345678901234567890", "+m=[-9223372036854775809]", "++forms.under=int(1e30)"}

// The expected texts are what OmegaConf 2.3.1 prints for the same files
// and overrides (with PyYAML 6.0.4 and Hydra 1.3.8): OmegaConf.to_yaml of the
// merged config, with and without resolve=True.
const (
	bigIntResolved = `big: 123456789012345678901234567890
forms:
  neg: -123456789012345678901234567890
  hex: 1208925819614629174706175
  oct: 4722366482869645213695
  bin: 36893488147419103231
  under: 1000000000000000019884624838656
  plus: 9223372036854775808
  sexa: 6905542183665681355932
  edge: 9223372036854775807
123456789012345678901234567890: keyed
ref: 123456789012345678901234567890
text: x123456789012345678901234567890y
list:
- 123456789012345678901234567890
- 1
replaced: 98765432109876543210987654321
sel: 123456789012345678901234567890
dec: -9223372036854775809
quoted: '123456789012345678901234567890'
'n': 123456789012345678901234567890
m:
- -9223372036854775809
`
	bigIntUnresolved = `big: 123456789012345678901234567890
forms:
  neg: -123456789012345678901234567890
  hex: 1208925819614629174706175
  oct: 4722366482869645213695
  bin: 36893488147419103231
  under: 1000000000000000019884624838656
  plus: 9223372036854775808
  sexa: 6905542183665681355932
  edge: 9223372036854775807
123456789012345678901234567890: keyed
ref: ${big}
text: x${big}y
list:
- ${big}
- 1
replaced: 98765432109876543210987654321
sel: ${oc.select:nope,123456789012345678901234567890}
dec: ${oc.decode:'-9223372036854775809'}
quoted: '123456789012345678901234567890'
'n': 123456789012345678901234567890
m:
- -9223372036854775809
`
)

// TestBigIntsEndToEnd loads config files and overrides holding integers
// beyond 64 bits through the whole pipeline, then dumps the result as
// `gym env resolve` does (and the unresolved config children receive).
func TestBigIntsEndToEnd(t *testing.T) {
	env := testEnv(t, nil)
	var paths []string
	for _, name := range []string{"a.yaml", "b.yaml"} {
		p := filepath.Join(env.Cwd, name)
		if err := os.WriteFile(p, []byte(bigIntFiles[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	overrides := append([]string{"+config_paths=[" + strings.Join(paths, ",") + "]"}, bigIntOverrides...)
	res, err := Load(context.Background(), env, Request{Overrides: overrides})
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := res.Resolved(false)
	if err != nil {
		t.Fatal(err)
	}
	if got := dump(ownKeys(resolved)); got != bigIntResolved {
		t.Errorf("resolved:\n%s\nwant:\n%s", got, bigIntResolved)
	}
	if got := dump(ownKeys(res.Config)); got != bigIntUnresolved {
		t.Errorf("unresolved:\n%s\nwant:\n%s", got, bigIntUnresolved)
	}
	// What a child reads back is the same value, kind and all.
	child, err := ParseChildConfig(Dump(res.Config))
	if err != nil {
		t.Fatal(err)
	}
	if got := child.Get("replaced"); got.Kind != tree.BigInt || got.IntText() != "98765432109876543210987654321" {
		t.Errorf("child reads replaced as %s %#v", got.Kind, got)
	}
	v, err := res.Value("ref")
	if err != nil || v.Kind != tree.BigInt || !tree.Equal(v, res.Config.Get("big")) {
		t.Errorf("Value(ref) = %#v, %v; want the big int at big", v, err)
	}
}

// ownKeys keeps the keys the test files and overrides set, dropping the
// defaults the pipeline adds.
func ownKeys(cfg *tree.Node) *tree.Node {
	out := tree.NewMap()
	for _, e := range cfg.Entries {
		if e.Value.Origin.Kind == tree.FromDefault || e.Key == "config_paths" || e.Key == "disallowed_ports" {
			continue
		}
		out.SetEntry(e)
	}
	return out
}

// TestBigIntsWhereGymNeedsMachineInts: a port or port range beyond 64 bits
// is refused, naming the key, rather than read as "unset".
func TestBigIntsWhereGymNeedsMachineInts(t *testing.T) {
	const big = "123456789012345678901234567890"
	server := "+m.responses_api_models.x.entrypoint=app.py"
	tests := []struct {
		name      string
		overrides []string
		err       string
	}{
		{"instance port", []string{server, "+m.responses_api_models.x.port=" + big},
			"m.responses_api_models.x.port must be a port number (0-65535), got " + big},
		{"instance port as a string", []string{server, "+m.responses_api_models.x.port='" + big + "'"},
			"m.responses_api_models.x.port must be a port number (0-65535), got " + big},
		{"instance port from an interpolation", []string{server, "+p=-" + big, "+m.responses_api_models.x.port=${p}"},
			"m.responses_api_models.x.port must be a port number (0-65535), got -" + big},
		{"head server port", []string{server, "+head_server.port=" + big},
			"head_server.port must be a port number (0-65535), got " + big},
		{"port range", []string{server, "+port_range_high=" + big},
			"port_range_high must be an integer port number, got " + big},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(context.Background(), testEnv(t, nil), Request{Overrides: tt.overrides})
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
		})
	}
	// An integral float that large is no port either.
	_, err := Load(context.Background(), testEnv(t, nil), Request{Overrides: []string{server, "+m.responses_api_models.x.port=1e30"}})
	if err == nil || !strings.Contains(err.Error(), "m.responses_api_models.x.port must be a port number (0-65535), got 1e+30") {
		t.Errorf("float port: err = %v", err)
	}
}

func TestBigIntValues(t *testing.T) {
	big := mustYAML(t, "{p: 123456789012345678901234567890, n: -123456789012345678901234567890}")
	for _, key := range []string{"p", "n"} {
		if !Truthy(big.Get(key)) {
			t.Errorf("Truthy(%s) is false", key)
		}
		if _, ok := intValue(big.Get(key)); ok {
			t.Errorf("intValue(%s) reads a big int as an int64", key)
		}
	}
	tests := []struct {
		num  string
		want string // the pydantic problem, if any
	}{
		{"123456789012345678901234567890", ""},
		{"'123456789012345678901234567890'", ""},
		{"-123456789012345678901234567890", "Input should be greater than or equal to 1"},
		{"0", "Input should be greater than or equal to 1"},
		{"1.5", "Input should be a valid integer, got a number with a fractional part"},
	}
	for _, tt := range tests {
		d := mustYAML(t, "{type: example, name: d, jsonl_fpath: d.jsonl, num_repeats: "+tt.num+"}")
		var got string
		for _, p := range validateDataset(d, []string{"datasets", "0"}) {
			if p.loc[len(p.loc)-1] == "num_repeats" {
				got = p.msg
			}
		}
		if got != tt.want {
			t.Errorf("num_repeats: %s: problem %q, want %q", tt.num, got, tt.want)
		}
	}
}
