package scaffold

import (
	"github.com/nemo-gym-go/gym/internal/gosource"
)

// goModulePath is the module path of a generated Go resources server: a
// name of its own that no proxy serves and no standard package shadows.
func goModulePath(module string) string { return "gym.local/resources_servers/" + module }

// goResourcesServerFiles are the Go variant of a standalone resources
// server: a Go module of its own (main.go on gymserver, main_test.go
// running tests/verifier_cases.jsonl), run by gym through the executable
// ./run, with its config (entrypoint: run), data and fixture cases.
func goResourcesServerFiles(dir, module string, m *gosource.Module, config string) Files {
	data := struct{ Module, Class string }{module, className(module)}
	return Files{
		dir + "/go.mod":                      m.ComponentGoMod(goModulePath(module)),
		dir + "/go.sum":                      m.Sum,
		dir + "/main.go":                     render("go/main.go.tmpl", data),
		dir + "/main_test.go":                render("go/main_test.go.tmpl", data),
		dir + "/run":                         render("go/run", data),
		dir + "/README.md":                   render("go/README.md", data),
		dir + "/configs/" + module + ".yaml": config,
		dir + "/tests/verifier_cases.jsonl":  render("python/verifier_cases.jsonl", nil),
		dir + "/data/example.jsonl":          exampleRow(),
		dir + "/data/.gitignore":             render("python/data_gitignore", nil),
		dir + "/.gitignore":                  "/.gym-build/\n",
	}
}
