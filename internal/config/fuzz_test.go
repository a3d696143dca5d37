package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadConfig feeds arbitrary files through the whole pipeline (merge,
// directives, validation, defaults, full resolution): any input either
// resolves or fails with a config Error, never a panic or a hang.
func FuzzLoadConfig(f *testing.F) {
	for _, seed := range []string{
		"a: 1\n",
		"x: ${a.b}\na: {b: [1, 2]}\n",
		"p: ${inherit_from:s}\ns: {responses_api_models: {m: {entrypoint: app.py}}}\n",
		"k: {_copy: s, _delete_key: 'a, b'}\ns: {a: 1}\n",
		"config_paths: [f.yaml]\n",
		"r: {resources_servers: {x: {entrypoint: app.py, domain: math, datasets: [{type: train, name: n, jsonl_fpath: f}]}}}\n",
		"a: ${oc.select:b,${oc.env:X,3}}\nb: '???'\n",
		"a: ${.b}\nb: ${..a}\n",
		"head_server: {port: ${x}}\nx: 5\n",
		"big: 123456789012345678901234567890\nref: ${big}\ns: x${big}\nk: {123456789012345678901234567890: ${big}}\n",
		"m: {responses_api_models: {x: {entrypoint: app.py, port: 123456789012345678901234567890}}}\n",
		"head_server: {port: 0x10000000000000000}\nport_range_low: -9223372036854775809\n",
		"r: {resources_servers: {x: {entrypoint: app.py, domain: math, datasets: [{type: example, name: n, jsonl_fpath: f, num_repeats: 99999999999999999999}]}}}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		env := testEnv(t, nil)
		path := filepath.Join(env.Cwd, "f.yaml")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := Load(context.Background(), env, Request{Overrides: []string{"+config_paths=[" + path + "]"}})
		if err == nil {
			_, err = res.Resolved(true)
		}
		var cfgErr *Error
		if err != nil && !errors.As(err, &cfgErr) {
			t.Fatalf("error is not a config Error: %T %v", err, err)
		}
	})
}
