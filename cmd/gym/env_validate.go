package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nemo-gym-go/gym/internal/catalog"
	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/workload"
)

// validateOptions are the inputs of `gym env validate`.
type validateOptions struct {
	IO       *iostreams.IOStreams
	ws       *workspace
	globals  *globalFlags
	config   configFlags
	name     string
	kind     string
	manifest string
	sync     bool
	strict   bool
	json     bool
	// passthrough are the +key=value tokens.
	passthrough []string
}

func newCmdEnvValidate(f *Factory, g *globalFlags, runF func(context.Context, *validateOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEnvValidate
	}
	opts := &validateOptions{IO: f.IOStreams, ws: f.Workspace, globals: g}
	cmd := &cobra.Command{
		Use:   "validate [NAME] [--kind KIND | --manifest PATH] [--sync] [--json] | [config flags] [+key=value ...]",
		Short: "Check a manifest-backed workload or a config without starting anything",
		Long: `With a workload NAME (an environment or benchmark with a manifest.yaml, found
in the search roots) or --manifest PATH, check the manifest as NeMo Gym does:
its schema and licensing, that its name and kind match its place under
environments/ or benchmarks/, that its config resolves (server references
included) and that the manifest's mirror of it (servers, datasets) is current,
the rollout driver, prompt configs and prepare scripts, and that every dataset
file is present and each row is a valid rollout input. Every problem is listed
with its file and line; --json prints NeMo Gym's validation report (or, when
the workload is not valid, the problems). --sync rewrites a stale mirror from
the config, which is authoritative.

Without a name, check the config the flags and +key=value tokens select, as
gym env start would load it; a config that names no model is checked with a
stand-in model (a warning), unless --strict.`,
		Example: `  # The built-in manifest-backed environment
  gym env validate mcqa_genetics
  gym env validate mcqa_genetics --json | jq .datasets
  # One of your own
  gym env validate my_env --search-dir ~/my-plugins
  gym env validate --manifest ~/my-plugins/environments/my_env/manifest.yaml
  # A config, without a model
  gym env validate --benchmark example_single_tool_call`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, tokens, err := workloadArgs(args, opts.kind)
			if err != nil {
				return err
			}
			opts.name, opts.passthrough = name, tokens
			if err := opts.checkMode(); err != nil {
				return err
			}
			return runF(cmd.Context(), opts)
		},
	}
	kindFlag(cmd.Flags(), &opts.kind)
	cmd.Flags().StringVar(&opts.manifest, "manifest", "", "manifest file to validate instead of a catalog name")
	cmd.Flags().BoolVar(&opts.sync, "sync", false, "rewrite the manifest's stale mirror of the config from the config")
	cmd.Flags().BoolVar(&opts.strict, "strict", false, "fail, instead of warning, when the config names no model")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the validation report as JSON")
	opts.config.register(cmd.Flags())
	opts.config.registerAgentType(cmd.Flags())
	return cmd
}

// workloadArgs takes a workload NAME and +key=value tokens apart, as
// NeMo Gym reads its optional NAME positional (a token with "=" is an
// override), and checks --kind.
func workloadArgs(args []string, kind string) (name string, tokens []string, err error) {
	for _, a := range args {
		switch {
		case strings.Contains(a, "="):
			tokens = append(tokens, a)
		case name == "":
			name = a
		default:
			return "", nil, usageErrorf("unrecognized arguments: %s", a)
		}
	}
	return name, tokens, checkKind(kind)
}

// kindFlag is the workload commands' --kind.
func kindFlag(fs *pflag.FlagSet, kind *string) {
	fs.StringVar(kind, "kind", "", "workload kind: environment or benchmark (when a name is both)")
}

func checkKind(kind string) error {
	switch kind {
	case "", catalog.KindEnvironment, catalog.KindBenchmark:
		return nil
	}
	return usageErrorf("argument --kind: invalid choice: '%s' (choose from 'environment', 'benchmark')", kind)
}

// configSet lists the config-selecting inputs given, by their Hydra keys
// as NeMo Gym names them when it refuses them.
func (c *configFlags) set(passthrough []string) []string {
	var keys []string
	add := func(given bool, key string) {
		if given {
			keys = append(keys, key)
		}
	}
	add(len(c.configs) > 0, "config_paths")
	add(len(c.benchmarks) > 0 || len(c.environments) > 0 || len(c.resourcesServers) > 0 || c.modelType != "" || c.agentType != "", "config_paths")
	add(c.allowUnsupportedPairing, "allow_unsupported_pairing")
	add(c.model != "", "policy_model_name")
	add(c.modelURL != "", "policy_base_url")
	add(c.modelAPIKey != "", "policy_api_key")
	for _, t := range passthrough {
		key, _, _ := strings.Cut(strings.TrimLeft(t, "+~"), "=")
		keys = append(keys, key)
	}
	var out []string
	for _, k := range keys {
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

// checkMode refuses the combinations NeMo Gym refuses: a workload (NAME
// or --manifest) takes no config flags or overrides, a config no
// workload-only flags.
func (opts *validateOptions) checkMode() error {
	switch {
	case opts.name != "" && opts.manifest != "":
		return usageErrorf("select a catalog name or --manifest, not both")
	case opts.manifest != "" && opts.kind != "":
		return usageErrorf("--kind is only valid when selecting a catalog name")
	case opts.workload():
		if extra := opts.config.set(opts.passthrough); len(extra) > 0 {
			return usageErrorf("Manifest-backed commands do not accept runtime config overrides: %s", strings.Join(extra, ", "))
		}
		return nil
	}
	var unsupported []string
	for _, o := range []struct {
		set bool
		key string
	}{{opts.kind != "", "catalog_kind"}, {opts.sync, "sync"}, {opts.json, "json"}} {
		if o.set {
			unsupported = append(unsupported, o.key)
		}
	}
	if len(unsupported) > 0 {
		return usageErrorf("The following options require a workload name or --manifest: %s", strings.Join(unsupported, ", "))
	}
	return nil
}

func (opts *validateOptions) workload() bool { return opts.name != "" || opts.manifest != "" }

func runEnvValidate(ctx context.Context, opts *validateOptions) error {
	if opts.workload() {
		return validateWorkload(ctx, opts)
	}
	return validateConfig(ctx, opts)
}

func validateWorkload(ctx context.Context, opts *validateOptions) error {
	roots, err := opts.ws.roots(opts.config.searchDirs)
	if err != nil {
		return err
	}
	o := opts.ws.workloadOptions(roots, opts.IO.ErrOut)
	o.Sync = opts.sync
	if opts.manifest != "" {
		o.Manifest = roots.abs(opts.manifest)
	} else {
		t, err := workload.Find(roots.Roots, opts.name, opts.kind)
		if err != nil {
			return err
		}
		if t.Manifest == "" {
			return fmt.Errorf("'%s' has no manifest; validate its config with --%s %s.", t.Name, t.Kind, t.Name)
		}
		o.Manifest, o.Config = t.Manifest, t.Config
	}
	report, err := workload.Validate(ctx, o)
	var invalid *workload.InvalidError
	if errors.As(err, &invalid) && opts.json {
		printJSON(opts.IO.Out, map[string]any{"valid": false, "manifest_path": invalid.Manifest, "problems": invalid.Problems})
	}
	if err != nil {
		return err
	}
	if opts.json {
		return printJSON(opts.IO.Out, report)
	}
	printValidation(opts.IO, report)
	return nil
}

// workloadOptions is where a workload command finds things and how it
// loads configs.
func (ws *workspace) workloadOptions(roots commandRoots, warnings io.Writer) workload.Options {
	env := ws.configEnv(roots, warnings)
	env.Roots = nil
	return workload.Options{Env: env, ExtraRoots: roots.extra, Cwd: roots.cwd, InstallRoot: roots.install, Seed: dummyPolicy()}
}

func printJSON(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(data))
	return err
}

// printValidation is NeMo Gym's human validation report.
func printValidation(ios *iostreams.IOStreams, r *workload.Report) {
	out := ios.Out
	fmt.Fprintf(out, "✓ Manifest: %s %s kind=%s profile=%s inferred=%s\n", r.Name, r.Version, r.Kind, r.DeclaredProfile, r.InferredProfile)
	fmt.Fprintf(out, "    Profile evidence: %s\n", r.ProfileEvidence)
	fmt.Fprintln(out, "✓ Components:")
	for _, c := range r.Components {
		fmt.Fprintf(out, "    %s: %s -> %s [%s]\n", c.Role, c.Name, c.Implementation, c.Boundary)
	}
	fmt.Fprintln(out, "✓ Datasets:")
	for _, d := range r.Datasets {
		fmt.Fprintf(out, "    %s: %d rows (%s)\n", d.Name, d.Rows, d.Type)
	}
	if len(r.SynchronizedFields) > 0 {
		fmt.Fprintf(out, "✓ Synchronized: %s\n", strings.Join(r.SynchronizedFields, ", "))
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(ios.ErrOut, "Warning: %s\n", w)
	}
}

// validateConfig checks a config as a run would load it.
func validateConfig(ctx context.Context, opts *validateOptions) error {
	load := func(req config.Request) (*config.Result, error) {
		res, _, err := opts.ws.loadConfig(ctx, opts.IO.ErrOut, &opts.config, opts.globals.verbose, nil, opts.passthrough, req)
		if err == nil {
			_, err = res.Resolved(false)
		}
		return res, err
	}
	_, err := load(config.Request{Offline: true})
	var cfgErr *config.Error
	var missing *config.MissingSettingsError
	if err != nil && !opts.strict && (errors.As(err, &cfgErr) || errors.As(err, &missing)) {
		first := err
		if _, err = load(config.Request{Seed: dummyPolicy(), Offline: true}); err == nil {
			fmt.Fprintf(opts.IO.ErrOut, "Warning: this config does not define model server configuration and will not start as-is. Re-run with --strict to fail on this instead of warning.\n%v\n", first)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.Out, "✓ Config is valid.")
	return nil
}
