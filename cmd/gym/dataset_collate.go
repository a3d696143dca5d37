package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/dataset"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

type collateOptions struct {
	IO              *iostreams.IOStreams
	ws              *workspace
	globals         *globalFlags
	config          configFlags
	resourceServers []string
	mode            string
	outputDir       string
	download        bool
	passthrough     []string
	flags           *pflag.FlagSet
}

func newCmdDatasetCollate(f *Factory, g *globalFlags, runF func(context.Context, *collateOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDatasetCollate
	}
	opts := &collateOptions{IO: f.IOStreams, ws: f.Workspace, globals: g}
	cmd := &cobra.Command{
		Use:   "collate --mode MODE --output-dir DIR [flags] [+key=value ...]",
		Short: "Validate and collate the datasets of a config",
		Long: `Validate and collate the datasets the config's agents and resources servers
declare, as NeMo Gym's data preparation does. --mode example_validation takes
the example datasets (the PR check: every file must be there);
train_preparation takes train, validation and benchmark ones (train and
validation need a license). Every row is read: a line that is not JSON fails
the run, naming file and line, before anything is written; a row that is not a
valid run request is reported and left out of the metrics, as NeMo Gym leaves
it out.

Written, as NeMo Gym writes them: beside each dataset (relative to the working
directory) <stem>_metrics.json and <stem>_prepare.jsonl (its rows, num_repeats
times each, stamped with task_source, agent_ref dropped, a benchmark's
prompt_config applied); in DIR, <type>.jsonl (the prepared files of the type,
in config order) and <type>_metrics.json. A dataset with a taskset is
checked against environment_server_routes and its rows become tasks
({task_id: {taskset, task_id}, task_input}). A metrics file already there must
agree with the new metrics, else <stem>_conflict.json is written beside it and
the run fails (+overwrite_metrics_conflicts=true writes the new one anyway).

gym does not download here: a missing dataset is an error that names the
command that fetches it (gym dataset download, or gym eval prepare for a
prepared benchmark). Rows are not checked against a server's Python
task_data.py schema: a warning says so (an error with
+task_data_validation=error), and a server's Python dataset_metrics.py hook
is not run (a warning says so).`,
		Example: `  # Validate the example data of a built-in resources server into out/
  gym dataset collate --resources-server mcqa --mode example_validation --output-dir out

  # NeMo Gym's form
  gym dataset collate "+config_paths=[resources_servers/mcqa/configs/mcqa.yaml]" \
    +output_dirpath=out +mode=example_validation`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.mode != "" && !slices.Contains([]string{dataset.ModeTrain, dataset.ModeExample}, opts.mode) {
				return usageErrorf("argument --mode: invalid choice: '%s' (choose from '%s', '%s')", opts.mode, dataset.ModeTrain, dataset.ModeExample)
			}
			opts.passthrough = args
			return runF(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&opts.config.configs, "config", nil, "config file to load (repeatable; relative to the search roots)")
	fs.StringArrayVar(&opts.resourceServers, "resources-server", nil, "load resources_servers/`NAME`/configs/NAME.yaml (NAME/flavor for another config; repeatable)")
	fs.StringVar(&opts.config.modelType, "model-type", "", "load responses_api_models/`NAME`/configs/NAME.yaml (NAME/flavor for another config)")
	fs.StringArrayVar(&opts.config.searchDirs, "search-dir", nil, "extra search root, searched before NEMO_GYM_EXTRA_ROOTS, the cwd and the install root (repeatable)")
	fs.StringVar(&opts.mode, "mode", "", "train_preparation or example_validation (mode; required)")
	fs.StringVar(&opts.outputDir, "output-dir", "", "directory for the collated data and metrics (output_dirpath; required)")
	fs.BoolVar(&opts.download, "download", false, "fetch missing source datasets (should_download): gym names the command that fetches each")
	opts.flags = fs
	return cmd
}

// tokens are the flags as NeMo Gym's keys, before the user's overrides.
func (o *collateOptions) tokens() []string {
	var own []string
	if o.flags == nil {
		return nil
	}
	if o.flags.Changed("mode") {
		own = append(own, "++mode="+override.Quote(o.mode))
	}
	if o.flags.Changed("output-dir") {
		own = append(own, "++output_dirpath="+override.Quote(o.outputDir))
	}
	if o.download {
		own = append(own, "++should_download=true")
	}
	return own
}

func runDatasetCollate(ctx context.Context, opts *collateOptions) error {
	roots, err := opts.ws.roots(opts.config.searchDirs)
	if err != nil {
		return err
	}
	// --resources-server is repeatable here, as in NeMo Gym: each one's
	// config follows the --config files.
	flags := opts.config
	flags.configs = append([]string(nil), opts.config.configs...)
	for _, name := range opts.resourceServers {
		p, warn, err := roots.Select(resolve.ResourcesServer, name)
		if err != nil {
			return err
		}
		for _, w := range warn {
			fmt.Fprintln(opts.IO.ErrOut, "Warning:", w)
		}
		flags.configs = append(flags.configs, p)
	}
	res, roots, err := opts.ws.loadConfig(ctx, opts.IO.ErrOut, &flags, opts.globals.verbose, opts.tokens(), opts.passthrough, config.Request{Seed: dummyPolicy(), Offline: true})
	if err != nil {
		return err
	}
	s := config.Settings{Result: res}
	mode, err := s.String("mode")
	if err != nil {
		return err
	}
	outputDir, err := s.String("output_dirpath")
	if err != nil {
		return err
	}
	var missing []string
	if outputDir == "" {
		missing = append(missing, "output_dirpath")
	}
	if mode == "" {
		missing = append(missing, "mode")
	}
	if len(missing) > 0 {
		return &config.MissingSettingsError{Keys: missing}
	}
	if mode != dataset.ModeTrain && mode != dataset.ModeExample {
		return &config.InvalidSettingError{Key: "mode", Want: dataset.ModeTrain + " or " + dataset.ModeExample, Got: tree.NewString(mode)}
	}
	download, err := s.Bool("should_download")
	if err != nil {
		return err
	}
	overwrite, err := s.Bool("overwrite_metrics_conflicts")
	if err != nil {
		return err
	}
	source, err := s.String("data_source")
	if err != nil {
		return err
	}
	if source != "" && source != "huggingface" && source != "gitlab" {
		return &config.InvalidSettingError{Key: "data_source", Want: "huggingface or gitlab", Got: tree.NewString(source)}
	}
	validation, err := s.String("task_data_validation")
	if err != nil {
		return err
	}
	if validation != "" && !slices.Contains([]string{"off", "warn", "error", "auto"}, validation) {
		return &config.InvalidSettingError{Key: "task_data_validation", Want: "off, warn, error or auto", Got: tree.NewString(validation)}
	}
	resolved, err := res.Resolved(false)
	if err != nil {
		return err
	}
	var configPaths []string
	if n := resolved.Get("config_paths"); n != nil && n.Kind == tree.List {
		for _, it := range n.Items {
			if it.Kind == tree.String {
				configPaths = append(configPaths, it.Str)
			}
		}
	}
	return dataset.Collate(ctx, dataset.CollateOptions{
		Config:             resolved,
		ConfigPaths:        configPaths,
		Mode:               mode,
		OutputDir:          outputDir,
		ShouldDownload:     download,
		DataSource:         source,
		OverwriteConflicts: overwrite,
		TaskDataValidation: validation,
		Resolve:            roots.find,
		Abs:                roots.abs,
		Out:                opts.IO.Out,
		Warn:               opts.IO.ErrOut,
	})
}
