package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/datastore"
	"github.com/nemo-gym-go/gym/internal/hub"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/progress"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

func newCmdDataset(f *Factory, g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dataset",
		Short: "Manage datasets",
		Example: `  gym dataset download --repo-id HuggingFaceH4/aime_2024 --split train -o data/aime24.jsonl
  gym dataset upload -i data/train.jsonl +resource_config_path=resources_servers/mcqa/configs/mcqa.yaml`,
	}
	cmd.AddCommand(newCmdDatasetUpload(f, g, nil), newCmdDatasetDownload(f, g, nil), newCmdDatasetRm(f, g, nil), newCmdDatasetMigrate(f, g, nil))
	cmd.AddCommand(newCmdDatasetCollate(f, g, nil), newCmdDatasetRender(f, g, nil))
	makeGroup(cmd)
	return cmd
}

// datasetOptions are a dataset command's settings: NeMo Gym's flags, each
// kept as the Hydra override token NeMo Gym makes of it, and the user's
// own tokens.
type datasetOptions struct {
	IO          *iostreams.IOStreams
	ws          *workspace
	globals     *globalFlags
	storage     string
	flags       []datasetFlag
	passthrough []string
}

// datasetFlag is a `--name VALUE` (or boolean) flag and the keys it sets.
type datasetFlag struct {
	name  string // "long" or "long,short"
	keys  []string
	usage string
	bool  bool
	value string
	isSet bool
}

// tokens are the flags' overrides in declaration order, before the
// user's, as NeMo Gym's CLI orders them.
func (o *datasetOptions) tokens() []string {
	var out []string
	for _, fl := range o.flags {
		if !fl.isSet {
			continue
		}
		for _, k := range fl.keys {
			if fl.bool {
				out = append(out, "+"+k+"=true")
			} else {
				out = append(out, "+"+k+"="+fl.value)
			}
		}
	}
	return out
}

type flagValue struct{ fl *datasetFlag }

func (v flagValue) String() string { return v.fl.value }
func (v flagValue) Set(s string) error {
	v.fl.value, v.fl.isSet = s, true
	return nil
}
func (v flagValue) Type() string { return "string" }

type boolValue struct{ fl *datasetFlag }

func (v boolValue) String() string { return "false" }
func (v boolValue) Set(s string) error {
	if s != "true" {
		return fmt.Errorf("ignored explicit argument '%s'", s)
	}
	v.fl.isSet = true
	return nil
}
func (v boolValue) Type() string     { return "bool" }
func (v boolValue) IsBoolFlag() bool { return true }

// declare registers NeMo Gym's flags of one command, in its order.
func (o *datasetOptions) declare(fs *pflag.FlagSet, specs ...datasetFlag) {
	o.flags = make([]datasetFlag, len(specs))
	copy(o.flags, specs)
	for i := range o.flags {
		fl := &o.flags[i]
		name, short, _ := strings.Cut(fl.name, ",")
		fl.name = name
		var f *pflag.Flag
		if fl.bool {
			f = fs.VarPF(boolValue{fl}, name, short, fl.usage)
			f.NoOptDefVal = "true"
		} else {
			f = fs.VarPF(flagValue{fl}, name, short, fl.usage)
		}
		f.DefValue = ""
	}
}

// storageValue is --storage, one of argparse's choices.
type storageValue struct{ s *string }

func (v storageValue) String() string { return *v.s }
func (v storageValue) Set(s string) error {
	if s != "hf" && s != "gitlab" {
		return fmt.Errorf("invalid choice: '%s' (choose from 'hf', 'gitlab')%s", s, resolve.DidYouMean(s, []string{"hf", "gitlab"}))
	}
	*v.s = s
	return nil
}
func (v storageValue) Type() string { return "string" }

func (o *datasetOptions) registerStorage(fs *pflag.FlagSet) {
	o.storage = "hf"
	fs.Var(storageValue{&o.storage}, "storage", "storage backend: hf or gitlab")
}

func newDatasetCmd(f *Factory, g *globalFlags, runF func(context.Context, *datasetOptions) error, cmd *cobra.Command) (*cobra.Command, *datasetOptions) {
	opts := &datasetOptions{IO: f.IOStreams, ws: f.Workspace, globals: g}
	cmd.RunE = func(c *cobra.Command, args []string) error {
		opts.passthrough = args
		return runF(c.Context(), opts)
	}
	return cmd, opts
}

func newCmdDatasetUpload(f *Factory, g *globalFlags, runF func(context.Context, *datasetOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDatasetUpload
	}
	cmd, opts := newDatasetCmd(f, g, runF, &cobra.Command{
		Use:   "upload [flags] [+key=value ...]",
		Short: "Upload a prepared dataset to HF (default) or GitLab",
		Long: `Upload a JSONL dataset as NeMo Gym 0.7.0 does.

To the Hugging Face Hub (--storage hf): the repo is
<hf_organization>/<hf_dataset_prefix>-<domain>-<dataset name>, the domain that
of the first resources server in +resource_config_path and the name that of
--name, else the resources server's. The repo is created private, added to
the collection <hf_organization>/<hf_collection_name>-<hf_collection_slug>,
and the file and the dataset card (tagged rl-environment and nemo-gym) go in
one commit (--create-pr: a pull request). A train split is checked first:
every line needs responses_create_params. +delete_from_gitlab=true then
deletes the GitLab copy, after asking.

To GitLab (--storage gitlab): the file becomes an artifact of version
--revision of the registered model --name, over GitLab's MLflow API.

Tokens come from env.yaml (hf_token, mlflow_tracking_token) or the
environment (HF_TOKEN, HUGGING_FACE_HUB_TOKEN, the token file of 'hf auth
login'; MLFLOW_TRACKING_URI, MLFLOW_TRACKING_TOKEN), never from the command
line.`,
		Example: `  # env.yaml holds hf_token, hf_organization, hf_collection_name, hf_collection_slug;
  # the config is found over the search roots (this one is built in): <org>/Nemotron-RL-math-math_with_judge
  gym dataset upload -i data/train.jsonl \
    +resource_config_path=resources_servers/math_with_judge/configs/math_with_judge.yaml

  # GitLab's model registry (env.yaml holds mlflow_tracking_uri and mlflow_tracking_token)
  gym dataset upload --storage gitlab --name example_multi_step --revision 0.0.1 -i data/train.jsonl`,
	})
	opts.registerStorage(cmd.Flags())
	opts.declare(cmd.Flags(),
		datasetFlag{name: "input,i", keys: []string{"input_jsonl_fpath"}, usage: "local JSONL file to upload (input_jsonl_fpath)"},
		datasetFlag{name: "name", keys: []string{"dataset_name"}, usage: "dataset name (dataset_name)"},
		// GitLab keeps it as version, the Hub as revision: NeMo Gym sets both.
		datasetFlag{name: "revision", keys: []string{"version", "revision"}, usage: "dataset version (GitLab, x.y.z) or branch (HF) to upload to"},
		datasetFlag{name: "split", keys: []string{"split"}, usage: "dataset split: train, validation or test (HF only)"},
		datasetFlag{name: "create-pr", keys: []string{"create_pr"}, bool: true, usage: "open a pull request instead of committing directly (HF only)"},
	)
	return cmd
}

func newCmdDatasetDownload(f *Factory, g *globalFlags, runF func(context.Context, *datasetOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDatasetDownload
	}
	cmd, opts := newDatasetCmd(f, g, runF, &cobra.Command{
		Use:   "download [flags] [+key=value ...]",
		Short: "Download a dataset from HF (default) or GitLab",
		Long: `Download a dataset as NeMo Gym 0.7.0 does.

From the Hugging Face Hub (--storage hf): --artifact fetches one file of the
repo as it is (to -o, or into --output-dir by its name); otherwise a split
(--split) or every split is written as JSONL (-o, or <--output-dir>/<split>.jsonl),
its files found as the datasets library finds them (the card's default
config, else train/validation/test in file and folder names): JSON Lines rows
as the files hold them, parquet rows as json.dumps writes them. Downloads are cached under
cache_dir/huggingface, resumed when cut, and LFS files checked against their
sha256. HF_ENDPOINT and HF_HUB_OFFLINE are honoured.

From GitLab (--storage gitlab): --artifact of version --revision of --name,
to -o, resumed from <output>.part when a transfer was cut.`,
		Example: `  # A split of a public dataset, as JSONL
  gym dataset download --repo-id HuggingFaceH4/aime_2024 --split train -o data/aime24.jsonl

  # One file of a public dataset, as it is, into data/
  gym dataset download --repo-id openai/gsm8k --artifact main/test-00000-of-00001.parquet --output-dir data

  # Every split of a private JSONL dataset (HF_TOKEN or hf_token in env.yaml)
  gym dataset download --repo-id my-org/my-dataset --output-dir data

  # From GitLab's model registry
  gym dataset download --storage gitlab --name example_multi_step --revision 0.0.1 \
    --artifact train.jsonl -o data/train.jsonl`,
	})
	opts.registerStorage(cmd.Flags())
	opts.declare(cmd.Flags(),
		datasetFlag{name: "repo-id", keys: []string{"repo_id"}, usage: "HF repo id, e.g. org/dataset (HF only)"},
		datasetFlag{name: "name", keys: []string{"dataset_name"}, usage: "dataset name (GitLab only)"},
		datasetFlag{name: "revision", keys: []string{"version"}, usage: "dataset version (GitLab only)"},
		datasetFlag{name: "artifact", keys: []string{"artifact_fpath"}, usage: "remote file to fetch (GitLab: required; HF: optional raw file)"},
		datasetFlag{name: "output,o", keys: []string{"output_fpath"}, usage: "local destination file"},
		datasetFlag{name: "output-dir", keys: []string{"output_dirpath"}, usage: "local destination directory; needed for all splits (HF only)"},
		datasetFlag{name: "split", keys: []string{"split"}, usage: "dataset split (HF only)"},
	)
	return cmd
}

func newCmdDatasetRm(f *Factory, g *globalFlags, runF func(context.Context, *datasetOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDatasetRm
	}
	cmd, opts := newDatasetCmd(f, g, runF, &cobra.Command{
		Use:   "rm [flags] [+key=value ...]",
		Short: "Delete a dataset from GitLab",
		Long: `Delete a dataset (a registered model, with every version) from GitLab's model
registry, after asking on stdin: y or yes deletes, anything else keeps it.`,
		Example: `  gym dataset rm --name old_dataset
  echo y | gym dataset rm --name old_dataset`,
	})
	opts.declare(cmd.Flags(), datasetFlag{name: "name", keys: []string{"dataset_name"}, usage: "name of the dataset to delete"})
	return cmd
}

func newCmdDatasetMigrate(f *Factory, g *globalFlags, runF func(context.Context, *datasetOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDatasetMigrate
	}
	cmd, opts := newDatasetCmd(f, g, runF, &cobra.Command{
		Use:   "migrate [flags] [+key=value ...]",
		Short: "Transfer a dataset from GitLab to HF",
		Long: `Upload a local JSONL file to the Hugging Face Hub as 'gym dataset upload' does,
then delete the dataset --name from GitLab's model registry, after asking.
The GitLab settings are checked before anything is uploaded.`,
		Example: `  gym dataset migrate --name my_dataset -i data/train.jsonl \
    +resource_config_path=resources_servers/math_with_judge/configs/math_with_judge.yaml`,
	})
	opts.declare(cmd.Flags(),
		datasetFlag{name: "input,i", keys: []string{"input_jsonl_fpath"}, usage: "local JSONL file to upload to HF"},
		datasetFlag{name: "name", keys: []string{"dataset_name"}, usage: "dataset name"},
		datasetFlag{name: "revision", keys: []string{"revision"}, usage: "dataset revision (HF)"},
		datasetFlag{name: "split", keys: []string{"split"}, usage: "dataset split"},
		datasetFlag{name: "create-pr", keys: []string{"create_pr"}, bool: true, usage: "open a pull request instead of committing directly"},
	)
	return cmd
}

// secretKeys may not be given on the command line: other users of the
// machine see it (ps, shell history, CI logs).
var secretKeys = map[string]string{
	"hf_token":              "env.yaml, or HF_TOKEN in the environment",
	"mlflow_tracking_token": "env.yaml, or MLFLOW_TRACKING_TOKEN in the environment",
}

// load checks the tokens and loads the config the command reads.
func (o *datasetOptions) load(ctx context.Context) (config.Settings, commandRoots, error) {
	for _, t := range o.passthrough {
		key, value, _ := strings.Cut(strings.TrimLeft(t, "+~"), "=")
		if where, ok := secretKeys[key]; ok && value != "" {
			return config.Settings{}, commandRoots{}, usageErrorf("%s on the command line is visible to other users of this machine; put it in %s", key, where)
		}
	}
	res, roots, err := o.ws.loadConfig(ctx, o.IO.ErrOut, &configFlags{}, o.globals.verbose, o.tokens(), o.passthrough, config.Request{Seed: dummyPolicy(), Offline: true})
	if err != nil {
		return config.Settings{}, roots, err
	}
	return config.Settings{Result: res}, roots, nil
}

func (o *datasetOptions) meter() func(string, int64) progress.Meter {
	mode := o.IO.ProgressMode(false)
	return func(label string, total int64) progress.Meter {
		return progress.NewMeter(progress.Options{Out: o.IO.ErrOut, Mode: mode}, label, total)
	}
}

// hubClient reaches the Hub as huggingface_hub would, with hf_token.
func (o *datasetOptions) hubClient(s config.Settings) (*hub.Client, error) {
	c, err := newHubClient(o.ws, o.IO, s)
	if err != nil {
		return nil, err
	}
	c.Progress = o.meter()
	return c, nil
}

// gitlab reaches GitLab's model registry with mlflow_tracking_uri and
// mlflow_tracking_token, or MLflow's own environment variables.
func (o *datasetOptions) gitlab(s config.Settings) (*datastore.GitLab, error) {
	var uri, token string
	if err := s.Strings(nil, map[string]*string{"mlflow_tracking_uri": &uri, "mlflow_tracking_token": &token}); err != nil {
		return nil, err
	}
	if uri == "" {
		uri = o.ws.Getenv("MLFLOW_TRACKING_URI")
	}
	if token == "" {
		token = o.ws.Getenv("MLFLOW_TRACKING_TOKEN")
	}
	if uri == "" || token == "" {
		return nil, usageErrorf("GitLab dataset storage needs MLflow credentials. Add to env.yaml:\n  mlflow_tracking_uri: <your_gitlab_uri>\n  mlflow_tracking_token: <your_gitlab_token>")
	}
	return &datastore.GitLab{TrackingURI: uri, Token: token, Log: o.IO.ErrOut, Progress: o.meter()}, nil
}

func runDatasetUpload(ctx context.Context, opts *datasetOptions) error {
	s, roots, err := opts.load(ctx)
	if err != nil {
		return err
	}
	if opts.storage == "gitlab" {
		var name, version, input string
		if err := s.Strings([]string{"dataset_name", "version", "input_jsonl_fpath"},
			map[string]*string{"dataset_name": &name, "version": &version, "input_jsonl_fpath": &input}); err != nil {
			return err
		}
		g, err := opts.gitlab(s)
		if err != nil {
			return err
		}
		return datastore.UploadGitLab(ctx, g, name, version, roots.abs(input), input, opts.IO.Out)
	}
	deleteAfter, err := s.Bool("delete_from_gitlab")
	if err != nil {
		return err
	}
	return uploadHF(ctx, opts, s, roots, deleteAfter)
}

func runDatasetMigrate(ctx context.Context, opts *datasetOptions) error {
	s, roots, err := opts.load(ctx)
	if err != nil {
		return err
	}
	if n, _ := s.Node("delete_from_gitlab"); n != nil {
		return usageErrorf("Forbidden fields present: {'delete_from_gitlab'}: migrate always deletes from GitLab; use 'gym dataset upload' to choose")
	}
	return uploadHF(ctx, opts, s, roots, true)
}

// uploadHF is the Hub upload of upload and migrate, then (deleteAfter)
// the deletion of the GitLab copy, whose settings are checked first.
func uploadHF(ctx context.Context, opts *datasetOptions, s config.Settings, roots commandRoots, deleteAfter bool) error {
	u, err := datastore.ReadHFUpload(s)
	if err != nil {
		return err
	}
	if err := datastore.CheckSplit("split", u.Split); err != nil {
		return usageErrorf("%v", err)
	}
	u.Input, u.ResourceConfigFile = roots.abs(u.Input), roots.resolveExisting(u.ResourceConfig)
	var g *datastore.GitLab
	if deleteAfter {
		if u.DatasetName == "" {
			return &config.MissingSettingsError{Keys: []string{"dataset_name"}}
		}
		if g, err = opts.gitlab(s); err != nil {
			return err
		}
	}
	c, err := opts.hubClient(s)
	if err != nil {
		return err
	}
	if c.Token == "" {
		return usageErrorf("uploading to the Hub needs a token: set hf_token in env.yaml, or HF_TOKEN")
	}
	if c.Offline {
		return usageErrorf("uploading to the Hub needs the network, and HF_HUB_OFFLINE is set")
	}
	if err := datastore.UploadHF(ctx, c, u, opts.IO.Out); err != nil {
		return err
	}
	if g != nil {
		return datastore.DeleteGitLab(ctx, g, u.DatasetName, opts.IO.In, opts.IO.Out)
	}
	return nil
}

func runDatasetDownload(ctx context.Context, opts *datasetOptions) error {
	s, roots, err := opts.load(ctx)
	if err != nil {
		return err
	}
	if opts.storage == "gitlab" {
		var name, version, artifact, output string
		if err := s.Strings([]string{"dataset_name", "version", "artifact_fpath", "output_fpath"},
			map[string]*string{"dataset_name": &name, "version": &version, "artifact_fpath": &artifact, "output_fpath": &output}); err != nil {
			return err
		}
		g, err := opts.gitlab(s)
		if err != nil {
			return err
		}
		out := roots.abs(output)
		if err := datastore.DownloadGitLab(ctx, g, name, version, artifact, out); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.Out, "Downloaded %s (version %s of %s) to %s\n", artifact, version, name, out)
		return nil
	}
	d, err := datastore.ReadHFDownload(s)
	if err != nil {
		return err
	}
	if d.Output != "" {
		d.Output = roots.abs(d.Output)
	}
	if d.OutputDir != "" {
		d.OutputDir = roots.abs(d.OutputDir)
	}
	if err := d.Check(); err != nil {
		return usageErrorf("%v", err)
	}
	c, err := opts.hubClient(s)
	if err != nil {
		return err
	}
	if d.Artifact != "" {
		fmt.Fprintf(opts.IO.Out, "Downloading file '%s' from '%s'...\n", d.Artifact, d.Repo)
	} else {
		split := d.Split
		if split == "" {
			split = "all"
		}
		fmt.Fprintf(opts.IO.Out, "Downloading '%s' split(s) from '%s'...\n", split, d.Repo)
	}
	err = datastore.DownloadHF(ctx, c, d, opts.IO.Out)
	if errors.Is(err, hub.ErrNotCached) {
		return fmt.Errorf("%w; run once without HF_HUB_OFFLINE", err)
	}
	return err
}

func runDatasetRm(ctx context.Context, opts *datasetOptions) error {
	s, _, err := opts.load(ctx)
	if err != nil {
		return err
	}
	var name string
	if err := s.Strings([]string{"dataset_name"}, map[string]*string{"dataset_name": &name}); err != nil {
		return err
	}
	g, err := opts.gitlab(s)
	if err != nil {
		return err
	}
	return datastore.DeleteGitLab(ctx, g, name, opts.IO.In, opts.IO.Out)
}
