package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/python"
	"github.com/nemo-gym-go/gym/internal/rollout"
)

type prepareOptions struct {
	f           *Factory
	globals     *globalFlags
	config      configFlags
	passthrough []string
}

func newCmdEvalPrepare(f *Factory, g *globalFlags) *cobra.Command {
	opts := &prepareOptions{f: f, globals: g}
	cmd := &cobra.Command{
		Use:   "prepare [flags] [+key=value ...]",
		Short: "Prepare the data of benchmarks before they run",
		Long: `Find every benchmark dataset (type: benchmark) of the config's agents and make
its jsonl_fpath exist. A benchmark built into gym ships its data and needs
nothing. A benchmark with a prepare_script (NeMo Gym's prepare.py) runs it with
Python: the module is imported from its search root and prepare(**kwargs) is
called with +prepare_script_args; it must return the configured jsonl_fpath.
Every benchmark is checked before any is prepared.`,
		Example: `  # A NeMo Gym benchmark from a checkout, with Python on PATH
  gym eval prepare --search-dir ~/Gym --benchmark gsm8k

  # Skip benchmarks whose data is already there
  gym eval prepare --benchmark gsm8k +use_cached_prepared_benchmarks=true`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.passthrough = args
			return runEvalPrepare(cmd.Context(), opts)
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
}

func runEvalPrepare(ctx context.Context, opts *prepareOptions) error {
	f := opts.f
	res, roots, err := f.loadConfig(ctx, &opts.config, opts.globals.verbose, nil, opts.passthrough, config.Request{Seed: dummyPolicy(), Offline: true})
	if err != nil {
		return err
	}
	s := settings{res}
	cached, err := s.boolean("use_cached_prepared_benchmarks")
	if err != nil {
		return err
	}
	args, err := s.object("prepare_script_args")
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
		if p.script == "" {
			if p.data == "" {
				problems = append(problems, fmt.Sprintf("%s: prepare_script %s not found in any search root, and no data at %s", p.d.Name, p.d.PrepareScript, p.d.JSONLPath))
			}
			continue
		}
		p.root = strings.TrimSuffix(p.script, string(filepath.Separator)+filepath.FromSlash(p.d.PrepareScript))
		p.python = python.System(f.LookPath)
		if p.python == "" && p.data == "" {
			problems = append(problems, fmt.Sprintf("%s: its prepare_script %s needs Python, and neither python3 nor python is on PATH; install Python, or put the prepared rows at %s", p.d.Name, p.d.PrepareScript, p.d.JSONLPath))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("cannot prepare the benchmarks, so none was prepared:\n  %s", strings.Join(problems, "\n  "))
	}

	for _, p := range plans {
		fmt.Fprintf(f.IO.Out, "Preparing benchmark: %s\n", p.d.Name)
		switch {
		case cached && p.data != "":
			fmt.Fprintf(f.IO.Out, "Using the prepared data (use_cached_prepared_benchmarks=true)\n")
		case p.script == "":
			fmt.Fprintf(f.IO.Out, "The data is already there (it ships with the benchmark); nothing to run\n")
		case p.python == "":
			fmt.Fprintf(f.IO.ErrOut, "Warning: no Python to run %s; using the data already at %s\n", p.d.PrepareScript, p.data)
		default:
			data, err := runPrepareScript(ctx, f, p, args)
			if err != nil {
				return err
			}
			p.data = data
		}
		fmt.Fprintf(f.IO.Out, "Benchmark data prepared at: %s\n", p.data)
	}
	return nil
}

func runPrepareScript(ctx context.Context, f *Factory, p benchmarkPlan, args []byte) (string, error) {
	got, err := python.Prepare(ctx, python.PrepareRequest{
		Interpreter: p.python, Root: p.root, Script: p.d.PrepareScript, ArgsJSON: args,
		Environ: f.Environ(), Out: f.IO.ErrOut,
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
