package nemogym

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"
)

// dumpParser prints nemo-gym's command line as its own argparse parser
// builds it: each command path with its long options and positionals.
const dumpParser = `import argparse, json
from nemo_gym.cli.main import build_parser

def walk(parser, path, out):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        out[" ".join(path)] = {
            "options": sorted(o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"),
            "positionals": [a.dest for a in parser._actions if not a.option_strings],
        }
        return
    for s in subs:
        for name, sub in s.choices.items():
            walk(sub, path + [name], out)

out = {}
walk(build_parser(), [], out)
print(json.dumps(out))
`

// TestCommandListIsNeMoGyms: the command list cmd/gym's parity test holds
// gym to is the installed nemo-gym 0.7.0's, command for command and flag
// for flag.
func TestCommandListIsNeMoGyms(t *testing.T) {
	h := newHarness(t)
	h.write("dump_parser.py", dumpParser, 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := h.command(ctx, "python dump_parser.py").Output()
	if err != nil {
		t.Fatalf("dumping nemo-gym's parser: %v", err)
	}
	var live, recorded map[string]any
	if err := json.Unmarshal(out, &live); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	data, err := os.ReadFile("../../cmd/gym/testdata/nemo_gym_0.7.0_commands.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &recorded); err != nil {
		t.Fatal(err)
	}
	for name, want := range live {
		if got, ok := recorded[name]; !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: nemo-gym has %v, the recorded list %v", name, want, got)
		}
	}
	for name := range recorded {
		if _, ok := live[name]; !ok {
			t.Errorf("the recorded list has %q, which nemo-gym does not", name)
		}
	}
}
