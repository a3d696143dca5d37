package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/python"
)

// packagesOptions are the inputs of `gym env packages`.
type packagesOptions struct {
	IO              *iostreams.IOStreams
	ws              *workspace
	resourcesServer string
	outdated        bool
	json            bool
	searchDirs      []string
}

func newCmdEnvPackages(f *Factory, runF func(context.Context, *packagesOptions) error) *cobra.Command {
	if runF == nil {
		runF = runEnvPackages
	}
	opts := &packagesOptions{IO: f.IOStreams, ws: f.Workspace}
	cmd := &cobra.Command{
		Use:   "packages --resources-server NAME [--outdated] [--json]",
		Short: "List the pip packages of a resources server's venv",
		Long: `Print the packages installed in the venv gym made for a Python resources
server (uv pip list, or the venv's pip without uv), as NeMo Gym's env packages
does: the venv under the working directory (gym env start's default
uv_venv_dir), else the server directory's own .venv. A server whose venv does
not exist yet is an error: gym env prefetch sets it up.`,
		Example: `  # A Python server of your own, once gym env prefetch (or env start) made its venv
  gym env prefetch --resources-server my_env --search-dir ~/my-plugins
  gym env packages --resources-server my_env --search-dir ~/my-plugins
  gym env packages --resources-server my_env --search-dir ~/my-plugins --json | jq '.[].name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.resourcesServer == "" {
				return &config.MissingSettingsError{Keys: []string{"resources-server"}}
			}
			return runF(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.resourcesServer, "resources-server", "", "list the packages of resources_servers/`NAME`")
	cmd.Flags().BoolVar(&opts.outdated, "outdated", false, "list only outdated packages")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the package list as JSON")
	cmd.Flags().StringArrayVar(&opts.searchDirs, "search-dir", nil, "extra search root (repeatable)")
	return cmd
}

func runEnvPackages(ctx context.Context, opts *packagesOptions) error {
	roots, err := opts.ws.roots(opts.searchDirs)
	if err != nil {
		return err
	}
	name, _, _ := strings.Cut(opts.resourcesServer, "/")
	component := "resources_servers/" + name
	dir := roots.find(component)
	if dir == "" {
		return fmt.Errorf("resources server %s was not found in the search roots (%s)", name, strings.Join(roots.List(), ", "))
	}
	settings := python.Defaults(roots.cwd, opts.ws.Environ(), opts.ws.LookPath)
	candidates := []python.Venv{settings.VenvFor(dir), {Dir: dir + "/.venv"}}
	var venv *python.Venv
	var looked []string
	for i := range candidates {
		if candidates[i].Present() {
			venv = &candidates[i]
			break
		}
		looked = append(looked, candidates[i].Dir)
	}
	if venv == nil {
		return &python.NoVenvError{Component: component, Looked: looked}
	}
	format := ""
	if opts.json {
		format = "json"
	} else {
		fmt.Fprintf(opts.IO.Out, "  Package list for: %s\nVirtual environment: %s\n%s\n", component, venv.Dir, strings.Repeat("-", 72))
	}
	return python.PipList(ctx, *venv, dir, python.PipListOptions{
		Format: format, Outdated: opts.outdated, Environ: opts.ws.Environ(), LookPath: opts.ws.LookPath,
		Out: opts.IO.Out, Err: opts.IO.ErrOut,
	})
}
