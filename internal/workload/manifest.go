// Package workload checks and exercises manifest-backed workloads (the
// environments and benchmarks with a manifest.yaml) as NeMo Gym 0.7.0's
// `gym env validate`, `gym env test NAME` and `gym env publish` do: the
// manifest's schema, its place in the catalog, the config it mirrors, its
// datasets, the verifier fixture of its resources server, and the
// publication checks. Unlike NeMo Gym, which stops at the first problem,
// validation reports every problem it finds, each with its file and line.
package workload

import (
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Problem is one thing wrong with a workload, and where.
type Problem struct {
	File string `json:"file"`
	// Line is 1-based; 0 when the problem is about a file as a whole.
	Line int `json:"line,omitempty"`
	// Field is the manifest field (pydantic's dotted location, such as
	// datasets.0.name) or config key the problem is about, if any.
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	at := p.File
	if p.Line > 0 {
		at += ":" + strconv.Itoa(p.Line)
	}
	if p.Field != "" {
		return at + ": " + p.Field + ": " + p.Message
	}
	return at + ": " + p.Message
}

// InvalidError is a workload that failed validation: every problem found.
type InvalidError struct {
	Manifest string
	Problems []Problem
}

func (e *InvalidError) Error() string {
	var b strings.Builder
	noun := "problems"
	if len(e.Problems) == 1 {
		noun = "problem"
	}
	fmt.Fprintf(&b, "manifest %s is not valid (%d %s):", e.Manifest, len(e.Problems), noun)
	for _, p := range e.Problems {
		b.WriteString("\n  - " + strings.ReplaceAll(p.String(), "\n", "\n    "))
	}
	return b.String()
}

// Enumerations of the manifest schema (nemo_gym/environment/manifest.py).
var (
	kinds          = []string{"environment", "benchmark"}
	profiles       = []string{ProfileVerifier, "custom-gym-agent-loop", "external-agent-loop", ProfileRolloutDriver}
	determinisms   = []string{"seeded", "stochastic", "unknown"}
	sessionModels  = []string{"episode", "step"}
	states         = []string{"none", "per_session"}
	lifecycles     = []string{"active", "deprecated"}
	datasetKinds   = []string{"train", "validation", "example", DatasetBenchmark}
	promptSources  = []string{PromptTemplate, PromptPrepared, "agent"}
	sourcePattern  = regexp.MustCompile(`^(?:(?:https?|ssh|git|file)://\S+|[^@\s]+@[^:\s]+:\S+)$`)
	gitRefPattern  = regexp.MustCompile(`^[^\s]+$`)
	callablePatern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$`)
	datePattern    = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
)

// Values the checks below single out.
const (
	ProfileVerifier      = "custom-gym-verifier"
	ProfileRolloutDriver = "external-rollout-driver"
	DatasetBenchmark     = "benchmark"
	PromptTemplate       = "template"
	PromptPrepared       = "prepared"
)

// profileRequires are the fields each integration profile needs.
var profileRequires = map[string][]string{
	ProfileVerifier:         {"model_server", "resources_server"},
	"custom-gym-agent-loop": {"model_server"},
	"external-agent-loop":   nil,
	ProfileRolloutDriver:    {"rollout_driver"},
}

// Manifest is a manifest.yaml as NeMo Gym's EnvironmentManifest types it.
// An optional string field that is absent (or null) is "".
type Manifest struct {
	Path                 string
	Name                 string
	Version              string
	Experimental         bool
	Kind                 string
	IntegrationProfile   string
	Domain               string
	Description          string
	Modality             string
	Licensing            string
	Authors              []string
	Reward               Reward
	Determinism          string
	ConfigPath           string
	DatasetOwner         string
	ResourcesServer      string
	AgentServer          string
	Datasets             []Dataset
	ModelServer          string
	RolloutDriver        string
	GradingMode          string
	SessionModel         string
	State                string
	Sandbox              string
	CanonicalSplit       string
	PromptSource         string
	StandardPromptConfig string
	AdoptedFrom          *AdoptedFrom
	Lifecycle            string

	doc *tree.Node
	// bad are the top-level fields that failed their checks.
	bad map[string]bool
}

// Reward is the manifest's reward contract.
type Reward struct {
	Low, High      float64
	HigherIsBetter bool
}

// Dataset is one manifest dataset; Line is where it starts.
type Dataset struct {
	Name          string `json:"name"`
	Type          string `json:"type"`
	JSONLPath     string `json:"jsonl_fpath"`
	PrepareScript string `json:"prepare_script,omitempty"`
	PromptConfig  string `json:"prompt_config,omitempty"`
	NumRepeats    int    `json:"num_repeats"`
	Line          int    `json:"-"`
}

func (d Dataset) same(o Dataset) bool {
	d.Line, o.Line = 0, 0
	return d == o
}

// AdoptedFrom records the upstream a workload was adopted from.
type AdoptedFrom struct {
	Source, Ref, Reconciled string
}

// Line is where a top-level manifest field is written, else the line of
// the document itself.
func (m *Manifest) Line(field string) int {
	if m.doc == nil {
		return 0
	}
	if n := m.doc.Get(field); n != nil {
		return n.Origin.Line
	}
	return m.doc.Origin.Line
}

// LoadManifest reads a manifest file. A manifest that cannot be read or
// parsed is an error; one that parses comes back with every schema
// problem it has (and the fields that passed filled in).
func LoadManifest(path string) (*Manifest, []Problem, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("Environment manifest '%s' was not found.", path)
		}
		return nil, nil, fmt.Errorf("Could not read environment manifest '%s': %w", path, err)
	}
	m, problems := ParseManifest(data, path)
	return m, problems, nil
}

// ParseManifest checks manifest YAML against NeMo Gym's schema and
// contract, reporting every problem (pydantic stops at none either, but
// skips the contract when a field fails; here the contract is checked over
// the fields that passed).
func ParseManifest(data []byte, path string) (*Manifest, []Problem) {
	m := &Manifest{Path: path}
	n, err := pyyaml.Load(data, path)
	if err != nil {
		p := Problem{File: path, Message: "Malformed YAML: " + err.Error()}
		var syn *pyyaml.SyntaxError
		if errors.As(err, &syn) {
			p.Line, p.Message = syn.Line, "Malformed YAML: "+syn.Problem
		}
		return m, []Problem{p}
	}
	if n.Kind != tree.Map {
		return m, []Problem{{File: path, Line: n.Origin.Line, Message: "expected a YAML mapping, got a " + n.Kind.String()}}
	}
	m.doc = n
	v := &checker{file: path}
	top := v.object(n, "", []string{"name", "version", "experimental", "kind", "integration_profile", "domain", "description",
		"modality", "licensing", "authors", "reward", "determinism", "config_path", "dataset_owner", "resources_server",
		"agent_server", "datasets", "model_server", "rollout_driver", "grading_mode", "session_model", "state", "sandbox",
		"canonical_split", "prompt_source", "standard_prompt_config", "adopted_from", "lifecycle"})
	m.Name = top.str("name", required)
	m.Version = top.str("version", required)
	m.Experimental = top.boolean("experimental", true)
	m.Kind = top.choice("kind", "", kinds)
	m.IntegrationProfile = top.choice("integration_profile", "", profiles)
	m.Domain = top.choice("domain", "", config.Domains)
	m.Description = top.str("description", required)
	m.Modality = top.str("modality", required)
	if lic := top.str("licensing", optional); lic != "" {
		if canon, err := CanonicalLicense(lic); err != nil {
			top.fail("licensing", "Value error, licensing must be an SPDX license expression, internal, proprietary, or unknown ("+err.Error()+")")
		} else {
			m.Licensing = canon
		}
	} else if !top.has("licensing") {
		m.Licensing = "unknown"
	}
	m.Authors = top.authors("authors")
	m.Reward = top.reward("reward")
	m.Determinism = top.choice("determinism", "unknown", determinisms)
	m.ConfigPath = top.str("config_path", optional)
	if !top.has("config_path") {
		m.ConfigPath = "config.yaml"
	}
	m.DatasetOwner = top.str("dataset_owner", optional)
	m.ResourcesServer = top.str("resources_server", requiredNullable)
	m.AgentServer = top.str("agent_server", required)
	m.Datasets = top.datasets("datasets")
	m.ModelServer = top.str("model_server", optional)
	m.RolloutDriver = top.pattern("rollout_driver", callablePatern)
	m.GradingMode = top.str("grading_mode", optional)
	m.SessionModel = top.choice("session_model", "-", sessionModels)
	m.State = top.choice("state", "-", states)
	m.Sandbox = top.str("sandbox", optional)
	m.CanonicalSplit = top.str("canonical_split", optional)
	m.PromptSource = top.choice("prompt_source", PromptTemplate, promptSources)
	m.StandardPromptConfig = top.str("standard_prompt_config", optional)
	m.AdoptedFrom = top.adoptedFrom("adopted_from")
	m.Lifecycle = top.choice("lifecycle", "active", lifecycles)
	m.contract(top)
	m.bad = top.bad
	return m, v.problems
}

// contract is EnvironmentManifest.validate_contract over the fields that
// passed their own checks.
func (m *Manifest) contract(top *object) {
	const at = "manifest"
	fail := func(msg string) { top.v.add(m.doc.Origin.Line, at, "Value error, "+msg) }
	var missing []string
	need := func(field, value string) {
		if value == "" && !top.bad[field] && !slices.Contains(missing, field) {
			missing = append(missing, field)
		}
	}
	for _, field := range profileRequires[m.IntegrationProfile] {
		need(field, map[string]string{"model_server": m.ModelServer, "resources_server": m.ResourcesServer, "rollout_driver": m.RolloutDriver}[field])
	}
	if m.Kind == "benchmark" {
		need("canonical_split", m.CanonicalSplit)
		if m.PromptSource == PromptTemplate {
			need("standard_prompt_config", m.StandardPromptConfig)
		}
	}
	if len(missing) > 0 {
		fail("manifest requires: " + strings.Join(missing, ", "))
	}
	if m.PromptSource == PromptPrepared && m.StandardPromptConfig != "" {
		fail("standard_prompt_config is forbidden for prepared prompts")
	}
	if m.PromptSource != "" && m.PromptSource != PromptTemplate && slices.ContainsFunc(m.Datasets, func(d Dataset) bool { return d.PromptConfig != "" }) {
		fail("dataset.prompt_config is only valid for template prompts")
	}
	if m.IntegrationProfile != "" && m.IntegrationProfile != ProfileRolloutDriver && m.RolloutDriver != "" {
		fail("rollout_driver is only valid for the external-rollout-driver profile")
	}
	seen := map[string]bool{}
	for _, d := range m.Datasets {
		if seen[d.Name] {
			fail("dataset names must be unique")
			break
		}
		seen[d.Name] = true
	}
	if m.Kind == "benchmark" && len(m.Datasets) > 0 && !slices.ContainsFunc(m.Datasets, func(d Dataset) bool { return d.Type == DatasetBenchmark }) {
		fail("a benchmark manifest requires a benchmark dataset")
	}
}

// checker collects problems in one file.
type checker struct {
	file     string
	problems []Problem
}

func (v *checker) add(line int, field, msg string) {
	v.problems = append(v.problems, Problem{File: v.file, Line: line, Field: field, Message: msg})
}

// object is one mapping being checked; bad records the fields that failed.
type object struct {
	v      *checker
	n      *tree.Node
	prefix string
	bad    map[string]bool
}

// object starts checking mapping n (at loc, "" for the document) whose
// allowed fields are known; any other key is reported as pydantic's
// extra="forbid" reports it.
func (v *checker) object(n *tree.Node, loc string, known []string) *object {
	o := &object{v: v, n: n, prefix: loc, bad: map[string]bool{}}
	for _, e := range n.Entries {
		if !slices.Contains(known, e.Key) {
			v.add(e.Value.Origin.Line, o.loc(e.Key), "Extra inputs are not permitted")
		}
	}
	return o
}

func (o *object) loc(field string) string {
	if o.prefix == "" {
		return field
	}
	return o.prefix + "." + field
}

func (o *object) has(field string) bool { return o.n.Get(field) != nil }

// fail reports field, at its line (the mapping's when it is absent).
func (o *object) fail(field, msg string) {
	line := o.n.Origin.Line
	if f := o.n.Get(field); f != nil && f.Origin.Line > 0 {
		line = f.Origin.Line
	}
	o.bad[field] = true
	o.v.add(line, o.loc(field), msg)
}

type presence int

const (
	optional         presence = iota // absent or null is ""
	required                         // must be a string
	requiredNullable                 // must be present, may be null
)

// str is a NonEmptyString field, stripped of surrounding whitespace.
func (o *object) str(field string, p presence) string {
	n := o.n.Get(field)
	switch {
	case n == nil && p == optional:
		return ""
	case n == nil:
		o.fail(field, "Field required")
		return ""
	case n.Kind == tree.Null && p != required:
		return ""
	case n.Kind != tree.String:
		msg := "Input should be a valid string"
		if n.IsScalar() && n.Kind != tree.Null {
			// YAML reads `version: 1.0` or `name: yes` as no string.
			msg += " (YAML read " + interp.PythonStr(n) + " as a " + n.Kind.String() + "; quote the value)"
		}
		o.fail(field, msg)
		return ""
	}
	s := strings.TrimSpace(n.Str)
	if s == "" {
		o.fail(field, "String should have at least 1 character")
	}
	return s
}

// pattern is an optional string field that must match re.
func (o *object) pattern(field string, re *regexp.Regexp) string {
	s := o.str(field, optional)
	if s != "" && !re.MatchString(s) {
		o.fail(field, fmt.Sprintf("String should match pattern '%s'", re.String()))
		return ""
	}
	return s
}

// choice is an enum field; def "" makes it required, "-" optional with no
// default.
func (o *object) choice(field, def string, choices []string) string {
	n := o.n.Get(field)
	if n == nil || (n.Kind == tree.Null && def == "-") {
		if def == "" {
			o.fail(field, "Field required")
		}
		return strings.TrimPrefix(def, "-")
	}
	if n.Kind == tree.String && slices.Contains(choices, strings.TrimSpace(n.Str)) {
		return strings.TrimSpace(n.Str)
	}
	last := len(choices) - 1
	msg := "'" + choices[last] + "'"
	if last > 0 {
		msg = "'" + strings.Join(choices[:last], "', '") + "' or " + msg
	}
	o.fail(field, "Input should be "+msg)
	return ""
}

// boolean is a bool field as pydantic's lax mode reads one.
func (o *object) boolean(field string, def bool) bool {
	n := o.n.Get(field)
	if n == nil {
		return def
	}
	if b, ok := config.LaxBoolOK(n); ok {
		return b
	}
	o.fail(field, "Input should be a valid boolean")
	return def
}

// number is a finite float as pydantic's FiniteFloat reads one.
func number(n *tree.Node) (float64, string) {
	var f float64
	switch n.Kind {
	case tree.Int, tree.BigInt:
		f, _ = tree.IntToFloat(n.BigValue())
	case tree.Float:
		f = n.Float
	case tree.String:
		parsed, err := strconv.ParseFloat(strings.TrimSpace(n.Str), 64)
		if err != nil {
			return 0, "Input should be a valid number, unable to parse string as a number"
		}
		f = parsed
	default:
		return 0, "Input should be a valid number"
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, "Input should be a finite number"
	}
	return f, ""
}

// integer is an int as pydantic's lax mode reads one.
func integer(n *tree.Node) (int, string) {
	switch n.Kind {
	case tree.Int:
		return int(n.Int), ""
	case tree.Float:
		if n.Float == math.Trunc(n.Float) && math.Abs(n.Float) < 1<<53 {
			return int(n.Float), ""
		}
		return 0, "Input should be a valid integer, got a number with a fractional part"
	case tree.String:
		if i, err := strconv.Atoi(strings.TrimSpace(n.Str)); err == nil {
			return i, ""
		}
		return 0, "Input should be a valid integer, unable to parse string as an integer"
	}
	return 0, "Input should be a valid integer"
}

// list is a required list field with at least one item; nil, with the
// problem reported, when it is not one.
func (o *object) list(field string) *tree.Node {
	n := o.n.Get(field)
	switch {
	case n == nil:
		o.fail(field, "Field required")
		return nil
	case n.Kind != tree.List:
		o.fail(field, "Input should be a valid list")
		return nil
	case len(n.Items) == 0:
		o.fail(field, "List should have at least 1 item after validation, not 0")
		return nil
	}
	return n
}

func (o *object) authors(field string) []string {
	n := o.list(field)
	if n == nil {
		return nil
	}
	var out []string
	for i, it := range n.Items {
		loc := o.loc(fmt.Sprintf("%s.%d", field, i))
		if it.Kind != tree.String {
			o.bad[field] = true
			o.v.add(it.Origin.Line, loc, "Input should be a valid string")
			continue
		}
		s := strings.TrimSpace(it.Str)
		if s == "" {
			o.bad[field] = true
			o.v.add(it.Origin.Line, loc, "String should have at least 1 character")
			continue
		}
		if slices.Contains(out, s) {
			o.bad[field] = true
			o.v.add(it.Origin.Line, loc, "Value error, authors must be unique")
			continue
		}
		out = append(out, s)
	}
	return out
}

func (o *object) reward(field string) Reward {
	n := o.n.Get(field)
	if n == nil {
		o.fail(field, "Field required")
		return Reward{}
	}
	if n.Kind != tree.Map {
		o.fail(field, "Input should be a valid dictionary or instance of Reward")
		return Reward{}
	}
	r := o.v.object(n, o.loc(field), []string{"range", "higher_is_better"})
	var out Reward
	if h := n.Get("higher_is_better"); h == nil {
		r.fail("higher_is_better", "Field required")
	} else if b, ok := config.LaxBoolOK(h); ok {
		out.HigherIsBetter = b
	} else {
		r.fail("higher_is_better", "Input should be a valid boolean")
	}
	rng := n.Get("range")
	switch {
	case rng == nil:
		r.fail("range", "Field required")
	case rng.Kind != tree.List:
		r.fail("range", "Input should be a valid tuple")
	case len(rng.Items) != 2:
		r.fail("range", fmt.Sprintf("Tuple should have exactly 2 items (lower, upper), not %d", len(rng.Items)))
	default:
		lo, loErr := number(rng.Items[0])
		hi, hiErr := number(rng.Items[1])
		if loErr != "" {
			o.v.add(rng.Items[0].Origin.Line, r.loc("range.0"), loErr)
		}
		if hiErr != "" {
			o.v.add(rng.Items[1].Origin.Line, r.loc("range.1"), hiErr)
		}
		if loErr == "" && hiErr == "" {
			if lo > hi {
				r.fail("range", "Value error, reward.range must be ordered with lower <= upper")
			}
			out.Low, out.High = lo, hi
		} else {
			r.bad["range"] = true
		}
	}
	if len(r.bad) > 0 {
		o.bad[field] = true
	}
	return out
}

func (o *object) datasets(field string) []Dataset {
	n := o.list(field)
	if n == nil {
		return nil
	}
	var out []Dataset
	for i, it := range n.Items {
		loc := o.loc(fmt.Sprintf("%s.%d", field, i))
		if it.Kind != tree.Map {
			o.bad[field] = true
			o.v.add(it.Origin.Line, loc, "Input should be a valid dictionary or instance of ManifestDataset")
			continue
		}
		d := o.v.object(it, loc, []string{"name", "type", "jsonl_fpath", "prepare_script", "prompt_config", "num_repeats"})
		ds := Dataset{
			Name:          d.str("name", required),
			Type:          d.choice("type", "", datasetKinds),
			JSONLPath:     d.str("jsonl_fpath", required),
			PrepareScript: d.str("prepare_script", optional),
			PromptConfig:  d.str("prompt_config", optional),
			NumRepeats:    1,
			Line:          it.Origin.Line,
		}
		if r := it.Get("num_repeats"); r != nil {
			if k, msg := integer(r); msg != "" {
				d.fail("num_repeats", msg)
			} else if k < 1 {
				d.fail("num_repeats", "Input should be greater than or equal to 1")
			} else {
				ds.NumRepeats = k
			}
		}
		if ds.Type == DatasetBenchmark && ds.PrepareScript == "" && !d.bad["prepare_script"] {
			o.v.add(it.Origin.Line, loc, "Value error, a benchmark dataset requires: prepare_script")
			d.bad["prepare_script"] = true
		}
		if len(d.bad) > 0 {
			o.bad[field] = true
			continue
		}
		out = append(out, ds)
	}
	return out
}

func (o *object) adoptedFrom(field string) *AdoptedFrom {
	n := o.n.Get(field)
	if n == nil || n.Kind == tree.Null {
		return nil
	}
	if n.Kind != tree.Map {
		o.fail(field, "Input should be a valid dictionary or instance of AdoptedFrom")
		return nil
	}
	a := o.v.object(n, o.loc(field), []string{"source", "ref", "reconciled"})
	out := &AdoptedFrom{Source: a.str("source", required), Ref: a.str("ref", required), Reconciled: a.str("reconciled", required)}
	if out.Source != "" && !sourcePattern.MatchString(out.Source) {
		a.fail("source", fmt.Sprintf("String should match pattern '%s'", sourcePattern.String()))
	}
	if out.Ref != "" && !gitRefPattern.MatchString(out.Ref) {
		a.fail("ref", fmt.Sprintf("String should match pattern '%s'", gitRefPattern.String()))
	}
	if out.Reconciled != "" && !datePattern.MatchString(out.Reconciled) {
		a.fail("reconciled", "Input should be a valid date in the format YYYY-MM-DD")
	}
	if len(a.bad) > 0 {
		o.bad[field] = true
	}
	return out
}
