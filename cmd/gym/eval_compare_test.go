package main

import (
	"context"
	"reflect"
	"testing"

	"github.com/spf13/cobra"
)

func TestEvalCompareFlags(t *testing.T) {
	runFlagCases(t, []flagCase[compareOptions]{
		{name: "flags become NeMo Gym's overrides, in its flag order", args: []string{"--candidates", "c/r.jsonl, ", "--baseline", "b/r.jsonl", "--agent", "a", "--report-format", "md", "-o", "out"},
			check: func(t *testing.T, o *compareOptions) {
				c := o.cfg
				if c.Baseline != "b/r.jsonl" || !reflect.DeepEqual(c.Candidates, []string{"c/r.jsonl"}) || c.Agent != "a" || c.ReportFormat != "md" || c.OutputDir != "out" {
					t.Errorf("%+v", c)
				}
				want := []string{`+baseline_rollouts_jsonl_fpath="b/r.jsonl"`, `+candidate_rollouts_jsonl_fpaths=["c/r.jsonl"]`, `+agent_name=a`, `+output_dirpath="out"`, `+report_format=md`}
				if !reflect.DeepEqual(o.tokens, want) {
					t.Errorf("tokens\n got %q\nwant %q", o.tokens, want)
				}
			}},
		{name: "NeMo Gym's keys", args: []string{"+baseline_rollouts_jsonl_fpath=b.jsonl", "++candidate_rollouts_jsonl_fpaths=[c.jsonl]", "+baseline_agent_name=", "+candidate_agent_names=[y]", "+candidate_aggregate_metrics_fpaths=[m.json]"},
			check: func(t *testing.T, o *compareOptions) {
				c := o.cfg
				if c.Baseline != "b.jsonl" || c.BaselineAgent == nil || *c.BaselineAgent != "" || !reflect.DeepEqual(c.CandidateAgents, []string{"y"}) || !reflect.DeepEqual(c.CandidateMetrics, []string{"m.json"}) {
					t.Errorf("%+v", c)
				}
			}},
		{name: "--baseline-agent given empty is still given", args: []string{"--baseline", "b", "--candidates", "c", "--baseline-agent", ""},
			check: func(t *testing.T, o *compareOptions) {
				if o.cfg.BaselineAgent == nil {
					t.Error("baseline agent not set")
				}
			}},
		{name: "both runs required", args: nil, wantErr: "missing required configuration: baseline_rollouts_jsonl_fpath, candidate_rollouts_jsonl_fpaths", usage: true},
		{name: "one candidate", args: []string{"--baseline", "b", "--candidates", "c,d"}, wantErr: "2 candidates were given", usage: true},
		{name: "one agent per candidate", args: []string{"--baseline", "b", "--candidates", "c", "--candidate-agents", "x,y"}, wantErr: "candidate_agent_names has 2 entries but 1 candidate run(s)", usage: true},
		{name: "a report format", args: []string{"--baseline", "b", "--candidates", "c", "--report-format", "pdf"}, wantErr: "invalid choice: 'pdf'", usage: true},
		{name: "a key of its own type", args: []string{"--baseline", "b", "+candidate_rollouts_jsonl_fpaths=c"}, wantErr: "candidate_rollouts_jsonl_fpaths: Input should be a valid list", usage: true},
		{name: "another key", args: []string{"--baseline", "b", "--candidates", "c", "+limit=3"}, wantErr: "unrecognized arguments: +limit=3", usage: true},
		{name: "an unknown flag", args: []string{"--baselin", "b"}, wantErr: "unrecognized arguments: --baselin", usage: true},
		{name: "--verbose leads the recorded overrides", args: []string{"--baseline", "b", "--candidates", "c", "-v"},
			check: func(t *testing.T, o *compareOptions) {
				if o.tokens[0] != "+verbose=true" {
					t.Errorf("tokens %q", o.tokens)
				}
			}},
	}, func(f *Factory, runF func(context.Context, *compareOptions) error) *cobra.Command {
		g := &globalFlags{}
		cmd := newCmdEvalCompare(f, g, runF)
		cmd.Flags().BoolVarP(&g.verbose, "verbose", "v", false, "")
		return cmd
	})
}
