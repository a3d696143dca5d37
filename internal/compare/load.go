// Package compare is `gym eval compare`: a baseline eval run against a
// candidate run, from each run's <stem>_aggregate_metrics.json alone, with
// NeMo Gym 0.7.0's rules (nemo_gym/comparison) — which metrics are
// compared, the Welch interval of each delta, per-task sample flips — and
// its compare_report.md / compare_report.json.
package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nemo-gym-go/gym/internal/resolve"
	"github.com/nemo-gym-go/gym/internal/resources"
)

// Error is a comparison that cannot be made as configured: NeMo Gym's
// ConfigError, printed without a traceback, exit 1.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

func errorf(format string, args ...any) error { return &Error{fmt.Sprintf(format, args...)} }

// object is a JSON object with its key order kept; a repeated key keeps
// its first place and its last value, as a Python dict parsed from it.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func (o *object) get(key string) (json.RawMessage, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.vals[key]
	return v, ok
}

// number is the key's value when it is a JSON number (Python's int or
// float, never a bool).
func (o *object) number(key string) (float64, bool) {
	v, ok := o.get(key)
	if !ok {
		return 0, false
	}
	return numberOf(v)
}

func numberOf(v json.RawMessage) (float64, bool) {
	if len(v) == 0 || !(v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
		return 0, false
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		// An integer past float64's range is a float to Python too.
		return math.Inf(map[bool]int{true: -1, false: 1}[v[0] == '-']), true
	}
	return f, true
}

// set puts key last when new, else replaces its value in place (dict
// union's rule).
func (o *object) set(key string, v json.RawMessage) {
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
}

func newObject() *object { return &object{vals: map[string]json.RawMessage{}} }

func parseObject(raw json.RawMessage) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not an object")
	}
	o := newObject()
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o.set(tok.(string), v)
	}
	return o, nil
}

// objects parses a JSON list of objects; entries that are not objects are
// nil (NeMo Gym skips them where it reads such lists).
func objects(raw json.RawMessage) ([]*object, bool) {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, false
	}
	out := make([]*object, len(items))
	for i, it := range items {
		out[i], _ = parseObject(it)
	}
	return out, true
}

// RunFile is one run's parsed aggregate-metrics file, by agent name.
type RunFile struct {
	Role           string // baseline or candidate
	Index          int
	Rollouts       string
	AggregatePath  string
	entriesByAgent map[string]*object
}

// Label is the run's short name: the directory its rollouts live in.
func (r *RunFile) Label() string {
	if name := filepath.Base(filepath.Dir(r.Rollouts)); name != "/" && name != "." {
		return name
	}
	return stem(filepath.Base(r.Rollouts))
}

// stem is pathlib's Path.stem of a file name: a leading or trailing dot
// starts no suffix.
func stem(name string) string {
	if i := strings.LastIndexByte(name, '.'); i > 0 && i < len(name)-1 {
		return name[:i]
	}
	return name
}

// AgentNames are the file's agents, sorted.
func (r *RunFile) AgentNames() []string {
	names := make([]string, 0, len(r.entriesByAgent))
	for n := range r.entriesByAgent {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// AggregateMetricsPath is NeMo Gym's name for a run's metrics:
// results/rollouts.jsonl -> results/rollouts_aggregate_metrics.json.
func AggregateMetricsPath(rollouts string) string {
	dir, base := filepath.Split(rollouts)
	return dir + stem(base) + "_aggregate_metrics.json"
}

// loadRunFile resolves and reads one run's aggregate metrics; warn gets
// the note that a legacy file's repeat statistics were rebuilt.
func loadRunFile(rollouts, role string, index int, override string, resolvePath func(string) string, warn io.Writer) (*RunFile, error) {
	var metricsPath string
	if override != "" {
		metricsPath = resolvePath(override)
	} else {
		metricsPath = AggregateMetricsPath(resolvePath(rollouts))
	}
	if _, err := os.Stat(metricsPath); err != nil {
		return nil, &NotFoundError{msg: fmt.Sprintf("Aggregate metrics not found: '%s', derived from '%s'. "+
			"The run may have been collected with --disable-aggregation: run `gym eval aggregate` first, "+
			"or point at the metrics file directly with "+
			"'baseline_aggregate_metrics_fpath' or 'candidate_aggregate_metrics_fpaths'.", metricsPath, rollouts)}
	}
	entries, err := readAgentEntries(metricsPath)
	if err != nil {
		return nil, err
	}
	legacy := false
	for _, e := range entries {
		if _, ok := e.get("repeat_level_metrics"); !ok {
			legacy = true
		}
	}
	if legacy {
		fmt.Fprintf(warn, "Warning: Repeat-level metrics are missing in '%s'; calculating them from stored rollout summaries.\n", metricsPath)
		for name, e := range entries {
			if _, ok := e.get("repeat_level_metrics"); !ok {
				if entries[name], err = withRepeatMetrics(e, metricsPath, name); err != nil {
					return nil, err
				}
			}
		}
	}
	return &RunFile{Role: role, Index: index, Rollouts: resolvePath(rollouts), AggregatePath: metricsPath, entriesByAgent: entries}, nil
}

// NotFoundError is a metrics file that does not exist (NeMo Gym's
// ConfigPathNotFoundError).
type NotFoundError struct{ msg string }

func (e *NotFoundError) Error() string { return e.msg }
func (e *NotFoundError) Unwrap() error { return os.ErrNotExist }

func readAgentEntries(path string) (map[string]*object, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, errorf("Cannot read aggregate metrics at '%s': %v", path, err)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) || !json.Valid(raw) {
			return nil, errorf("'%s' is not valid JSON: %v", path, err)
		}
		return nil, errorf("'%s' is not a valid aggregate-metrics file (expected a JSON list of per-agent entries).", path)
	}
	if list == nil {
		return nil, errorf("'%s' is not a valid aggregate-metrics file (expected a JSON list of per-agent entries).", path)
	}
	if len(list) == 0 {
		return nil, errorf("'%s' contains no agent entries.", path)
	}
	entries := map[string]*object{}
	for i, item := range list {
		e, err := parseObject(item)
		if err != nil {
			return nil, errorf("'%s' entry %d is not an object (expected a JSON list of per-agent entries).", path, i)
		}
		var ref struct {
			Name any `json:"name"`
		}
		refRaw, _ := e.get("agent_ref")
		_ = json.Unmarshal(refRaw, &ref)
		name, _ := ref.Name.(string)
		if name == "" {
			return nil, errorf("'%s' entry %d has no `agent_ref.name`.", path, i)
		}
		if _, dup := entries[name]; dup {
			return nil, errorf("'%s' contains two entries for agent '%s'.", path, name)
		}
		entries[name] = e
	}
	return entries, nil
}

// withRepeatMetrics gives a legacy entry (written before repeat-level
// statistics existed) the repeat metrics its rollout summaries imply: the
// recomputed agent metrics, then the recorded ones over them, then the
// run's repeat count.
func withRepeatMetrics(e *object, path, agent string) (*object, error) {
	groups, _ := e.get("group_level_metrics")
	groupList, _ := objects(groups)
	var infos []json.RawMessage
	for _, g := range groupList {
		ri, _ := g.get("rollout_infos")
		var items []json.RawMessage
		if json.Unmarshal(ri, &items) == nil {
			infos = append(infos, items...)
		}
	}
	agg, err := resources.Aggregate(infos, resources.MetricsHooks{})
	if err != nil {
		return nil, errorf("'%s' agent '%s': cannot rebuild repeat-level metrics from its rollout_infos: %v", path, agent, err)
	}
	computed, err := metricsObject(agg.AgentMetrics)
	if err != nil {
		return nil, err
	}
	if recorded, ok := e.get("agent_metrics"); ok {
		if rec, err := parseObject(recorded); err == nil {
			for _, k := range rec.keys {
				computed.set(k, rec.vals[k])
			}
		}
	}
	repeats := make([]json.RawMessage, 0, len(agg.RepeatLevelMetrics))
	var repeatObjs []*object
	for _, r := range agg.RepeatLevelMetrics {
		raw, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		repeats = append(repeats, raw)
		o, _ := parseObject(raw)
		repeatObjs = append(repeatObjs, o)
	}
	if n, ok := deriveNumRepeats(groupList, repeatObjs); ok {
		computed.set("num_repeats", json.RawMessage(fmt.Sprint(n)))
	} else {
		computed.set("num_repeats", json.RawMessage("null"))
	}
	out := newObject()
	for _, k := range e.keys {
		out.set(k, e.vals[k])
	}
	am, _ := json.Marshal(orderedRaw{computed})
	out.set("agent_metrics", am)
	rl, _ := json.Marshal(repeats)
	out.set("repeat_level_metrics", rl)
	return out, nil
}

func metricsObject(m *resources.Metrics) (*object, error) {
	raw, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return parseObject(raw)
}

// orderedRaw marshals an object in its own key order.
type orderedRaw struct{ o *object }

func (r orderedRaw) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range r.o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(r.o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// deriveNumRepeats is how many repeats a run collected: the most any task
// expected (a partly recovered run leaves some tasks short), else one per
// repeat-level entry.
func deriveNumRepeats(groups, repeats []*object) (int, bool) {
	best, found := 0, false
	for _, g := range groups {
		v, ok := g.get("expected_num_rollouts")
		var n int
		if ok && json.Unmarshal(v, &n) == nil && !bytes.ContainsAny(v, ".eE") {
			if !found || n > best {
				best, found = n, true
			}
		}
	}
	if found {
		return best, true
	}
	if len(repeats) > 0 {
		return len(repeats), true
	}
	return 0, false
}

// loadedRun is one side of a comparison, narrowed to one agent.
type loadedRun struct {
	agent         string
	agentMetrics  *object
	keyMetrics    *object
	groups        []*object
	repeats       []*object
	numTasks      int
	numRepeats    *int
	hasRepeatCIs  bool
	aggregatePath string
}

func buildLoadedRun(r *RunFile, agent string) (*loadedRun, error) {
	e := r.entriesByAgent[agent]
	field := func(key string) (*object, error) {
		raw, ok := e.get(key)
		if !ok || string(raw) == "null" || string(raw) == "{}" {
			return newObject(), nil
		}
		o, err := parseObject(raw)
		if err != nil {
			return nil, errorf("'%s' agent '%s': `%s` is not an object.", r.AggregatePath, agent, key)
		}
		return o, nil
	}
	list := func(key string) ([]*object, error) {
		raw, ok := e.get(key)
		if !ok || string(raw) == "null" {
			return nil, nil
		}
		l, ok := objects(raw)
		if !ok {
			return nil, errorf("'%s' agent '%s': `%s` is not a list.", r.AggregatePath, agent, key)
		}
		return l, nil
	}
	run := &loadedRun{agent: agent, aggregatePath: r.AggregatePath}
	var err error
	if run.agentMetrics, err = field("agent_metrics"); err != nil {
		return nil, err
	}
	if run.keyMetrics, err = field("key_metrics"); err != nil {
		return nil, err
	}
	if run.groups, err = list("group_level_metrics"); err != nil {
		return nil, err
	}
	if run.repeats, err = list("repeat_level_metrics"); err != nil {
		return nil, err
	}
	run.numTasks = len(run.groups)
	if n, ok := deriveNumRepeats(run.groups, run.repeats); ok {
		run.numRepeats = &n
	}
	for _, k := range run.agentMetrics.keys {
		if strings.HasPrefix(k, "ci_low_95_across_repeats/") {
			run.hasRepeatCIs = true
		}
	}
	return run, nil
}

// selection is which agent each side reads for one comparison block.
type selection struct {
	baseline   string
	candidates []string
}

// selectAgents decides which agent to read on each side: a per-side name
// beats agent_name, which beats every agent all runs share. It returns
// the selections, run-level warnings, and the agents left out by run.
func selectAgents(baseline *RunFile, candidates []*RunFile, agent string, baselineAgent *string, candidateAgents []string) ([]selection, []string, *orderedStrings, error) {
	skipped := &orderedStrings{}
	if baselineAgent != nil || candidateAgents != nil {
		b := firstNonEmpty(deref(baselineAgent), agent)
		if b == "" {
			var err error
			if b, err = soleAgent(baseline); err != nil {
				return nil, nil, nil, err
			}
		}
		if err := requireAgent(baseline, b); err != nil {
			return nil, nil, nil, err
		}
		sel := selection{baseline: b}
		for i, c := range candidates {
			var explicit string
			if candidateAgents != nil {
				explicit = candidateAgents[i]
			}
			name := firstNonEmpty(explicit, agent)
			if name == "" {
				var err error
				if name, err = soleAgent(c); err != nil {
					return nil, nil, nil, err
				}
			}
			if err := requireAgent(c, name); err != nil {
				return nil, nil, nil, err
			}
			sel.candidates = append(sel.candidates, name)
		}
		return []selection{sel}, nil, skipped, nil
	}
	if agent != "" {
		for _, r := range append([]*RunFile{baseline}, candidates...) {
			if err := requireAgent(r, agent); err != nil {
				return nil, nil, nil, err
			}
		}
		return []selection{{baseline: agent, candidates: repeat(agent, len(candidates))}}, nil, skipped, nil
	}
	matched := map[string]bool{}
	for n := range baseline.entriesByAgent {
		matched[n] = true
	}
	for _, c := range candidates {
		for n := range matched {
			if _, ok := c.entriesByAgent[n]; !ok {
				delete(matched, n)
			}
		}
	}
	all := append([]*RunFile{baseline}, candidates...)
	if len(matched) == 0 {
		var lines []string
		for _, r := range all {
			lines = append(lines, fmt.Sprintf("  %s (%s): %s", r.Role, r.AggregatePath, strings.Join(r.AgentNames(), ", ")))
		}
		return nil, nil, nil, errorf("No agent name is present in every run, so there is nothing to compare.\n%s\n"+
			"Set 'agent_name' to force one agent on both sides, or 'baseline_agent_name' / "+
			"'candidate_agent_names' to pick a different agent per side.", strings.Join(lines, "\n"))
	}
	var warnings []string
	for _, r := range all {
		var extras []string
		for _, n := range r.AgentNames() {
			if !matched[n] {
				extras = append(extras, n)
			}
		}
		if len(extras) > 0 {
			label := r.Role
			if r.Role == "candidate" {
				label = fmt.Sprintf("candidate[%d]", r.Index)
			}
			skipped.set(label, extras)
			warnings = append(warnings, fmt.Sprintf("Agent(s) %s are present only in %s and were not compared.", strings.Join(extras, ", "), label))
		}
	}
	names := make([]string, 0, len(matched))
	for n := range matched {
		names = append(names, n)
	}
	slices.Sort(names)
	sels := make([]selection, len(names))
	for i, n := range names {
		sels[i] = selection{baseline: n, candidates: repeat(n, len(candidates))}
	}
	return sels, warnings, skipped, nil
}

// orderedStrings is skipped_agents: run label -> agent names, in the order
// the runs were looked at.
type orderedStrings struct {
	keys []string
	vals map[string][]string
}

func (o *orderedStrings) set(k string, v []string) {
	if o.vals == nil {
		o.vals = map[string][]string{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func soleAgent(r *RunFile) (string, error) {
	if len(r.entriesByAgent) == 1 {
		return r.AgentNames()[0], nil
	}
	return "", errorf("The %s run's metrics at '%s' contain %d agents: %s. "+
		"Set 'agent_name' to compare one of them on both sides, or 'baseline_agent_name' / "+
		"'candidate_agent_names' to choose a different agent per side.",
		r.Role, r.AggregatePath, len(r.entriesByAgent), strings.Join(r.AgentNames(), ", "))
}

func requireAgent(r *RunFile, name string) error {
	if _, ok := r.entriesByAgent[name]; ok {
		return nil
	}
	return errorf("Agent '%s' is not in '%s'. Available: %s.%s", name, r.AggregatePath, strings.Join(r.AgentNames(), ", "), resolve.DidYouMean(name, r.AgentNames()))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
