package main

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/compare"
	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/python"
	"github.com/nemo-gym-go/gym/internal/table"
)

type compareOptions struct {
	IO  *iostreams.IOStreams
	ws  *workspace
	cfg compare.Config
	// tokens are the Hydra overrides the invocation amounts to, in NeMo
	// Gym's order (flags, then the user's), for the report's provenance.
	tokens []string
	now    func() time.Time
}

func newCmdEvalCompare(f *Factory, g *globalFlags, runF func(context.Context, *compareOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEvalCompare
	}
	opts := &compareOptions{IO: f.IOStreams, ws: f.Workspace, now: time.Now}
	var baseline, candidates, baselineMetrics, candidateMetrics, agent, baselineAgent, candidateAgents, outputDir, format string
	cmd := &cobra.Command{
		Use:   "compare --baseline ROLLOUTS --candidates ROLLOUTS [flags] [+key=value ...]",
		Short: "Compare a baseline eval run against a candidate run",
		Long: `Compare two eval runs from their aggregate metrics, as NeMo Gym's
gym eval compare does: each run's <stem>_aggregate_metrics.json (derived from
the rollouts path, which is not read) gives the metrics to put side by side,
the Welch 95% interval of each delta from the runs' repeat-level metrics, and
the tasks whose pass/fail flipped (joined on _ng_task_index).

Writes compare_report.md and compare_report.json (--report-format) into
--output-dir, by default the candidate run's directory, and prints the key
metrics. One candidate is supported, as in NeMo Gym 0.7.0. The settings are
also NeMo Gym's keys: +baseline_rollouts_jsonl_fpath=, +candidate_rollouts_jsonl_fpaths=[...],
+baseline_aggregate_metrics_fpath=, +candidate_aggregate_metrics_fpaths=[...],
+agent_name=, +baseline_agent_name=, +candidate_agent_names=[...],
+output_dirpath=, +report_format=.`,
		Example: `  # Two runs of a built-in benchmark, offline, then their comparison
  gym eval run --benchmark mcqa_example --model-type replay_model --split benchmark -o base/rollouts.jsonl
  gym eval run --benchmark mcqa_example --model-type replay_model --split benchmark --num-repeats 2 -o cand/rollouts.jsonl
  gym eval compare --baseline base/rollouts.jsonl --candidates cand/rollouts.jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			c := &opts.cfg
			var tokens []string
			value := func(flag, key string, dst *string, v string, quote bool) {
				if fl.Changed(flag) {
					*dst = v
					if quote {
						v = compare.QuoteValue(v)
					}
					tokens = append(tokens, "+"+key+"="+v)
				}
			}
			list := func(flag, key string, dst *[]string, v string) {
				if fl.Changed(flag) {
					*dst = splitList(v)
					tokens = append(tokens, "+"+key+"="+compare.QuoteList(v))
				}
			}
			value("baseline", "baseline_rollouts_jsonl_fpath", &c.Baseline, baseline, true)
			list("candidates", "candidate_rollouts_jsonl_fpaths", &c.Candidates, candidates)
			value("baseline-agg-metrics", "baseline_aggregate_metrics_fpath", &c.BaselineMetrics, baselineMetrics, true)
			list("candidates-agg-metrics", "candidate_aggregate_metrics_fpaths", &c.CandidateMetrics, candidateMetrics)
			value("agent", "agent_name", &c.Agent, agent, false)
			if fl.Changed("baseline-agent") {
				c.BaselineAgent = &baselineAgent
				tokens = append(tokens, "+baseline_agent_name="+baselineAgent)
			}
			list("candidate-agents", "candidate_agent_names", &c.CandidateAgents, candidateAgents)
			value("output-dir", "output_dirpath", &c.OutputDir, outputDir, true)
			if fl.Changed("report-format") {
				switch format {
				case "md", "json", "both":
				default:
					return usageErrorf("argument --report-format: invalid choice: '%s' (choose from 'md', 'json', 'both')", format)
				}
			}
			value("report-format", "report_format", &c.ReportFormat, format, false)
			if err := opts.readKeys(args); err != nil {
				return err
			}
			opts.tokens = append(tokens, args...)
			// NeMo Gym's --verbose becomes its first override, so the
			// recorded command has it.
			if g != nil && g.verbose {
				opts.tokens = append([]string{"+verbose=true"}, opts.tokens...)
			}
			var missing []string
			if c.Baseline == "" {
				missing = append(missing, "baseline_rollouts_jsonl_fpath")
			}
			if c.Candidates == nil {
				missing = append(missing, "candidate_rollouts_jsonl_fpaths")
			}
			if len(missing) > 0 {
				return &config.MissingSettingsError{Keys: missing}
			}
			if err := c.Validate(); err != nil {
				return usageErrorf("%v", err)
			}
			return runF(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&baseline, "baseline", "", "baseline run's rollouts JSONL; its <stem>_aggregate_metrics.json is read (baseline_rollouts_jsonl_fpath)")
	fl.StringVar(&candidates, "candidates", "", "candidate run's rollouts JSONL, comma-separated; one is supported (candidate_rollouts_jsonl_fpaths)")
	fl.StringVar(&baselineMetrics, "baseline-agg-metrics", "", "baseline's aggregate-metrics JSON when it is not the sibling of --baseline")
	fl.StringVar(&candidateMetrics, "candidates-agg-metrics", "", "candidates' aggregate-metrics JSON, in --candidates order, when not siblings")
	fl.StringVar(&agent, "agent", "", "agent to compare on both sides (agent_name; default: every agent all runs share)")
	fl.StringVar(&baselineAgent, "baseline-agent", "", "agent to read from the baseline's metrics (baseline_agent_name)")
	fl.StringVar(&candidateAgents, "candidate-agents", "", "agent to read from each candidate's metrics, in --candidates order")
	fl.StringVarP(&outputDir, "output-dir", "o", "", "where to write the report (output_dirpath; default: the candidate run's directory)")
	fl.StringVar(&format, "report-format", "", "report files to write: md, json or both (report_format; default both)")
	return cmd
}

// splitList is a comma-separated flag's items, blanks dropped.
func splitList(raw string) []string {
	items := []string{}
	for _, it := range strings.Split(raw, ",") {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	return items
}

// readKeys reads NeMo Gym's keys given as +key=value (or ++key=value);
// they override the flags, as later overrides win in Hydra.
func (o *compareOptions) readKeys(args []string) error {
	c := &o.cfg
	for _, a := range args {
		ov, err := parseAddition(a)
		if err != nil {
			return err
		}
		str := func() (string, error) {
			if ov.Value.Kind != tree.String {
				return "", usageErrorf("invalid configuration: %s: Input should be a valid string, got %s", ov.Key, config.DescribeValue(ov.Value))
			}
			return ov.Value.Str, nil
		}
		strs := func() ([]string, error) {
			if ov.Value.Kind != tree.List {
				return nil, usageErrorf("invalid configuration: %s: Input should be a valid list, got %s", ov.Key, config.DescribeValue(ov.Value))
			}
			out := []string{}
			for i, it := range ov.Value.Items {
				if it.Kind != tree.String {
					return nil, usageErrorf("invalid configuration: %s.%d: Input should be a valid string, got %s", ov.Key, i, config.DescribeValue(it))
				}
				out = append(out, it.Str)
			}
			return out, nil
		}
		var s string
		switch ov.Key {
		case "baseline_rollouts_jsonl_fpath":
			s, err = str()
			c.Baseline = s
		case "baseline_aggregate_metrics_fpath":
			s, err = str()
			c.BaselineMetrics = s
		case "agent_name":
			s, err = str()
			c.Agent = s
		case "baseline_agent_name":
			if s, err = str(); err == nil {
				c.BaselineAgent = &s
			}
		case "output_dirpath":
			s, err = str()
			c.OutputDir = s
		case "report_format":
			if s, err = str(); err == nil {
				c.ReportFormat = s
			}
		case "candidate_rollouts_jsonl_fpaths":
			c.Candidates, err = strs()
		case "candidate_aggregate_metrics_fpaths":
			c.CandidateMetrics, err = strs()
		case "candidate_agent_names":
			c.CandidateAgents, err = strs()
		case "verbose":
			// -v as NeMo Gym's key: it only reaches the recorded command.
		default:
			return usageErrorf("unrecognized arguments: %s (gym eval compare takes the keys its flags set; see --help)", a)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func runEvalCompare(ctx context.Context, opts *compareOptions) error {
	roots, err := opts.ws.roots(nil)
	if err != nil {
		return err
	}
	c := opts.cfg
	c.Cwd = roots.cwd
	c.ResolveRead = roots.Roots.Resolve
	// None of compare's keys is secret-shaped, so nothing needs masking.
	c.Command = compare.CommandLine(opts.tokens)
	c.NeMoGymVersion = python.NemoGymVersion
	c.Now = opts.now()
	c.Warn = opts.IO.ErrOut
	res, err := compare.Build(&c)
	if err != nil {
		return err
	}
	written, err := compare.Write(res, c.OutputDirPath(), c.ReportFormat)
	if err != nil {
		return err
	}
	for _, ac := range res.Comparisons {
		title, header, rows := compare.KeyMetricsTable(ac)
		fmt.Fprintln(opts.IO.Out, title)
		rule := make([]string, len(header))
		for i, h := range header {
			rule[i] = strings.Repeat("-", utf8.RuneCountInString(h))
		}
		if err := table.Write(opts.IO.Out, append([][]string{header, rule}, rows...)); err != nil {
			return err
		}
	}
	for _, line := range compare.SummaryLines(res, written) {
		fmt.Fprintln(opts.IO.Out, line)
	}
	return nil
}
