package taskdata

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/resolve"
)

func TestSchema(t *testing.T) {
	extra, cwd := t.TempDir(), t.TempDir()
	write := func(root, rel, content string) {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	write(extra, "resources_servers/py/requirements.txt", "")
	write(extra, "resources_servers/py/task_data.py", "")
	write(cwd, "resources_servers/py/task_data.schema.json", `{"title":"shadowed"}`)
	write(cwd, "resources_servers/go/go.go", "package go")
	write(cwd, "resources_servers/go/task_data.schema.json", `{"title": "TaskData"}`+"\n")
	write(cwd, "resources_servers/bad/task_data.schema.json", `[1]`)
	write(cwd, "resources_servers/plain/README.md", "")
	// Not a component where it first appears (no marker), so the next root's wins.
	write(extra, "resources_servers/go/README.md", "")
	roots := resolve.NewRoots(extra, cwd, "")
	var pythonDir string
	opts := func(component string) Options {
		return Options{Component: component, Roots: roots, Cwd: cwd, Python: func(_ context.Context, dir string) ([]byte, error) {
			pythonDir = dir
			return []byte("from python\n"), nil
		}}
	}
	for _, tt := range []struct {
		component, want, wantErr string
	}{
		{"resources_servers/py", "from python\n", ""},
		{"resources_servers/go", `{"title": "TaskData"}` + "\n", ""},
		{"resources_servers/bad", "", "task_data.schema.json is not a JSON Schema object"},
		{"resources_servers/plain", "", "resources_servers/plain does not ship a task_data.py schema yet"},
		{"resources_servers/none", "", "resources_servers/none does not ship a task_data.py schema yet"},
	} {
		got, err := Schema(context.Background(), opts(tt.component))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want %q", tt.component, err, tt.wantErr)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: %q, %v", tt.component, got, err)
		}
	}
	if pythonDir != filepath.Join(extra, "resources_servers/py") {
		t.Errorf("python ran in %s", pythonDir)
	}
	_, err := Schema(context.Background(), opts("resources_servers/none"))
	var none *NoSchemaError
	if !errors.As(err, &none) || none.Component != "resources_servers/none" {
		t.Errorf("err = %#v", err)
	}
}
