package catalog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// ManifestFile is the file name that turns a catalog directory into an
// experimental, manifest-backed entry.
const ManifestFile = "manifest.yaml"

// Lifecycle values of a manifest.
const (
	LifecycleActive     = "active"
	LifecycleDeprecated = "deprecated"
)

// Manifest is what the catalog reads from a manifest.yaml. NeMo Gym's
// manifest also mirrors the runtime composition (authors, reward, servers,
// datasets, ...); the catalog neither shows nor checks those, so a manifest
// from a newer or older NeMo Gym that only differs there still lists.
type Manifest struct {
	Name               string
	Kind               string
	Version            string
	IntegrationProfile string
	Domain             string
	Description        string
	Modality           string
	Licensing          string
	Lifecycle          string
	// Experimental is the manifest's manual flag (true unless it says
	// false): only an experimental manifest lists as such.
	Experimental bool
	// ConfigPath is the entry's config, relative to the manifest's
	// directory (config.yaml unless the manifest says otherwise).
	ConfigPath string

	// Where name and kind were declared, for the catalog's identity errors.
	nameAt, kindAt tree.Origin
}

// ManifestError is a manifest that cannot be read, parsed or validated
// (NeMo Gym's ManifestError). Listings leave such a manifest out.
type ManifestError struct {
	Path string
	// Problems are the validation failures, each naming its field and line;
	// empty when the file could not be read or parsed at all.
	Problems []string
	Err      error
}

func (e *ManifestError) Error() string {
	if len(e.Problems) == 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("Invalid environment manifest '%s':\n  - %s", e.Path, strings.Join(e.Problems, "\n  - "))
}

func (e *ManifestError) Unwrap() error { return e.Err }

// RegistryError is a manifest that loads but contradicts where it sits in
// the catalog (NeMo Gym's RegistryError). It aborts the listing, because
// the catalog cannot tell which identity the author meant.
type RegistryError struct {
	Msg   string
	Where tree.Origin
}

func (e *RegistryError) Error() string {
	if e.Where.Line > 0 {
		return e.Msg + "\n  (at " + e.Where.String() + ")"
	}
	return e.Msg
}

// LoadManifest reads and validates a manifest file.
func LoadManifest(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &ManifestError{Path: path, Err: fmt.Errorf("Environment manifest '%s' was not found.", path)}
		}
		return nil, &ManifestError{Path: path, Err: fmt.Errorf("Could not read environment manifest '%s': %w", path, err)}
	}
	return ParseManifest(data, path)
}

// ParseManifest validates manifest YAML; path names it in errors. The
// fields the catalog shows are checked as NeMo Gym's schema types them:
// name, version, kind, integration_profile, domain, description and
// modality are required non-empty strings (surrounding whitespace
// stripped), kind is environment or benchmark, domain one of the domains a
// resources server may declare, licensing defaults to "unknown" and
// lifecycle to "active" (or "deprecated").
func ParseManifest(data []byte, path string) (*Manifest, error) {
	n, err := pyyaml.Load(data, path)
	if err != nil {
		var syn *pyyaml.SyntaxError
		if errors.As(err, &syn) {
			return nil, &ManifestError{Path: path, Err: manifestSyntaxError(syn)}
		}
		return nil, &ManifestError{Path: path, Err: fmt.Errorf("Malformed YAML in environment manifest '%s': %w", path, err)}
	}
	if n.Kind != tree.Map {
		return nil, &ManifestError{Path: path, Err: fmt.Errorf("Invalid environment manifest '%s': expected a YAML mapping.", path)}
	}
	v := manifestValidator{doc: n}
	m := &Manifest{
		Name:               v.required("name"),
		Version:            v.required("version"),
		Kind:               v.choice("kind", "", KindEnvironment, KindBenchmark),
		IntegrationProfile: v.required("integration_profile"),
		Domain:             v.choice("domain", "", config.Domains...),
		Description:        v.required("description"),
		Modality:           v.required("modality"),
		Licensing:          v.optional("licensing", "unknown"),
		Lifecycle:          v.choice("lifecycle", LifecycleActive, LifecycleActive, LifecycleDeprecated),
		ConfigPath:         v.optional("config_path", siblingConfig),
		Experimental:       v.boolean("experimental", true),
	}
	if len(v.problems) > 0 {
		return nil, &ManifestError{Path: path, Problems: v.problems}
	}
	m.nameAt, m.kindAt = n.Get("name").Origin, n.Get("kind").Origin
	return m, nil
}

// siblingConfig is a manifest's config when it names none.
const siblingConfig = "config.yaml"

// resolveConfig is where a manifest's config_path points, in the form the
// manifest's path was given in, kept (symlinks resolved) inside tree, the
// benchmarks/ or environments/ directory being discovered, as NeMo Gym's
// resolve_manifest_config_path keeps it. A config_path that is absolute or
// leaves that tree makes the manifest invalid.
func (m *Manifest) resolveConfig(manifestPath, tree string) (string, error) {
	path, err := filepath.Abs(manifestPath)
	if err != nil {
		return "", &ManifestError{Path: manifestPath, Err: err}
	}
	if filepath.IsAbs(m.ConfigPath) {
		return "", &ManifestError{Path: path, Err: fmt.Errorf("Manifest '%s' config_path must be relative.", path)}
	}
	config := filepath.Join(filepath.Dir(manifestPath), m.ConfigPath)
	if rel, err := filepath.Rel(realPath(tree), realPath(config)); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", &ManifestError{Path: path, Err: fmt.Errorf("Manifest '%s' config_path escapes catalog tree '%s'.", path, tree)}
	}
	return config, nil
}

func manifestSyntaxError(e *pyyaml.SyntaxError) error {
	at := ""
	switch {
	case e.Line > 0 && e.Column > 0:
		at = fmt.Sprintf(" at line %d, column %d", e.Line, e.Column)
	case e.Line > 0:
		at = fmt.Sprintf(" at line %d", e.Line)
	}
	return fmt.Errorf("Malformed YAML in environment manifest '%s'%s: %s", e.File, at, e.Problem)
}

// manifestValidator collects every problem of a manifest, as pydantic
// reports them all at once.
type manifestValidator struct {
	doc      *tree.Node
	problems []string
}

func (v *manifestValidator) fail(key string, n *tree.Node, msg string) {
	if n != nil && n.Origin.Line > 0 {
		key = fmt.Sprintf("%s (line %d)", key, n.Origin.Line)
	}
	v.problems = append(v.problems, key+": "+msg)
}

// str returns a field's value with surrounding whitespace stripped; present
// is false when the field is absent. A present value that is not a
// non-empty string is reported.
func (v *manifestValidator) str(key string) (s string, present bool) {
	n := v.doc.Get(key)
	if n == nil {
		return "", false
	}
	if n.Kind != tree.String {
		msg := "Input should be a valid string, got a " + n.Kind.String()
		if n.IsScalar() && n.Kind != tree.Null {
			// YAML reads `version: 1.0` or `name: yes` as no string.
			msg += " (" + interp.PythonStr(n) + "); quote the value"
		}
		v.fail(key, n, msg)
		return "", true
	}
	if s = strings.TrimSpace(n.Str); s == "" {
		v.fail(key, n, "String should have at least 1 character")
	}
	return s, true
}

// boolean is a flag as pydantic's lax mode reads one (config.LaxBoolOK).
func (v *manifestValidator) boolean(key string, def bool) bool {
	n := v.doc.Get(key)
	if n == nil {
		return def
	}
	if b, ok := config.LaxBoolOK(n); ok {
		return b
	}
	v.fail(key, n, "Input should be a valid boolean")
	return def
}

func (v *manifestValidator) required(key string) string {
	s, present := v.str(key)
	if !present {
		v.fail(key, nil, "Field required")
	}
	return s
}

func (v *manifestValidator) optional(key, def string) string {
	if s, present := v.str(key); present {
		return s
	}
	return def
}

// choice is a field limited to choices; def "" makes it required.
func (v *manifestValidator) choice(key, def string, choices ...string) string {
	n := v.doc.Get(key)
	if n == nil {
		if def == "" {
			v.fail(key, nil, "Field required")
		}
		return def
	}
	if n.Kind == tree.String {
		for _, c := range choices {
			if strings.TrimSpace(n.Str) == c {
				return c
			}
		}
	}
	last := len(choices) - 1
	msg := "'" + choices[last] + "'"
	if last > 0 {
		msg = "'" + strings.Join(choices[:last], "', '") + "' or " + msg
	}
	v.fail(key, n, "Input should be "+msg)
	return ""
}
