package nemogym

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestEnvSchemaMatchesNeMoGym prints task-data schemas with NeMo Gym
// 0.7.0's `gym env schema` and gym's: gym's built-in Go servers against
// NeMo Gym's Python servers of the same names, a Python server NeMo Gym
// ships (loaded by gym with the venv it builds), and servers whose
// task_data.py breaks the protocol or that have none. The output (the
// message, for the errors) must be the same.
func TestEnvSchemaMatchesNeMoGym(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	h.write("builtin/.keep", "", 0o644)
	h.copyShipped("resources_servers/example_multi_step")
	h.write("resources_servers/no_export/requirements.txt", "-e nemo-gym[dev] @ ../../\n", 0o644)
	h.write("resources_servers/no_export/task_data.py", "from pydantic import BaseModel\n\nclass Other(BaseModel):\n    x: int\n", 0o644)
	h.write("resources_servers/no_schema/requirements.txt", "-e nemo-gym[dev] @ ../../\n", 0o644)
	for _, c := range []struct {
		dir, name string
		fails     bool
	}{
		// From an empty directory: the install roots' servers.
		{"builtin", "mcqa", false},
		{"builtin", "math_with_judge", false},
		{"builtin", "graphwalks", false},
		{"builtin", "ruler", false},
		{"builtin", "example_single_tool_call", false},
		{".", "example_multi_step", false},
		{".", "no_export", true},
		{".", "no_schema", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cd := "cd " + c.dir + " && "
			ngOut, ngErr := h.run(ctx, "/bin/bash -c '"+cd+nemoGym+" env schema --resources-server "+c.name+" 2>/dev/null'")
			gymOut, gymErr := h.run(ctx, "/bin/bash -c '"+cd+h.gym+" env schema --resources-server "+c.name+" >/dev/null 2>&1 || true; "+h.gym+" env schema --resources-server "+c.name+" 2>/dev/null'")
			if (ngErr != nil) != c.fails || (gymErr != nil) != c.fails {
				t.Fatalf("failed: NeMo Gym %v, gym %v; want failure %v\n%s\n%s", ngErr, gymErr, c.fails, ngOut, gymOut)
			}
			if !c.fails {
				// The first gym run may set up the venv; its stdout was dropped.
				if gymOut != ngOut {
					t.Errorf("schema\n gym %s\n  ng %s", gymOut, ngOut)
				}
				return
			}
			msg, _ := h.run(ctx, "/bin/bash -c '"+cd+h.gym+" env schema --resources-server "+c.name+" 2>&1'")
			if want := strings.TrimSpace(ngOut); !strings.Contains(msg, want) {
				t.Errorf("gym says\n%s\nNeMo Gym says\n%s", msg, want)
			}
		})
	}
}
