package compare

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/pyjson"
)

// The report files, written into the output directory.
const (
	MarkdownReportName = "compare_report.md"
	JSONReportName     = "compare_report.json"
)

// Config is what one comparison reads and where it writes.
type Config struct {
	Baseline   string   // baseline_rollouts_jsonl_fpath
	Candidates []string // candidate_rollouts_jsonl_fpaths
	// Overrides of the <stem>_aggregate_metrics.json siblings.
	BaselineMetrics  string
	CandidateMetrics []string
	Agent            string
	BaselineAgent    *string  // nil: not given
	CandidateAgents  []string // nil: not given
	OutputDir        string
	ReportFormat     string // md, json or both ("" is both)
	Command          string // the invocation, for provenance
	NeMoGymVersion   string
	Now              time.Time
	Cwd              string
	// ResolveRead finds a relative read path over the search roots.
	ResolveRead func(string) string
	// Warn receives the warnings NeMo Gym raises as Python warnings.
	Warn io.Writer
}

// maxCandidates: NeMo Gym 0.7.0 compares one candidate; the shapes are
// lists so that more is a change of rules, not of format.
const maxCandidates = 1

// Validate checks the settings as ComparisonConfig does.
func (c *Config) Validate() error {
	n := len(c.Candidates)
	if n == 0 {
		return errorf("invalid configuration: candidate_rollouts_jsonl_fpaths: List should have at least 1 item after validation, not 0")
	}
	if n > maxCandidates {
		return errorf("%d candidates were given, but comparing more than %d candidate is not supported yet. Give a single candidate run.", n, maxCandidates)
	}
	for _, f := range []struct {
		name string
		v    []string
	}{{"candidate_agent_names", c.CandidateAgents}, {"candidate_aggregate_metrics_fpaths", c.CandidateMetrics}} {
		if f.v != nil && len(f.v) != n {
			return errorf("%s has %d entries but %d candidate run(s) were given. Give one entry per candidate, in the same order.", f.name, len(f.v), n)
		}
	}
	switch c.ReportFormat {
	case "", "md", "json", "both":
	default:
		return errorf("invalid configuration: report_format: Input should be 'md', 'json' or 'both', got '%s'", c.ReportFormat)
	}
	return nil
}

// Result is the comparison, as compare_report.json holds it.
type Result struct {
	GeneratedAt    string
	NeMoGymVersion string
	Command        string
	Baseline       *RunFile
	Candidates     []*RunFile
	Comparisons    []*AgentComparison
	skipped        *orderedStrings
	Warnings       []string
}

// Build loads both sides, picks the agents and compares them.
func Build(c *Config) (*Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	warn := c.Warn
	if warn == nil {
		warn = io.Discard
	}
	resolve := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		if c.ResolveRead != nil {
			return pathJoin(c.Cwd, c.ResolveRead(p))
		}
		return pathJoin(c.Cwd, p)
	}
	baseline, err := loadRunFile(c.Baseline, "baseline", 0, c.BaselineMetrics, resolve, warn)
	if err != nil {
		return nil, err
	}
	var candidates []*RunFile
	for i, p := range c.Candidates {
		var override string
		if c.CandidateMetrics != nil {
			override = c.CandidateMetrics[i]
		}
		rf, err := loadRunFile(p, "candidate", i, override, resolve, warn)
		if err != nil {
			return nil, err
		}
		candidates = append(candidates, rf)
	}
	sels, warnings, skipped, err := selectAgents(baseline, candidates, c.Agent, c.BaselineAgent, c.CandidateAgents)
	if err != nil {
		return nil, err
	}
	res := &Result{
		GeneratedAt:    c.Now.UTC().Format("2006-01-02T15:04:05+00:00"),
		NeMoGymVersion: c.NeMoGymVersion,
		Command:        c.Command,
		Baseline:       baseline,
		Candidates:     candidates,
		skipped:        skipped,
		Warnings:       warnings,
	}
	for _, s := range sels {
		b, err := buildLoadedRun(baseline, s.baseline)
		if err != nil {
			return nil, err
		}
		var cs []*loadedRun
		for i, name := range s.candidates {
			cr, err := buildLoadedRun(candidates[i], name)
			if err != nil {
				return nil, err
			}
			cs = append(cs, cr)
		}
		ac, err := compareRuns(b, cs, warn)
		if err != nil {
			return nil, err
		}
		res.Comparisons = append(res.Comparisons, ac)
	}
	return res, nil
}

// OutputDirPath is where the report goes: --output-dir against the working
// directory, else the (last) candidate run's own directory.
func (c *Config) OutputDirPath() string {
	if c.OutputDir != "" {
		return pathJoin(c.Cwd, c.OutputDir)
	}
	last := c.Candidates[len(c.Candidates)-1]
	if !filepath.IsAbs(last) && c.ResolveRead != nil {
		last = c.ResolveRead(last)
	}
	return filepath.Dir(pathJoin(c.Cwd, last))
}

// pathJoin is pathlib's a / b: b when absolute, "." parts and doubled
// separators dropped, ".." kept.
func pathJoin(a, b string) string {
	if !filepath.IsAbs(b) {
		b = a + "/" + b
	}
	var parts []string
	for _, p := range strings.Split(b, "/") {
		if p != "" && p != "." {
			parts = append(parts, p)
		}
	}
	return "/" + strings.Join(parts, "/")
}

// Write writes the requested report files into dir and returns their
// paths.
func Write(res *Result, dir, format string) ([]string, error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, errorf("--output-dir '%s' exists and is not a directory.", dir)
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, errorf("Cannot write to --output-dir '%s': %v", dir, err)
	}
	var written []string
	if format == "" || format == "md" || format == "both" {
		p := filepath.Join(dir, MarkdownReportName)
		if err := os.WriteFile(p, []byte(Markdown(res)), 0o666); err != nil {
			return nil, errorf("Cannot write the report into '%s': %v", dir, err)
		}
		written = append(written, p)
	}
	if format == "" || format == "json" || format == "both" {
		p := filepath.Join(dir, JSONReportName)
		if err := os.WriteFile(p, JSON(res), 0o666); err != nil {
			return nil, errorf("Cannot write the report into '%s': %v", dir, err)
		}
		written = append(written, p)
	}
	return written, nil
}

const missing = "—"

// ciFootnote explains the interval columns under every metrics table.
const ciFootnote = "Displayed baseline/candidate values and each delta use `mean_across_repeats/<metric>` when recorded, " +
	"otherwise the metric value. " +
	"Delta CI = two-sided independent-sample 95% Welch t-interval for candidate minus baseline, " +
	"computed from the named metric's values in each run's `repeat_level_metrics`. " +
	"`" + missing + "` means the required interval data was unavailable: " +
	"delta intervals require at least 2 finite repeat-level values on each side. " +
	"Baseline/candidate CI = 95% t-interval of the per-repeat mean across repeats, read verbatim from " +
	"`ci_{low,high}_95_across_repeats/<metric>` in `*_aggregate_metrics.json`."

// pyFixed is Python's f"{v:.Nf}" (with sign: f"{v:+.Nf}").
func pyFixed(v float64, prec int, sign bool) string {
	var s string
	switch {
	case math.IsNaN(v):
		s = "nan"
	case math.IsInf(v, 0):
		s = "inf"
		if v < 0 {
			s = "-inf"
		}
	default:
		s = strconv.FormatFloat(v, 'f', prec, 64)
	}
	if sign && !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s
}

func fmtNum(v *float64) string    { return fmtDecimals(v, false) }
func fmtSigned(v *float64) string { return fmtDecimals(v, true) }

// fmtDecimals shows 4 decimals below 10 in magnitude, else 2, with a +
// before a positive value when sign.
func fmtDecimals(v *float64, sign bool) string {
	if v == nil {
		return missing
	}
	if math.Abs(*v) < 10 {
		return pyFixed(*v, 4, sign)
	}
	return pyFixed(*v, 2, sign)
}

func fmtPoint(v *MetricValue) string {
	if v == nil {
		return missing
	}
	return fmtNum(ptr(v.point()))
}

func fmtCI(v *MetricValue) string {
	if v == nil || v.CILow == nil || v.CIHigh == nil {
		return missing
	}
	return "[" + fmtNum(v.CILow) + ", " + fmtNum(v.CIHigh) + "]"
}

func fmtDelta(c *CandidateValue) string {
	if c == nil || c.Delta == nil {
		return missing
	}
	if c.DeltaPct == nil {
		return fmtSigned(c.Delta) + " (n/a)"
	}
	return fmtSigned(c.Delta) + " (" + pyFixed(*c.DeltaPct, 1, true) + "%)"
}

func fmtDeltaCI(c *CandidateValue) string {
	if c == nil || c.DeltaCILow == nil || c.DeltaCIHigh == nil {
		return missing
	}
	return "[" + fmtSigned(c.DeltaCILow) + ", " + fmtSigned(c.DeltaCIHigh) + "]"
}

// pyG is Python's f"{v:g}".
func pyG(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

func fmtRewards(r []float64) string {
	if len(r) == 0 {
		return missing
	}
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = pyG(v)
	}
	return strings.Join(parts, ", ")
}

func table(header, align []string, rows [][]string) []string {
	out := []string{"| " + strings.Join(header, " | ") + " |", "|" + strings.Join(align, "|") + "|"}
	for _, r := range rows {
		out = append(out, "| "+strings.Join(r, " | ")+" |")
	}
	return out
}

func candidateLabels(res *Result) []string {
	if len(res.Candidates) == 1 {
		return []string{"Candidate"}
	}
	out := make([]string, len(res.Candidates))
	for i := range out {
		out[i] = fmt.Sprintf("Candidate %d", i+1)
	}
	return out
}

func orUnknown(n *int) string {
	if n == nil {
		return "unknown"
	}
	return strconv.Itoa(*n)
}

func runSummaryTable(res *Result, c *AgentComparison) []string {
	row := func(name, base string, cand func(i int) string) []string {
		r := []string{name, base}
		for i := range res.Candidates {
			r = append(r, cand(i))
		}
		return r
	}
	rows := [][]string{
		row("Run", "`"+res.Baseline.Label()+"`", func(i int) string { return "`" + res.Candidates[i].Label() + "`" }),
		row("Rollouts", "`"+res.Baseline.Rollouts+"`", func(i int) string { return "`" + res.Candidates[i].Rollouts + "`" }),
		row("Aggregate metrics", "`"+res.Baseline.AggregatePath+"`", func(i int) string { return "`" + res.Candidates[i].AggregatePath + "`" }),
		row("Agent", "`"+c.BaselineAgent+"`", func(i int) string { return "`" + c.CandidateAgents[i] + "`" }),
		row("Tasks", strconv.Itoa(c.BaselineTaskCount), func(i int) string { return strconv.Itoa(c.CandidateTaskCounts[i]) }),
		row("Repeats", orUnknown(c.BaselineRepeatCount), func(i int) string { return orUnknown(c.CandidateRepeatCounts[i]) }),
	}
	header := append([]string{"", "Baseline"}, candidateLabels(res)...)
	align := make([]string, len(header))
	for i := range align {
		align[i] = "---"
	}
	return table(header, align, rows)
}

const (
	deltaHeader   = "Δ (cand − base)"
	deltaCIHeader = "95% CI for " + deltaHeader
)

func metricTable(rows []MetricRow, labels []string) []string {
	header := []string{"Metric", deltaHeader, deltaCIHeader, "Baseline", "Baseline 95% CI"}
	align := []string{"---", "---:", "---", "---:", "---"}
	for _, l := range labels {
		header = append(header, l, l+" 95% CI")
		align = append(align, "---:", "---")
	}
	var out [][]string
	for _, r := range rows {
		deltas, cis := make([]string, len(r.Candidates)), make([]string, len(r.Candidates))
		for i, c := range r.Candidates {
			deltas[i], cis[i] = fmtDelta(c), fmtDeltaCI(c)
		}
		cells := []string{"`" + r.Metric + "`", strings.Join(deltas, " / "), strings.Join(cis, " / "), fmtPoint(r.Baseline), fmtCI(r.Baseline)}
		for _, c := range r.Candidates {
			var mv *MetricValue
			if c != nil {
				mv = &c.MetricValue
			}
			cells = append(cells, fmtPoint(mv), fmtCI(mv))
		}
		out = append(out, cells)
	}
	return table(header, align, out)
}

// shownFlips are at most maxFlipsShown per direction, in summary order.
func shownFlips(s FlipSummary) []TaskFlip {
	var out []TaskFlip
	per := map[string]int{}
	for _, f := range s.Flips {
		if per[f.Direction] >= maxFlipsShown {
			continue
		}
		per[f.Direction]++
		out = append(out, f)
	}
	return out
}

func flipSection(s FlipSummary, label string) []string {
	lines := []string{"### Sample flips" + label, ""}
	if s.Mode == "unavailable" {
		return append(lines, "Not available: "+*s.Reason, "")
	}
	if s.Mode == "binary" {
		lines = append(lines,
			fmt.Sprintf("Field: `%s` (task mean over its repeats). A task passes when its mean is above 0.5.", flipField), "",
			fmt.Sprintf("**%d common tasks · %d pass→fail · %d fail→pass · net %+d · %d unchanged · %d tied**",
				s.CommonTasks, *s.PassToFail, *s.FailToPass, *s.Net, *s.Unchanged, *s.Tied), "")
	} else {
		lines = append(lines,
			fmt.Sprintf("Rewards are not binary, so this lists the largest per-task changes in `%s` rather than pass/fail flips.", flipField), "",
			fmt.Sprintf("**%d common tasks · %d changed · %d unchanged**", s.CommonTasks, len(s.Flips), *s.Unchanged), "")
	}
	shown := shownFlips(s)
	if len(shown) > 0 {
		var rows [][]string
		for _, f := range shown {
			rows = append(rows, []string{strconv.FormatInt(f.TaskIndex, 10), strings.Replace(f.Direction, "_to_", "→", 1),
				fmtNum(&f.BaselineScore), fmtNum(&f.CandidateScore), fmtSigned(&f.Delta), fmtRewards(f.BaselineRewards), fmtRewards(f.CandidateRewards)})
		}
		lines = append(lines, table([]string{"Task", "Direction", "Baseline", "Candidate", "Δ", "Baseline per-repeat", "Candidate per-repeat"},
			[]string{"---:", "---", "---:", "---:", "---:", "---", "---"}, rows)...)
		if rest := len(s.Flips) - len(shown); rest > 0 {
			lines = append(lines, "", fmt.Sprintf("… and %d more (full list in `%s`).", rest, JSONReportName))
		}
		lines = append(lines, "")
	}
	return append(lines,
		"Tasks are joined on `_ng_task_index`. `*_aggregate_metrics.json` carries no task identity, so flips "+
			"are reported by index only — this assumes both runs used the same dataset, split, `--limit` and ordering.", "")
}

// Markdown is compare_report.md.
func Markdown(res *Result) string {
	labels := candidateLabels(res)
	lines := []string{"# gym eval compare", ""}
	for _, c := range res.Comparisons {
		if len(res.Comparisons) > 1 {
			lines = append(lines, "## Agent: `"+c.BaselineAgent+"`", "")
		}
		lines = append(lines, runSummaryTable(res, c)...)
		lines = append(lines, "", fmt.Sprintf("Generated %s by nemo-gym %s.", res.GeneratedAt, res.NeMoGymVersion), "",
			"Command: `"+res.Command+"`", "")
		var key, other []MetricRow
		for _, r := range c.Metrics {
			if r.IsKeyMetric {
				key = append(key, r)
			} else {
				other = append(other, r)
			}
		}
		lines = append(lines, "### Key metrics", "")
		if len(key) > 0 {
			lines = append(lines, metricTable(key, labels)...)
		} else {
			lines = append(lines, "No key metrics were recorded for this agent.")
		}
		lines = append(lines, "", ciFootnote, "")
		if len(other) > 0 {
			lines = append(lines, "<details>", fmt.Sprintf("<summary>All other metrics (%d rows)</summary>", len(other)), "")
			lines = append(lines, metricTable(other, labels)...)
			lines = append(lines, "", "</details>", "")
		}
		for i, s := range c.Flips {
			label := ""
			if len(c.Flips) > 1 {
				label = " — " + labels[i]
			}
			lines = append(lines, flipSection(s, label)...)
		}
		var oneSided []string
		for _, r := range c.Metrics {
			if len(r.PresentIn) < 1+len(res.Candidates) {
				where := strings.Join(r.PresentIn, ", ")
				if where == "" {
					where = "no numeric value on either side"
				}
				oneSided = append(oneSided, "- `"+r.Metric+"` — "+where)
			}
		}
		if len(oneSided) > 0 {
			lines = append(lines, "### Metrics present in only one run", "",
				"Metric names embed the repeat count (`pass@1[avg-of-3]` vs `pass@1[avg-of-5]`), so runs "+
					"collected with different `--num-repeats` will not line these up.", "")
			lines = append(lines, oneSided...)
			lines = append(lines, "")
		}
		if len(c.Notes) > 0 {
			lines = append(lines, "### Notes", "")
			for _, n := range c.Notes {
				lines = append(lines, "- "+n)
			}
			lines = append(lines, "")
		}
	}
	if len(res.Warnings) > 0 {
		lines = append(lines, "## Warnings", "")
		for _, w := range res.Warnings {
			lines = append(lines, "- "+w)
		}
		lines = append(lines, "")
	}
	lines = append(lines, "---",
		fmt.Sprintf("Generated by `gym eval compare` (nemo-gym %s). Machine-readable output: `%s` (schema_version 1).", res.NeMoGymVersion, JSONReportName), "")
	return strings.Join(lines, "\n")
}

// KeyMetricsTable is the terminal recap of one agent's key metrics: a
// header and rows (first candidate only, as NeMo Gym prints it).
func KeyMetricsTable(c *AgentComparison) (title string, header []string, rows [][]string) {
	header = []string{"Metric", deltaHeader, deltaCIHeader, "Baseline", "Baseline 95% CI", "Candidate", "Candidate 95% CI"}
	for _, r := range c.Metrics {
		if !r.IsKeyMetric {
			continue
		}
		var cand *CandidateValue
		if len(r.Candidates) > 0 {
			cand = r.Candidates[0]
		}
		var mv *MetricValue
		if cand != nil {
			mv = &cand.MetricValue
		}
		rows = append(rows, []string{r.Metric, fmtDelta(cand), fmtDeltaCI(cand), fmtPoint(r.Baseline), fmtCI(r.Baseline), fmtPoint(mv), fmtCI(mv)})
	}
	return "Key metrics — " + c.BaselineAgent, header, rows
}

// SummaryLines is the recap printed after the files are written.
func SummaryLines(res *Result, written []string) []string {
	lines := []string{"Baseline:  " + res.Baseline.AggregatePath}
	for _, c := range res.Candidates {
		lines = append(lines, "Candidate: "+c.AggregatePath)
	}
	agents := map[string]bool{}
	var names []string
	for _, c := range res.Comparisons {
		if !agents[c.BaselineAgent] {
			agents[c.BaselineAgent] = true
			names = append(names, c.BaselineAgent)
		}
	}
	slices.Sort(names)
	lines = append(lines, "Agents compared: "+strings.Join(names, ", "))
	for _, c := range res.Comparisons {
		for _, s := range c.Flips {
			switch s.Mode {
			case "binary":
				lines = append(lines, fmt.Sprintf("Sample flips: %d fail→pass, %d pass→fail over %d common tasks", *s.FailToPass, *s.PassToFail, s.CommonTasks))
			case "continuous":
				lines = append(lines, fmt.Sprintf("Per-task changes: %d of %d common tasks moved", len(s.Flips), s.CommonTasks))
			default:
				lines = append(lines, "Sample flips unavailable: "+*s.Reason)
			}
		}
	}
	for _, w := range written {
		lines = append(lines, "Wrote: "+w)
	}
	return lines
}

// jsonWriter writes orjson's OPT_INDENT_2 layout: two-space indents,
// "key": value, empty containers as [] and {}, floats as orjson prints
// them, no trailing newline.
type jsonWriter struct{ tree.OrjsonWriter }

func (w *jsonWriter) str(s string) { w.B = tree.AppendOrjsonString(w.B, s) }

func (w *jsonWriter) float(f *float64) {
	if f == nil {
		w.B = append(w.B, "null"...)
		return
	}
	w.B = tree.AppendOrjsonFloat(w.B, *f)
}

func (w *jsonWriter) int(n *int) {
	if n == nil {
		w.B = append(w.B, "null"...)
		return
	}
	w.B = strconv.AppendInt(w.B, int64(*n), 10)
}

func (w *jsonWriter) strOrNull(s *string) {
	if s == nil {
		w.B = append(w.B, "null"...)
		return
	}
	w.str(*s)
}

func (w *jsonWriter) strings(list []string) {
	w.Open('[')
	for _, s := range list {
		w.Element()
		w.str(s)
	}
	w.Close(']')
}

func (w *jsonWriter) floats(list []float64) {
	if list == nil {
		w.B = append(w.B, "null"...)
		return
	}
	w.Open('[')
	for i := range list {
		w.Element()
		w.float(&list[i])
	}
	w.Close(']')
}

func (w *jsonWriter) runFile(r *RunFile) {
	w.Open('{')
	w.Key("role")
	w.str(r.Role)
	w.Key("index")
	w.int(&r.Index)
	w.Key("rollouts_jsonl_fpath")
	w.str(r.Rollouts)
	w.Key("aggregate_metrics_fpath")
	w.str(r.AggregatePath)
	w.Key("label")
	w.str(r.Label())
	w.Key("agent_names")
	w.strings(r.AgentNames())
	w.Close('}')
}

func (w *jsonWriter) metricValue(m *MetricValue, c *CandidateValue) {
	if m == nil {
		w.B = append(w.B, "null"...)
		return
	}
	w.Open('{')
	w.Key("value")
	w.float(&m.Value)
	for _, f := range []struct {
		k string
		v *float64
	}{{"ci_low", m.CILow}, {"ci_high", m.CIHigh}, {"se_across_repeats", m.SEAcrossRepeats}, {"mean_across_repeats", m.MeanAcrossRepeats}, {"std_err_across_runs", m.StdErrAcrossRuns}} {
		w.Key(f.k)
		w.float(f.v)
	}
	if c != nil {
		for _, f := range []struct {
			k string
			v *float64
		}{{"delta", c.Delta}, {"delta_pct", c.DeltaPct}, {"delta_ci_low", c.DeltaCILow}, {"delta_ci_high", c.DeltaCIHigh}} {
			w.Key(f.k)
			w.float(f.v)
		}
	}
	w.Close('}')
}

func (w *jsonWriter) flipSummary(s FlipSummary) {
	w.Open('{')
	w.Key("candidate_index")
	w.int(&s.CandidateIndex)
	w.Key("mode")
	w.str(s.Mode)
	w.Key("reason")
	w.strOrNull(s.Reason)
	w.Key("field")
	w.str(flipField)
	for _, f := range []struct {
		k string
		v *int
	}{{"common_task_count", &s.CommonTasks}, {"baseline_only_task_count", &s.BaselineOnly}, {"candidate_only_task_count", &s.CandidateOnly},
		{"pass_to_fail_count", s.PassToFail}, {"fail_to_pass_count", s.FailToPass}, {"tied_count", s.Tied}, {"unchanged_count", s.Unchanged}, {"net", s.Net}} {
		w.Key(f.k)
		w.int(f.v)
	}
	w.Key("flips")
	w.Open('[')
	for _, f := range s.Flips {
		w.Element()
		w.Open('{')
		w.Key("task_index")
		w.B = strconv.AppendInt(w.B, f.TaskIndex, 10)
		w.Key("baseline_score")
		w.float(&f.BaselineScore)
		w.Key("candidate_score")
		w.float(&f.CandidateScore)
		w.Key("delta")
		w.float(&f.Delta)
		w.Key("direction")
		w.str(f.Direction)
		w.Key("baseline_rewards")
		w.floats(f.BaselineRewards)
		w.Key("candidate_rewards")
		w.floats(f.CandidateRewards)
		w.Close('}')
	}
	w.Close(']')
	w.Close('}')
}

// JSON is compare_report.json.
func JSON(res *Result) []byte {
	w := &jsonWriter{tree.OrjsonWriter{Indent: "  "}}
	w.Open('{')
	w.Key("schema_version")
	w.str("1")
	w.Key("generated_at")
	w.str(res.GeneratedAt)
	w.Key("nemo_gym_version")
	w.str(res.NeMoGymVersion)
	w.Key("command")
	w.str(res.Command)
	w.Key("baseline")
	w.runFile(res.Baseline)
	w.Key("candidates")
	w.Open('[')
	for _, c := range res.Candidates {
		w.Element()
		w.runFile(c)
	}
	w.Close(']')
	w.Key("comparisons")
	w.Open('[')
	for _, c := range res.Comparisons {
		w.Element()
		w.Open('{')
		w.Key("baseline_agent")
		w.str(c.BaselineAgent)
		w.Key("candidate_agents")
		w.strings(c.CandidateAgents)
		w.Key("baseline_task_count")
		w.int(&c.BaselineTaskCount)
		w.Key("candidate_task_counts")
		w.Open('[')
		for i := range c.CandidateTaskCounts {
			w.Element()
			w.int(&c.CandidateTaskCounts[i])
		}
		w.Close(']')
		w.Key("baseline_repeat_count")
		w.int(c.BaselineRepeatCount)
		w.Key("candidate_repeat_counts")
		w.Open('[')
		for _, n := range c.CandidateRepeatCounts {
			w.Element()
			w.int(n)
		}
		w.Close(']')
		w.Key("metrics")
		w.Open('[')
		for _, r := range c.Metrics {
			w.Element()
			w.Open('{')
			w.Key("metric")
			w.str(r.Metric)
			w.Key("is_key_metric")
			w.B = strconv.AppendBool(w.B, r.IsKeyMetric)
			w.Key("present_in")
			w.strings(r.PresentIn)
			w.Key("baseline")
			w.metricValue(r.Baseline, nil)
			w.Key("candidates")
			w.Open('[')
			for _, cv := range r.Candidates {
				w.Element()
				if cv == nil {
					w.B = append(w.B, "null"...)
				} else {
					w.metricValue(&cv.MetricValue, cv)
				}
			}
			w.Close(']')
			w.Close('}')
		}
		w.Close(']')
		w.Key("flips")
		w.Open('[')
		for _, s := range c.Flips {
			w.Element()
			w.flipSummary(s)
		}
		w.Close(']')
		w.Key("notes")
		w.strings(c.Notes)
		w.Close('}')
	}
	w.Close(']')
	w.Key("skipped_agents")
	w.Open('{')
	for _, k := range res.skipped.keys {
		w.Key(k)
		w.strings(res.skipped.vals[k])
	}
	w.Close('}')
	w.Key("warnings")
	w.strings(res.Warnings)
	w.Close('}')
	return w.B
}

// CommandLine is the invocation recorded in the report: `gym eval
// compare` and the Hydra overrides it amounts to, as Python's shlex.join
// quotes them.
func CommandLine(tokens []string) string {
	parts := []string{"gym", "eval", "compare"}
	for _, t := range tokens {
		parts = append(parts, shlexQuote(t))
	}
	return strings.Join(parts, " ")
}

func shlexQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r < 0x80 && (r == '_' || r == '@' || r == '%' || r == '+' || r == '=' || r == ':' || r == ',' || r == '.' || r == '/' || r == '-' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// QuoteValue is json.dumps(value), how NeMo Gym puts a path flag into
// its override.
func QuoteValue(s string) string { return string(pyjson.AppendString(nil, s)) }

// QuoteList is a comma-separated flag as NeMo Gym's override: ["a","b"],
// blank items dropped.
func QuoteList(raw string) string {
	var items []string
	for _, it := range strings.Split(raw, ",") {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, QuoteValue(it))
		}
	}
	return "[" + strings.Join(items, ",") + "]"
}
