package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/export"
	"github.com/nemo-gym-go/gym/internal/iostreams"
)

// exportOptions are the inputs of `gym eval export`.
type exportOptions struct {
	IO                                           *iostreams.IOStreams
	ws                                           *workspace
	version                                      string
	format, input, output, session, agentVersion string
	strict                                       bool
}

func newCmdEvalExport(f *Factory, runF func(context.Context, *exportOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEvalExport
	}
	opts := &exportOptions{IO: f.IOStreams, ws: f.Workspace, version: f.Version}
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
			if opts.format != "atif" {
				return usageErrorf("argument --format: invalid choice: %q (choose from 'atif')", opts.format)
			}
			var missing []string
			if opts.input == "" {
				missing = append(missing, "--rollouts/-i")
			}
			if opts.output == "" {
				missing = append(missing, "--output-dir/-o")
			}
			if len(missing) > 0 {
				return usageErrorf("the following arguments are required: %s", strings.Join(missing, ", "))
			}
			return runF(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.format, "format", "atif", "output trajectory format (atif)")
	cmd.Flags().StringVarP(&opts.input, "rollouts", "i", "", "the rollouts JSONL to export")
	cmd.Flags().StringVarP(&opts.output, "output-dir", "o", "", "new directory for the trajectories")
	cmd.Flags().StringVar(&opts.session, "session-id", "", "identifier of the evaluation run (default: the rollouts file's name)")
	cmd.Flags().StringVar(&opts.agentVersion, "agent-version", "unknown", "version of the agent that produced the rollouts")
	cmd.Flags().BoolVar(&opts.strict, "strict", false, "refuse what ATIF cannot represent instead of keeping it under extra")
	return cmd
}

func runEvalExport(_ context.Context, opts *exportOptions) error {
	cwd, err := opts.ws.Getwd()
	if err != nil {
		return err
	}
	roots := commandRoots{cwd: cwd}
	session := opts.session
	if session == "" {
		session = strings.TrimSuffix(filepath.Base(opts.input), filepath.Ext(opts.input))
	}
	output := roots.abs(opts.output)
	n, err := export.ExportATIF(roots.abs(opts.input), output, export.ATIFOptions{
		SessionID: session, AgentVersion: opts.agentVersion, ExporterVersion: opts.version, Strict: opts.strict,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "Exported %d ATIF trajectory file(s) to %s\nManifest: %s\n", n, output, filepath.Join(output, "manifest.jsonl"))
	return nil
}
