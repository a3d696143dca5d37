package scaffold

import (
	"encoding/json"
	"github.com/nemo-gym-go/gym/internal/gosource"
	"os"
	"path/filepath"
	"sort"

	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// ResourcesServerOptions say which standalone resources server to make.
type ResourcesServerOptions struct {
	// Root is the scaffold root (the working directory); Dir the server's
	// directory relative to it, resources_servers/<name> from the flag.
	Root, Dir string
	Lang      Lang
	// Go is how a Go server's module finds gym's public package; required
	// for LangGo.
	Go *gosource.Module
}

// ResourcesServer makes a standalone resources server: NeMo Gym's files,
// or the Go variant. An existing directory is left alone (ExistsError).
func ResourcesServer(o ResourcesServerOptions) (*Result, error) {
	if err := checkRoot(o.Root); err != nil {
		return nil, err
	}
	dir := filepath.ToSlash(filepath.Clean(o.Dir))
	name := filepath.Base(dir)
	if err := ValidateName(name, true); err != nil {
		return nil, err
	}
	abs := filepath.Join(o.Root, filepath.FromSlash(dir))
	if _, err := os.Lstat(abs); err == nil {
		return nil, &ExistsError{Dir: abs}
	}
	var files Files
	if o.Lang == LangGo {
		if o.Go == nil {
			return nil, errorf("a Go resources server needs the location of gym's Go module")
		}
		files = goResourcesServerFiles(dir, name, o.Go, render("go/config.yaml", struct{ Module string }{name}))
	} else {
		files = pythonResourcesServerFiles(dir, name, standaloneConfig(name), standaloneReadme(), requirements(o.Root, dir))
		files[dir+"/data/.gitignore"] = render("python/data_gitignore", nil)
	}
	return Write(o.Root, dir, files)
}

// pythonResourcesServerFiles are the files of a Python resources server
// every scaffold shares.
func pythonResourcesServerFiles(dir, module, config, readme, reqs string) Files {
	data := struct{ Class string }{className(module)}
	return Files{
		dir + "/__init__.py":                 packageInit,
		dir + "/README.md":                   readme,
		dir + "/app.py":                      python("resources_app.py", data),
		dir + "/configs/" + module + ".yaml": config,
		dir + "/requirements.txt":            reqs,
		dir + "/tests/__init__.py":           packageInit,
		dir + "/tests/test_app.py":           python("resources_test_app.py", nil),
		dir + "/tests/verifier_cases.jsonl":  render("python/verifier_cases.jsonl", nil),
		// NeMo Gym 0.7.0 writes this row to <dir>/example.jsonl, where
		// nothing reads it; the config's example dataset is data/example.jsonl.
		dir + "/data/example.jsonl": exampleRow(),
	}
}

func standaloneConfig(module string) string {
	return render("python/resources_config.yaml", struct{ Module string }{module})
}

func standaloneReadme() string { return render("python/resources_README.md", nil) }

// exampleRow is the one task row of an environment's example data.
func exampleRow() string {
	row := map[string]any{
		"responses_create_params": map[string]any{
			"input": []any{map[string]any{"role": "user", "content": "What is 6 x 7? Reply with only the answer."}},
		},
		"expected_answer": "42",
	}
	return pyJSONLine(row, "responses_create_params", "expected_answer")
}

// pyJSONLine writes an object as Python's json.dumps does (", " and ": "
// separators) with its top-level keys in the given order.
func pyJSONLine(obj map[string]any, keys ...string) string {
	return pyObject(obj, keys) + "\n"
}

// pyObject is json.dumps of obj with its keys in this order.
func pyObject(obj map[string]any, keys []string) string {
	out := "{"
	for i, k := range keys {
		if i > 0 {
			out += ", "
		}
		out += pyJSON(k) + ": " + pyJSON(obj[k])
	}
	return out + "}"
}

// pyJSON is json.dumps of a value built from maps, lists and strings, a
// map's keys in orderedKeys' order.
func pyJSON(v any) string {
	switch v := v.(type) {
	case string:
		b, _ := json.Marshal(v)
		return string(b)
	case []any:
		out := "["
		for i, item := range v {
			if i > 0 {
				out += ", "
			}
			out += pyJSON(item)
		}
		return out + "]"
	case map[string]any:
		return pyObject(v, orderedKeys(v))
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// orderedKeys gives a row's message keys as NeMo Gym writes them (role
// before content), any other map sorted.
func orderedKeys(m map[string]any) []string {
	if _, ok := m["role"]; ok && len(m) == 2 {
		return []string{"role", "content"}
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// manifestResourcesServerConfig is the config of a resources server a
// manifest scaffold makes: yaml.safe_dump of its instance.
func manifestResourcesServerConfig(instance, implementation, entrypoint string) string {
	impl := tree.NewMap()
	impl.Set("entrypoint", tree.NewString(entrypoint))
	impl.Set("domain", tree.NewString("other"))
	impl.Set("verified", tree.NewBool(false))
	return dump(nest(instance, "resources_servers", implementation, impl))
}

// nest builds {k1: {k2: ... leaf}}.
func nest(keys ...any) *tree.Node {
	leaf := keys[len(keys)-1].(*tree.Node)
	for i := len(keys) - 2; i >= 0; i-- {
		m := tree.NewMap()
		m.Set(keys[i].(string), leaf)
		leaf = m
	}
	return leaf
}

// dump is yaml.safe_dump(..., sort_keys=False, allow_unicode=True), which
// for the scaffold's plain trees writes what gym's PyYAML emitter writes.
func dump(n *tree.Node) string { return string(pyyaml.Dump(n, pyyaml.Options{})) }
