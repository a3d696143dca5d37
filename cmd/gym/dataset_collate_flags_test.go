package main

import (
	"context"
	"reflect"
	"testing"

	"github.com/spf13/cobra"
)

func TestDatasetCollateFlags(t *testing.T) {
	runFlagCases(t, []flagCase[collateOptions]{
		{name: "NeMo Gym's flags become its keys", args: []string{"--config", "a.yaml", "--resources-server", "mcqa", "--resources-server", "gpqa", "--model-type", "openai_model", "--mode", "train_preparation", "--output-dir", "out", "--download", "+overwrite_metrics_conflicts=true"},
			check: func(t *testing.T, o *collateOptions) {
				if want := []string{"++mode='train_preparation'", "++output_dirpath='out'", "++should_download=true"}; !reflect.DeepEqual(o.tokens(), want) {
					t.Errorf("tokens %q, want %q", o.tokens(), want)
				}
				if !reflect.DeepEqual(o.resourceServers, []string{"mcqa", "gpqa"}) || !reflect.DeepEqual(o.config.configs, []string{"a.yaml"}) || o.config.modelType != "openai_model" {
					t.Errorf("%+v", o)
				}
				if !reflect.DeepEqual(o.passthrough, []string{"+overwrite_metrics_conflicts=true"}) {
					t.Errorf("passthrough %q", o.passthrough)
				}
			}},
		{name: "unset flags set nothing", args: []string{"+mode=example_validation", "+output_dirpath=o"},
			check: func(t *testing.T, o *collateOptions) {
				if len(o.tokens()) != 0 {
					t.Errorf("tokens %q", o.tokens())
				}
			}},
		{name: "a mode NeMo Gym does not have", args: []string{"--mode", "training"}, wantErr: "argument --mode: invalid choice: 'training'", usage: true},
		{name: "no --benchmark here", args: []string{"--benchmark", "aime24"}, wantErr: "unrecognized arguments: --benchmark", usage: true},
		{name: "no model flags here", args: []string{"--model", "m"}, wantErr: "unrecognized arguments: --model", usage: true},
	}, func(f *Factory, runF func(context.Context, *collateOptions) error) *cobra.Command {
		return newCmdDatasetCollate(f, &globalFlags{}, runF)
	})
}

func TestDatasetRenderFlags(t *testing.T) {
	runFlagCases(t, []flagCase[renderOptions]{
		{name: "NeMo Gym's flags become its keys", args: []string{"-i", "raw.jsonl", "--prompt-config", "p.yaml", "-o", "out dir/r.jsonl", "--search-dir", "/plugins"},
			check: func(t *testing.T, o *renderOptions) {
				want := []string{"++input_jsonl_fpath='raw.jsonl'", "++prompt_config='p.yaml'", "++output_jsonl_fpath='out dir/r.jsonl'"}
				if !reflect.DeepEqual(o.tokens(), want) {
					t.Errorf("tokens %q, want %q", o.tokens(), want)
				}
				if !reflect.DeepEqual(o.config.searchDirs, []string{"/plugins"}) {
					t.Errorf("search dirs %q", o.config.searchDirs)
				}
			}},
		{name: "long forms", args: []string{"--input", "a", "--output", "b", "+prompt_config=p.yaml"},
			check: func(t *testing.T, o *renderOptions) {
				if o.input != "a" || o.output != "b" || !reflect.DeepEqual(o.passthrough, []string{"+prompt_config=p.yaml"}) {
					t.Errorf("%+v", o)
				}
			}},
		{name: "no --config here", args: []string{"--config", "a.yaml"}, wantErr: "unrecognized arguments: --config", usage: true},
	}, func(f *Factory, runF func(context.Context, *renderOptions) error) *cobra.Command {
		return newCmdDatasetRender(f, &globalFlags{}, runF)
	})
}
