package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/workload"
)

// publishOptions are the inputs of `gym env publish`.
type publishOptions struct {
	IO         *iostreams.IOStreams
	ws         *workspace
	name       string
	kind       string
	json       bool
	searchDirs []string
}

func newCmdEnvPublish(f *Factory, runF func(context.Context, *publishOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEnvPublish
	}
	opts := &publishOptions{IO: f.IOStreams, ws: f.Workspace}
	cmd := &cobra.Command{
		Use:   "publish NAME [--kind KIND] [--json]",
		Short: "Run a workload's local publication checks (uploads nothing)",
		Long: `Run the checks NeMo Gym runs before a workload is published, locally: it
validates (gym env validate), its verifier fixture passes (gym env test), no
scaffold placeholder is left (a description or author starting with TODO,
licensing unknown, a benchmark's canonical_split or standard_prompt_config
starting with TODO), and the catalog finds exactly this manifest under its
name and kind. Nothing is uploaded.`,
		Example: `  gym env publish mcqa_genetics
  gym env publish my_env --search-dir ~/my-plugins
  gym env publish my_bench --kind benchmark --search-dir ~/my-plugins --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("gym env publish requires a catalog name")
			}
			opts.name = args[0]
			if err := checkKind(opts.kind); err != nil {
				return err
			}
			return runF(cmd.Context(), opts)
		},
	}
	kindFlag(cmd.Flags(), &opts.kind)
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the publication report as JSON")
	cmd.Flags().StringArrayVar(&opts.searchDirs, "search-dir", nil, "extra search root (repeatable)")
	return cmd
}

func runEnvPublish(ctx context.Context, opts *publishOptions) error {
	roots, err := opts.ws.roots(opts.searchDirs)
	if err != nil {
		return err
	}
	t, err := workload.Find(roots.Roots, opts.name, opts.kind)
	if err != nil {
		return err
	}
	py := workload.RunOptions{Environ: opts.ws.childEnviron(roots), LookPath: opts.ws.LookPath, Log: opts.IO.ErrOut}
	report, err := workload.Publish(ctx, t, opts.ws.workloadOptions(roots, opts.IO.ErrOut), py)
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(opts.IO.Out, report)
	}
	status := ""
	if report.Status != nil {
		status = "catalog status=" + *report.Status + " "
	}
	fmt.Fprintf(opts.IO.Out, "✓ Publication checks passed for %s %s %s; %s(%d verifier cases).\n", report.Kind, report.Name, report.Version, status, report.VerifierCases)
	return nil
}
