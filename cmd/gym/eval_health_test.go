package main

import (
	"context"
	"reflect"
	"testing"

	"github.com/spf13/cobra"
)

func TestEvalHealthCheckFlags(t *testing.T) {
	runFlagCases(t, []flagCase[healthOptions]{
		{name: "run directory and options", args: []string{"run", "--rollouts-file", "r.jsonl", "--workers", "2", "--ignore-checks", "a, b", "--json"},
			check: func(t *testing.T, o *healthOptions) {
				if o.runDir != "run" || o.rolloutsFile != "r.jsonl" || o.workers != 2 || !reflect.DeepEqual(o.ignored, []string{"a", "b"}) || !o.json {
					t.Errorf("%+v", o)
				}
			}},
		{name: "--ignore is --ignore-checks", args: []string{"run", "--ignore", "x"},
			check: func(t *testing.T, o *healthOptions) {
				if !reflect.DeepEqual(o.ignored, []string{"x"}) {
					t.Errorf("%+v", o)
				}
			}},
		{name: "defaults", args: []string{"run"},
			check: func(t *testing.T, o *healthOptions) {
				if o.workers != 0 || o.ignored != nil || o.json || o.rolloutsFile != "" {
					t.Errorf("%+v", o)
				}
			}},
		{name: "a run directory is required", args: nil, wantErr: "the following arguments are required: RUN_DIR", usage: true},
		{name: "no overrides", args: []string{"run", "+x=1"}, wantErr: "health-check does not accept Hydra overrides", usage: true},
		{name: "no empty check IDs", args: []string{"run", "--ignore-checks", "a,,b"}, wantErr: "without empty entries", usage: true},
		{name: "at least one worker", args: []string{"run", "--workers", "0"}, wantErr: "workers must be at least 1", usage: true},
		{name: "workers is a number", args: []string{"run", "--workers", "many"}, wantErr: `invalid argument "many"`, usage: true},
	}, newCmdEvalHealthCheck)
}

func TestHealthFlagsOfRunAndAggregate(t *testing.T) {
	want := []string{"++disable_health_check=true", "++health_check_workers=3", `++health_check_ignored_checks=["a","b"]`}
	args := []string{"--no-health-check", "--health-check-workers", "3", "--health-check-ignore", "a, b"}
	runFlagCases(t, []flagCase[runOptions]{
		{name: "eval run", args: args, check: func(t *testing.T, o *runOptions) {
			if got := o.health.tokens(o.flags); !reflect.DeepEqual(got, want) {
				t.Errorf("tokens %q, want %q", got, want)
			}
		}},
		{name: "eval run without them", args: nil, check: func(t *testing.T, o *runOptions) {
			if got := o.health.tokens(o.flags); got != nil {
				t.Errorf("tokens %q", got)
			}
		}},
	}, func(f *Factory, runF func(context.Context, *runOptions) error) *cobra.Command {
		return newCmdEvalRun(f, &globalFlags{}, runF)
	})
	runFlagCases(t, []flagCase[aggregateOptions]{
		{name: "eval aggregate", args: args, check: func(t *testing.T, o *aggregateOptions) {
			if got := o.health.tokens(o.flags); !reflect.DeepEqual(got, want) {
				t.Errorf("tokens %q, want %q", got, want)
			}
		}},
	}, func(f *Factory, runF func(context.Context, *aggregateOptions) error) *cobra.Command {
		return newCmdEvalAggregate(f, &globalFlags{}, runF)
	})
}
