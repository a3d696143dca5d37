package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// numpy's float64 sum: sequential below 8 values, eight accumulators up
// to 128, halves above.
func TestPairwiseSumIsNumpys(t *testing.T) {
	ramp := make([]float64, 200)
	for i := range ramp {
		ramp[i] = 0.1 * float64(i)
	}
	for _, tt := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}, 0.7},
		{[]float64{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}, 1.0},
		{ramp, 1990.0},
	} {
		if got := pairwiseSum(tt.in); got != tt.want {
			t.Errorf("sum of %d values = %.17g, numpy %.17g", len(tt.in), got, tt.want)
		}
	}
}

// scipy.stats.ttest_ind(candidate, baseline, equal_var=False)
// .confidence_interval(0.95), printed in nemo-gym 0.7.0's environment.
func TestWelchIntervalIsScipys(t *testing.T) {
	for _, tt := range []struct {
		base, cand []float64
		lo, hi     float64
	}{
		{[]float64{0.5, 1, 0}, []float64{0.2, 0.4, 0.9, 0.3}, -1.0656231250715325, 0.9656231250715324},
		{[]float64{1, 1}, []float64{0, 0}, -1.0, -1.0}, // no variance: a point
		{[]float64{0.7, 0.7, 0.7}, []float64{0.1, 0.2}, -1.1853102368087347, 0.08531023680873495},
		{[]float64{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.3}, []float64{0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2}, 0.03475685674403595, 0.12524314325596414},
	} {
		lo, hi := welchInterval(runWithRepeats(tt.base), runWithRepeats(tt.cand), "mean/reward")
		if lo == nil || hi == nil {
			t.Fatalf("%v vs %v: no interval", tt.base, tt.cand)
		}
		if math.Abs(*lo-tt.lo) > 1e-12 || math.Abs(*hi-tt.hi) > 1e-12 {
			t.Errorf("%v vs %v: [%.17g, %.17g], scipy [%.17g, %.17g]", tt.base, tt.cand, *lo, *hi, tt.lo, tt.hi)
		}
	}
	// Without mean_across_repeats on a side, or with one repeat, none.
	r := runWithRepeats([]float64{1, 0})
	r.agentMetrics = newObject()
	if lo, _ := welchInterval(r, runWithRepeats([]float64{1, 0}), "mean/reward"); lo != nil {
		t.Error("an interval without mean_across_repeats")
	}
	if lo, _ := welchInterval(runWithRepeats([]float64{1}), runWithRepeats([]float64{1, 0}), "mean/reward"); lo != nil {
		t.Error("an interval from one repeat")
	}
}

func runWithRepeats(values []float64) *loadedRun {
	r := &loadedRun{agent: "a", agentMetrics: obj(`{"mean_across_repeats/mean/reward": 0.5}`), keyMetrics: newObject()}
	for _, v := range values {
		raw, _ := json.Marshal(map[string]float64{"mean/reward": v})
		r.repeats = append(r.repeats, obj(string(raw)))
	}
	return r
}

func obj(s string) *object {
	o, err := parseObject(json.RawMessage(s))
	if err != nil {
		panic(err)
	}
	return o
}

func TestFormatsAsPython(t *testing.T) {
	for _, tt := range []struct {
		v                   float64
		f4, s4, f2, s1, gen string
	}{
		{0.00005, "0.0001", "+0.0001", "0.00", "+0.0", "5e-05"},
		{-0.00004, "-0.0000", "-0.0000", "-0.00", "-0.0", "-4e-05"},
		{2.5, "2.5000", "+2.5000", "2.50", "+2.5", "2.5"},
		{math.Copysign(0, -1), "-0.0000", "-0.0000", "-0.00", "-0.0", "-0"},
		{12.345, "12.3450", "+12.3450", "12.35", "+12.3", "12.345"},
		{123456789, "123456789.0000", "+123456789.0000", "123456789.00", "+123456789.0", "1.23457e+08"},
		{1, "1.0000", "+1.0000", "1.00", "+1.0", "1"},
	} {
		got := []string{pyFixed(tt.v, 4, false), pyFixed(tt.v, 4, true), pyFixed(tt.v, 2, false), pyFixed(tt.v, 1, true), pyG(tt.v)}
		want := []string{tt.f4, tt.s4, tt.f2, tt.s1, tt.gen}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%v: got %q, Python %q", tt.v, got[i], want[i])
			}
		}
	}
}

// group is a task's group-level metrics with its per-repeat rewards.
func group(task int, rewards ...float64) string {
	var sum, lo, hi float64 = 0, math.Inf(1), math.Inf(-1)
	var infos []string
	for i, r := range rewards {
		sum += r
		lo, hi = min(lo, r), max(hi, r)
		b, _ := json.Marshal(map[string]any{"_ng_task_index": task, "_ng_rollout_index": len(rewards) - 1 - i, "reward": r})
		infos = append(infos, string(b))
	}
	b, _ := json.Marshal(map[string]any{"_ng_task_index": task, "mean/reward": sum / float64(len(rewards)), "min/reward": lo, "max/reward": hi,
		"expected_num_rollouts": len(rewards), "rollout_infos": json.RawMessage("[" + strings.Join(infos, ",") + "]")})
	return string(b)
}

func flips(t *testing.T, base, cand []string) FlipSummary {
	t.Helper()
	b := &loadedRun{agent: "a", aggregatePath: "b.json"}
	c := &loadedRun{agent: "a", aggregatePath: "c.json"}
	for _, g := range base {
		b.groups = append(b.groups, obj(g))
	}
	for _, g := range cand {
		c.groups = append(c.groups, obj(g))
	}
	s, err := buildFlipSummary(b, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFlipRules(t *testing.T) {
	t.Run("binary: regressions first, then by size; ties and unchanged counted", func(t *testing.T) {
		s := flips(t,
			[]string{group(0, 1, 1), group(1, 0, 0), group(2, 1, 0), group(3, 1, 1), group(4, 1, 1), group(9, 1)},
			[]string{group(0, 0, 0), group(1, 1, 1), group(2, 0, 0), group(3, 1, 1), group(4, 1, 0), group(7, 0)})
		if s.Mode != "binary" || *s.PassToFail != 1 || *s.FailToPass != 1 || *s.Tied != 2 || *s.Unchanged != 1 || *s.Net != 0 {
			t.Fatalf("%+v", s)
		}
		if s.CommonTasks != 5 || s.BaselineOnly != 1 || s.CandidateOnly != 1 {
			t.Errorf("task counts %+v", s)
		}
		if s.Flips[0].TaskIndex != 0 || s.Flips[0].Direction != "pass_to_fail" || s.Flips[1].TaskIndex != 1 {
			t.Errorf("order %+v", s.Flips)
		}
		// Per-repeat rewards in rollout order.
		if got := s.Flips[0].BaselineRewards; len(got) != 2 || got[0] != 1 {
			t.Errorf("rewards %v", got)
		}
	})
	t.Run("continuous: every mover, largest change first", func(t *testing.T) {
		s := flips(t, []string{group(0, 0.2), group(1, 0.5), group(2, 0.9)}, []string{group(0, 0.3), group(1, 0.5), group(2, 0.1)})
		if s.Mode != "continuous" || len(s.Flips) != 2 || s.Flips[0].TaskIndex != 2 || s.Flips[0].Direction != "changed" || *s.Unchanged != 1 || s.PassToFail != nil {
			t.Errorf("%+v", s)
		}
	})
	t.Run("no per-task metrics", func(t *testing.T) {
		if s := flips(t, nil, []string{group(0, 1)}); s.Mode != "unavailable" || *s.Reason != "one or both runs recorded no per-task metrics." {
			t.Errorf("%+v", s)
		}
	})
	t.Run("no common task", func(t *testing.T) {
		if s := flips(t, []string{group(0, 1)}, []string{group(1, 1), group(2, 0)}); s.Mode != "unavailable" || *s.Reason != "no overlapping task indices (baseline has 1, candidate has 2)." {
			t.Errorf("%+v", s)
		}
	})
	t.Run("no task mean", func(t *testing.T) {
		if s := flips(t, []string{`{"_ng_task_index":0}`}, []string{group(0, 1)}); s.Mode != "unavailable" || !strings.Contains(*s.Reason, "no `mean/reward`") {
			t.Errorf("%+v", s)
		}
	})
	t.Run("past ten per direction, no per-repeat rewards", func(t *testing.T) {
		var b, c []string
		for i := range 12 {
			b, c = append(b, group(i, 1)), append(c, group(i, 0))
		}
		s := flips(t, b, c)
		if len(s.Flips) != 12 || s.Flips[9].BaselineRewards == nil || s.Flips[10].BaselineRewards != nil {
			t.Errorf("%+v", s.Flips)
		}
	})
	t.Run("a task index that is not an integer is an error", func(t *testing.T) {
		b := &loadedRun{agent: "a", aggregatePath: "b.json", groups: []*object{obj(`{"_ng_task_index":"x"}`)}}
		if _, err := buildFlipSummary(b, b, 0); err == nil || !strings.Contains(err.Error(), `"x", not an integer`) {
			t.Errorf("err = %v", err)
		}
	})
}

// entry is one agent's aggregate-metrics entry.
func entry(agent string, agentMetrics, keyMetrics string, groups ...string) string {
	return `{"agent_ref":{"name":"` + agent + `"},"agent_metrics":` + agentMetrics + `,"key_metrics":` + keyMetrics +
		`,"group_level_metrics":[` + strings.Join(groups, ",") + `],"repeat_level_metrics":[]}`
}

func writeRun(t *testing.T, dir, name string, entries ...string) string {
	t.Helper()
	p := filepath.Join(dir, name, "rollouts.jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(AggregateMetricsPath(p), []byte("["+strings.Join(entries, ",")+"]"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func build(t *testing.T, c *Config) (*Result, string, error) {
	t.Helper()
	var warn bytes.Buffer
	c.Warn, c.Now, c.NeMoGymVersion, c.Command = &warn, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "0.7.0", "gym eval compare"
	res, err := Build(c)
	return res, warn.String(), err
}

func TestAgentSelection(t *testing.T) {
	dir := t.TempDir()
	m := `{"mean/reward":1.0}`
	base := writeRun(t, dir, "base", entry("a", m, m), entry("b", m, m), entry("c", m, m))
	cand := writeRun(t, dir, "cand", entry("a", m, m), entry("b", m, m), entry("d", m, m))
	one := writeRun(t, dir, "one", entry("x", m, m))
	str := func(s string) *string { return &s }
	for _, tt := range []struct {
		name    string
		cfg     Config
		agents  []string
		wantErr string
	}{
		{name: "every shared agent, the rest skipped", cfg: Config{Baseline: base, Candidates: []string{cand}}, agents: []string{"a", "b"}},
		{name: "agent_name on both sides", cfg: Config{Baseline: base, Candidates: []string{cand}, Agent: "b"}, agents: []string{"b"}},
		{name: "agent_name missing on a side", cfg: Config{Baseline: base, Candidates: []string{cand}, Agent: "c"}, wantErr: "Agent 'c' is not in '" + AggregateMetricsPath(cand) + "'. Available: a, b, d."},
		{name: "per side", cfg: Config{Baseline: base, Candidates: []string{one}, BaselineAgent: str("c")}, agents: []string{"c"}},
		{name: "per side, a side with several agents", cfg: Config{Baseline: base, Candidates: []string{one}, CandidateAgents: []string{"x"}}, wantErr: "The baseline run's metrics at"},
		{name: "nothing shared", cfg: Config{Baseline: base, Candidates: []string{one}}, wantErr: "No agent name is present in every run"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, _, err := build(t, &tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range res.Comparisons {
				got = append(got, c.BaselineAgent)
			}
			if strings.Join(got, ",") != strings.Join(tt.agents, ",") {
				t.Errorf("agents %v, want %v", got, tt.agents)
			}
		})
	}
	res, _, _ := build(t, &Config{Baseline: base, Candidates: []string{cand}})
	if got := string(JSON(res)); !strings.Contains(got, `"skipped_agents": {
    "baseline": [
      "c"
    ],
    "candidate[0]": [
      "d"
    ]
  }`) || !strings.Contains(got, "Agent(s) c are present only in baseline and were not compared.") {
		t.Errorf("skipped agents:\n%s", got)
	}
}

func TestMetricRowsAndNotes(t *testing.T) {
	dir := t.TempDir()
	base := writeRun(t, dir, "base", entry("a",
		`{"mean/reward":0.5,"max/reward":1,"only_base":3,"shared":2,"ci_low_95_across_repeats/shared":1.5,"ci_high_95_across_repeats/shared":2.5,"mean_across_repeats/shared":2.25,"flag":true,"text":"x"}`,
		`{"renamed":7}`, group(0, 1, 0)))
	cand := writeRun(t, dir, "cand", entry("a", `{"mean/reward":0.0,"shared":3,"only_cand":1}`, `{"mean/reward":0.0}`, group(0, 0)))
	res, _, err := build(t, &Config{Baseline: base, Candidates: []string{cand}})
	if err != nil {
		t.Fatal(err)
	}
	rows := res.Comparisons[0].Metrics
	var names []string
	for _, r := range rows {
		names = append(names, r.Metric)
	}
	// Key metrics first (they lead the merged metrics), the baseline's
	// order, then the candidate's extras; statistics, bools and strings out.
	if got := strings.Join(names, ","); got != "renamed,mean/reward,only_base,shared,only_cand" {
		t.Fatalf("rows %s", got)
	}
	shared := rows[3]
	if *shared.Candidates[0].Delta != 3-2.25 || math.Abs(*shared.Candidates[0].DeltaPct-(0.75/2.25*100)) > 1e-12 || *shared.Baseline.CILow != 1.5 {
		t.Errorf("shared %+v %+v", shared.Baseline, shared.Candidates[0])
	}
	if rows[1].IsKeyMetric != true || rows[2].IsKeyMetric || rows[1].Candidates[0].DeltaPct == nil {
		t.Errorf("mean/reward %+v", rows[1])
	}
	if c := rows[4]; c.Baseline != nil || strings.Join(c.PresentIn, ",") != "candidate[0]" || c.Candidates[0].Delta != nil {
		t.Errorf("only_cand %+v", c)
	}
	notes := strings.Join(res.Comparisons[0].Notes, "\n")
	if strings.Contains(notes, "Neither run recorded") {
		t.Errorf("the baseline has cross-repeat intervals, yet: %s", notes)
	}
	for _, want := range []string{"Repeat counts differ (baseline 2, candidate 1)", "3 metric(s) were reported by only one of the runs."} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	md := Markdown(res)
	for _, want := range []string{"| `shared` | +0.7500 (+33.3%) | — | 2.2500 | [1.5000, 2.5000] | 3.0000 | — |",
		"| `renamed` | — | — | 7.0000 | — | — | — |", "- `only_cand` — candidate[0]", "**1 common tasks · 0 pass→fail · 0 fail→pass · net +0 · 0 unchanged · 1 tied**"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if got := res.Baseline.Label(); got != "base" {
		t.Errorf("label %q", got)
	}
}

func TestNothingShared(t *testing.T) {
	dir := t.TempDir()
	base := writeRun(t, dir, "base", entry("a", `{"pass@1[avg-of-3]/acc":1}`, `{}`))
	cand := writeRun(t, dir, "cand", entry("a", `{"pass@1[avg-of-5]/acc":1}`, `{}`))
	_, _, err := build(t, &Config{Baseline: base, Candidates: []string{cand}})
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "baseline-only (first 5): pass@1[avg-of-3]/acc\n  candidate-only (first 5): pass@1[avg-of-5]/acc") {
		t.Errorf("err = %v", err)
	}
}

func TestBadMetricsFiles(t *testing.T) {
	dir := t.TempDir()
	good := writeRun(t, dir, "good", entry("a", `{"mean/reward":1}`, `{}`))
	for _, tt := range []struct{ name, content, want string }{
		{"not JSON", `[{`, "is not valid JSON"},
		{"not a list", `{"agent_ref":{}}`, "expected a JSON list of per-agent entries"},
		{"empty", `[]`, "contains no agent entries."},
		{"entry not an object", `[1]`, "entry 0 is not an object"},
		{"no agent name", `[{"agent_ref":{}}]`, "entry 0 has no `agent_ref.name`."},
		{"agent twice", `[{"agent_ref":{"name":"a"}},{"agent_ref":{"name":"a"}}]`, "contains two entries for agent 'a'."},
		{"agent metrics not an object", `[{"agent_ref":{"name":"a"},"agent_metrics":[1],"repeat_level_metrics":[]}]`, "`agent_metrics` is not an object."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".json")
			os.WriteFile(p, []byte(tt.content), 0o644)
			_, _, err := build(t, &Config{Baseline: good, Candidates: []string{good}, CandidateMetrics: []string{p}})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("err = %v, want %q naming the file", err, tt.want)
			}
		})
	}
	_, _, err := build(t, &Config{Baseline: good, Candidates: []string{filepath.Join(dir, "nowhere", "r.jsonl")}})
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "run `gym eval aggregate` first") {
		t.Errorf("missing file: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Candidates: []string{"a", "b"}}, "2 candidates were given, but comparing more than 1 candidate is not supported yet."},
		{Config{Candidates: []string{"a"}, CandidateAgents: []string{}}, "candidate_agent_names has 0 entries but 1 candidate run(s) were given."},
		{Config{Candidates: []string{"a"}, CandidateMetrics: []string{"x", "y"}}, "candidate_aggregate_metrics_fpaths has 2 entries"},
		{Config{Candidates: []string{}}, "at least 1 item"},
		{Config{Candidates: []string{"a"}, ReportFormat: "html"}, "report_format"},
	} {
		if err := tt.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want %q", tt.cfg, err, tt.want)
		}
	}
}

// An aggregate written before repeat-level metrics existed gets them
// rebuilt from its rollout summaries, with a warning.
func TestLegacyAggregate(t *testing.T) {
	dir := t.TempDir()
	legacy := `{"agent_ref":{"name":"a"},"agent_metrics":{"mean/reward":0.5},"key_metrics":{"mean/reward":0.5},"group_level_metrics":[` + group(0, 1, 0) + `,` + group(1, 1, 0) + `]}`
	base := writeRun(t, dir, "base", legacy)
	cand := writeRun(t, dir, "cand", legacy)
	res, warn, err := build(t, &Config{Baseline: base, Candidates: []string{cand}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(warn, "Repeat-level metrics are missing in") {
		t.Errorf("warnings %q", warn)
	}
	c := res.Comparisons[0]
	if *c.BaselineRepeatCount != 2 {
		t.Errorf("repeats %v", *c.BaselineRepeatCount)
	}
	row := c.Metrics[0]
	if row.Metric != "mean/reward" || row.Baseline.MeanAcrossRepeats == nil || row.Candidates[0].DeltaCILow == nil {
		t.Errorf("row %+v %+v", row.Baseline, row.Candidates[0])
	}
}

func TestWriteReports(t *testing.T) {
	dir := t.TempDir()
	base := writeRun(t, dir, "base", entry("a", `{"mean/reward":1}`, `{"mean/reward":1}`, group(0, 1)))
	cand := writeRun(t, dir, "cand", entry("a", `{"mean/reward":0}`, `{"mean/reward":0}`, group(0, 0)))
	cfg := &Config{Baseline: base, Candidates: []string{cand}, Cwd: dir}
	res, _, err := build(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.OutputDirPath(); got != filepath.Dir(cand) {
		t.Errorf("default output dir %s", got)
	}
	written, err := Write(res, filepath.Join(dir, "out"), "json")
	if err != nil || len(written) != 1 || filepath.Base(written[0]) != JSONReportName {
		t.Fatalf("written %v, %v", written, err)
	}
	var parsed map[string]any
	raw, _ := os.ReadFile(written[0])
	if err := json.Unmarshal(raw, &parsed); err != nil || parsed["generated_at"] != "2026-01-02T03:04:05+00:00" {
		t.Errorf("report %v: %s", err, raw)
	}
	if _, err := Write(res, written[0], "md"); err == nil || !strings.Contains(err.Error(), "exists and is not a directory") {
		t.Errorf("a file as the directory: %v", err)
	}
	lines := strings.Join(SummaryLines(res, written), "\n")
	if !strings.Contains(lines, "Sample flips: 0 fail→pass, 1 pass→fail over 1 common tasks\nWrote: ") {
		t.Errorf("summary:\n%s", lines)
	}
}

func TestCommandLine(t *testing.T) {
	got := CommandLine([]string{"+baseline_rollouts_jsonl_fpath=" + QuoteValue("a b/r.jsonl"), "+candidate_rollouts_jsonl_fpaths=" + QuoteList(" c.jsonl,,d's.jsonl"), "+agent_name=x"})
	want := `gym eval compare '+baseline_rollouts_jsonl_fpath="a b/r.jsonl"' '+candidate_rollouts_jsonl_fpaths=["c.jsonl","d'"'"'s.jsonl"]' +agent_name=x`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func FuzzReadAgentEntries(f *testing.F) {
	for _, s := range []string{`[{"agent_ref":{"name":"a"},"agent_metrics":{"x":1}}]`, `[]`, `{}`, `[{"agent_ref":{"name":1}}]`, `[{"agent_ref":{"name":"a"},"group_level_metrics":[{"_ng_task_index":1.5}]}]`} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content string) {
		p := filepath.Join(dir, "m.json")
		os.WriteFile(p, []byte(content), 0o644)
		cfg := &Config{Baseline: p, BaselineMetrics: p, Candidates: []string{p}, CandidateMetrics: []string{p}, Warn: &bytes.Buffer{}}
		if res, err := Build(cfg); err == nil {
			Markdown(res)
			JSON(res)
		}
	})
}

func TestAggregateMetricsPath(t *testing.T) {
	for in, want := range map[string]string{
		"results/rollouts.jsonl": "results/rollouts_aggregate_metrics.json",
		"r":                      "r_aggregate_metrics.json",
		"a/b.tar.gz":             "a/b.tar_aggregate_metrics.json",
		"a/.hidden":              "a/.hidden_aggregate_metrics.json",
	} {
		if got := AggregateMetricsPath(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
	if got := (&RunFile{Rollouts: "/r.jsonl"}).Label(); got != "r" {
		t.Errorf("label of a file at the root: %q", got)
	}
}
