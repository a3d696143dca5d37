package launcher

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// builtinPystub has a Go resources_servers/pystub that reads grading_mode.
func builtinPystub(kind string, section *tree.Node) ([]string, bool) {
	if kind != "resources_servers/pystub" {
		return nil, false
	}
	var unknown []string
	for _, k := range section.Keys() {
		switch k {
		case "grading_mode", "entrypoint", "domain", "host", "port", "name":
		default:
			unknown = append(unknown, k)
		}
	}
	return unknown, true
}

func TestPlanBuiltinServers(t *testing.T) {
	tests := []struct {
		name      string
		impl      string // the fixture's pystub (app.py) or forking (app.sh)
		extra     []string
		overrides []string
		want      runKind
		note      string // a substring of the spec's note; "" for none
		err       string
	}{
		{name: "unset keeps the Python server", impl: "pystub", want: runPython},
		{name: "shadow keeps the Python server", impl: "pystub", overrides: []string{"+builtin_servers=shadow"}, want: runPython},
		{name: "prefer runs the built-in", impl: "pystub", extra: []string{"grading_mode: lenient_boxed"}, overrides: []string{"+builtin_servers=prefer"},
			want: runGo, note: "server 'srv' runs gym's built-in resources_servers/pystub in place of "},
		{name: "a key the built-in does not read keeps Python", impl: "pystub", extra: []string{"judge_model_server: x", "num_processes: 4"}, overrides: []string{"+builtin_servers=prefer"},
			want: runPython, note: "gym's built-in resources_servers/pystub does not read its keys 'judge_model_server', 'num_processes' (builtin_servers: prefer)"},
		{name: "a key set on the command line counts", impl: "pystub", overrides: []string{"+builtin_servers=prefer", "++srv.resources_servers.pystub.judge=x"},
			want: runPython, note: "does not read its key 'judge'"},
		{name: "no built-in of that kind", impl: "forking_py", overrides: []string{"+builtin_servers=prefer"}, want: runPython},
		{name: "an executable is not a Python server", impl: "forking", overrides: []string{"+builtin_servers=prefer"}, want: runExecutable},
		{name: "a bad value", impl: "pystub", overrides: []string{"+builtin_servers=always"},
			err: "builtin_servers is \"always\"; it must be shadow (the earliest search root's server runs, as in NeMo Gym) or prefer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			entry := "app.py"
			switch tt.impl {
			case "forking":
				entry = "app.sh"
			case "forking_py":
				tt.impl, entry = "forking", "app_impl.py"
			}
			opts := f.options(t, serverYAML("srv", tt.impl, entry, tt.extra...), tt.overrides...)
			specs, err := plan(opts.Result, opts.Roots, os.LookupEnv, builtinPystub, nil)
			if tt.err != "" {
				var pe *PlanError
				if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want a PlanError saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := specs[0]
			if s.kind != tt.want {
				t.Errorf("runs as %v, want %v", s.kind, tt.want)
			}
			if s.Dir != filepath.Join(f.dir, "resources_servers", tt.impl) {
				t.Errorf("Dir = %q, want the component directory", s.Dir)
			}
			if (tt.note == "") != (s.Note == "") || !strings.Contains(s.Note, tt.note) {
				t.Errorf("Note = %q, want %q", s.Note, tt.note)
			}
		})
	}
}
