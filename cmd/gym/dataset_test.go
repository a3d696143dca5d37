package main

import (
	"context"
	"reflect"
	"testing"

	"github.com/spf13/cobra"
)

func TestDatasetFlags(t *testing.T) {
	tokens := func(storage string, want ...string) func(t *testing.T, o *datasetOptions) {
		return func(t *testing.T, o *datasetOptions) {
			if got := o.tokens(); !reflect.DeepEqual(got, want) || o.storage != storage {
				t.Errorf("tokens %q, storage %q; want %q, %q", got, o.storage, want, storage)
			}
		}
	}
	build := func(newCmd func(*Factory, *globalFlags, func(context.Context, *datasetOptions) error) *cobra.Command) func(*Factory, func(context.Context, *datasetOptions) error) *cobra.Command {
		return func(f *Factory, runF func(context.Context, *datasetOptions) error) *cobra.Command {
			return newCmd(f, &globalFlags{}, runF)
		}
	}
	t.Run("upload", func(t *testing.T) {
		runFlagCases(t, []flagCase[datasetOptions]{
			{name: "every flag, in NeMo Gym's order; --revision sets version and revision",
				args:  []string{"--create-pr", "--split", "test", "--revision", "0.0.1", "--name", "x", "-i", "d.jsonl", "+hf_dataset_prefix="},
				check: tokens("hf", "+input_jsonl_fpath=d.jsonl", "+dataset_name=x", "+version=0.0.1", "+revision=0.0.1", "+split=test", "+create_pr=true")},
			{name: "gitlab, overrides kept", args: []string{"--storage", "gitlab", "--input", "d.jsonl", "+version=1.0.0"},
				check: func(t *testing.T, o *datasetOptions) {
					tokens("gitlab", "+input_jsonl_fpath=d.jsonl")(t, o)
					if !reflect.DeepEqual(o.passthrough, []string{"+version=1.0.0"}) {
						t.Errorf("passthrough %q", o.passthrough)
					}
				}},
			{name: "storage choices", args: []string{"--storage", "s3"}, wantErr: "invalid choice: 's3' (choose from 'hf', 'gitlab')", usage: true},
			{name: "a boolean takes no value", args: []string{"--create-pr=no"}, wantErr: "ignored explicit argument 'no'", usage: true},
			{name: "download's flags are not upload's", args: []string{"--repo-id", "a/b"}, wantErr: "unrecognized arguments: --repo-id", usage: true},
		}, build(newCmdDatasetUpload))
	})
	t.Run("download", func(t *testing.T) {
		runFlagCases(t, []flagCase[datasetOptions]{
			{name: "HF", args: []string{"-o", "o.jsonl", "--split", "train", "--repo-id", "org/ds", "--output-dir", "d", "--artifact", "a.jsonl"},
				check: tokens("hf", "+repo_id=org/ds", "+artifact_fpath=a.jsonl", "+output_fpath=o.jsonl", "+output_dirpath=d", "+split=train")},
			{name: "GitLab: --revision is the version only", args: []string{"--storage", "gitlab", "--revision", "0.1.0", "--name", "n"},
				check: tokens("gitlab", "+dataset_name=n", "+version=0.1.0")},
			{name: "no input flag", args: []string{"-i", "x"}, wantErr: "unrecognized arguments: -i", usage: true},
		}, build(newCmdDatasetDownload))
	})
	t.Run("rm", func(t *testing.T) {
		runFlagCases(t, []flagCase[datasetOptions]{
			{name: "name", args: []string{"--name", "old"}, check: tokens("", "+dataset_name=old")},
			{name: "no storage flag", args: []string{"--storage", "hf"}, wantErr: "unrecognized arguments: --storage", usage: true},
		}, build(newCmdDatasetRm))
	})
	t.Run("migrate", func(t *testing.T) {
		runFlagCases(t, []flagCase[datasetOptions]{
			{name: "--revision is the HF revision only", args: []string{"--revision", "b", "--create-pr", "-i", "x.jsonl", "--name", "n", "--split", "validation"},
				check: tokens("", "+input_jsonl_fpath=x.jsonl", "+dataset_name=n", "+revision=b", "+split=validation", "+create_pr=true")},
		}, build(newCmdDatasetMigrate))
	})
}
