// Package scaffold writes new components in NeMo Gym's layout, as
// `gym env init` makes them: a standalone resources server
// (resources_servers/<name>: app.py, configs/<name>.yaml, tests, data,
// requirements.txt, README.md), or a manifest-backed environment or
// benchmark (environments|benchmarks/<name>: manifest.yaml, config.yaml,
// data, README.md) with the resources server and agent its integration
// profile calls for. The Python files are NeMo Gym 0.7.0's, byte for
// byte; a resources server can also be made in Go (LangGo), as a Go module
// of its own built on the public package gymserver.
//
// Nothing is ever overwritten: a file that exists with other content is a
// conflict, reported before anything is written; one with the same content
// is left as it is, so scaffolding again is a no-op.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"
)

// Kind is what a manifest-backed scaffold makes.
type Kind string

const (
	Environment Kind = "environment"
	Benchmark   Kind = "benchmark"
)

// Profile is a manifest's integration_profile: which extension points the
// scaffold writes.
type Profile string

const (
	CustomGymVerifier     Profile = "custom-gym-verifier"
	CustomGymAgentLoop    Profile = "custom-gym-agent-loop"
	ExternalAgentLoop     Profile = "external-agent-loop"
	ExternalRolloutDriver Profile = "external-rollout-driver"
)

// Profiles lists the integration profiles in NeMo Gym's order.
var Profiles = []Profile{CustomGymVerifier, CustomGymAgentLoop, ExternalAgentLoop, ExternalRolloutDriver}

// Lang is the language a resources server is written in.
type Lang string

const (
	LangPython Lang = "python"
	LangGo     Lang = "go"
)

// Error is a scaffold that cannot be made safely.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func errorf(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// ConflictError lists the paths a scaffold would overwrite.
type ConflictError struct{ Paths []string }

func (e *ConflictError) Error() string {
	var b strings.Builder
	b.WriteString("Scaffolding would overwrite existing content:")
	for _, p := range e.Paths {
		b.WriteString("\n  - " + p)
	}
	return b.String()
}

// ExistsError is a standalone resources server whose directory exists:
// NeMo Gym leaves it alone, and so does gym.
type ExistsError struct{ Dir string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("Folder already exists: %s. Exiting init.", e.Dir)
}

// Result is what a scaffold did: the component directory, and the files
// it created and found already in place (absolute paths, sorted).
type Result struct {
	Dir      string
	Created  []string
	Existing []string
}

// Files maps a path relative to the scaffold root (slash-separated) to its
// content.
type Files map[string]string

// executables are the file names written with the executable bit: the Go
// server's entrypoint.
var executables = map[string]bool{"run": true}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// pythonKeywords are Python's keywords that fit the name pattern (the
// capitalised False/None/True cannot).
var pythonKeywords = map[string]bool{
	"and": true, "as": true, "assert": true, "async": true, "await": true, "break": true, "class": true,
	"continue": true, "def": true, "del": true, "elif": true, "else": true, "except": true, "finally": true,
	"for": true, "from": true, "global": true, "if": true, "import": true, "in": true, "is": true,
	"lambda": true, "nonlocal": true, "not": true, "or": true, "pass": true, "raise": true, "return": true,
	"try": true, "while": true, "with": true, "yield": true,
}

var identifierPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// ValidateName checks a component name as NeMo Gym does: one lowercase
// path segment, not a Python keyword, and a Python identifier when the
// scaffold makes a Python module of that name.
func ValidateName(name string, pythonModule bool) error {
	if !namePattern.MatchString(name) || pythonKeywords[name] {
		return errorf("name %q must be one lowercase path segment containing letters, digits, '.', '_' or '-'", name)
	}
	if pythonModule && !identifierPattern.MatchString(name) {
		return errorf("name %q: a scaffold that creates Python components requires a lowercase Python identifier (letters, digits and '_', starting with a letter)", name)
	}
	return nil
}

// className is NeMo Gym's class-name stem of a module: each '_'-separated
// part capitalised (Python's str.capitalize), joined.
func className(module string) string {
	var b strings.Builder
	for _, part := range strings.Split(module, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + strings.ToLower(part[1:]))
	}
	return b.String()
}

//go:embed templates
var templates embed.FS

// render fills the template at templates/<name> with data.
func render(name string, data any) string {
	text, err := fs.ReadFile(templates, "templates/"+name)
	if err != nil {
		panic("scaffold: missing template " + name)
	}
	t := template.Must(template.New(name).Option("missingkey=error").Parse(string(text)))
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		panic(fmt.Sprintf("scaffold: template %s: %v", name, err))
	}
	return b.String()
}

// licenseHeader opens every Python file NeMo Gym writes.
const licenseHeader = "# SPDX-FileCopyrightText: Copyright (c) 2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.\n# SPDX-License-Identifier: Apache-2.0\n\n"

// packageInit is an __init__.py: the header alone.
const packageInit = "# SPDX-FileCopyrightText: Copyright (c) 2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.\n# SPDX-License-Identifier: Apache-2.0\n"

func python(name string, data any) string { return licenseHeader + render("python/"+name, data) }

// requirements is a Python component's requirements.txt: nemo-gym from the
// index, or from the NeMo Gym checkout the scaffold root is.
func requirements(root, componentDir string) string {
	if !isNeMoGymCheckout(root) {
		return "nemo-gym[dev]\n"
	}
	rel, err := filepath.Rel(filepath.Join(root, filepath.FromSlash(componentDir)), root)
	if err != nil {
		return "nemo-gym[dev]\n"
	}
	return "-e nemo-gym[dev] @ " + filepath.ToSlash(rel) + "\n"
}

func isNeMoGymCheckout(root string) bool {
	info, err := os.Stat(filepath.Join(root, "pyproject.toml"))
	if err != nil || info.IsDir() {
		return false
	}
	info, err = os.Stat(filepath.Join(root, "nemo_gym"))
	return err == nil && info.IsDir()
}

// Write creates files under root without replacing anything: every target
// is checked first (a file with other content, a file where a directory
// must go, a symlink on the way are conflicts), then the missing files are
// created exclusively. dir is the component directory the result names.
func Write(root, dir string, files Files) (*Result, error) {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	res := &Result{Dir: filepath.Join(root, filepath.FromSlash(dir))}
	conflicts := map[string]bool{}
	existing := map[string]bool{}
	for _, p := range paths {
		abs := filepath.Join(root, filepath.FromSlash(p))
		blocked, err := checkTarget(root, p, conflicts)
		if err != nil {
			return nil, err
		}
		if blocked {
			continue
		}
		data, err := os.ReadFile(abs)
		switch {
		case err == nil && string(data) == files[p]:
			existing[p] = true
		case err == nil:
			conflicts[abs] = true
		case errors.Is(err, fs.ErrNotExist):
		default:
			if info, serr := os.Stat(abs); serr == nil && info.IsDir() {
				conflicts[abs] = true
				continue
			}
			return nil, errorf("could not inspect scaffold target %s: %v", abs, err)
		}
	}
	if len(conflicts) > 0 {
		var list []string
		for p := range conflicts {
			list = append(list, p)
		}
		sort.Strings(list)
		return nil, &ConflictError{Paths: list}
	}
	for _, p := range paths {
		abs := filepath.Join(root, filepath.FromSlash(p))
		if existing[p] {
			res.Existing = append(res.Existing, abs)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return res, err
		}
		perm := os.FileMode(0o644)
		if executables[filepath.Base(p)] {
			perm = 0o755
		}
		f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			return res, err
		}
		_, werr := f.WriteString(files[p])
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return res, werr
		}
		// The umask may have taken the executable bit; an entrypoint needs it.
		if perm == 0o755 {
			if err := os.Chmod(abs, perm); err != nil {
				return res, err
			}
		}
		res.Created = append(res.Created, abs)
	}
	return res, nil
}

// checkTarget walks the directories from root to p: a symlink on the way
// is refused (a scaffold never writes through one), and a file where a
// directory must be is a conflict, which blocks p.
func checkTarget(root, p string, conflicts map[string]bool) (blocked bool, err error) {
	cur := root
	parts := strings.Split(p, "/")
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		info, err := os.Lstat(cur)
		if err != nil {
			return false, nil
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return false, errorf("scaffold target traverses symlink %s", cur)
		}
		if i < len(parts)-1 && !info.IsDir() {
			conflicts[cur] = true
			return true, nil
		}
	}
	return false, nil
}

// checkRoot refuses a scaffold root that is a symlink or not a directory,
// as NeMo Gym does.
func checkRoot(root string) error {
	info, err := os.Lstat(root)
	if err != nil {
		return errorf("scaffold root %s: %v", root, err)
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return errorf("scaffold root must not be a symlink: %s", root)
	}
	if !info.IsDir() {
		return errorf("scaffold root must be a directory: %s", root)
	}
	return nil
}
