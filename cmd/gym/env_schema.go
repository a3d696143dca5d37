package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/python"
	"github.com/nemo-gym-go/gym/internal/taskdata"
)

type schemaOptions struct {
	IO              *iostreams.IOStreams
	ws              *workspace
	resourcesServer string
	searchDirs      []string
	passthrough     []string
}

func newCmdEnvSchema(f *Factory, runF func(context.Context, *schemaOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEnvSchema
	}
	opts := &schemaOptions{IO: f.IOStreams, ws: f.Workspace}
	cmd := &cobra.Command{
		Use:   "schema (--resources-server NAME | +entrypoint=<server_type>/<name>)",
		Short: "Print a resources server's task-data schema as JSON Schema",
		Long: `Print the JSON Schema of the task-owned fields of a server's dataset rows, as
NeMo Gym's env schema does. A Python server declares it in task_data.py (a
module exporting TaskData, a pydantic model), which is loaded with the server's
venv Python (set up first when uv is on PATH, as gym env test does; else python3
from PATH). A Go server declares it as task_data.schema.json beside its configs;
gym's built-in servers ship theirs. The server is found in the search roots
(--search-dir, NEMO_GYM_EXTRA_ROOTS, the cwd, the install root).`,
		Example: `  gym env schema --resources-server mcqa
  gym env schema +entrypoint=resources_servers/my_env --search-dir ~/my-plugins`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.passthrough = args
			return runF(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.resourcesServer, "resources-server", "", "the server: resources_servers/`NAME`")
	cmd.Flags().StringArrayVar(&opts.searchDirs, "search-dir", nil, "extra search root (repeatable)")
	return cmd
}

// component is the server the flags and overrides name (NeMo Gym's
// entrypoint; a later +entrypoint= wins, as Hydra's later overrides do).
func (o *schemaOptions) component() (string, error) {
	component := ""
	if o.resourcesServer != "" {
		component = "resources_servers/" + o.resourcesServer
	}
	for _, t := range o.passthrough {
		entry, ok := strings.CutPrefix(strings.TrimLeft(t, "+"), "entrypoint=")
		if !ok {
			return "", usageErrorf("gym env schema takes --resources-server NAME or +entrypoint=<server_type>/<name>, not %q", t)
		}
		component = strings.Trim(entry, `"'/`)
	}
	if component == "" {
		return "", usageErrorf("missing required configuration: entrypoint. Provide it via --resources-server NAME or +entrypoint=<server_type>/<name>.")
	}
	if strings.Count(component, "/") != 1 {
		return "", usageErrorf("entrypoint %q must be a relative path with 2 parts, such as resources_servers/mcqa", component)
	}
	return component, nil
}

func runEnvSchema(ctx context.Context, opts *schemaOptions) error {
	component, err := opts.component()
	if err != nil {
		return err
	}
	ws := opts.ws
	roots, err := ws.roots(opts.searchDirs)
	if err != nil {
		return err
	}
	environ := ws.childEnviron(roots)
	schema, err := taskdata.Schema(ctx, taskdata.Options{
		Component: component,
		Roots:     roots.Roots,
		Cwd:       roots.cwd,
		Python: func(ctx context.Context, dir string) ([]byte, error) {
			interpreter, env, err := schemaPython(ctx, dir, roots.cwd, environ, ws, opts.IO)
			if err != nil {
				return nil, err
			}
			return python.TaskDataSchema(ctx, interpreter, dir, env)
		},
	})
	if err != nil {
		return err
	}
	_, err = opts.IO.Out.Write(schema)
	return err
}

// schemaPython is the interpreter a Python server's schema loads with:
// its venv's, set up first when uv is on PATH (what it lacks is installed;
// a complete venv is used as it is), else python3 from PATH.
func schemaPython(ctx context.Context, dir, cwd string, environ []string, ws *workspace, io *iostreams.IOStreams) (string, []string, error) {
	settings := python.Defaults(cwd, environ, ws.LookPath)
	settings.SkipIfPresent = true
	venv := settings.VenvFor(dir)
	if _, err := settings.UV(); err == nil {
		if err := settings.ResolvePython(ctx); err != nil {
			return "", nil, err
		}
		emit := func(line string) { fmt.Fprintln(io.ErrOut, line) }
		if _, err := settings.Ensure(ctx, dir, emit); err != nil {
			return "", nil, err
		}
	}
	if venv.Present() {
		return venv.Python(), venv.Activate(environ), nil
	}
	if interpreter := python.System(ws.LookPath); interpreter != "" {
		return interpreter, environ, nil
	}
	return "", nil, fmt.Errorf("%s declares its schema in task_data.py, but neither uv (to build its venv %s) nor python3 is on PATH; install uv (pip install uv)", dir, venv.Dir)
}
