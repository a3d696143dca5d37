package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/nemo-gym-go/gym/internal/resolve"
)

// legacyCommands maps NeMo Gym's legacy console scripts (ng_* and
// nemo_gym_*, prefix stripped) to their gym command, as nemo-gym 0.7.0's
// shim maps them. A binary linked under one of these names warns and runs
// the gym command with the user's arguments after it.
var legacyCommands = map[string][]string{
	"run":                          {"env", "start"},
	"test":                         {"env", "test"},
	"test_all":                     {"env", "test", "--all"},
	"dev_test":                     {"dev", "test"},
	"init_resources_server":        {"env", "init"},
	"list_benchmarks":              {"list", "benchmarks"},
	"prepare_benchmark":            {"eval", "prepare"},
	"collect_rollouts":             {"eval", "run", "--no-serve"},
	"e2e_collect_rollouts":         {"eval", "run"},
	"aggregate_rollouts":           {"eval", "aggregate"},
	"materialize_prompts":          {"dataset", "render"},
	"reward_profile":               {"eval", "profile"},
	"upload_dataset_to_gitlab":     {"dataset", "upload", "--storage", "gitlab"},
	"download_dataset_from_gitlab": {"dataset", "download", "--storage", "gitlab"},
	"prepare_data":                 {"dataset", "collate"},
	"upload_dataset_to_hf":         {"dataset", "upload"},
	"download_dataset_from_hf":     {"dataset", "download"},
	"gitlab_to_hf_dataset":         {"dataset", "migrate"},
	"delete_dataset_from_gitlab":   {"dataset", "rm"},
	"dump_config":                  {"env", "resolve"},
	"validate":                     {"env", "validate"},
	"help":                         {"--help"},
	"status":                       {"env", "status"},
	"pip_list":                     {"env", "packages"},
	"version":                      {"--version"},
}

// legacyWithoutEquivalent are NeMo Gym legacy scripts that manage NeMo
// Gym's own Python install; a gym binary has nothing they could do.
var legacyWithoutEquivalent = map[string]string{
	"reinstall": "gym is one binary: reinstall it with `go install` or replace the file",
}

// commandLine turns the name the binary was invoked under and its
// arguments into gym's arguments. `ng` is gym; a legacy script name warns
// on errOut and becomes its gym command. ok is false when the name is a
// legacy script with no gym equivalent (the reason is printed).
func commandLine(argv0 string, args []string, errOut io.Writer) (gymArgs []string, ok bool) {
	name := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	key, legacy := strings.CutPrefix(name, "nemo_gym_")
	if !legacy {
		key, legacy = strings.CutPrefix(name, "ng_")
	}
	if !legacy {
		return args, true
	}
	if why, found := legacyWithoutEquivalent[key]; found {
		fmt.Fprintf(errOut, "⚠  `%s` has no gym equivalent: %s.\n", name, why)
		return nil, false
	}
	tokens, found := legacyCommands[key]
	if !found {
		prefix := strings.TrimSuffix(name, key)
		var names []string
		for k := range legacyCommands {
			names = append(names, prefix+k)
		}
		fmt.Fprintf(errOut, "⚠  `%s` has no known `gym` equivalent.%s Run `gym --help` to see available commands.\n", name, resolve.DidYouMean(name, names))
		return nil, false
	}
	fmt.Fprintf(errOut, "⚠  `%s` is deprecated and will be removed in a future release; use `gym %s` instead.\n", name, strings.Join(tokens, " "))
	return append(append([]string(nil), tokens...), args...), true
}
