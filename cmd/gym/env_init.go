package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym"
	"github.com/nemo-gym-go/gym/internal/gosource"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/resolve"
	"github.com/nemo-gym-go/gym/internal/scaffold"
	"github.com/nemo-gym-go/gym/internal/server"
)

// initOptions are the inputs of `gym env init`.
type initOptions struct {
	IO *iostreams.IOStreams
	ws *workspace
	// order records which of the exclusive flags were given, in command
	// line order, for argparse's "not allowed with" wording.
	order           []string
	resourcesServer string
	// entrypoint is NeMo Gym's legacy +entrypoint=<dir> form of
	// --resources-server: the server's directory itself.
	entrypoint     string
	environment    string
	benchmark      string
	profile        string
	reuseVerifier  string
	rewardLow      string
	rewardRange    *[2]float64
	higherIsBetter *bool
	lang           string
}

// orderedString is a string flag that records, in opts.order, that it was
// given.
type orderedString struct {
	name  string
	dst   *string
	order *[]string
}

func (v *orderedString) String() string { return *v.dst }
func (v *orderedString) Type() string   { return "string" }
func (v *orderedString) Set(s string) error {
	*v.dst = s
	*v.order = append(*v.order, v.name)
	return nil
}

// orderedBool is a switch that records itself in opts.order.
type orderedBool struct {
	name  string
	set   bool
	order *[]string
}

func (v *orderedBool) String() string { return strconv.FormatBool(v.set) }
func (v *orderedBool) Type() string   { return "bool" }
func (v *orderedBool) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	v.set = b
	if b {
		*v.order = append(*v.order, v.name)
	}
	return nil
}

var initLangs = []string{string(scaffold.LangPython), string(scaffold.LangGo)}

func newCmdEnvInit(f *Factory, runF func(context.Context, *initOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEnvInit
	}
	opts := &initOptions{IO: f.IOStreams, ws: f.Workspace, lang: string(scaffold.LangPython)}
	higher := &orderedBool{name: "--higher-is-better", order: &opts.order}
	lower := &orderedBool{name: "--lower-is-better", order: &opts.order}
	cmd := &cobra.Command{
		Use:   "init (--resources-server NAME | --environment NAME | --benchmark NAME) [--lang go] [flags]",
		Short: "Scaffold a resources server, environment, or benchmark",
		Long: `Write a new component into the working directory, in NeMo Gym's layout and
with NeMo Gym's files:

  --resources-server NAME  resources_servers/NAME: app.py (a verifier), configs/NAME.yaml
                           (the server, a simple_agent and an environment server),
                           data/example.jsonl, tests/, requirements.txt, README.md.
                           With --lang go, a Go module instead: main.go on gym's
                           gymserver package, main_test.go, and ./run, the entrypoint
                           gym starts (it builds the server with go build and runs it);
                           --environment and --benchmark take --lang go for theirs too.
  --environment NAME       environments/NAME (manifest.yaml, config.yaml, data) and
  --benchmark NAME         benchmarks/NAME (also prompt.yaml, prepare.py), with the
                           resources server and agent the --profile calls for.

--reuse-verifier SERVER scores a workload with an existing resources server
instead of a new one, and then needs --reward-range and a direction.
Nothing is overwritten: an existing resources server directory, or a file with
other content, stops the scaffold before anything is written.`,
		Example: `  gym env init --resources-server my_env
  gym env init --resources-server my_env --lang go && gym env test --resources-server my_env
  gym env init --environment my_env --profile custom-gym-agent-loop
  gym env init --benchmark my_bench --reuse-verifier example_single_tool_call --reward-range 0 1 --higher-is-better`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.finish(args, higher.set, lower.set); err != nil {
				return err
			}
			return runF(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.Var(&orderedString{"--resources-server", &opts.resourcesServer, &opts.order}, "resources-server", "scaffold resources_servers/`NAME`")
	fl.Var(&orderedString{"--environment", &opts.environment, &opts.order}, "environment", "scaffold the manifest-backed environment `NAME`")
	fl.Var(&orderedString{"--benchmark", &opts.benchmark, &opts.order}, "benchmark", "scaffold the manifest-backed benchmark `NAME`")
	fl.StringVar(&opts.profile, "profile", "", "integration `PROFILE` of a manifest-backed scaffold: "+profileChoices())
	fl.StringVar(&opts.reuseVerifier, "reuse-verifier", "", "existing resources server to score with (`NAME`)")
	fl.StringVar(&opts.rewardLow, "reward-range", "", "declared inclusive reward range: `LOW HIGH` (or LOW,HIGH)")
	fl.Var(higher, "higher-is-better", "declare that larger rewards are better")
	fl.Var(lower, "lower-is-better", "declare that smaller rewards are better")
	fl.Lookup("higher-is-better").NoOptDefVal = "true"
	fl.Lookup("lower-is-better").NoOptDefVal = "true"
	fl.StringVar(&opts.lang, "lang", opts.lang, "the `LANG` of a resources server: python or go")
	return cmd
}

func profileChoices() string {
	names := make([]string, len(scaffold.Profiles))
	for i, p := range scaffold.Profiles {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// finish checks the flags as NeMo Gym's argparse groups and _env_init do,
// and takes the reward range's HIGH from the positional arguments (pflag
// has no two-value flags).
func (o *initOptions) finish(args []string, higher, lower bool) error {
	if err := exclusive(o.order, "--resources-server", "--environment", "--benchmark"); err != nil {
		return err
	}
	if err := exclusive(o.order, "--higher-is-better", "--lower-is-better"); err != nil {
		return err
	}
	if o.profile != "" && !validChoice(o.profile, profileChoices()) {
		return usageErrorf("argument --profile: invalid choice: '%s' (choose from '%s')%s", o.profile,
			strings.ReplaceAll(profileChoices(), ", ", "', '"), resolve.DidYouMean(o.profile, strings.Split(profileChoices(), ", ")))
	}
	if !validChoice(o.lang, strings.Join(initLangs, ", ")) {
		return usageErrorf("argument --lang: invalid choice: '%s' (choose from '%s')", o.lang, strings.Join(initLangs, "', '"))
	}
	var high string
	// pflag reads a negative HIGH as a flag; LOW,HIGH in one argument
	// gives it another way in.
	if low, h, ok := strings.Cut(o.rewardLow, ","); ok {
		o.rewardLow, high = low, h
	}
	for _, a := range args {
		switch {
		case strings.HasPrefix(strings.TrimLeft(a, "+"), "entrypoint="):
			if o.resourcesServer != "" || o.environment != "" || o.benchmark != "" {
				return usageErrorf("select a resources server or a manifest-backed workload, not both")
			}
			o.entrypoint = strings.Trim(strings.SplitN(a, "=", 2)[1], `"'`)
			if clean := filepath.Clean(o.entrypoint); filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
				return usageErrorf("+entrypoint=%s: give the server's directory relative to the working directory, e.g. resources_servers/my_env", o.entrypoint)
			}
		case o.rewardLow != "" && high == "" && !strings.ContainsAny(a, "=~+,"):
			high = a
		default:
			return usageErrorf("gym env init: unrecognized arguments: %s (see 'gym env init --help')", a)
		}
	}
	if o.rewardLow != "" {
		if high == "" {
			return usageErrorf("argument --reward-range: expected 2 arguments")
		}
		var r [2]float64
		for i, s := range []string{o.rewardLow, high} {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return usageErrorf("argument --reward-range: invalid float value: '%s'", s)
			}
			r[i] = v
		}
		o.rewardRange = &r
	}
	if higher || lower {
		o.higherIsBetter = &higher
	}
	workload := o.environment != "" || o.benchmark != ""
	if !workload && (o.profile != "" || o.reuseVerifier != "" || o.rewardRange != nil || o.higherIsBetter != nil) {
		return usageErrorf("--profile, --reuse-verifier, and reward options require --environment or --benchmark")
	}
	if workload && o.reuseVerifier != "" && o.lang != string(scaffold.LangPython) {
		return usageErrorf("--lang %s is the language of the resources server the scaffold writes, and --reuse-verifier writes none", o.lang)
	}
	if !workload && o.resourcesServer == "" && o.entrypoint == "" {
		return usageErrorf("say what to scaffold: --resources-server NAME, --environment NAME or --benchmark NAME")
	}
	return nil
}

// exclusive is argparse's mutually exclusive group: the second of the
// group's flags given is not allowed with the first.
func exclusive(order []string, group ...string) error {
	first := ""
	for _, name := range order {
		for _, g := range group {
			if name != g {
				continue
			}
			if first != "" && first != name {
				return usageErrorf("argument %s: not allowed with argument %s", name, first)
			}
			first = name
		}
	}
	return nil
}

func validChoice(v, choices string) bool {
	for _, c := range strings.Split(choices, ", ") {
		if v == c {
			return true
		}
	}
	return false
}

func runEnvInit(ctx context.Context, opts *initOptions) error {
	ws := opts.ws
	cwd, err := ws.Getwd()
	if err != nil {
		return err
	}
	var res *scaffold.Result
	if opts.resourcesServer != "" || opts.entrypoint != "" {
		dir := opts.entrypoint
		if dir == "" {
			if err := scaffold.ValidateName(opts.resourcesServer, true); err != nil {
				return err
			}
			dir = "resources_servers/" + opts.resourcesServer
		}
		o := scaffold.ResourcesServerOptions{Root: cwd, Dir: dir, Lang: scaffold.Lang(opts.lang)}
		if o.Lang == scaffold.LangGo {
			if o.Go, err = gosource.Materialize(gym.GoSource, resolve.DefaultCacheDir(ws.Getenv)); err != nil {
				return err
			}
		}
		res, err = scaffold.ResourcesServer(o)
	} else {
		o := scaffold.WorkloadOptions{
			Root: cwd, Kind: scaffold.Environment, Name: opts.environment,
			Profile:        scaffold.Profile(opts.profile),
			ReuseVerifier:  opts.reuseVerifier,
			RewardRange:    opts.rewardRange,
			HigherIsBetter: opts.higherIsBetter,
			GoImplemented:  func(kind string) bool { _, ok := server.Lookup(kind); return ok },
			Lang:           scaffold.Lang(opts.lang),
		}
		if o.Lang == scaffold.LangGo {
			if o.Go, err = gosource.Materialize(gym.GoSource, resolve.DefaultCacheDir(ws.Getenv)); err != nil {
				return err
			}
		}
		if opts.benchmark != "" {
			o.Kind, o.Name = scaffold.Benchmark, opts.benchmark
		}
		if opts.reuseVerifier != "" {
			roots, err := ws.roots(nil)
			if err != nil {
				return err
			}
			o.SearchRoots = roots.List()
		}
		res, err = scaffold.Workload(o)
	}
	if err != nil {
		return err
	}
	out := opts.IO.Out
	if len(res.Created) == 0 {
		fmt.Fprintf(out, "✓ %s is already up to date.\n", res.Dir)
		return nil
	}
	fmt.Fprintf(out, "✓ Created %s\n", res.Dir)
	for _, p := range res.Created {
		fmt.Fprintf(out, "  %s\n", p)
	}
	return nil
}
