package workload

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nemo-gym-go/gym/internal/catalog"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// Target is a catalog entry a command works on.
type Target struct {
	Name, Kind string
	// Manifest is "" for an entry without one.
	Manifest string
	Config   string
}

// NotFoundError is a workload name the catalog does not hold (NeMo Gym's
// RegistryError from resolve_catalog_entry).
type NotFoundError struct{ Msg string }

func (e *NotFoundError) Error() string { return e.Msg }

// Find resolves a workload name (of kind "environment", "benchmark" or
// "" for either) in the unified catalog over roots. A manifest the
// catalog leaves out because it does not load (NeMo Gym then says the
// name has no manifest) is still found, so that validation can say what
// is wrong with it.
func Find(roots *resolve.Roots, name, kind string) (*Target, error) {
	cat, discoverErr := catalog.Discover(roots)
	var matches []catalog.Entry
	if discoverErr == nil {
		for _, e := range cat.Entries {
			if e.Name == name && (kind == "" || e.Kind == kind) {
				matches = append(matches, e)
			}
		}
	}
	if len(matches) > 1 {
		kinds := make([]string, len(matches))
		for i, e := range matches {
			kinds[i] = e.Kind
		}
		sort.Strings(kinds)
		return nil, &NotFoundError{Msg: fmt.Sprintf("Catalog name '%s' is ambiguous (%s); specify a kind.", name, strings.Join(kinds, ", "))}
	}
	if len(matches) == 1 && matches[0].Manifest != "" {
		e := matches[0]
		return &Target{Name: e.Name, Kind: e.Kind, Manifest: e.Manifest, Config: e.Config}, nil
	}
	// The manifest that failed to load, or that made discovery fail.
	for _, root := range roots.List() {
		for _, t := range []struct{ dir, kind string }{{"environments", catalog.KindEnvironment}, {"benchmarks", catalog.KindBenchmark}} {
			if kind != "" && kind != t.kind {
				continue
			}
			path := filepath.Join(root, t.dir, filepath.FromSlash(name), catalog.ManifestFile)
			if isFile(path) {
				return &Target{Name: name, Kind: t.kind, Manifest: path}, nil
			}
		}
	}
	if discoverErr != nil {
		return nil, discoverErr
	}
	if len(matches) == 1 {
		e := matches[0]
		return &Target{Name: e.Name, Kind: e.Kind, Config: e.Config}, nil
	}
	suffix := ""
	if kind != "" {
		suffix = fmt.Sprintf(" with kind '%s'", kind)
	}
	var names []string
	if cat != nil {
		for _, e := range cat.Entries {
			if kind == "" || e.Kind == kind {
				names = append(names, e.Name)
			}
		}
	}
	return nil, &NotFoundError{Msg: fmt.Sprintf("Unknown catalog entry '%s'%s.%s", name, suffix, resolve.DidYouMean(name, names))}
}
