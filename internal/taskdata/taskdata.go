// Package taskdata finds a server's task-data schema, what `gym env
// schema` prints: a Python server's task_data.py (NeMo Gym's protocol,
// loaded by Python), or the JSON Schema a Go server declares in
// task_data.schema.json beside its configs.
package taskdata

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nemo-gym-go/gym/internal/resolve"
)

// The files a component declares its schema in.
const (
	PythonModule = "task_data.py"
	SchemaFile   = "task_data.schema.json"
)

// NoSchemaError is a server that declares no schema.
type NoSchemaError struct{ Component string }

func (e *NoSchemaError) Error() string {
	return fmt.Sprintf("%s does not ship a task_data.py schema yet. Add one exporting `TaskData` "+
		"(see nemo_gym/task_data.py for the protocol). A Go server declares its JSON Schema as %s instead.", e.Component, SchemaFile)
}

// Options say which component and how to load a Python schema.
type Options struct {
	Component string // e.g. resources_servers/mcqa
	Roots     *resolve.Roots
	Cwd       string
	// Python prints the schema of the task_data.py in dir.
	Python func(ctx context.Context, dir string) ([]byte, error)
}

// isComponent is a directory that is a server: one with Python install
// markers (NeMo Gym's rule), Go files, or a declared schema.
func isComponent(dir string) bool {
	for _, marker := range []string{"requirements.txt", "pyproject.toml", SchemaFile} {
		if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
			return true
		}
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	return len(matches) > 0
}

// Dir is where the component resolves over the roots (the first root's
// path when it is nowhere).
func Dir(o Options) string {
	dir := o.Roots.ResolveFunc(o.Component, isComponent)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(o.Cwd, dir)
	}
	return dir
}

// Schema is the component's task-data JSON Schema, as printed.
func Schema(ctx context.Context, o Options) ([]byte, error) {
	dir := Dir(o)
	if _, err := os.Stat(filepath.Join(dir, PythonModule)); err == nil {
		return o.Python(ctx, dir)
	}
	path := filepath.Join(dir, SchemaFile)
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, &NoSchemaError{Component: o.Component}
	}
	if err != nil {
		return nil, err
	}
	var schema map[string]any
	if err := json.Unmarshal(data, &schema); err != nil {
		return nil, fmt.Errorf("%s is not a JSON Schema object: %v", path, err)
	}
	return data, nil
}
