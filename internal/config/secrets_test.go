package config

import (
	"context"
	"strings"
	"testing"
)

// TestResolvedMasksResolvedSecrets: `gym env resolve` resolves every value
// before it masks the secret ones, as NeMo Gym's masking walk reads each
// value it passes; so a secret that cannot be resolved fails the command,
// and one that can still prints masked.
func TestResolvedMasksResolvedSecrets(t *testing.T) {
	tests := []struct {
		name      string
		overrides []string
		env       map[string]string
		want      []string // lines the output contains
		err       []string // texts the error contains
		notInErr  []string
	}{
		{
			name:      "a set env var under a secret key prints masked",
			overrides: []string{"+srv.api_key=${oc.env:K}", "+srv.url='http://h/?k=${srv.api_key}'"},
			env:       map[string]string{"K": "sk-real"},
			want:      []string{"  api_key: '****'", "  url: http://h/?k=****"},
		},
		{
			name:      "an unset env var under a secret key fails, naming the key",
			overrides: []string{"+srv.nested.api_key=${oc.env:UNSET_VAR}"},
			err:       []string{"srv.nested.api_key", "Environment variable 'UNSET_VAR' not found", "cli: +srv.nested.api_key="},
		},
		{
			name:      "an unset reference under a secret key fails",
			overrides: []string{"+list=[{hf_token: '${nowhere}'}]"},
			err:       []string{"list[0].hf_token", "references 'nowhere'"},
		},
		{
			name:      "items of a secret list are masked unread, as NeMo Gym only counts them",
			overrides: []string{"+api_keys=[a, '${oc.env:UNSET_VAR}']"},
			want:      []string{"api_keys:\n- '****'\n- '****'"},
		},
		{
			name:      "the error never shows a secret override's value",
			overrides: []string{"+srv.api_key=sk-literal${oc.env:UNSET_VAR}"},
			err:       []string{"srv.api_key", "UNSET_VAR"},
			notInErr:  []string{"cli: +srv.api_key=sk-literal"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Load(context.Background(), testEnv(t, tt.env), Request{Overrides: tt.overrides, Offline: true})
			if err != nil {
				t.Fatal(err)
			}
			out, err := res.Resolved(true)
			if len(tt.err) > 0 {
				if err == nil {
					t.Fatalf("no error; output:\n%s", dump(out))
				}
				for _, s := range tt.err {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error lacks %q:\n%v", s, err)
					}
				}
				for _, s := range tt.notInErr {
					if strings.Contains(err.Error(), s) {
						t.Errorf("error shows %q:\n%v", s, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := dump(out)
			for _, s := range tt.want {
				if !strings.Contains(got, s) {
					t.Errorf("output lacks %q:\n%s", s, got)
				}
			}
		})
	}
}
