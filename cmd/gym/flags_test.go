package main

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/iostreams"
)

// testFactory is a Factory over buffers and an empty environment, so a
// command parses its flags in process without touching this one's.
func testFactory(t *testing.T) *Factory {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	cwd := t.TempDir()
	return &Factory{
		IOStreams: ios,
		Workspace: &workspace{
			Getenv:     func(string) string { return "" },
			LookupEnv:  func(string) (string, bool) { return "", false },
			Environ:    func() []string { return nil },
			Getwd:      func() (string, error) { return cwd, nil },
			Executable: func() (string, error) { return "/bin/gym", nil },
			LookPath:   func(string) (string, error) { return "", errors.New("not found") },
		},
		Version: "v1.2.3",
	}
}

// parse runs cmd on args as gym's root would (argparse-style flag errors)
// and reports whether its runF was reached.
func parse(t *testing.T, cmd *cobra.Command, args []string) (ran bool, err error) {
	t.Helper()
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetFlagErrorFunc(flagError)
	err = cmd.Execute()
	if err != nil && errors.Is(err, errRan) {
		return true, nil
	}
	return false, err
}

// errRan is what a test's runF returns, so parse can tell it ran.
var errRan = errors.New("runF reached")

// flagCase is one command line: the error it must give (a substring, with
// whether it is a usage error), or the check of what runF received.
type flagCase[O any] struct {
	name    string
	args    []string
	wantErr string
	usage   bool
	check   func(t *testing.T, o *O)
}

func runFlagCases[O any](t *testing.T, cases []flagCase[O], build func(f *Factory, runF func(context.Context, *O) error) *cobra.Command) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *O
			cmd := build(testFactory(t), func(_ context.Context, o *O) error { got = o; return errRan })
			ran, err := parse(t, cmd, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				if usage := exitCode(err, nil, false, io.Discard) == exitUsage; usage != tc.usage {
					t.Errorf("usage error (exit 2) = %v, want %v", usage, tc.usage)
				}
				if ran {
					t.Error("runF ran despite the error")
				}
				return
			}
			if err != nil || !ran {
				t.Fatalf("err = %v, ran = %v", err, ran)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func TestEvalRunFlags(t *testing.T) {
	runFlagCases(t, []flagCase[runOptions]{
		{name: "flags become ++ overrides in a fixed order", args: []string{"-o", "out/r.jsonl", "--split", "benchmark", "--limit", "5", "--concurrency", "8", "--temperature", "0.5", "--num-repeats", "{a: 2, _default: 1}", "--timeout", "90s"},
			check: func(t *testing.T, o *runOptions) {
				want := []string{"++output_jsonl_fpath='out/r.jsonl'", "++limit=5", "++num_repeats={a: 2, _default: 1}", "++num_samples_in_parallel=8", "++split='benchmark'", "++responses_create_params.temperature=0.5", "++rollout_timeout_seconds=90"}
				if got := o.tokens(); !reflect.DeepEqual(got, want) {
					t.Errorf("tokens\n got %q\nwant %q", got, want)
				}
			}},
		{name: "unset flags set nothing", args: []string{"+output_jsonl_fpath=x.jsonl"},
			check: func(t *testing.T, o *runOptions) {
				if got := o.tokens(); len(got) != 0 {
					t.Errorf("tokens %q", got)
				}
				if !reflect.DeepEqual(o.passthrough, []string{"+output_jsonl_fpath=x.jsonl"}) {
					t.Errorf("passthrough %q", o.passthrough)
				}
			}},
		{name: "interleaved repeats, the agent type and the pairing waiver", args: []string{"--num-repeats", "2", "--interleave-repeats", "--agent-type", "hermes_agent", "--allow-unsupported-pairing"},
			check: func(t *testing.T, o *runOptions) {
				if got := o.tokens(); !reflect.DeepEqual(got, []string{"++num_repeats='2'", "++interleave_repeats=true"}) {
					t.Errorf("tokens %q", got)
				}
				if o.config.agentType != "hermes_agent" || !o.config.allowUnsupportedPairing {
					t.Errorf("config flags %+v", o.config)
				}
			}},
		{name: "a number of repeats is quoted", args: []string{"--num-repeats", "4", "--no-serve", "--resume"},
			check: func(t *testing.T, o *runOptions) {
				if got := o.tokens(); !reflect.DeepEqual(got, []string{"++resume_from_cache=true", "++num_repeats='4'"}) {
					t.Errorf("tokens %q", got)
				}
				if !o.noServe {
					t.Error("--no-serve not set")
				}
			}},
		{name: "an unknown flag is argparse's error with a hint", args: []string{"--outptu", "x"}, wantErr: "unrecognized arguments: --outptu", usage: true},
		{name: "a bad integer", args: []string{"--limit", "many"}, wantErr: `invalid argument "many" for "--limit"`, usage: true},
	}, func(f *Factory, runF func(context.Context, *runOptions) error) *cobra.Command {
		return newCmdEvalRun(f, &globalFlags{}, runF)
	})
}

func TestEvalAggregateFlags(t *testing.T) {
	runFlagCases(t, []flagCase[aggregateOptions]{
		{name: "inputs, output and overrides", args: []string{"-i", "a/*.jsonl,b.jsonl", "-o", "all.jsonl", "--servers", "+merge_shards=false"},
			check: func(t *testing.T, o *aggregateOptions) {
				if o.inputs != "a/*.jsonl,b.jsonl" || o.output != "all.jsonl" || !o.servers || !reflect.DeepEqual(o.passthrough, []string{"+merge_shards=false"}) {
					t.Errorf("%+v", o)
				}
			}},
		{name: "NeMo Gym's --input-glob, and gym's older --input", args: []string{"--input-glob", "r/*.jsonl", "--output", "all.jsonl"},
			check: func(t *testing.T, o *aggregateOptions) {
				if o.inputs != "r/*.jsonl" || o.output != "all.jsonl" || !o.flags.Changed("input-glob") {
					t.Errorf("%+v", o)
				}
			}},
		{name: "the hidden --input is the same setting", args: []string{"--input", "r/*.jsonl"},
			check: func(t *testing.T, o *aggregateOptions) {
				if o.inputs != "r/*.jsonl" || !o.flags.Changed("input") {
					t.Errorf("%+v", o)
				}
			}},
	}, func(f *Factory, runF func(context.Context, *aggregateOptions) error) *cobra.Command {
		return newCmdEvalAggregate(f, &globalFlags{}, runF)
	})
}

func TestEvalReverifyFlags(t *testing.T) {
	runFlagCases(t, []flagCase[reverifyOptions]{
		{name: "NeMo Gym's flags become ++ overrides in a fixed order", args: []string{"--rollouts", "r s.jsonl", "--inputs", "m.jsonl", "-o", "o.jsonl", "--limit", "5", "--concurrency", "8",
			"--force", "--overwrite", "--resume", "--disable-aggregation", "--judge-failed-only", "--append", "--benchmark", "mcqa_example", "+x=1"},
			check: func(t *testing.T, o *reverifyOptions) {
				want := []string{"++materialized_inputs_jsonl_fpath='m.jsonl'", "++rollouts_jsonl_fpath='r s.jsonl'", "++output_jsonl_fpath='o.jsonl'", "++num_samples_in_parallel=8", "++limit=5",
					"++force=true", "++overwrite=true", "++resume_from_cache=true", "++disable_aggregation=true", "++judge_failed_only=true", "++append=true"}
				if got := o.tokens(); !reflect.DeepEqual(got, want) {
					t.Errorf("tokens\n got %q\nwant %q", got, want)
				}
				if !reflect.DeepEqual(o.config.benchmarks, []string{"mcqa_example"}) || !reflect.DeepEqual(o.passthrough, []string{"+x=1"}) {
					t.Errorf("%+v", o)
				}
			}},
		{name: "unset flags set nothing; the keys pass through", args: []string{"+materialized_inputs_jsonl_fpath=m", "+rollouts_jsonl_fpath=r", "+output_jsonl_fpath=o"},
			check: func(t *testing.T, o *reverifyOptions) {
				if got := o.tokens(); len(got) != 0 || len(o.passthrough) != 3 {
					t.Errorf("tokens %q, passthrough %q", got, o.passthrough)
				}
			}},
		{name: "the selectors NeMo Gym's reverify takes", args: []string{"--config", "a.yaml", "--environment", "e", "--resources-server", "rs", "--model-type", "vllm_model", "--search-dir", "d"},
			check: func(t *testing.T, o *reverifyOptions) {
				c := o.config
				if !reflect.DeepEqual(c.configs, []string{"a.yaml"}) || !reflect.DeepEqual(c.environments, []string{"e"}) || !reflect.DeepEqual(c.resourcesServers, []string{"rs"}) || c.modelType != "vllm_model" || !reflect.DeepEqual(c.searchDirs, []string{"d"}) {
					t.Errorf("%+v", c)
				}
			}},
		{name: "no policy model flags: no policy model is called", args: []string{"--model-url", "http://x"}, wantErr: "unrecognized arguments: --model-url", usage: true},
		{name: "no --no-serve: NeMo Gym's reverify has none", args: []string{"--no-serve"}, wantErr: "unrecognized arguments: --no-serve", usage: true},
		{name: "a bad integer", args: []string{"--concurrency", "lots"}, wantErr: `invalid argument "lots" for "--concurrency"`, usage: true},
	}, func(f *Factory, runF func(context.Context, *reverifyOptions) error) *cobra.Command {
		return newCmdEvalReverify(f, &globalFlags{}, runF)
	})
}

func TestEvalProfileFlags(t *testing.T) {
	runFlagCases(t, []flagCase[profileOptions]{
		{name: "gym's flags", args: []string{"--inputs", "m.jsonl", "--rollouts", "r.jsonl", "--allow-partial", "--html", "r.html"},
			check: func(t *testing.T, o *profileOptions) {
				if o.inputs != "m.jsonl" || o.rollouts != "r.jsonl" || !o.allowPartial || o.html != "r.html" {
					t.Errorf("%+v", o)
				}
			}},
		{name: "NeMo Gym's keys", args: []string{"+materialized_inputs_jsonl_fpath=m.jsonl", "++rollouts_jsonl_fpath='r s.jsonl'", "+allow_partial_rollouts=true"},
			check: func(t *testing.T, o *profileOptions) {
				if o.inputs != "m.jsonl" || o.rollouts != "r s.jsonl" || !o.allowPartial {
					t.Errorf("%+v", o)
				}
			}},
		{name: "both required", args: nil, wantErr: "missing required configuration: materialized_inputs_jsonl_fpath, rollouts_jsonl_fpath", usage: true},
		{name: "another key", args: []string{"--inputs", "m", "--rollouts", "r", "+limit=3"}, wantErr: "unrecognized arguments: +limit=3", usage: true},
		{name: "a change of a key that is not there", args: []string{"rollouts_jsonl_fpath=r"}, wantErr: "unrecognized arguments: rollouts_jsonl_fpath=r", usage: true},
		{name: "a bad flag value", args: []string{"--inputs", "m", "--rollouts", "r", "+allow_partial_rollouts=maybe"}, wantErr: "allow_partial_rollouts", usage: true},
	}, newCmdEvalProfile)
}

func TestEvalExportFlags(t *testing.T) {
	runFlagCases(t, []flagCase[exportOptions]{
		{name: "defaults", args: []string{"-i", "r.jsonl", "-o", "atif"},
			check: func(t *testing.T, o *exportOptions) {
				if o.format != "atif" || o.agentVersion != "unknown" || o.strict || o.version != "v1.2.3" {
					t.Errorf("%+v", o)
				}
			}},
		{name: "another format", args: []string{"--format", "csv", "-i", "r", "-o", "d"}, wantErr: "invalid choice", usage: true},
		{name: "both paths required", args: []string{"--strict"}, wantErr: "the following arguments are required: --rollouts/-i, --output-dir/-o", usage: true},
		{name: "no positional arguments", args: []string{"-i", "r", "-o", "d", "extra"}, wantErr: "unknown command"},
	}, newCmdEvalExport)
}

func TestEvalSubmitFlags(t *testing.T) {
	runFlagCases(t, []flagCase[submitOptions]{
		{name: "config, shards and overrides", args: []string{"-c", "s.yaml", "--shards", "4", "--dry-run", "+job.output_path=x"},
			check: func(t *testing.T, o *submitOptions) {
				if o.config != "s.yaml" || o.shards != 4 || !o.dryRun || !reflect.DeepEqual(o.overrides, []string{"+job.output_path=x"}) {
					t.Errorf("%+v", o)
				}
			}},
		{name: "resolve only, as JSON", args: []string{"-c", "s.yaml", "--resolve-only", "--json"},
			check: func(t *testing.T, o *submitOptions) {
				if !o.resolveOnly || !o.json || o.dryRun {
					t.Errorf("%+v", o)
				}
			}},
		{name: "config required", args: nil, wantErr: "--config/-c", usage: true},
		{name: "at least one shard", args: []string{"-c", "s.yaml", "--shards", "0"}, wantErr: "must be at least 1", usage: true},
	}, newCmdEvalSubmit)
}

func TestEvalStatusAndCancelFlags(t *testing.T) {
	runFlagCases(t, []flagCase[jobOptions]{
		{name: "newest run", args: nil, check: func(t *testing.T, o *jobOptions) {
			if o.ref != "" || o.json {
				t.Errorf("%+v", o)
			}
		}},
		{name: "a job id, as JSON", args: []string{"4242", "--json"}, check: func(t *testing.T, o *jobOptions) {
			if o.ref != "4242" || !o.json {
				t.Errorf("%+v", o)
			}
		}},
		{name: "one run at most", args: []string{"a", "b"}, wantErr: "accepts at most 1 arg"},
	}, newCmdEvalStatus)
	runFlagCases(t, []flagCase[jobOptions]{
		{name: "the run is required", args: nil, wantErr: "accepts 1 arg"},
		{name: "a run directory", args: []string{"results/gym-job-1"}, check: func(t *testing.T, o *jobOptions) {
			if o.ref != "results/gym-job-1" {
				t.Errorf("%+v", o)
			}
		}},
	}, newCmdEvalCancel)
}

func TestEnvFlags(t *testing.T) {
	runFlagCases(t, []flagCase[resolveOptions]{
		{name: "selectors, origin and overrides", args: []string{"--benchmark", "gsm8k", "--model-type", "vllm_model", "--show-origin", "+x=1"},
			check: func(t *testing.T, o *resolveOptions) {
				if !reflect.DeepEqual(o.config.benchmarks, []string{"gsm8k"}) || o.config.modelType != "vllm_model" || !o.showOrigin || !reflect.DeepEqual(o.passthrough, []string{"+x=1"}) {
					t.Errorf("%+v", o)
				}
			}},
		{name: "resolve starts nothing, so it has no --builtin-servers", args: []string{"--builtin-servers", "prefer"}, wantErr: "unrecognized arguments: --builtin-servers", usage: true},
	}, func(f *Factory, runF func(context.Context, *resolveOptions) error) *cobra.Command {
		return newCmdEnvResolve(f, &globalFlags{}, runF)
	})
	runFlagCases(t, []flagCase[startOptions]{
		{name: "start", args: []string{"--config", "a.yaml", "--builtin-servers", "prefer", "--shutdown-grace", "10s"},
			check: func(t *testing.T, o *startOptions) {
				if o.prefetchOnly || o.config.builtinServers != "prefer" || o.grace.String() != "10s" {
					t.Errorf("%+v", o)
				}
			}},
	}, func(f *Factory, runF func(context.Context, *startOptions) error) *cobra.Command {
		return newCmdEnvStart(f, &globalFlags{}, runF)
	})
	runFlagCases(t, []flagCase[startOptions]{
		{name: "prefetch sets up and starts nothing", args: []string{"--config", "a.yaml"},
			check: func(t *testing.T, o *startOptions) {
				if !o.prefetchOnly {
					t.Errorf("%+v", o)
				}
			}},
		{name: "prefetch has no shutdown grace", args: []string{"--shutdown-grace", "1s"}, wantErr: "unrecognized arguments: --shutdown-grace", usage: true},
	}, func(f *Factory, runF func(context.Context, *startOptions) error) *cobra.Command {
		return newCmdEnvPrefetch(f, &globalFlags{}, runF)
	})
}

func TestEnvStatusFlags(t *testing.T) {
	runFlagCases(t, []flagCase[statusOptions]{
		{name: "config, search dirs and overrides", args: []string{"--config", "a.yaml", "--search-dir", "d", "--json", "++head_server.port=12000"},
			check: func(t *testing.T, o *statusOptions) {
				if !o.json || !reflect.DeepEqual(o.config.configs, []string{"a.yaml"}) || !reflect.DeepEqual(o.passthrough, []string{"++head_server.port=12000"}) {
					t.Errorf("%+v", o)
				}
			}},
		{name: "no selector: status starts and selects nothing", args: []string{"--benchmark", "gsm8k"}, wantErr: "unrecognized arguments: --benchmark", usage: true},
		{name: "no model flags", args: []string{"--model", "m"}, wantErr: "unrecognized arguments: --model", usage: true},
	}, func(f *Factory, runF func(context.Context, *statusOptions) error) *cobra.Command {
		return newCmdEnvStatus(f, &globalFlags{}, runF)
	})
}

func TestListFlags(t *testing.T) {
	build := func(f *Factory, runF func(context.Context, *listOptions) error) *cobra.Command {
		return newCmdList(f, func(o *listOptions) error { return runF(context.Background(), o) })
	}
	runFlagCases(t, []flagCase[listOptions]{
		{name: "benchmarks with filters", args: []string{"benchmarks", "--domain", "math", "--json", "--search-dir", "a", "--search-dir", "b"},
			check: func(t *testing.T, o *listOptions) {
				if o.typ != listBenchmarks || o.domain != "math" || !o.json || !reflect.DeepEqual(o.searchDirs, []string{"a", "b"}) {
					t.Errorf("%+v", o)
				}
			}},
		{name: "inspect one", args: []string{"agents", "simple_agent"}, check: func(t *testing.T, o *listOptions) {
			if o.typ != listAgents || o.name != "simple_agent" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "benchmarks have no --kind", args: []string{"benchmarks", "--kind", "environment"}, wantErr: "unrecognized arguments: --kind", usage: true},
		{name: "agents have no catalog filters", args: []string{"agents", "--domain", "math"}, wantErr: "unrecognized arguments: --domain", usage: true},
		{name: "an unknown type", args: []string{"benchmark"}, wantErr: "invalid choice: 'benchmark'", usage: true},
	}, build)
	runFlagCases(t, []flagCase[listOptions]{
		{name: "a query over the catalog", args: []string{"math"}, check: func(t *testing.T, o *listOptions) {
			if !o.search || o.typ != "" || o.query != "math" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "a typed query", args: []string{"agents", "simple"}, check: func(t *testing.T, o *listOptions) {
			if o.typ != listAgents || o.query != "simple" {
				t.Errorf("%+v", o)
			}
		}},
		{name: "an unknown type", args: []string{"agent", "simple"}, wantErr: "argument TYPE: invalid choice: 'agent'", usage: true},
	}, func(f *Factory, runF func(context.Context, *listOptions) error) *cobra.Command {
		return newCmdSearch(f, func(o *listOptions) error { return runF(context.Background(), o) })
	})
}

func TestPositionalArgumentErrorsAreUsage(t *testing.T) {
	for _, args := range [][]string{
		{"list", "benchmarks", "a", "b"},
		{"search", "agents", "x", "y"},
		{"eval", "export", "stray"},
		{"eval", "cancel"},
		{"serve", "a", "b"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, err := parse(t, newCmdRoot(testFactory(t)), args)
			if err == nil {
				t.Fatal("no error")
			}
			if code := exitCode(err, nil, false, io.Discard); code != exitUsage {
				t.Errorf("%v: exit %d, want %d", err, code, exitUsage)
			}
		})
	}
}

func TestJSONBeforeTheCommand(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"--json list benchmarks", "list benchmarks --json"},
		{"-v --json search agents x", "-v search agents x --json"},
		{"--json --version", "--json --version"},
		{"--version --json", "--version --json"},
		{"--json", "--json"},
		{"list --json benchmarks", "list --json benchmarks"},
		{"eval run +x=--json", "eval run +x=--json"},
	} {
		if got := strings.Join(jsonAfterCommand(strings.Fields(tc.in)), " "); got != tc.want {
			t.Errorf("%q → %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEnvInitFlags(t *testing.T) {
	runFlagCases(t, []flagCase[initOptions]{
		{name: "a resources server", args: []string{"--resources-server", "foo"},
			check: func(t *testing.T, o *initOptions) {
				if o.resourcesServer != "foo" || o.lang != "python" || o.rewardRange != nil || o.higherIsBetter != nil {
					t.Errorf("%+v", o)
				}
			}},
		{name: "in Go", args: []string{"--resources-server", "foo", "--lang", "go"},
			check: func(t *testing.T, o *initOptions) {
				if o.lang != "go" {
					t.Errorf("%+v", o)
				}
			}},
		{name: "NeMo Gym's +entrypoint", args: []string{"+entrypoint=resources_servers/foo"},
			check: func(t *testing.T, o *initOptions) {
				if o.entrypoint != "resources_servers/foo" || o.resourcesServer != "" {
					t.Errorf("%+v", o)
				}
			}},
		{name: "a reused verifier with its contract", args: []string{"--benchmark", "b", "--reuse-verifier", "mcqa", "--reward-range", "-1", "0.5", "--lower-is-better", "--profile", "external-rollout-driver"},
			check: func(t *testing.T, o *initOptions) {
				if o.benchmark != "b" || o.reuseVerifier != "mcqa" || o.profile != "external-rollout-driver" ||
					o.rewardRange == nil || *o.rewardRange != [2]float64{-1, 0.5} || o.higherIsBetter == nil || *o.higherIsBetter {
					t.Errorf("%+v", o)
				}
			}},
		{name: "the range's HIGH after an override-free flag", args: []string{"--environment", "e", "--reward-range", "0", "--higher-is-better", "1"},
			check: func(t *testing.T, o *initOptions) {
				if o.rewardRange == nil || *o.rewardRange != [2]float64{0, 1} || o.higherIsBetter == nil || !*o.higherIsBetter {
					t.Errorf("%+v", o)
				}
			}},
		{name: "a negative range in one argument", args: []string{"--environment", "e", "--reward-range=-10,-1", "--lower-is-better"},
			check: func(t *testing.T, o *initOptions) {
				if o.rewardRange == nil || *o.rewardRange != [2]float64{-10, -1} {
					t.Errorf("%+v", o)
				}
			}},
		{name: "two targets", args: []string{"--benchmark", "b", "--environment", "e"}, wantErr: "argument --environment: not allowed with argument --benchmark", usage: true},
		{name: "a target and +entrypoint", args: []string{"--environment", "e", "+entrypoint=resources_servers/x"}, wantErr: "not both", usage: true},
		{name: "both directions", args: []string{"--environment", "e", "--lower-is-better", "--higher-is-better"}, wantErr: "argument --higher-is-better: not allowed with argument --lower-is-better", usage: true},
		{name: "workload options without a workload", args: []string{"--resources-server", "r", "--reuse-verifier", "mcqa"}, wantErr: "require --environment or --benchmark", usage: true},
		{name: "no target", args: nil, wantErr: "say what to scaffold", usage: true},
		{name: "an unknown profile", args: []string{"--environment", "e", "--profile", "custom-gym-verfier"}, wantErr: "Did you mean `custom-gym-verifier`?", usage: true},
		{name: "an unknown language", args: []string{"--resources-server", "r", "--lang", "rust"}, wantErr: "argument --lang: invalid choice: 'rust'", usage: true},
		{name: "Go for a workload", args: []string{"--environment", "e", "--lang", "go"},
			check: func(t *testing.T, o *initOptions) {
				if o.lang != "go" || o.environment != "e" {
					t.Errorf("%+v", o)
				}
			}},
		{name: "Go for a reused verifier", args: []string{"--environment", "e", "--lang", "go", "--reuse-verifier", "v", "--reward-range", "0", "1", "--higher-is-better"}, wantErr: "--reuse-verifier writes none", usage: true},
		{name: "one end of the range", args: []string{"--environment", "e", "--reward-range", "0"}, wantErr: "expected 2 arguments", usage: true},
		{name: "a range that is no number", args: []string{"--environment", "e", "--reward-range", "0", "high"}, wantErr: "invalid float value: 'high'", usage: true},
		{name: "an entrypoint outside the working directory", args: []string{"+entrypoint=../elsewhere"}, wantErr: "relative to the working directory", usage: true},
		{name: "an override", args: []string{"--resources-server", "r", "+x=1"}, wantErr: "unrecognized arguments: +x=1", usage: true},
	}, newCmdEnvInit)
}

func TestEnvValidateFlags(t *testing.T) {
	runFlagCases(t, []flagCase[validateOptions]{
		{name: "a workload by name", args: []string{"my_env", "--kind", "benchmark", "--sync", "--json", "--search-dir", "d"},
			check: func(t *testing.T, o *validateOptions) {
				if o.name != "my_env" || o.kind != "benchmark" || !o.sync || !o.json || !o.workload() || !reflect.DeepEqual(o.config.searchDirs, []string{"d"}) {
					t.Errorf("%+v", o)
				}
			}},
		{name: "a manifest file", args: []string{"--manifest", "m.yaml"},
			check: func(t *testing.T, o *validateOptions) {
				if o.manifest != "m.yaml" || o.name != "" || !o.workload() {
					t.Errorf("%+v", o)
				}
			}},
		{name: "a config with overrides", args: []string{"--benchmark", "gsm8k", "--strict", "+x=1"},
			check: func(t *testing.T, o *validateOptions) {
				if o.workload() || !reflect.DeepEqual(o.config.benchmarks, []string{"gsm8k"}) || !o.strict || !reflect.DeepEqual(o.passthrough, []string{"+x=1"}) {
					t.Errorf("%+v", o)
				}
			}},
		{name: "name and manifest", args: []string{"a", "--manifest", "m.yaml"}, wantErr: "select a catalog name or --manifest, not both", usage: true},
		{name: "kind with a manifest", args: []string{"--manifest", "m.yaml", "--kind", "benchmark"}, wantErr: "--kind is only valid when selecting a catalog name", usage: true},
		{name: "a workload with config flags", args: []string{"a", "--config", "c.yaml", "--model", "m"}, wantErr: "do not accept runtime config overrides: config_paths, policy_model_name", usage: true},
		{name: "a workload with overrides", args: []string{"a", "+x=1"}, wantErr: "do not accept runtime config overrides: x", usage: true},
		{name: "workload flags on a config", args: []string{"--kind", "environment", "--json"}, wantErr: "require a workload name or --manifest: catalog_kind, json", usage: true},
		{name: "a bad kind", args: []string{"a", "--kind", "env"}, wantErr: "argument --kind: invalid choice: 'env'", usage: true},
		{name: "two names", args: []string{"a", "b"}, wantErr: "unrecognized arguments: b", usage: true},
		{name: "an unknown flag", args: []string{"a", "--synk"}, wantErr: "unrecognized arguments: --synk", usage: true},
	}, func(f *Factory, runF func(context.Context, *validateOptions) error) *cobra.Command {
		return newCmdEnvValidate(f, &globalFlags{}, runF)
	})
}

func TestEnvTestFlags(t *testing.T) {
	runFlagCases(t, []flagCase[testOptions]{
		{name: "a workload", args: []string{"my_env", "--kind", "environment", "--update-expected", "--json", "--search-dir", "d"},
			check: func(t *testing.T, o *testOptions) {
				if o.mode != testWorkloadMode || o.name != "my_env" || o.kind != "environment" || !o.updateExpected || !o.json || !reflect.DeepEqual(o.searchDirs, []string{"d"}) {
					t.Errorf("%+v", o)
				}
			}},
		{name: "a resources server", args: []string{"--resources-server", "mcqa/other_flavor"},
			check: func(t *testing.T, o *testOptions) {
				if o.mode != testComponentMode || o.component != "resources_servers/mcqa" {
					t.Errorf("%+v", o)
				}
			}},
		{name: "an entrypoint token", args: []string{"+entrypoint=responses_api_agents/my_agent"},
			check: func(t *testing.T, o *testOptions) {
				if o.mode != testComponentMode || o.component != "responses_api_agents/my_agent" {
					t.Errorf("%+v", o)
				}
			}},
		{name: "everything", args: []string{"--all"},
			check: func(t *testing.T, o *testOptions) {
				if o.mode != testAllMode {
					t.Errorf("%+v", o)
				}
			}},
		{name: "name and resources server", args: []string{"a", "--resources-server", "b"}, wantErr: "select a workload name or --resources-server, not both", usage: true},
		{name: "name and entrypoint", args: []string{"a", "+entrypoint=resources_servers/b"}, wantErr: "select a workload name or --resources-server, not both", usage: true},
		{name: "all and a name", args: []string{"--all", "a"}, wantErr: "--all tests every resources server, so it cannot be combined with a named target", usage: true},
		{name: "workload flags without a name", args: []string{"--resources-server", "b", "--json"}, wantErr: "--kind, --update-expected, and --json require a workload name", usage: true},
		{name: "kind without a name", args: []string{"--kind", "benchmark"}, wantErr: "--kind, --update-expected, and --json require a workload name", usage: true},
		{name: "no target", args: nil, wantErr: "requires a target: a workload name, --resources-server NAME, or --all", usage: true},
		{name: "another override", args: []string{"+limit=3"}, wantErr: `not "+limit=3"`, usage: true},
		{name: "a bad kind", args: []string{"a", "--kind", "x"}, wantErr: "argument --kind: invalid choice", usage: true},
	}, newCmdEnvTest)
}

func TestEnvPublishFlags(t *testing.T) {
	runFlagCases(t, []flagCase[publishOptions]{
		{name: "a workload", args: []string{"my_env", "--kind", "environment", "--json", "--search-dir", "d"},
			check: func(t *testing.T, o *publishOptions) {
				if o.name != "my_env" || o.kind != "environment" || !o.json || !reflect.DeepEqual(o.searchDirs, []string{"d"}) {
					t.Errorf("%+v", o)
				}
			}},
		{name: "a name is required", args: nil, wantErr: "gym env publish requires a catalog name", usage: true},
		{name: "a bad kind", args: []string{"a", "--kind", "x"}, wantErr: "argument --kind: invalid choice", usage: true},
		{name: "no config flags", args: []string{"a", "--config", "c.yaml"}, wantErr: "unrecognized arguments: --config", usage: true},
	}, newCmdEnvPublish)
}

func TestEnvPackagesFlags(t *testing.T) {
	runFlagCases(t, []flagCase[packagesOptions]{
		{name: "a server", args: []string{"--resources-server", "mcqa", "--outdated", "--json", "--search-dir", "d"},
			check: func(t *testing.T, o *packagesOptions) {
				if o.resourcesServer != "mcqa" || !o.outdated || !o.json || !reflect.DeepEqual(o.searchDirs, []string{"d"}) {
					t.Errorf("%+v", o)
				}
			}},
		{name: "a server is required", args: []string{"--json"}, wantErr: "resources-server", usage: true},
		{name: "no positional arguments", args: []string{"--resources-server", "a", "b"}, wantErr: "unknown command"},
	}, newCmdEnvPackages)
}
