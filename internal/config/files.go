package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// LoadFile reads one YAML config file into a tree. A missing file is a
// ConfigPathNotFoundError; a top level that is not a mapping is an error.
func LoadFile(path string) (*tree.Node, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{Class: ClassConfigPathNotFound, Msg: err.Error(), Err: err}
	}
	n, err := pyyaml.Load(data, path)
	if err != nil {
		return nil, &Error{Class: ClassConfig, Msg: err.Error(), Err: err}
	}
	if n.Kind != tree.Map {
		return nil, errorf(ClassConfig, n.Origin,
			"the top level of '%s' must be a mapping of keys to values, got a %s", path, n.Kind)
	}
	return n, nil
}

// loadEnvYAML loads the first env.yaml found across the roots; none is an
// empty layer.
func loadEnvYAML(roots *resolve.Roots) (*tree.Node, error) {
	path := roots.Resolve("env.yaml")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return tree.NewMap(), nil
	}
	return LoadFile(path)
}

type includeNode struct {
	entry    string
	tree     *tree.Node
	children []int
}

// expandConfigPaths loads every config file reachable from the given
// entries. Files are discovered breadth-first (an entry already seen, by
// exact string, is loaded once, so include cycles end) and returned in
// post-order, so a file beats everything it includes and a later sibling
// beats an earlier one with its whole subtree. discovered is the
// breadth-first list that becomes the final config_paths.
func expandConfigPaths(ctx context.Context, env Env, entries []string) (files []*tree.Node, discovered []string, err error) {
	roots := env.Roots
	nodes := make([]includeNode, 0, len(entries))
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		nodes = append(nodes, includeNode{entry: e})
		seen[e] = true
	}
	var duplicates []string
	for i := 0; i < len(nodes); i++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		path := roots.Resolve(nodes[i].entry)
		if _, statErr := os.Stat(path); statErr != nil {
			nf := roots.NotFound(nodes[i].entry)
			return nil, nil, &Error{Class: ClassConfigPathNotFound, Msg: nf.Error(), Err: nf}
		}
		t, err := LoadFile(path)
		if err != nil {
			return nil, nil, err
		}
		nodes[i].tree = t
		own, err := ownConfigPaths(t, path, env)
		if err != nil {
			return nil, nil, err
		}
		for _, p := range own {
			if seen[p] {
				duplicates = append(duplicates, fmt.Sprintf("%s (included again by %s)", p, nodes[i].entry))
				continue
			}
			seen[p] = true
			nodes = append(nodes, includeNode{entry: p})
			nodes[i].children = append(nodes[i].children, len(nodes)-1)
		}
	}
	if len(duplicates) > 0 {
		fmt.Fprintf(env.Warnings, "Found configs that reference the same source config path; each is loaded once:\n  - %s\n",
			strings.Join(duplicates, "\n  - "))
	}
	var visit func(i int)
	visit = func(i int) {
		for _, c := range nodes[i].children {
			visit(c)
		}
		files = append(files, nodes[i].tree)
	}
	for i := range entries {
		visit(i)
	}
	discovered = make([]string, len(nodes))
	for i, n := range nodes {
		discovered[i] = n.entry
	}
	return files, discovered, nil
}

// ownConfigPaths reads a file's own config_paths, resolving interpolation
// against that file alone, as upstream does. Unlike upstream, a value that
// is not a list of strings is an error rather than iterated by character.
func ownConfigPaths(t *tree.Node, file string, env Env) ([]string, error) {
	raw := t.Get("config_paths")
	if raw == nil {
		return nil, nil
	}
	v, err := newResolver(t, env).full(raw, Path{{Key: "config_paths"}})
	if err != nil {
		return nil, err
	}
	return configPathList(v, raw.Origin, file)
}
