package workload

import (
	"context"
	"fmt"
	"strings"

	"github.com/nemo-gym-go/gym/internal/catalog"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// PublicationReport is NeMo Gym's EnvironmentPublicationReport (`gym env
// publish --json`).
type PublicationReport struct {
	Name          string  `json:"name"`
	Version       string  `json:"version"`
	Kind          string  `json:"kind"`
	Status        *string `json:"status,omitempty"`
	ManifestPath  string  `json:"manifest_path"`
	VerifierCases int     `json:"verifier_cases"`
}

// PublicationError is a workload that failed a publication check.
type PublicationError struct{ Msg string }

func (e *PublicationError) Error() string { return e.Msg }

// Publish runs NeMo Gym's local publication checks on a catalog entry:
// it validates, its verifier fixture passes, no scaffold placeholder is
// left (a description or author starting with TODO, licensing unknown, a
// benchmark's canonical_split or standard_prompt_config starting with
// TODO), and the catalog resolves its name and kind to exactly this
// manifest, with status experimental. Nothing is uploaded.
func Publish(ctx context.Context, t *Target, o Options, py RunOptions) (*PublicationReport, error) {
	if t.Manifest == "" {
		return nil, &PublicationError{Msg: fmt.Sprintf("'%s' has no manifest and cannot be published.", t.Name)}
	}
	o.Manifest, o.Config, o.Sync = t.Manifest, t.Config, false
	verifier, validation, err := Exercise(ctx, o, py, false)
	if err != nil {
		return nil, err
	}
	m, _, err := LoadManifest(t.Manifest)
	if err != nil {
		return nil, err
	}
	if left := placeholders(m); len(left) > 0 {
		return nil, &PublicationError{Msg: "Replace scaffold placeholders before publishing: " + strings.Join(left, ", ")}
	}
	if validation.Name != t.Name || validation.Kind != t.Kind {
		return nil, &PublicationError{Msg: "Validation report does not describe the selected catalog entry."}
	}
	if verifier.Name != t.Name || verifier.Kind != t.Kind || len(verifier.Cases) == 0 {
		return nil, &PublicationError{Msg: "Verifier report does not describe a passing fixture for this workload."}
	}
	cat, err := catalog.Discover(resolve.NewRoots(o.ExtraRoots, o.Cwd, o.InstallRoot))
	if err != nil {
		return nil, err
	}
	selected := realPath(t.Manifest)
	var matches []catalog.Entry
	for _, e := range cat.Entries {
		if e.Name == t.Name && e.Kind == t.Kind && e.Manifest != "" && realPath(e.Manifest) == selected {
			matches = append(matches, e)
		}
	}
	if len(matches) != 1 {
		return nil, &PublicationError{Msg: fmt.Sprintf("Catalog did not resolve %s %s to its exact manifest after publication checks.", t.Kind, pyRepr(t.Name))}
	}
	status := matches[0].Status
	if status != "" && status != catalog.StatusExperimental {
		return nil, &PublicationError{Msg: fmt.Sprintf("Published workload has unsupported catalog status %s.", pyRepr(status))}
	}
	return &PublicationReport{Name: validation.Name, Version: validation.Version, Kind: validation.Kind,
		Status: optionalString(status), ManifestPath: selected, VerifierCases: len(verifier.Cases)}, nil
}

func placeholders(m *Manifest) []string {
	todo := func(s string) bool { return strings.HasPrefix(strings.ToLower(strings.TrimSpace(s)), "todo") }
	var out []string
	if todo(m.Description) {
		out = append(out, "description")
	}
	for _, a := range m.Authors {
		if todo(a) {
			out = append(out, "authors")
			break
		}
	}
	if m.Licensing == "unknown" {
		out = append(out, "licensing")
	}
	if m.Kind == "benchmark" {
		if todo(m.CanonicalSplit) {
			out = append(out, "canonical_split")
		}
		if todo(m.StandardPromptConfig) {
			out = append(out, "standard_prompt_config")
		}
	}
	return out
}
