// Package resolve finds gym's files the way NeMo Gym finds them: relative read
// paths are looked up across an ordered list of search roots (extra roots, the
// working directory, the install root), asset selectors such as
// `--benchmark gsm8k` map to config files, listings merge components across
// roots, typos get a difflib-exact "did you mean" hint, and the built-in
// components embedded in the binary get a real directory to be found in.
//
// Nothing here reads the process environment or working directory on its own:
// callers pass them in, so every decision can be reproduced in a test.
package resolve

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Roots is the ordered, de-duplicated list of directories relative read paths
// are resolved against. Earlier roots win.
//
// Each root keeps the form it was given in (after pathlib-style tidying of "."
// and repeated separators), because that is what NeMo Gym prints in its
// messages. A relative extra root stays relative: paths built from it are
// relative to the cwd given to NewRoots, which is also where this package
// looks them up.
type Roots struct {
	roots []root
}

type root struct {
	given string // as listed, for messages and returned paths
	abs   string // anchored at the cwd, for looking things up
}

// NewRoots builds the root list of NeMo Gym's spec §5.1: each non-empty entry
// of extraRoots (the NEMO_GYM_EXTRA_ROOTS value, split on the OS path-list
// separator, not ~-expanded), then cwd, then installRoot. Entries that resolve
// to the same symlink-free absolute path are listed once, at the first place
// they appear. An empty cwd or installRoot is left out.
func NewRoots(extraRoots, cwd, installRoot string) *Roots {
	anchor := cwd
	if !filepath.IsAbs(anchor) {
		// A relative or empty cwd can only mean the process's own.
		if wd, err := filepath.Abs(anchor); err == nil {
			anchor = wd
		}
	}
	var entries []string
	for _, e := range filepath.SplitList(extraRoots) {
		if e != "" {
			entries = append(entries, e)
		}
	}
	for _, e := range []string{cwd, installRoot} {
		if e != "" {
			entries = append(entries, e)
		}
	}

	r := &Roots{}
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		given := cleanPath(e)
		abs := joinPath(anchor, given)
		key := realPath(abs)
		if seen[key] {
			continue
		}
		seen[key] = true
		r.roots = append(r.roots, root{given: given, abs: abs})
	}
	return r
}

// List returns the roots in priority order, in the form they were given.
func (r *Roots) List() []string {
	out := make([]string, len(r.roots))
	for i, rt := range r.roots {
		out[i] = rt.given
	}
	return out
}

// Resolve returns where the read path rel lives: rel itself when absolute
// (whether or not it exists), else root/rel for the first root where it exists
// as a file or directory, else roots[0]/rel so that an error names the user's
// own location rather than the install tree.
func (r *Roots) Resolve(rel string) string {
	return r.ResolveFunc(rel, exists)
}

// ResolveFunc is Resolve with a stricter test of what counts as found, for
// callers such as server directories that must hold requirements.txt,
// pyproject.toml, go.mod or a registered Go implementation. valid receives the
// candidate anchored at the cwd given to NewRoots, so it can inspect the file
// system whatever the process's working directory is.
func (r *Roots) ResolveFunc(rel string, valid func(path string) bool) string {
	if filepath.IsAbs(rel) || len(r.roots) == 0 {
		return rel
	}
	for _, rt := range r.roots {
		if valid(joinPath(rt.abs, rel)) {
			return joinPath(rt.given, rel)
		}
	}
	return joinPath(r.roots[0].given, rel)
}

// Candidates lists every place Resolve looks for rel, in order and without
// repeats: the path itself when absolute, else root/rel for each root.
func (r *Roots) Candidates(rel string) []string {
	if filepath.IsAbs(rel) {
		return []string{rel}
	}
	out := make([]string, 0, len(r.roots))
	seen := make(map[string]bool, len(r.roots))
	for _, rt := range r.roots {
		p := joinPath(rt.given, rel)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// NotFound builds the error for a config_paths entry that exists under no root.
func (r *Roots) NotFound(entry string) *NotFoundError {
	return &NotFoundError{Entry: entry, Looked: r.Candidates(entry)}
}

// NotFoundError is NeMo Gym's ConfigPathNotFoundError: a config_paths entry
// that exists under none of the roots.
type NotFoundError struct {
	Entry  string   // the entry as the user wrote it
	Looked []string // every location tried, in root order
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "config_paths entry '%s' was not found. Looked in:\n", e.Entry)
	for _, p := range e.Looked {
		fmt.Fprintf(&b, "  - %s\n", p)
	}
	b.WriteString("Check the path is spelled correctly and is relative to your working directory, an extra root\n" +
		"(NEMO_GYM_EXTRA_ROOTS / --search-dir), or the Gym install root.")
	return b.String()
}

// Unwrap lets errors.Is(err, fs.ErrNotExist) hold, as it does for NeMo Gym's
// FileNotFoundError subclass.
func (e *NotFoundError) Unwrap() error { return fs.ErrNotExist }

// WithSearchDirs returns the NEMO_GYM_EXTRA_ROOTS value for one command run
// with `--search-dir` dirs: the dirs exactly as given, ahead of the previous
// value so they win, joined by the OS path-list separator. Restoring the
// previous value (or unsetting it) afterwards is the caller's job.
func WithSearchDirs(dirs []string, previous string) string {
	parts := append([]string(nil), dirs...)
	if previous != "" {
		parts = append(parts, previous)
	}
	return strings.Join(parts, string(os.PathListSeparator))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// cleanPath tidies p the way Python's pathlib does: it drops "." components
// and repeated separators but keeps ".." (which, past a symlink, does not mean
// the lexical parent). Messages then read exactly as NeMo Gym's.
func cleanPath(p string) string {
	sep := string(filepath.Separator)
	var parts []string
	for _, c := range strings.Split(filepath.ToSlash(p), "/") {
		if c != "" && c != "." {
			parts = append(parts, c)
		}
	}
	joined := strings.Join(parts, sep)
	if filepath.IsAbs(p) {
		return sep + joined
	}
	if joined == "" {
		return "."
	}
	return joined
}

// joinPath is pathlib's `a / b`: b wins when absolute, and the result is
// tidied by cleanPath rather than filepath.Clean.
func joinPath(elems ...string) string {
	start := 0
	for i, e := range elems {
		if filepath.IsAbs(e) {
			start = i
		}
	}
	return cleanPath(strings.Join(elems[start:], string(filepath.Separator)))
}

// realPath is Python's Path.resolve(strict=False) for an absolute path:
// symlinks are resolved as far as the path exists and the rest is appended.
func realPath(abs string) string {
	var rest []string
	for dir := abs; ; {
		if p, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(append([]string{p}, rest...)...)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return filepath.Clean(abs)
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
		dir = parent
	}
}
