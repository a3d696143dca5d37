package catalog

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

const validManifest = `name: alpha
version: 0.1.0
kind: environment
integration_profile: custom-gym-verifier
domain: math
description: Alpha environment
modality: text
licensing: Apache-2.0
lifecycle: deprecated
authors: [Someone]
`

func TestParseManifest(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want Manifest
		// wantErr lists substrings of the error; nil means success.
		wantErr []string
	}{
		{
			name: "full",
			yaml: validManifest,
			want: Manifest{Name: "alpha", Version: "0.1.0", Kind: "environment", IntegrationProfile: "custom-gym-verifier",
				Domain: "math", Description: "Alpha environment", Modality: "text", Licensing: "Apache-2.0", Lifecycle: "deprecated", Experimental: true, ConfigPath: "config.yaml"},
		},
		{
			name: "not experimental",
			yaml: validManifest + "experimental: false\n",
			want: Manifest{Name: "alpha", Version: "0.1.0", Kind: "environment", IntegrationProfile: "custom-gym-verifier",
				Domain: "math", Description: "Alpha environment", Modality: "text", Licensing: "Apache-2.0", Lifecycle: "deprecated", ConfigPath: "config.yaml"},
		},
		{
			name:    "experimental is a flag",
			yaml:    validManifest + "experimental: sometimes\n",
			wantErr: []string{"experimental (line 11): Input should be a valid boolean"},
		},
		{
			name: "defaults and stripped whitespace",
			yaml: "name: ' suite/b '\nversion: '1'\nkind: benchmark\nintegration_profile: p\ndomain: ' games'\ndescription: |\n  two\n  lines\nmodality: text\n",
			want: Manifest{Name: "suite/b", Version: "1", Kind: "benchmark", IntegrationProfile: "p",
				Domain: "games", Description: "two\nlines", Modality: "text", Licensing: "unknown", Lifecycle: "active", Experimental: true, ConfigPath: "config.yaml"},
		},
		{
			name:    "malformed YAML names file and line",
			yaml:    "name: alpha\nversion: [unclosed\nkind: environment\n",
			wantErr: []string{"Malformed YAML in environment manifest 'envs/alpha/manifest.yaml' at line "},
		},
		{
			name:    "tab indentation",
			yaml:    "name: alpha\n\tversion: 1\n",
			wantErr: []string{"Malformed YAML in environment manifest 'envs/alpha/manifest.yaml' at line 2"},
		},
		{
			name:    "duplicate key",
			yaml:    validManifest + "name: beta\n",
			wantErr: []string{"Malformed YAML in environment manifest", "line 11"},
		},
		{
			name:    "not a mapping",
			yaml:    "- name: alpha\n",
			wantErr: []string{"Invalid environment manifest 'envs/alpha/manifest.yaml': expected a YAML mapping."},
		},
		{
			name: "every missing field is reported",
			yaml: "name: alpha\n",
			wantErr: []string{"Invalid environment manifest 'envs/alpha/manifest.yaml':\n  - version: Field required",
				"  - kind: Field required", "  - integration_profile: Field required", "  - modality: Field required"},
		},
		{
			name:    "number where a string is required",
			yaml:    strings.Replace(validManifest, "version: 0.1.0", "version: 1.0", 1),
			wantErr: []string{"version (line 2): Input should be a valid string, got a float (1.0); quote the value"},
		},
		{
			name:    "YAML 1.1 boolean",
			yaml:    strings.Replace(validManifest, "modality: text", "modality: yes", 1),
			wantErr: []string{"modality (line 7): Input should be a valid string, got a bool (True)"},
		},
		{
			name:    "blank string",
			yaml:    strings.Replace(validManifest, "modality: text", "modality: '  '", 1),
			wantErr: []string{"modality (line 7): String should have at least 1 character"},
		},
		{
			name:    "unknown domain",
			yaml:    strings.Replace(validManifest, "domain: math", "domain: logic", 1),
			wantErr: []string{"domain (line 5): Input should be 'math', 'coding', 'agent', 'knowledge', 'instruction_following', 'long_context', 'safety', 'games', 'translation', 'e2e', 'rlhf' or 'other'"},
		},
		{
			name:    "unknown kind",
			yaml:    strings.Replace(validManifest, "kind: environment", "kind: suite", 1),
			wantErr: []string{"kind (line 3): Input should be 'environment' or 'benchmark'"},
		},
		{
			name:    "unknown lifecycle",
			yaml:    strings.Replace(validManifest, "lifecycle: deprecated", "lifecycle: retired", 1),
			wantErr: []string{"lifecycle (line 9): Input should be 'active' or 'deprecated'"},
		},
		{
			name:    "empty config_path",
			yaml:    validManifest + "config_path: ''\n",
			wantErr: []string{"config_path (line 11): String should have at least 1 character"},
		},
		{
			name:    "null licensing",
			yaml:    strings.Replace(validManifest, "licensing: Apache-2.0", "licensing:", 1),
			wantErr: []string{"licensing (line 8): Input should be a valid string, got a null"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseManifest([]byte(tt.yaml), "envs/alpha/manifest.yaml")
			if tt.wantErr != nil {
				var me *ManifestError
				if !errors.As(err, &me) {
					t.Fatalf("err = %v, want a *ManifestError", err)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error\n%s\ndoes not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m.nameAt, m.kindAt = tt.want.nameAt, tt.want.kindAt
			if *m != tt.want {
				t.Errorf("got %+v\nwant %+v", *m, tt.want)
			}
		})
	}
}

func TestLoadManifestUnreadable(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "manifest.yaml")
	_, err := LoadManifest(missing)
	var me *ManifestError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "was not found") {
		t.Errorf("missing file: err = %v", err)
	}
	if _, err := LoadManifest(t.TempDir()); !errors.As(err, &me) {
		t.Errorf("directory: err = %v, want a *ManifestError", err)
	}
}

// FuzzParseManifest checks that no input panics, that failures are always
// a *ManifestError naming the file, and that what parses is valid.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(validManifest))
	f.Add([]byte("name: a\nkind: [x, {y: z}]\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("name: !!binary aGk=\n"))
	f.Add([]byte("? [a]\n: b\n"))
	f.Add([]byte("<<: {name: a}\nversion: 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data, "fuzz/manifest.yaml")
		if err != nil {
			var me *ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("err %T %v is no *ManifestError", err, err)
			}
			if !strings.Contains(err.Error(), "fuzz/manifest.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for field, v := range map[string]string{"name": m.Name, "version": m.Version, "profile": m.IntegrationProfile,
			"domain": m.Domain, "description": m.Description, "modality": m.Modality, "licensing": m.Licensing} {
			if v == "" || strings.TrimSpace(v) != v {
				t.Fatalf("%s = %q: want non-empty and stripped", field, v)
			}
		}
		if m.Kind != KindEnvironment && m.Kind != KindBenchmark {
			t.Fatalf("kind = %q", m.Kind)
		}
		if m.Lifecycle != LifecycleActive && m.Lifecycle != LifecycleDeprecated {
			t.Fatalf("lifecycle = %q", m.Lifecycle)
		}
	})
}
