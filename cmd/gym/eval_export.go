package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/export"
)

func newCmdEvalExport(f *Factory) *cobra.Command {
	var format, input, output, session, agentVersion string
	var strict bool
	cmd := &cobra.Command{
		Use:   "export --format atif -i ROLLOUTS.jsonl -o DIR [--strict]",
		Short: "Export rollouts as ATIF trajectories",
		Long: `Write one ATIF v1.7 trajectory per rollout into the new directory DIR
(<task>-<rollout>.json, and manifest.jsonl with each file's SHA-256): the
agent, one step per message, tool-calling turn and answer (tool results as
the step's observation), and, from a model-call capture
(observability_enabled), each model call's tokens, model and time on the
step it answered, and the totals. What ATIF has no field for (the reward,
the rollout's indices, a developer role) is under extra.nemo_gym.

Items ATIF cannot represent (programmatic tool calling's program and
program_output items, a non-null caller, other item types) are kept under
extra.nemo_gym.unrepresented; --strict refuses them instead, naming the
row, the item and the field. Every row converts, or nothing is written.`,
		Example: `  gym eval run --benchmark example_single_tool_call --model-type replay_model --split benchmark -o results/r.jsonl
  gym eval export --format atif -i results/r.jsonl -o results/atif --strict`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "atif" {
				return usageErrorf("argument --format: invalid choice: %q (choose from 'atif')", format)
			}
			var missing []string
			if input == "" {
				missing = append(missing, "--rollouts/-i")
			}
			if output == "" {
				missing = append(missing, "--output-dir/-o")
			}
			if len(missing) > 0 {
				return usageErrorf("the following arguments are required: %s", strings.Join(missing, ", "))
			}
			cwd, err := f.Getwd()
			if err != nil {
				return err
			}
			abs := func(p string) string {
				if filepath.IsAbs(p) {
					return p
				}
				return filepath.Join(cwd, p)
			}
			if session == "" {
				session = strings.TrimSuffix(filepath.Base(input), filepath.Ext(input))
			}
			n, err := export.ExportATIF(abs(input), abs(output), export.ATIFOptions{SessionID: session, AgentVersion: agentVersion, ExporterVersion: f.Version, Strict: strict})
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "Exported %d ATIF trajectory file(s) to %s\nManifest: %s\n", n, abs(output), filepath.Join(abs(output), "manifest.jsonl"))
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "atif", "output trajectory format (atif)")
	cmd.Flags().StringVarP(&input, "rollouts", "i", "", "the rollouts JSONL to export")
	cmd.Flags().StringVarP(&output, "output-dir", "o", "", "new directory for the trajectories")
	cmd.Flags().StringVar(&session, "session-id", "", "identifier of the evaluation run (default: the rollouts file's name)")
	cmd.Flags().StringVar(&agentVersion, "agent-version", "unknown", "version of the agent that produced the rollouts")
	cmd.Flags().BoolVar(&strict, "strict", false, "refuse what ATIF cannot represent instead of keeping it under extra")
	return cmd
}
