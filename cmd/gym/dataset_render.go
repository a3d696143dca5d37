package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/dataset"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/rollout"
)

// NeMo Gym's keys for `dataset render`.
const (
	keyRenderInput  = "input_jsonl_fpath"
	keyRenderPrompt = "prompt_config"
	keyRenderOutput = "output_jsonl_fpath"
)

type renderOptions struct {
	IO          *iostreams.IOStreams
	ws          *workspace
	globals     *globalFlags
	config      configFlags
	input       string
	prompt      string
	output      string
	passthrough []string
	flags       *pflag.FlagSet
}

func newCmdDatasetRender(f *Factory, g *globalFlags, runF func(context.Context, *renderOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDatasetRender
	}
	opts := &renderOptions{IO: f.IOStreams, ws: f.Workspace, globals: g}
	cmd := &cobra.Command{
		Use:   "render -i RAW.jsonl --prompt-config PROMPT.yaml -o OUT.jsonl [+key=value ...]",
		Short: "Generate a dataset preview: a prompt template applied to raw rows",
		Long: `Apply a prompt template (a YAML file with a user template and an optional
system one, filled from each row's fields with Python's str.format_map) to
every row of a raw JSONL file, and write the rows with their
responses_create_params.input built from it and prompt_config_used naming the
template, exactly as NeMo Gym's materialize_prompts writes them. A row that
already has an input is an error (a prompt and an input are mutually
exclusive); every such row is listed. The prompt config is found over the
search roots; the input and output are relative to the working directory,
whose output directory is made. Offline; no Python.`,
		Example: `  printf '{"question": "What is 2+2?", "expected_answer": "4"}\n' > raw.jsonl
  printf 'system: You are terse.\nuser: "Q: {question}"\n' > prompt.yaml
  gym dataset render -i raw.jsonl --prompt-config prompt.yaml -o preview/rendered.jsonl

  # The same with NeMo Gym's keys
  gym dataset render +input_jsonl_fpath=raw.jsonl +prompt_config=prompt.yaml +output_jsonl_fpath=preview/rendered.jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.passthrough = args
			return runF(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.input, "input", "i", "", "raw input JSONL file (input_jsonl_fpath)")
	cmd.Flags().StringVar(&opts.prompt, "prompt-config", "", "prompt template YAML to apply (prompt_config)")
	cmd.Flags().StringVarP(&opts.output, "output", "o", "", "output JSONL file (output_jsonl_fpath)")
	cmd.Flags().StringArrayVar(&opts.config.searchDirs, "search-dir", nil, "extra search root, searched before NEMO_GYM_EXTRA_ROOTS, the cwd and the install root (repeatable)")
	opts.flags = cmd.Flags()
	return cmd
}

// tokens are the flags as NeMo Gym's keys, before the user's overrides.
func (o *renderOptions) tokens() []string {
	var own []string
	for _, f := range []struct{ flag, key, value string }{
		{"input", keyRenderInput, o.input}, {"prompt-config", keyRenderPrompt, o.prompt}, {"output", keyRenderOutput, o.output},
	} {
		if o.flags != nil && o.flags.Changed(f.flag) {
			own = append(own, "++"+f.key+"="+override.Quote(f.value))
		}
	}
	return own
}

func runDatasetRender(ctx context.Context, opts *renderOptions) error {
	res, roots, err := opts.ws.loadConfig(ctx, opts.IO.ErrOut, &opts.config, opts.globals.verbose, opts.tokens(), opts.passthrough, config.Request{Seed: dummyPolicy(), Offline: true})
	if err != nil {
		return err
	}
	s := config.Settings{Result: res}
	values := map[string]string{}
	var missing []string
	for _, key := range []string{keyRenderInput, keyRenderPrompt, keyRenderOutput} {
		v, err := s.String(key)
		if err != nil {
			return err
		}
		if v == "" {
			missing = append(missing, key)
		}
		values[key] = v
	}
	if len(missing) > 0 {
		return &config.MissingSettingsError{Keys: missing}
	}
	// The prompt is found as NeMo Gym finds it (over the search roots);
	// the path it resolved to is what each row records.
	promptPath := roots.Roots.Resolve(values[keyRenderPrompt])
	prompt, err := rollout.LoadPrompt(roots.abs(promptPath))
	if err != nil {
		return err
	}
	output := roots.abs(values[keyRenderOutput])
	n, err := dataset.Render(ctx, dataset.RenderOptions{
		Input:      roots.abs(values[keyRenderInput]),
		Prompt:     prompt,
		PromptUsed: promptPath,
		Output:     output,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "Materialized %d rows to %s\n", n, values[keyRenderOutput])
	return nil
}
