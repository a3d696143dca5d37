package workload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// Options say which workload to check and where its configs and files are
// found.
type Options struct {
	// Manifest is the manifest.yaml to check.
	Manifest string
	// Config is the catalog entry's config; "" takes the manifest's
	// config_path.
	Config string
	// Sync rewrites the manifest's mirror of the config (its servers and
	// datasets) from the config, which is authoritative.
	Sync bool
	// Env is how configs load; its Roots are set per workload from the
	// three below, with the workload's own component root first, as NeMo
	// Gym adds it to NEMO_GYM_EXTRA_ROOTS while it validates.
	Env                          config.Env
	ExtraRoots, Cwd, InstallRoot string
	// Seed is the no-model config a workload's config is loaded over.
	Seed *tree.Node
}

// Report is what a valid workload resolves to, in the shape of NeMo Gym's
// EnvironmentValidationReport (its --json output).
type Report struct {
	Name               string          `json:"name"`
	Version            string          `json:"version"`
	Kind               string          `json:"kind"`
	DeclaredProfile    string          `json:"declared_profile"`
	InferredProfile    string          `json:"inferred_profile"`
	ProfileEvidence    string          `json:"profile_evidence"`
	ManifestPath       string          `json:"manifest_path"`
	ConfigPath         string          `json:"config_path"`
	Components         []Component     `json:"components"`
	Datasets           []DatasetReport `json:"datasets"`
	RolloutDriver      *string         `json:"rollout_driver"`
	GradingMode        *string         `json:"grading_mode"`
	SynchronizedFields []string        `json:"synchronized_fields"`
	Warnings           []string        `json:"warnings"`
}

// Component is one server of the resolved composition.
type Component struct {
	Role           string  `json:"role"`
	Name           string  `json:"name"`
	Implementation string  `json:"implementation"`
	Boundary       string  `json:"boundary"`
	Entrypoint     *string `json:"entrypoint"`
}

// DatasetReport is a dataset that checked out.
type DatasetReport struct {
	Name         string  `json:"name"`
	Type         string  `json:"type"`
	Path         string  `json:"path"`
	Rows         int     `json:"rows"`
	PromptConfig *string `json:"prompt_config"`
}

// run is one validation: the manifest, where things resolve, and the
// problems found so far.
type run struct {
	ctx      context.Context
	o        Options
	m        *Manifest
	roots    *resolve.Roots
	comp     *composition
	problems []Problem
	warnings []string
}

func (r *run) manifestProblem(field, msg string) {
	r.problems = append(r.problems, Problem{File: r.m.Path, Line: r.m.Line(strings.SplitN(field, ".", 2)[0]), Field: field, Message: msg})
}

// Validate checks a manifest-backed workload without starting anything:
// the manifest's schema and contract, its place in the catalog, that its
// config resolves and that the manifest mirrors it, the rollout driver,
// the prompt configs, prepare scripts and every dataset row. A workload
// with problems is an *InvalidError listing them all.
func Validate(ctx context.Context, o Options) (*Report, error) {
	_, report, err := validate(ctx, o)
	return report, err
}

// validate is Validate, also returning what later steps (the verifier
// fixture) need: the manifest, the roots and the resolved composition.
func validate(ctx context.Context, o Options) (*run, *Report, error) {
	path, err := filepath.Abs(o.Manifest)
	if err != nil {
		return nil, nil, err
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	m, problems, err := LoadManifest(path)
	if err != nil {
		return nil, nil, &InvalidError{Manifest: path, Problems: []Problem{{File: path, Message: err.Error()}}}
	}
	r := &run{ctx: ctx, o: o, m: m, problems: problems}
	configPath := r.configPath()
	r.checkLocation()
	componentRoot := ""
	if dir := catalogDir(configPath); dir != "" {
		componentRoot = filepath.Dir(dir)
	}
	r.roots = resolve.NewRoots(joinList(componentRoot, o.ExtraRoots), o.Cwd, o.InstallRoot)

	var comp *composition
	if configPath != "" {
		if !isFile(configPath) {
			r.manifestProblem("config_path", "Gym config was not found: "+configPath)
		} else {
			comp = r.compose(ctx, configPath)
		}
	}
	if err := ctx.Err(); err != nil {
		return r, nil, context.Cause(ctx)
	}
	r.comp = comp
	var synced []string
	if comp != nil {
		synced = r.mirror(comp)
	}
	report := &Report{
		Name: m.Name, Version: m.Version, Kind: m.Kind, DeclaredProfile: m.IntegrationProfile,
		ManifestPath: path, ConfigPath: configPath,
		Components: []Component{}, Datasets: []DatasetReport{}, SynchronizedFields: synced, Warnings: []string{},
	}
	if synced == nil {
		report.SynchronizedFields = []string{}
	}
	if comp != nil {
		report.Components = comp.components
		report.RolloutDriver, report.GradingMode = optionalString(comp.rolloutDriver), optionalString(comp.gradingMode)
		report.InferredProfile, report.ProfileEvidence = inferProfile(comp)
		r.profileWarnings(report.InferredProfile, report.ProfileEvidence)
	}
	r.checkPromptContract()
	if m.RolloutDriver != "" {
		r.checkRolloutDriver(m.RolloutDriver)
	}
	for i, d := range m.Datasets {
		if rep, ok := r.checkDataset(i, d); ok {
			report.Datasets = append(report.Datasets, rep)
		}
		if err := ctx.Err(); err != nil {
			return r, report, context.Cause(ctx)
		}
	}
	report.Warnings = append(report.Warnings, r.warnings...)
	if len(r.problems) > 0 {
		return r, report, &InvalidError{Manifest: path, Problems: r.problems}
	}
	if len(synced) > 0 {
		if err := jsonl.WriteFileAtomic(path, DumpManifest(m)); err != nil {
			return r, report, fmt.Errorf("could not rewrite %s with the synchronized fields: %w", path, err)
		}
	}
	return r, report, nil
}

// configPath is where the workload's config is: the catalog's, or the
// manifest's config_path kept inside its catalog tree.
func (r *run) configPath() string {
	if r.o.Config != "" {
		p, err := filepath.Abs(r.o.Config)
		if err != nil {
			return r.o.Config
		}
		return realPath(p)
	}
	if r.m.ConfigPath == "" {
		return ""
	}
	if filepath.IsAbs(r.m.ConfigPath) {
		r.manifestProblem("config_path", "config_path must be relative.")
		return ""
	}
	catalog := catalogDir(r.m.Path)
	if catalog == "" {
		catalog = filepath.Dir(r.m.Path)
	}
	resolved := realPath(filepath.Join(filepath.Dir(r.m.Path), r.m.ConfigPath))
	if !within(realPath(catalog), resolved) {
		r.manifestProblem("config_path", fmt.Sprintf("config_path escapes catalog tree '%s'.", catalog))
		return ""
	}
	return resolved
}

// checkLocation is _validate_manifest_location: the manifest's name is its
// path under environments/ or benchmarks/ (its directory's name outside
// them), and its kind is the tree's.
func (r *run) checkLocation() {
	m := r.m
	catalog := catalogDir(m.Path)
	name := filepath.Base(filepath.Dir(m.Path))
	if catalog != "" {
		if rel, err := filepath.Rel(catalog, filepath.Dir(m.Path)); err == nil {
			name = filepath.ToSlash(rel)
		}
	}
	if m.Name != "" && m.Name != name {
		r.manifestProblem("name", fmt.Sprintf("Manifest identity name '%s' does not match its catalog path '%s'.", m.Name, name))
	}
	want := map[string]string{"environments": "environment", "benchmarks": "benchmark"}[filepath.Base(catalog)]
	if catalog != "" && m.Kind != "" && m.Kind != want {
		r.manifestProblem("kind", fmt.Sprintf("Manifest kind '%s' does not match its location under '%s/'.", m.Kind, filepath.Base(catalog)))
	}
}

// mirror compares the manifest's mirror fields with the config; with Sync
// it takes the config's values (and reports which), else each difference
// is a problem.
func (r *run) mirror(c *composition) []string {
	m := r.m
	type field struct {
		name             string
		manifest, config any
		apply            func()
	}
	fields := []field{
		{"resources_server", m.ResourcesServer, c.resourcesServer, func() { m.ResourcesServer = c.resourcesServer }},
		{"agent_server", m.AgentServer, c.agentServer, func() { m.AgentServer = c.agentServer }},
		{"model_server", m.ModelServer, c.modelServer, func() { m.ModelServer = c.modelServer }},
		{"datasets", m.Datasets, c.datasets, func() { m.Datasets = c.datasets }},
		{"rollout_driver", m.RolloutDriver, c.rolloutDriver, func() { m.RolloutDriver = c.rolloutDriver }},
		{"grading_mode", m.GradingMode, c.gradingMode, func() { m.GradingMode = c.gradingMode }},
	}
	var synced []string
	for _, f := range fields {
		// A field that failed its own check has been reported already.
		if m.bad[f.name] || sameValue(f.manifest, f.config) {
			continue
		}
		if !r.o.Sync {
			r.manifestProblem(f.name, fmt.Sprintf("the manifest's mirror of the config is stale: manifest=%s, config=%s (the config is authoritative; gym env validate --sync updates the manifest)",
				renderValue(f.manifest), renderValue(f.config)))
			continue
		}
		f.apply()
		synced = append(synced, f.name)
	}
	if len(synced) > 0 {
		// The synchronized manifest must still meet its contract.
		before := len(r.problems)
		_, problems := ParseManifest(pyyaml.Dump(manifestTree(m), pyyaml.Options{}), m.Path)
		for _, p := range problems {
			p.Message = "Resolved config cannot satisfy the manifest: " + p.Message
			p.Line = m.Line(strings.SplitN(p.Field, ".", 2)[0])
			r.problems = append(r.problems, p)
		}
		if len(r.problems) > before {
			return nil
		}
	}
	return synced
}

func sameValue(a, b any) bool {
	if da, ok := a.([]Dataset); ok {
		db := b.([]Dataset)
		if len(da) != len(db) {
			return false
		}
		for i := range da {
			if !da[i].same(db[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// renderValue is NeMo Gym's json.dumps(..., sort_keys=True) of a mirror
// value, "" being None.
func renderValue(v any) string {
	switch v := v.(type) {
	case string:
		if v == "" {
			return "null"
		}
		return jsonString(v)
	case []Dataset:
		if len(v) == 0 {
			return "null"
		}
		parts := make([]string, len(v))
		for i, d := range v {
			var kv []string
			add := func(k, val string) { kv = append(kv, jsonString(k)+": "+val) }
			add("jsonl_fpath", jsonString(d.JSONLPath))
			add("name", jsonString(d.Name))
			add("num_repeats", fmt.Sprint(d.NumRepeats))
			if d.PrepareScript != "" {
				add("prepare_script", jsonString(d.PrepareScript))
			}
			if d.PromptConfig != "" {
				add("prompt_config", jsonString(d.PromptConfig))
			}
			add("type", jsonString(d.Type))
			parts[i] = "{" + strings.Join(kv, ", ") + "}"
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// profileWarnings are NeMo Gym's notes when the declared integration
// profile is not the one the composition shows.
func (r *run) profileWarnings(inferred, evidence string) {
	declared := r.m.IntegrationProfile
	switch {
	case declared == "":
	case inferred == "unknown":
		r.warnings = append(r.warnings, fmt.Sprintf("Could not infer integration_profile (%s); declared profile is %s.", evidence, pyRepr(declared)))
	case inferred != declared:
		r.warnings = append(r.warnings, fmt.Sprintf("Declared integration_profile %s does not match inferred profile %s (%s).", pyRepr(declared), pyRepr(inferred), evidence))
	}
}

// inferProfile is the integration profile the composition shows. NeMo Gym
// also reads a custom agent's Python source to tell an agent loop from an
// external one; gym does not parse Python, so such an agent is "unknown"
// (a warning, never a failure).
func inferProfile(c *composition) (profile, evidence string) {
	switch {
	case c.rolloutDriver != "":
		return ProfileRolloutDriver, "rollout_collection_driver is configured"
	case c.agentServer == "simple_agent":
		return ProfileVerifier, "selected agent implementation is simple_agent"
	}
	return "unknown", fmt.Sprintf("gym does not inspect the source of agent %s", pyRepr(c.agentServer))
}

// checkPromptContract is _validate_benchmark_prompt_contract.
func (r *run) checkPromptContract() {
	m := r.m
	if m.Kind != "benchmark" {
		return
	}
	if m.PromptSource != PromptTemplate {
		if m.PromptSource == "agent" && m.StandardPromptConfig != "" {
			path := r.resolve(m.StandardPromptConfig)
			if !isFile(path) {
				r.manifestProblem("standard_prompt_config", "Agent prompt config was not found: "+path)
			} else if _, err := loadPrompt(path); err != nil {
				r.manifestProblem("standard_prompt_config", fmt.Sprintf("Could not load agent prompt config '%s': %v", path, err))
			}
		}
		return
	}
	var mismatched []string
	for _, d := range m.Datasets {
		if d.Type == DatasetBenchmark && d.PromptConfig != "" && d.PromptConfig != m.StandardPromptConfig {
			mismatched = append(mismatched, d.Name)
		}
	}
	if len(mismatched) > 0 {
		r.manifestProblem("datasets", "Benchmark dataset prompt_config must match standard_prompt_config for: "+strings.Join(mismatched, ", "))
	}
}

// checkRolloutDriver finds the module:function a rollout driver names.
func (r *run) checkRolloutDriver(ref string) {
	module, function, _ := strings.Cut(ref, ":")
	rel := filepath.Join(strings.Split(module, ".")...)
	path := r.resolve(rel + ".py")
	if !isFile(path) {
		if pkg := r.resolve(filepath.Join(rel, "__init__.py")); isFile(pkg) {
			path = pkg
		}
	}
	src, err := os.ReadFile(path)
	if err != nil {
		r.manifestProblem("rollout_driver", "Rollout driver module was not found: "+path)
		return
	}
	if !pythonDefines(src, function, true) {
		r.manifestProblem("rollout_driver", fmt.Sprintf("Rollout driver '%s' was not found in '%s'.", ref, path))
	}
}

// pythonDefines reports whether Python source defines a top-level
// function name (async too when allowed). A textual check: gym does not
// parse Python, so a syntax error elsewhere in the file goes unnoticed.
func pythonDefines(src []byte, name string, async bool) bool {
	prefix := `def `
	if async {
		prefix = `(?:async\s+)?def `
	}
	return regexp.MustCompile(`(?m)^` + prefix + regexp.QuoteMeta(name) + `\s*\(`).Match(src)
}

// resolve finds a read path over the roots, anchored at the working
// directory when found nowhere.
func (r *run) resolve(rel string) string {
	p := r.roots.Resolve(rel)
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.o.Cwd, p)
	}
	return p
}

// catalogDir is the nearest directory above path named environments or
// benchmarks, "" if none.
func catalogDir(path string) string {
	if path == "" {
		return ""
	}
	for dir := filepath.Dir(path); ; {
		if b := filepath.Base(dir); b == "environments" || b == "benchmarks" {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func realPath(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func joinList(first, rest string) string {
	switch {
	case first == "":
		return rest
	case rest == "":
		return first
	}
	return first + string(filepath.ListSeparator) + rest
}

func optionalString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// configProblem turns a config loading error into a problem at the value
// it is about.
func configProblem(configPath string, err error) Problem {
	p := Problem{File: configPath, Message: err.Error()}
	var ce *config.Error
	if errors.As(err, &ce) {
		// Error() masks what looks like a secret; the place goes in the
		// problem's own fields.
		msg := strings.TrimSuffix(ce.Error(), "\n  (at "+ce.Where.String()+")")
		p.Message = string(ce.Class) + ": " + msg
		if ce.Where.Kind == tree.FromFile {
			p.File, p.Line = ce.Where.File, ce.Where.Line
		}
	}
	return p
}

// configPathsToken loads one config file, as NeMo Gym's validation seeds
// config_paths with it.
func configPathsToken(path string) string {
	return "+config_paths=[" + override.Quote(path) + "]"
}
