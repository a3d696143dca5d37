package resources

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/openai"
	"github.com/tidwall/gjson"
)

// The keys rollout collection stamps on every rollout.
const (
	TaskIndexKey    = "_ng_task_index"
	RolloutIndexKey = "_ng_rollout_index"
)

// Rollout is one verify response as /aggregate_metrics receives it: the
// verify reply with the heavy fields stripped by the collector, keeping
// response.usage, plus the task and rollout indices (0 when absent, as
// NeMo Gym defaults them).
type Rollout struct {
	TaskIndex    int64
	RolloutIndex int64
	Raw          json.RawMessage
}

func (r Rollout) get(key string) gjson.Result { return gjson.GetBytes(r.Raw, gjson.Escape(key)) }

// Value returns the raw JSON of a top-level field, and whether it is present.
func (r Rollout) Value(key string) (json.RawMessage, bool) {
	v := r.get(key)
	if !v.Exists() {
		return nil, false
	}
	return json.RawMessage(v.Raw), true
}

// Number returns a top-level number, with booleans as 0 and 1 (Python
// treats them as ints).
func (r Rollout) Number(key string) (float64, bool) { return number(r.get(key)) }

func number(v gjson.Result) (float64, bool) {
	switch v.Type {
	case gjson.Number:
		return v.Num, true
	case gjson.True:
		return 1, true
	case gjson.False:
		return 0, true
	}
	return 0, false
}

// Tasks passes a run's rollouts a task at a time: ascending task index,
// arrival order within a task. It may be called again and yields the same
// tasks each time; a task's rollouts are only read during its yield, so a
// run larger than memory can be read from disk.
type Tasks func(yield func(task []Rollout) error) error

// TasksOf is Tasks over rollouts held in memory.
func TasksOf(tasks [][]Rollout) Tasks {
	return func(yield func([]Rollout) error) error {
		for _, t := range tasks {
			if err := yield(t); err != nil {
				return err
			}
		}
		return nil
	}
}

// MetricsHooks are a server's overrides of NeMo Gym's compute_metrics and
// get_key_metrics.
type MetricsHooks struct {
	// ComputeMetrics reads the rollouts by task, as often as it needs to.
	// Its result is merged into agent_metrics, except a "per_task_metrics"
	// entry (a []*Metrics, each with _ng_task_index), which is merged into
	// the matching groups.
	ComputeMetrics func(tasks Tasks) (*Metrics, error)
	// KeyMetrics picks the headline metrics from agent_metrics; nil picks
	// every mean/* entry.
	KeyMetrics func(agent *Metrics) *Metrics
}

// AggregateMetrics is the /aggregate_metrics reply.
type AggregateMetrics struct {
	GroupLevelMetrics []*Metrics
	AgentMetrics      *Metrics
	KeyMetrics        *Metrics
	// PerfSummary is the rollouts' ng_perf summarised (PerfSummary), left
	// out when none has one (NeMo Gym writes null).
	PerfSummary json.RawMessage
	// RepeatLevelMetrics has an entry per rollout index when there are
	// several (nemo-gym 0.7.0), each without its agent_ref.
	RepeatLevelMetrics []*Metrics
}

// MarshalJSON writes the reply with NeMo Gym's key order.
func (a *AggregateMetrics) MarshalJSON() ([]byte, error) {
	m := NewMetrics()
	m.Set("group_level_metrics", a.GroupLevelMetrics)
	m.Set("agent_metrics", a.AgentMetrics)
	m.Set("key_metrics", a.KeyMetrics)
	if a.PerfSummary != nil {
		m.Set("perf_summary", a.PerfSummary)
	}
	repeats := a.RepeatLevelMetrics
	if repeats == nil {
		repeats = []*Metrics{}
	}
	m.Set("repeat_level_metrics", repeats)
	return m.MarshalJSON()
}

// sampleRow stands in for the input row in server-side aggregation, where
// NeMo Gym has no materialized input to show.
var sampleRow = json.RawMessage(`{"agent_ref":{"name":"agent"}}`)

// statNames are RewardProfiler's statistics, in its output order.
var statNames = [...]string{"mean", "max", "min", "median", "std"}

// ProfileOptions are what a profile knows besides the rollouts: the
// server-side aggregate sees only verify responses, `gym eval profile` also
// has the materialized inputs.
type ProfileOptions struct {
	// Sample returns the row a task's group shows as "sample": the input
	// row minus its indices. Nil shows {"agent_ref":{"name":"agent"}}.
	Sample func(task int64) (json.RawMessage, error)
	// Expected returns how many rollouts were materialized for a task. Nil
	// expects exactly the rollouts profiled.
	Expected func(task int64) int
}

// Aggregate computes NeMo Gym's aggregate metrics over verify responses:
// RewardProfiler's mean, max, min, median and std (sample std, 0 instead of
// NaN when no column has two values) of every top-level number or boolean
// and every number of response.usage, per task and over all rollouts; the
// per-task completion counts and rollout_infos; then the hooks. The agent
// server and `gym eval` reuse it. Empty input gives empty lists and objects.
func Aggregate(verifyResponses []json.RawMessage, hooks MetricsHooks) (*AggregateMetrics, error) {
	out := &AggregateMetrics{GroupLevelMetrics: []*Metrics{}, AgentMetrics: NewMetrics(), KeyMetrics: NewMetrics()}
	if len(verifyResponses) == 0 {
		return out, nil
	}
	p := &profiler{colIndex: map[string]int{}}
	var perfs []gjson.Result
	for i, raw := range verifyResponses {
		if err := p.addVerifyResponse(i, raw); err != nil {
			return nil, err
		}
		if perf := gjson.GetBytes(raw, "ng_perf"); perf.IsObject() {
			perfs = append(perfs, perf)
		}
	}
	perf, err := PerfSummary(perfs, len(verifyResponses))
	if err != nil {
		return nil, err
	}
	out.PerfSummary = perf

	taskIDs, byTask := p.tasks()
	groupByTask := make(map[int64]*Metrics, len(taskIDs))
	for _, t := range taskIDs {
		g, err := p.group(t, byTask[t], ProfileOptions{})
		if err != nil {
			return nil, err
		}
		out.GroupLevelMetrics = append(out.GroupLevelMetrics, g)
		groupByTask[t] = g
	}

	all := make([]int, len(p.rows))
	for i := range all {
		all[i] = i
	}
	p.describe(all, out.AgentMetrics)
	repeats := p.repeatLevel(all, json.RawMessage(`{"name":"agent"}`))
	acrossRepeats(repeats, out.AgentMetrics)

	if hooks.ComputeMetrics != nil {
		tasks := make([][]Rollout, len(taskIDs))
		for i, t := range taskIDs {
			for _, ri := range byTask[t] {
				tasks[i] = append(tasks[i], p.rows[ri].rollout)
			}
		}
		custom, err := hooks.ComputeMetrics(TasksOf(tasks))
		if err != nil {
			return nil, err
		}
		for t, list := range customMetrics(custom, out.AgentMetrics) {
			if g := groupByTask[t]; g != nil {
				mergeTaskMetrics(g, list)
			}
		}
	}
	// One repeat-level entry per rollout index, or none when there is only one.
	out.AgentMetrics.Set("num_repeats", int64(max(len(repeats), 1)))
	for _, r := range repeats {
		r.Delete("agent_ref")
	}
	out.RepeatLevelMetrics = repeats

	if hooks.KeyMetrics != nil {
		out.KeyMetrics = hooks.KeyMetrics(out.AgentMetrics)
	} else {
		out.KeyMetrics = MeanMetrics(out.AgentMetrics)
	}
	return out, nil
}

// customMetrics merges a ComputeMetrics result into agent and returns its
// per_task_metrics by task, for the groups.
func customMetrics(custom, agent *Metrics) map[int64][]*Metrics {
	perTask := map[int64][]*Metrics{}
	if custom == nil {
		return perTask
	}
	if v, ok := custom.Get("per_task_metrics"); ok {
		custom.Delete("per_task_metrics")
		list, _ := v.([]*Metrics)
		for _, ptm := range list {
			if t, ok := ptm.Float(TaskIndexKey); ok {
				perTask[int64(t)] = append(perTask[int64(t)], ptm)
			}
		}
	}
	agent.Update(custom)
	return perTask
}

// mergeTaskMetrics sets a group's per_task_metrics entries, all but the
// task index.
func mergeTaskMetrics(group *Metrics, list []*Metrics) {
	for _, ptm := range list {
		for _, k := range ptm.Keys() {
			if k != TaskIndexKey {
				v, _ := ptm.Get(k)
				group.Set(k, v)
			}
		}
	}
}

// Profiler is RewardProfiler as `gym eval profile` runs it: rollouts are
// added one at a time as they are read, keeping only the numbers the
// statistics need, and profiled in (task, rollout) order per task and per
// agent. It is the profile Aggregate computes, without compute_metrics.
type Profiler struct {
	p          profiler
	opts       ProfileOptions
	agents     []string
	agentIndex map[string]int32
	sorted     bool
}

// NewProfiler returns an empty Profiler.
func NewProfiler(o ProfileOptions) *Profiler {
	return &Profiler{p: profiler{colIndex: map[string]int{}}, opts: o, agentIndex: map[string]int32{}}
}

// Add profiles one rollout of agent under the key (task, rollout). result
// must be valid JSON (Add checks only that it is an object): the verify
// response, whose top-level numbers, booleans and reward and whose
// response.usage numbers are kept; nothing else of it is.
func (pr *Profiler) Add(agent string, task, rollout int64, result []byte) error {
	res := gjson.ParseBytes(result)
	if !res.IsObject() {
		return fmt.Errorf("a rollout must be a JSON object, got %.40s", result)
	}
	a, ok := pr.agentIndex[agent]
	if !ok {
		a = int32(len(pr.agents))
		pr.agentIndex[agent] = a
		pr.agents = append(pr.agents, agent)
	}
	pr.p.add(pr.p.collect(res), task, rollout, a, nil)
	pr.sorted = false
	return nil
}

// Len is the number of rollouts added.
func (pr *Profiler) Len() int { return len(pr.p.rows) }

// sort puts the rollouts in (task, rollout) order, the order of the
// DataFrame NeMo Gym profiles, which also fixes the column order.
func (pr *Profiler) sort() {
	if !pr.sorted {
		pr.p.sortByKey()
		pr.sorted = true
	}
}

// Groups passes the group-level metrics to emit, one task at a time in task
// order, so that a caller writing them out never holds them all.
func (pr *Profiler) Groups(emit func(*Metrics) error) error {
	pr.sort()
	// Sorted, a task's rollouts are adjacent: no index of tasks is needed.
	var rows []int
	for i, r := range pr.p.rows {
		rows = append(rows, i)
		if i+1 < len(pr.p.rows) && pr.p.rows[i+1].rollout.TaskIndex == r.rollout.TaskIndex {
			continue
		}
		g, err := pr.p.group(r.rollout.TaskIndex, rows, pr.opts)
		if err != nil {
			return err
		}
		if err := emit(g); err != nil {
			return err
		}
		rows = rows[:0]
	}
	return nil
}

// Agents returns the agent-level metrics, one entry per agent in name
// order (pandas' groupby order), each ending with "agent_ref": {"name": …},
// and the repeat-level metrics: for each agent with several rollout
// indices, in the same order, an entry per rollout index with its
// agent_ref.
func (pr *Profiler) Agents() (agents, repeats []*Metrics) {
	pr.sort()
	rows := make([][]int, len(pr.agents))
	for i, r := range pr.p.rows {
		rows[r.agent] = append(rows[r.agent], i)
	}
	order := make([]int32, len(pr.agents))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(pr.agents[a], pr.agents[b]) })
	agents, repeats = make([]*Metrics, 0, len(order)), []*Metrics{}
	for _, a := range order {
		m := NewMetrics()
		pr.p.describe(rows[a], m)
		ref := json.RawMessage(append(openai.AppendJSONString([]byte(`{"name":`), pr.agents[a]), '}'))
		agentRepeats := pr.p.repeatLevel(rows[a], ref)
		acrossRepeats(agentRepeats, m)
		m.Set("agent_ref", ref)
		agents = append(agents, m)
		repeats = append(repeats, agentRepeats...)
	}
	return agents, repeats
}

// MeanMetrics is NeMo Gym's default key-metric choice: every mean/* entry.
func MeanMetrics(agent *Metrics) *Metrics {
	key := NewMetrics()
	for _, k := range agent.Keys() {
		if len(k) > 5 && k[:5] == "mean/" {
			v, _ := agent.Get(k)
			key.Set(k, v)
		}
	}
	return key
}

// profiler holds the flattened numeric view of every rollout, the columns
// a pandas DataFrame of them would have.
type profiler struct {
	cols        []column
	colIndex    map[string]int
	rows        []profRow
	n           int // rollouts counted into the columns
	top, merged fields
	cells       []cell
	info        []byte
	vals        [][]float64
}

type column struct {
	name string
	keys [len(statNames)]string // "<stat>/<name>"
	// notInt is set when any rollout lacks the column or holds a float
	// there: pandas then types it float64, and max/min come out as floats.
	notInt  bool
	present int
}

type cell struct {
	col   int
	value float64
}

type profRow struct {
	rollout Rollout
	agent   int32
	cells   []cell
	info    json.RawMessage
}

type field struct {
	key string
	val gjson.Result
}

// fields is an object's members in order, a repeated key keeping its first
// place and last value, as a Python dict built from it does.
type fields []field

func (fs *fields) set(key string, v gjson.Result) {
	for j := range *fs {
		if (*fs)[j].key == key {
			(*fs)[j].val = v
			return
		}
	}
	*fs = append(*fs, field{key, v})
}

func (fs fields) get(key string) gjson.Result {
	for _, f := range fs {
		if f.key == key {
			return f.val
		}
	}
	return gjson.Result{}
}

// addVerifyResponse adds an /aggregate_metrics input: absent indices are 0,
// as NeMo Gym defaults them, and the whole response is kept for the hooks.
func (p *profiler) addVerifyResponse(i int, raw json.RawMessage) error {
	top, task, rollout, err := p.parseVerifyResponse(i, raw)
	if err != nil {
		return err
	}
	p.add(top, task, rollout, 0, raw)
	return nil
}

// collect returns the top-level members of an object in the scratch list
// that add hands back, so rows after the first allocate no list.
func (p *profiler) collect(res gjson.Result) fields {
	top := p.top[:0]
	res.ForEach(func(k, v gjson.Result) bool {
		top.set(k.String(), v)
		return true
	})
	return top
}

// add appends one rollout's numeric record. raw is kept only for the
// compute_metrics hooks; nil keeps nothing of the response.
func (p *profiler) add(top fields, task, rollout int64, agent int32, raw json.RawMessage) {
	row, _ := p.record(top, task, rollout, agent, raw, true, true)
	p.rows = append(p.rows, row)
}

// record builds one rollout's numeric record, with its rollout info when
// info is set. Counted, the rollout is one more row of the columns'
// statistics (a new column is registered, presence and integer-ness
// tracked); not counted, its columns must all be known already (a second
// pass over the same rows), or ok is false.
func (p *profiler) record(top fields, task, rollout int64, agent int32, raw json.RawMessage, count, info bool) (row profRow, ok bool) {
	defer func() { p.top = top[:0] }()
	row = profRow{rollout: Rollout{TaskIndex: task, RolloutIndex: rollout, Raw: raw}, agent: agent}
	usage := top.get("response").Get("usage")
	// The info and the cells are built in scratch space and copied at their
	// size: a profile of a long run holds them for every rollout.
	if info {
		p.info = appendRolloutInfo(p.info[:0], top, task, rollout, usage)
		row.info = json.RawMessage(bytes.Clone(p.info))
	}

	// The record is `result | response.usage`: usage keys win on a clash
	// and new ones go last, as in a Python dict merge.
	merged := top
	if usage.IsObject() {
		merged = append(p.merged[:0], top...)
		defer func() { p.merged = merged[:0] }()
		usage.ForEach(func(k, v gjson.Result) bool {
			merged.set(k.String(), v)
			return true
		})
	}
	cells := p.cells[:0]
	for _, f := range merged {
		if f.key == TaskIndexKey || f.key == RolloutIndexKey {
			continue
		}
		v, isInt, ok := numericCell(f.val)
		if !ok {
			continue
		}
		c, known := p.colIndex[f.key]
		if !known {
			if !count {
				return row, false
			}
			c = len(p.cols)
			p.colIndex[f.key] = c
			// Rollouts before this one lack the column: pandas fills NaN.
			col := column{name: f.key, notInt: p.n > 0}
			for s, stat := range statNames {
				col.keys[s] = stat + "/" + f.key
			}
			p.cols = append(p.cols, col)
		}
		if count {
			p.cols[c].present++
			if !isInt {
				p.cols[c].notInt = true
			}
		}
		cells = append(cells, cell{c, v})
	}
	row.cells = slices.Clone(cells)
	p.cells = cells[:0]
	if count {
		p.n++
		for c := range p.cols {
			if p.cols[c].present < p.n {
				p.cols[c].notInt = true
			}
		}
	}
	return row, true
}

// sortByKey orders the rows by (task, rollout) and renumbers the columns by
// first appearance in that order, as a DataFrame built from the sorted
// rows would have them.
func (p *profiler) sortByKey() {
	slices.SortStableFunc(p.rows, func(a, b profRow) int {
		if c := cmp.Compare(a.rollout.TaskIndex, b.rollout.TaskIndex); c != 0 {
			return c
		}
		return cmp.Compare(a.rollout.RolloutIndex, b.rollout.RolloutIndex)
	})
	renumber := make([]int, len(p.cols))
	for i := range renumber {
		renumber[i] = -1
	}
	cols := make([]column, 0, len(p.cols))
	for _, r := range p.rows {
		for i, c := range r.cells {
			if renumber[c.col] < 0 {
				renumber[c.col] = len(cols)
				p.colIndex[p.cols[c.col].name] = len(cols)
				cols = append(cols, p.cols[c.col])
			}
			r.cells[i].col = renumber[c.col]
		}
	}
	p.cols = cols
}

// tasks returns the task indices in order and each task's rows in row
// order.
func (p *profiler) tasks() ([]int64, map[int64][]int) {
	byTask := map[int64][]int{}
	for i, r := range p.rows {
		byTask[r.rollout.TaskIndex] = append(byTask[r.rollout.TaskIndex], i)
	}
	taskIDs := make([]int64, 0, len(byTask))
	for t := range byTask {
		taskIDs = append(taskIDs, t)
	}
	slices.Sort(taskIDs)
	return taskIDs, byTask
}

// group is one task's group-level entry.
func (p *profiler) group(task int64, rows []int, o ProfileOptions) (*Metrics, error) {
	sample := sampleRow
	if o.Sample != nil {
		var err error
		if sample, err = o.Sample(task); err != nil {
			return nil, err
		}
	}
	expected := len(rows)
	if o.Expected != nil {
		expected = o.Expected(task)
	}
	g := NewMetrics()
	g.Set(TaskIndexKey, task)
	p.describe(rows, g)
	g.Set("sample", sample)
	g.Set("num_rollouts", len(rows))
	g.Set("expected_num_rollouts", expected)
	g.Set("missing_num_rollouts", expected-len(rows))
	pct := 100.0
	if expected != 0 {
		pct = 100.0 * float64(len(rows)) / float64(expected)
	}
	g.Set("reward_profile_completion_pct", pct)
	sorted := slices.Clone(rows)
	sort.SliceStable(sorted, func(a, b int) bool {
		return p.rows[sorted[a]].rollout.RolloutIndex < p.rows[sorted[b]].rollout.RolloutIndex
	})
	infos := make([]json.RawMessage, len(sorted))
	for i, ri := range sorted {
		infos[i] = p.rows[ri].info
	}
	g.Set("rollout_infos", infos)
	return g, nil
}

// numericCell is the value pandas would hold for a field: numbers as they
// are, booleans as 0 and 1; anything else is not a column.
func numericCell(v gjson.Result) (value float64, isInt, ok bool) {
	switch v.Type {
	case gjson.True:
		return 1, true, true
	case gjson.False:
		return 0, true, true
	case gjson.Number:
		return v.Num, isIntLiteral(v.Raw), true
	}
	return 0, false, false
}

func isIntLiteral(raw string) bool {
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '.', 'e', 'E':
			return false
		}
	}
	return true
}

func indexField(top fields, key string, i int) (int64, error) {
	v := top.get(key)
	if !v.Exists() || v.Type == gjson.Null {
		return 0, nil
	}
	if v.Type != gjson.Number || !isIntLiteral(v.Raw) {
		return 0, fmt.Errorf("verify_responses[%d].%s must be an integer, got %s", i, key, v.Raw)
	}
	n, err := strconv.ParseInt(v.Raw, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("verify_responses[%d].%s: %w", i, key, err)
	}
	return n, nil
}

// appendRolloutInfo appends the compact per-rollout record of a group: ids,
// reward, usage numbers, then the other numeric fields (booleans as 0/1),
// values kept as written. It is encoded at once: a group only ever writes
// it out.
func appendRolloutInfo(b []byte, top fields, task, rollout int64, usage gjson.Result) []byte {
	type kv struct{ key, raw string }
	fields := make([]kv, 0, 12)
	set := func(key, raw string) {
		for i := range fields {
			if fields[i].key == key {
				fields[i].raw = raw
				return
			}
		}
		fields = append(fields, kv{key, raw})
	}
	set("rollout_id", string(openai.AppendJSONString(nil, strconv.FormatInt(task, 10)+":"+strconv.FormatInt(rollout, 10))))
	set(TaskIndexKey, strconv.FormatInt(task, 10))
	set(RolloutIndexKey, strconv.FormatInt(rollout, 10))
	if r := top.get("reward"); r.Exists() {
		set("reward", r.Raw)
	}
	addNumeric := func(key string, v gjson.Result) {
		switch {
		case key == TaskIndexKey || key == RolloutIndexKey || key == "reward" || key == "response":
		case v.Type == gjson.True:
			set(key, "1")
		case v.Type == gjson.False:
			set(key, "0")
		case v.Type == gjson.Number:
			set(key, v.Raw)
		}
	}
	if usage.IsObject() {
		usage.ForEach(func(k, v gjson.Result) bool {
			addNumeric(k.String(), v)
			return true
		})
	}
	for _, f := range top {
		addNumeric(f.key, f.val)
	}
	b = append(b, '{')
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = openai.AppendJSONString(b, f.key)
		b = append(b, ':')
		b = append(b, f.raw...)
	}
	return append(b, '}')
}

// describe sets RewardProfiler's statistics of rows into m: for each
// statistic, for each column, `<stat>/<column>`, leaving out NaN.
func (p *profiler) describe(rows []int, m *Metrics) {
	vals := p.scratchValues()
	for _, ri := range rows {
		for _, c := range p.rows[ri].cells {
			vals[c.col] = append(vals[c.col], c.value)
		}
	}
	p.describeValues(vals, len(rows), m)
}

// scratchValues are empty per-column value lists, reused across groups.
func (p *profiler) scratchValues() [][]float64 {
	for len(p.vals) < len(p.cols) {
		p.vals = append(p.vals, nil)
	}
	vals := p.vals[:len(p.cols)]
	for c := range vals {
		vals[c] = vals[c][:0]
	}
	return vals
}

// describeValues is describe over each column's values (vals[c], in row
// order) of rows rollouts.
func (p *profiler) describeValues(vals [][]float64, rows int, m *Metrics) {
	stats := make([]columnStats, len(p.cols))
	for c := range stats {
		stats[c] = describeColumn(vals[c])
	}
	p.setDescribed(stats, rows, m)
}

// columnStats are one column's mean, max, min, median and std over the n
// rollouts that have it.
type columnStats struct {
	s [len(statNames)]float64
	n int
}

// describeColumn computes a column's statistics; v is left sorted.
func describeColumn(v []float64) columnStats {
	if len(v) == 0 {
		return columnStats{s: [5]float64{math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()}}
	}
	var sum float64
	lo, hi := v[0], v[0]
	for _, x := range v {
		sum += x
		lo, hi = min(lo, x), max(hi, x)
	}
	mean := sum / float64(len(v))
	std := math.NaN()
	if len(v) > 1 {
		var sq float64
		for _, x := range v {
			sq += (x - mean) * (x - mean)
		}
		std = math.Sqrt(sq / float64(len(v)-1))
	}
	// The sums are taken in row order first: sorted, they could round
	// differently.
	slices.Sort(v)
	return columnStats{s: [5]float64{mean, hi, lo, sortedMedian(v), std}, n: len(v)}
}

// setDescribed sets RewardProfiler's statistics into m: for each
// statistic, for each column, `<stat>/<column>`, leaving out NaN.
func (p *profiler) setDescribed(stats []columnStats, rows int, m *Metrics) {
	allStdNaN := true
	for _, st := range stats {
		if st.n > 1 {
			allStdNaN = false
		}
	}
	// pandas gives NaN for the std of one value; RewardProfiler reads that
	// as 0, but only when no column has a real std, and only for columns
	// with no missing value.
	if allStdNaN {
		for c := range stats {
			if stats[c].n == rows {
				stats[c].s[4] = 0
			}
		}
	}
	for s, stat := range statNames {
		for c, col := range p.cols {
			x := stats[c].s[s]
			if math.IsNaN(x) {
				continue
			}
			if (stat == "max" || stat == "min") && !col.notInt {
				m.Set(col.keys[s], int64(x))
			} else {
				m.Set(col.keys[s], x)
			}
		}
	}
}

// sortedMedian is the median of values already in order.
func sortedMedian(s []float64) float64 { return medianAt(len(s), sliceAt(s)) }

func sliceAt(s []float64) func(int) float64 { return func(i int) float64 { return s[i] } }

// medianAt is the median of n values whose i-th smallest is at(i).
func medianAt(n int, at func(int) float64) float64 {
	mid := n / 2
	if n%2 == 1 {
		return at(mid)
	}
	return (at(mid-1) + at(mid)) / 2
}

// medianRanks are the ranks medianAt reads.
func medianRanks(n int) []int {
	if n%2 == 1 {
		return []int{n / 2}
	}
	return []int{n/2 - 1, n / 2}
}
