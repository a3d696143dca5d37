package main

import (
	"reflect"
	"testing"
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
