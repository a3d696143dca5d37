package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/catalog"
	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/iostreams"
	"github.com/nemo-gym-go/gym/internal/launcher"
	"github.com/nemo-gym-go/gym/internal/resolve"
	"github.com/nemo-gym-go/gym/internal/server"
	"github.com/nemo-gym-go/gym/internal/table"
)

// Listing types, as `gym list` and `gym search` name them.
const (
	listBenchmarks       = "benchmarks"
	listEnvironments     = "environments"
	listAgents           = "agents"
	listModels           = "models"
	listResourcesServers = "resources-servers"
)

var listTypes = []string{listBenchmarks, listEnvironments, listAgents, listModels, listResourcesServers}

// listOptions are the inputs of `gym list <type>` and `gym search`.
type listOptions struct {
	IO         *iostreams.IOStreams
	ws         *workspace
	typ        string // one of listTypes; "" is the whole catalog
	name       string // inspect this one
	query      string
	json       bool
	searchDirs []string
	search     bool // `gym search`, where TYPE environments also filters by kind
	verbose    bool
	// Catalog filters.
	kind, domain, status, lifecycle, modality, licensing string
}

func newCmdList(f *Factory, runF func(*listOptions) error) *cobra.Command {
	if runF == nil {
		runF = runList
	}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List benchmarks, environments, agents, models and resources servers",
		Long: `List the components found across the search roots (--search-dir directories
and NEMO_GYM_EXTRA_ROOTS, then the working directory, then the built-ins).
When a name exists in several roots the first root wins; the hidden copies
are reported on stderr.`,
		Example: `  gym list benchmarks
  gym list benchmarks gsm8k --json
  gym list resources-servers --search-dir ~/my-plugins`,
	}
	examples := map[string]string{
		listBenchmarks:       "  gym list benchmarks\n  gym list benchmarks gsm8k\n  gym list benchmarks --json --search-dir ~/my-plugins",
		listEnvironments:     "  gym list environments\n  gym list environments --kind environment --domain math\n  gym list environments circle_count --json",
		listAgents:           "  gym list agents\n  gym list agents simple_agent",
		listModels:           "  gym list models\n  gym list models vllm_model --json",
		listResourcesServers: "  gym list resources-servers\n  gym list resources-servers mcqa",
	}
	shorts := map[string]string{
		listBenchmarks:       "List benchmarks, or show one",
		listEnvironments:     "List the catalog of environments and benchmarks, or show one",
		listAgents:           "List agents, or show one",
		listModels:           "List model configs, or show one",
		listResourcesServers: "List resources server configs, or show one",
	}
	for _, typ := range listTypes {
		opts := &listOptions{IO: f.IOStreams, ws: f.Workspace, typ: typ}
		sub := &cobra.Command{
			Use:     typ + " [NAME]",
			Short:   shorts[typ],
			Example: examples[typ],
			Args:    cobra.MaximumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if len(args) == 1 {
					opts.name = args[0]
				}
				opts.verbose, _ = cmd.Flags().GetBool("verbose")
				return runF(opts)
			},
		}
		registerListFlags(sub, opts)
		cmd.AddCommand(sub)
	}
	makeGroup(cmd)
	return cmd
}

func registerListFlags(cmd *cobra.Command, opts *listOptions) {
	fl := cmd.Flags()
	fl.BoolVar(&opts.json, "json", false, "print JSON")
	fl.StringArrayVar(&opts.searchDirs, "search-dir", nil, "extra root searched first (repeatable)")
	if opts.typ == listEnvironments || opts.typ == "" {
		fl.StringVar(&opts.kind, "kind", "", "only entries of this kind (environment, benchmark)")
	}
	if opts.typ == listEnvironments || opts.typ == listBenchmarks || opts.typ == "" {
		fl.StringVar(&opts.domain, "domain", "", "only entries of this domain")
		fl.StringVar(&opts.status, "status", "", "only entries of this status (experimental, no-manifest)")
		fl.StringVar(&opts.lifecycle, "lifecycle", "", "only entries of this lifecycle (active, deprecated)")
		fl.StringVar(&opts.modality, "modality", "", "only entries of this modality")
		fl.StringVar(&opts.licensing, "licensing", "", "only entries of this licensing")
	}
}

func newCmdSearch(f *Factory, runF func(*listOptions) error) *cobra.Command {
	if runF == nil {
		runF = runList
	}
	opts := &listOptions{IO: f.IOStreams, ws: f.Workspace, search: true}
	cmd := &cobra.Command{
		Use:   "search [TYPE] QUERY",
		Short: "Fuzzy-search the catalog, agents, models or resources servers",
		Long: `Search names, domains and descriptions for QUERY (a substring, or a close
spelling of a word). TYPE is one of benchmarks, environments, agents, models,
resources-servers; without it the whole catalog of environments and
benchmarks is searched.`,
		Example: `  gym search math
  gym search benchmarks gsm
  gym search agents simple --json`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 {
				if !slices.Contains(listTypes, args[0]) {
					return usageErrorf("gym search: argument TYPE: invalid choice: '%s' (choose from '%s')%s",
						args[0], strings.Join(listTypes, "', '"), resolve.DidYouMean(args[0], listTypes))
				}
				opts.typ, args = args[0], args[1:]
			}
			opts.query = args[0]
			opts.verbose, _ = cmd.Flags().GetBool("verbose")
			return runF(opts)
		},
	}
	registerListFlags(cmd, opts)
	return cmd
}

func runList(opts *listOptions) error {
	roots, err := opts.ws.roots(opts.searchDirs)
	if err != nil {
		return err
	}
	var (
		l *catalog.Listing
		v *catalog.Inspect
	)
	errOut := opts.IO.ErrOut
	switch opts.typ {
	case listAgents:
		l, v, err = catalog.AgentListing(roots.Roots, opts.name, opts.query, errOut)
	case listModels:
		l, v, err = catalog.ModelListing(roots.Roots, opts.name, opts.query, errOut)
	case listResourcesServers:
		l, v, err = catalog.ResourcesServerListing(roots.Roots, opts.name, opts.query, errOut)
	default:
		l, v, err = listCatalog(opts, roots.Roots)
	}
	if err != nil {
		return err
	}
	out := opts.IO.Out
	switch {
	case v != nil && opts.json:
		return writeJSONLine(out, v)
	case v != nil:
		return v.WriteText(out)
	case opts.json:
		return writeJSONLine(out, l.JSON)
	case len(l.Rows) == 0:
		_, err := fmt.Fprintln(out, l.Empty)
		return err
	}
	fmt.Fprintln(out, l.Title)
	return table.Write(out, table.WithRule(l.Header, l.Rows))
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}

// pythonCheck lists the servers of a config that need Python under
// builtin_servers: prefer, with this binary's built-ins.
func pythonCheck(roots *resolve.Roots) catalog.PythonCheck {
	return func(res *config.Result) ([]string, error) {
		return launcher.PythonServers(res, roots, server.UnknownConfigKeys, server.Kinds())
	}
}

// checkChoice is argparse's check of a flag limited to choices.
func checkChoice(flag, value string, choices []string) error {
	if catalog.ValidChoice(value, choices) {
		return nil
	}
	return usageErrorf("argument --%s: invalid choice: '%s' (choose from '%s')%s",
		flag, value, strings.Join(choices, "', '"), resolve.DidYouMean(value, choices))
}

// listCatalog lists (or inspects) the environments and benchmarks.
func listCatalog(opts *listOptions, roots *resolve.Roots) (*catalog.Listing, *catalog.Inspect, error) {
	errOut := opts.IO.ErrOut
	kind := opts.kind
	switch {
	case opts.typ == listBenchmarks:
		kind = catalog.KindBenchmark
	case opts.typ == listEnvironments && opts.search:
		kind = catalog.KindEnvironment
	}
	for _, c := range []struct {
		flag, value string
		choices     []string
	}{{"kind", kind, catalog.KindChoices}, {"status", opts.status, catalog.StatusChoices}, {"lifecycle", opts.lifecycle, catalog.LifecycleChoices}} {
		if err := checkChoice(c.flag, c.value, c.choices); err != nil {
			return nil, nil, err
		}
	}
	cat, err := catalog.Discover(roots)
	if err != nil {
		return nil, nil, err
	}
	if opts.verbose {
		for _, bad := range cat.Ignored {
			fmt.Fprintf(errOut, "Note: ignoring a manifest that does not load: %v\n", bad)
		}
	}
	for _, e := range cat.Entries {
		catalog.Shadowed(errOut, e.Kind, e.Name, e.Config, e.Shadowed)
	}
	if opts.name != "" {
		e, err := catalog.FindEntry(cat.Entries, opts.name, kind)
		if err != nil {
			return nil, nil, err
		}
		var check catalog.PythonCheck
		if e.Kind == catalog.KindBenchmark {
			check = pythonCheck(roots)
		}
		return nil, catalog.InspectEntry(e, roots, check), nil
	}
	entries := cat.Select(catalog.Filters{
		Query: opts.query, Kind: kind, Domain: opts.domain, Status: opts.status,
		Lifecycle: opts.lifecycle, Modality: opts.modality, Licensing: opts.licensing,
	}, errOut)
	// Whether a benchmark can run without Python (--builtin-servers prefer).
	var check catalog.PythonCheck
	if opts.typ == listBenchmarks {
		check = pythonCheck(roots)
	}
	return catalog.EntryListing(cat, entries, opts.query, roots, check), nil, nil
}
