package export

import (
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// NeMo Gym's key sanitizing, on the cases its exporter was seen to map.
func TestSanitizeKey(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"pass@1", "pass_at_1", true},
		{"a/../b", "a/__/b", true},
		{"//x//", "x", true},
		{"...x", "___x", true},
		{"@@@", "_at__at__at_", true},
		{"/", "", false},
		{"é", "é", true},
		{"key with space:colon", "key with space:colon", true},
		{"a$b", "a_b", true},
		{strings.Repeat("a", 300), strings.Repeat("a", 124) + "___" + strings.Repeat("a", 123), true},
	}
	for _, tt := range tests {
		got, ok := SanitizeKey(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("SanitizeKey(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func configOf(kv ...any) func(string) (*tree.Node, error) {
	m := map[string]*tree.Node{}
	for i := 0; i < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case string:
			m[kv[i].(string)] = tree.NewString(v)
		case bool:
			m[kv[i].(string)] = tree.NewBool(v)
		case int:
			m[kv[i].(string)] = tree.NewInt(int64(v))
		}
	}
	return func(k string) (*tree.Node, error) { return m[k], nil }
}

// A tracker setting is used or refused, never dropped.
func TestFromConfig(t *testing.T) {
	full := []any{"mlflow_tracking_uri", "http://127.0.0.1:5000", "mlflow_experiment_name", "e", "mlflow_run_name", "r"}
	tests := []struct {
		name   string
		get    func(string) (*tree.Node, error)
		err    string
		mlflow bool
		upload bool
	}{
		{"nothing", configOf(), "", false, true},
		{"mlflow", configOf(full...), "", true, true},
		{"no upload", configOf(append(full, "upload_rollouts", false)...), "", true, false},
		{"deprecated alias", configOf(append(full, "upload_rollouts_to_wandb", "false")...), "", true, false},
		{"wandb", configOf("wandb_project", "p"), "wandb_project is set, but gym does not export to Weights & Biases", false, false},
		{"partial mlflow", configOf("mlflow_tracking_uri", "http://x"), "set: mlflow_tracking_uri; missing: mlflow_experiment_name, mlflow_run_name", false, false},
		{"token alone", configOf("mlflow_tracking_token", "t"), "mlflow_tracking_token is set, but MLflow tracking also needs", false, false},
		{"not a string", configOf("mlflow_run_name", 2024), "mlflow_run_name must be a string, got 2024", false, false},
		{"bad upload", configOf("upload_rollouts", "maybe"), `upload_rollouts must be true or false: Input should be a valid boolean, unable to interpret input "maybe"`, false, false},
	}
	for _, tt := range tests {
		tr, err := FromConfig(tt.get)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err = %v, want %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || (tr.MLflow != nil) != tt.mlflow || tr.UploadRollouts != tt.upload {
			t.Errorf("%s: %+v, %v", tt.name, tr, err)
		}
	}
}

// Params are NeMo Gym's: dotted paths, list items as [i], Python's str().
func TestFlatten(t *testing.T) {
	n := tree.NewMap()
	n.Set("a", tree.NewMap())
	n.Get("a").Set("b", tree.NewList(tree.NewBool(true), tree.NewNull()))
	n.Set("t", tree.NewFloat(0.00001))
	n.Set("s", tree.NewString("x"))
	var got []string
	for _, p := range Flatten(n) {
		got = append(got, p.Key+"="+p.Value)
	}
	if want := "a.b[0]=True a.b[1]=None t=1e-05 s=x"; strings.Join(got, " ") != want {
		t.Errorf("got %s, want %s", strings.Join(got, " "), want)
	}
}
