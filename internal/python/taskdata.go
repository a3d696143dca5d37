package python

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
)

// taskDataProgram loads a server's task_data.py as NeMo Gym's protocol
// has it (nemo_gym/task_data.py: a module exporting TaskData, a pydantic
// model or a TypeAdapter-compatible type) and prints its JSON Schema as
// `gym env schema` does. A module that breaks the protocol prints NeMo
// Gym's message and exits 3.
const taskDataProgram = `import importlib.util, json, sys
from pathlib import Path
from pydantic import TypeAdapter
server_dir = Path(sys.argv[1])
module_path = server_dir / "task_data.py"
name = "nemo_gym_task_data." + server_dir.name
def fail(message):
    print(message)
    sys.exit(3)
spec = importlib.util.spec_from_file_location(name, module_path)
if spec is None or spec.loader is None:
    fail(f"Could not build an import spec for {module_path}")
module = importlib.util.module_from_spec(spec)
sys.modules[name] = module
try:
    spec.loader.exec_module(module)
except Exception as e:
    fail(f"Failed to import {module_path}: {e}")
task_data = getattr(module, "TaskData", None)
if task_data is None:
    fail(f"{module_path} does not export ` + "`TaskData`" + `. Export a Pydantic model (or a TypeAdapter-compatible union alias) under that name.")
try:
    adapter = TypeAdapter(task_data)
except Exception as e:
    fail(f"` + "`TaskData`" + ` in {module_path} is not TypeAdapter-compatible: {e}")
print(json.dumps(adapter.json_schema(), indent=2))
`

// TaskDataError is a task_data.py that does not keep the protocol.
type TaskDataError struct{ Msg string }

func (e *TaskDataError) Error() string { return e.Msg }

// TaskDataSchema runs interpreter on the task_data.py of serverDir and
// returns the schema it prints. The server's root (two levels up) is the
// working directory and leads PYTHONPATH, so a schema that imports another
// server's task_data module finds it.
func TaskDataSchema(ctx context.Context, interpreter, serverDir string, environ []string) ([]byte, error) {
	root := filepath.Dir(filepath.Dir(serverDir))
	cmd := exec.CommandContext(ctx, interpreter, "-c", taskDataProgram, serverDir)
	contain(cmd)
	var out, errOut bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = root, withPythonPath(environ, root), &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.Bytes(), nil
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		return nil, &TaskDataError{Msg: strings.TrimRight(out.String(), "\n")}
	case errors.As(err, &exit):
		return nil, &TaskDataError{Msg: "the task-data schema of " + serverDir + " could not be loaded with " + interpreter + ":\n" + strings.TrimSpace(errOut.String())}
	}
	return nil, err
}
