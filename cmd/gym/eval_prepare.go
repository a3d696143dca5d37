package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/hub"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/prepare"
	"github.com/nemo-gym-go/gym/internal/python"
	"github.com/nemo-gym-go/gym/internal/rollout"
	"github.com/nemo-gym-go/gym/internal/server"
)

type prepareOptions struct {
	IO          *iostreams.IOStreams
	ws          *workspace
	globals     *globalFlags
	config      configFlags
	passthrough []string
}

func newCmdEvalPrepare(f *Factory, g *globalFlags, runF func(context.Context, *prepareOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEvalPrepare
	}
	opts := &prepareOptions{IO: f.IOStreams, ws: f.Workspace, globals: g}
	cmd := &cobra.Command{
		Use:   "prepare [flags] [+key=value ...]",
		Short: "Prepare the data of benchmarks before they run",
		Long: `Find every benchmark dataset (type: benchmark) of the config's agents and make
its jsonl_fpath exist. A benchmark built into gym ships its data and needs
nothing. NeMo Gym 0.7.0's prepare.py scripts that only download a Hugging Face
dataset (AIME 24/25/26, HMMT Feb/Nov 25, APEX 25 and shortlist, ArXivMath,
GPQA, MMLU-Pro) run as gym's ports, without Python: the rows come from the
Hub's parquet files and the JSONL is the script's, byte for byte. HF_TOKEN (or
hf_token), HF_ENDPOINT and HF_HUB_OFFLINE are honoured; downloads are cached
under cache_dir/huggingface and resumed when cut. Any other prepare_script (or
an edited copy of a ported one) runs with Python: the module is imported from
its search root and prepare(**kwargs) is called with +prepare_script_args; it
must return the configured jsonl_fpath. Every benchmark is checked before any
is prepared.`,
		Example: `  # GPQA from a NeMo Gym checkout, without Python (a gated dataset: a token)
  HF_TOKEN=hf_... gym eval prepare --search-dir ~/Gym --benchmark gpqa

  # A NeMo Gym benchmark whose prepare.py needs Python, with Python on PATH
  gym eval prepare --search-dir ~/Gym --benchmark gsm8k

  # Skip benchmarks whose data is already there
  gym eval prepare --benchmark gsm8k +use_cached_prepared_benchmarks=true`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.passthrough = args
			return runF(cmd.Context(), opts)
		},
	}
	opts.config.register(cmd.Flags())
	return cmd
}

// benchmarkPlan is how one benchmark gets its data.
type benchmarkPlan struct {
	d      rollout.Dataset
	data   string // the resolved jsonl_fpath; "" when absent
	script string // the resolved prepare_script; "" when none
	root   string // the search root the script lives under
	python string
	recipe *prepare.Recipe // gym's port of the script, when it runs in its place
}

func runEvalPrepare(ctx context.Context, opts *prepareOptions) error {
	ios, ws := opts.IO, opts.ws
	res, roots, err := ws.loadConfig(ctx, ios.ErrOut, &opts.config, opts.globals.verbose, nil, opts.passthrough, config.Request{Seed: dummyPolicy(), Offline: true})
	if err != nil {
		return err
	}
	s := config.Settings{Result: res}
	cached, err := s.Bool("use_cached_prepared_benchmarks")
	if err != nil {
		return err
	}
	argsNode, err := s.Node("prepare_script_args")
	if err != nil {
		return err
	}
	args, err := server.ObjectJSON("prepare_script_args", argsNode)
	if err != nil {
		return err
	}
	if args == nil {
		args = []byte("{}")
	}
	resolved, err := res.Resolved(false)
	if err != nil {
		return err
	}
	datasets, err := rollout.AgentDatasets(resolved)
	if err != nil {
		return err
	}
	var plans []benchmarkPlan
	perAgent := map[string]int{}
	for _, d := range datasets {
		if d.Type != "benchmark" {
			continue
		}
		perAgent[d.Agent]++
		if perAgent[d.Agent] > 1 {
			return fmt.Errorf("agent %s has more than one benchmark dataset; a benchmark config declares exactly one type: benchmark dataset per agent", d.Agent)
		}
		plans = append(plans, benchmarkPlan{d: d, data: roots.find(d.JSONLPath)})
	}
	if len(plans) == 0 {
		var names []string
		for _, in := range res.Instances {
			names = append(names, in.Name)
		}
		return fmt.Errorf("No benchmark config found. Inspected server instances [%s]; give --benchmark NAME (see `gym list benchmarks`) or a --config with a type: benchmark dataset", strings.Join(names, ", "))
	}

	var problems []string
	for i := range plans {
		p := &plans[i]
		if cached && p.data != "" {
			continue
		}
		if p.d.PrepareScript == "" {
			if p.data == "" {
				problems = append(problems, fmt.Sprintf("%s: no prepare_script and no data at %s", p.d.Name, p.d.JSONLPath))
			}
			continue
		}
		if filepath.IsAbs(p.d.PrepareScript) {
			problems = append(problems, fmt.Sprintf("%s: prepare_script %s must be relative to its Gym root (NeMo Gym imports it as a module named after that path)", p.d.Name, p.d.PrepareScript))
			continue
		}
		p.d.PrepareScript = filepath.Clean(p.d.PrepareScript)
		p.script = roots.find(p.d.PrepareScript)
		if problem := p.portIfPorted(roots); problem != "" {
			problems = append(problems, problem)
			continue
		}
		if p.recipe != nil {
			continue
		}
		if p.script == "" {
			if p.data == "" {
				problems = append(problems, fmt.Sprintf("%s: prepare_script %s not found in any search root, and no data at %s", p.d.Name, p.d.PrepareScript, p.d.JSONLPath))
			}
			continue
		}
		p.root = rootOf(p.script, p.d.PrepareScript)
		p.python = python.System(ws.LookPath)
		if p.python == "" && p.data == "" {
			problems = append(problems, fmt.Sprintf("%s: its prepare_script %s needs Python, and neither python3 nor python is on PATH; install Python, or put the prepared rows at %s", p.d.Name, p.d.PrepareScript, p.d.JSONLPath))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("cannot prepare the benchmarks, so none was prepared:\n  %s", strings.Join(problems, "\n  "))
	}

	var hubClient *hub.Client
	if slices.ContainsFunc(plans, func(p benchmarkPlan) bool { return p.recipe != nil }) {
		if hubClient, err = newHubClient(ws, ios, s); err != nil {
			return err
		}
	}
	for _, p := range plans {
		fmt.Fprintf(ios.Out, "Preparing benchmark: %s\n", p.d.Name)
		switch {
		case cached && p.data != "":
			fmt.Fprintf(ios.Out, "Using the prepared data (use_cached_prepared_benchmarks=true)\n")
		case p.recipe != nil:
			fmt.Fprintf(ios.Out, "Downloading %s from the Hugging Face Hub (gym's port of %s from %s; no Python needed)\n", p.recipe.Source.Repo, p.d.PrepareScript, prepare.Ported)
			data, _, err := prepare.Run(ctx, hubClient, *p.recipe, p.root, ios.Out)
			if err != nil {
				return fmt.Errorf("benchmark %s: %w", p.d.Name, err)
			}
			p.data = data
		case p.script == "":
			fmt.Fprintf(ios.Out, "The data is already there (it ships with the benchmark); nothing to run\n")
		case p.python == "":
			fmt.Fprintf(ios.ErrOut, "Warning: no Python to run %s; using the data already at %s\n", p.d.PrepareScript, p.data)
		default:
			data, err := runPrepareScript(ctx, ws, ios, p, args)
			if err != nil {
				return err
			}
			p.data = data
		}
		fmt.Fprintf(ios.Out, "Benchmark data prepared at: %s\n", p.data)
	}
	return nil
}

// portIfPorted chooses gym's port of the benchmark's script when it has
// one and the script is the version ported (or absent: the config names a
// NeMo Gym script the user did not copy). It returns a problem when the
// port would write somewhere other than the config's jsonl_fpath.
func (p *benchmarkPlan) portIfPorted(roots commandRoots) string {
	r, ok := prepare.Lookup(filepath.ToSlash(p.d.PrepareScript))
	if !ok {
		return ""
	}
	if p.script != "" {
		content, err := os.ReadFile(p.script)
		if err != nil || !r.Ports(content) {
			return ""
		}
		p.root = rootOf(p.script, p.d.PrepareScript)
	} else if dir := roots.find(filepath.Dir(p.d.PrepareScript)); dir != "" {
		p.root = rootOf(dir, filepath.Dir(p.d.PrepareScript))
	} else {
		p.root = roots.cwd
	}
	if filepath.Clean(p.d.JSONLPath) != filepath.FromSlash(r.Output) {
		return fmt.Sprintf("%s: %s writes %s, but the config's jsonl_fpath is %s", p.d.Name, p.d.PrepareScript, r.Output, p.d.JSONLPath)
	}
	p.recipe = &r
	return ""
}

// rootOf is the search root a path found under it lives in.
func rootOf(found, rel string) string {
	return strings.TrimSuffix(found, string(filepath.Separator)+filepath.FromSlash(rel))
}

// newHubClient reaches the Hub as huggingface_hub would, with NeMo Gym's
// hf_token, caching under cache_dir.
func newHubClient(ws *workspace, ios *iostreams.IOStreams, s config.Settings) (*hub.Client, error) {
	token, err := s.String("hf_token")
	if err != nil {
		return nil, err
	}
	cacheDir, err := s.String("cache_dir")
	if err != nil {
		return nil, err
	}
	c := hub.FromEnv(ws.Getenv, ws.Getenv("HOME"), filepath.Join(cacheDir, "huggingface"), token)
	c.Log = ios.ErrOut
	return c, nil
}

func runPrepareScript(ctx context.Context, ws *workspace, ios *iostreams.IOStreams, p benchmarkPlan, args []byte) (string, error) {
	got, err := python.Prepare(ctx, python.PrepareRequest{
		Interpreter: p.python, Root: p.root, Script: p.d.PrepareScript, ArgsJSON: args,
		Environ: ws.Environ(), Out: ios.ErrOut,
	})
	var exit *python.ExitError
	if errors.As(err, &exit) {
		return "", fmt.Errorf("benchmark %s: %s failed (%v); its output is above", p.d.Name, p.d.PrepareScript, exit.Err)
	} else if err != nil {
		return "", fmt.Errorf("benchmark %s: running %s: %w", p.d.Name, p.python, err)
	}
	want := p.d.JSONLPath
	if !filepath.IsAbs(want) {
		want = filepath.Join(p.root, want)
	}
	if !samePath(string(got), want) {
		return "", fmt.Errorf("benchmark %s: prepare() returned %s, but the config's jsonl_fpath is %s", p.d.Name, got, want)
	}
	if _, err := os.Stat(want); err != nil {
		return "", fmt.Errorf("benchmark %s: prepare() returned %s, which does not exist", p.d.Name, want)
	}
	return want, nil
}

// samePath compares paths as files: Python's getcwd resolves symlinks, so
// a prepare() under a symlinked root returns the real path.
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}
