package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/nemo-gym-go/gym/internal/catalog"
	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/launcher"
	"github.com/nemo-gym-go/gym/internal/resolve"
	"github.com/nemo-gym-go/gym/internal/server"
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
	f          *Factory
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
		opts := &listOptions{f: f, typ: typ}
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
	opts := &listOptions{f: f, search: true}
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
				if !contains(listTypes, args[0]) {
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func runList(opts *listOptions) error {
	roots, err := opts.f.roots(opts.searchDirs)
	if err != nil {
		return err
	}
	switch opts.typ {
	case listAgents:
		return listAgentsRun(opts, roots.Roots)
	case listModels:
		return listModelsRun(opts, roots.Roots)
	case listResourcesServers:
		return listResourcesServersRun(opts, roots.Roots)
	}
	return listCatalog(opts, roots.Roots)
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

// writeTable writes a title, a header row, a rule and the rows, columns
// aligned at their natural width.
func writeTable(w io.Writer, title string, header []string, rows [][]string) error {
	fmt.Fprintln(w, title)
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	rule := make([]string, len(header))
	for i, h := range header {
		rule[i] = strings.Repeat("-", len(h))
	}
	for _, r := range append([][]string{header, rule}, rows...) {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line != "" {
			if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
				return err
			}
		}
	}
	return nil
}

// reportShadowed tells the user, on stderr, which copies a winner hides.
func reportShadowed(w io.Writer, what, name, winner string, shadowed []string) {
	for _, s := range shadowed {
		fmt.Fprintf(w, "Note: %s '%s' from %s shadows %s\n", what, name, winner, s)
	}
}

// inspectOut writes one inspect view.
func inspectOut(opts *listOptions, v *catalog.Inspect) error {
	if opts.json {
		return writeJSONLine(opts.f.IO.Out, v)
	}
	return v.WriteText(opts.f.IO.Out)
}

// unknownName is the error for an inspect miss, with a did-you-mean over
// candidates.
func unknownName(noun, name string, candidates []string) error {
	return fmt.Errorf("Unknown %s '%s'.%s", noun, name, resolve.DidYouMean(name, candidates))
}

// catalogJSON is one catalog entry in --json output.
type catalogJSON struct {
	Name               string  `json:"name"`
	Kind               string  `json:"kind"`
	Status             string  `json:"status"`
	Domain             *string `json:"domain"`
	Description        *string `json:"description"`
	Version            *string `json:"version"`
	IntegrationProfile *string `json:"integration_profile"`
	Modality           *string `json:"modality"`
	Licensing          *string `json:"licensing"`
	Lifecycle          *string `json:"lifecycle"`
	// Benchmarks only: whether a server needs Python under
	// --builtin-servers prefer (null when that cannot be told).
	NeedsPython   json.RawMessage `json:"needs_python,omitempty"`
	PythonServers []string        `json:"python_servers,omitempty"`
}

// pythonCheck lists the servers of a config that need Python under
// builtin_servers: prefer, with this binary's built-ins.
func pythonCheck(roots *resolve.Roots) catalog.PythonCheck {
	return func(res *config.Result) ([]string, error) {
		return launcher.PythonServers(res, roots, server.UnknownConfigKeys, server.Kinds())
	}
}

// needsPython is a benchmark's Needs Python cell and JSON value: yes, no,
// or ? (null) when that cannot be told.
func needsPython(servers []string, err error) (cell string, value json.RawMessage) {
	switch {
	case err != nil:
		return "?", json.RawMessage("null")
	case len(servers) > 0:
		return "yes", json.RawMessage("true")
	}
	return "no", json.RawMessage("false")
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Choices of the catalog's enumerated filters, in NeMo Gym's order.
var (
	kindChoices      = []string{catalog.KindEnvironment, catalog.KindBenchmark}
	statusChoices    = []string{catalog.StatusExperimental, catalog.StatusNoManifest}
	lifecycleChoices = []string{catalog.LifecycleActive, catalog.LifecycleDeprecated}
)

// checkChoice is argparse's check of a flag limited to choices.
func checkChoice(flag, value string, choices []string) error {
	if value == "" || contains(choices, value) {
		return nil
	}
	return usageErrorf("argument --%s: invalid choice: '%s' (choose from '%s')%s",
		flag, value, strings.Join(choices, "', '"), resolve.DidYouMean(value, choices))
}

func listCatalog(opts *listOptions, roots *resolve.Roots) error {
	out, errOut := opts.f.IO.Out, opts.f.IO.ErrOut
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
	}{{"kind", kind, kindChoices}, {"status", opts.status, statusChoices}, {"lifecycle", opts.lifecycle, lifecycleChoices}} {
		if err := checkChoice(c.flag, c.value, c.choices); err != nil {
			return err
		}
	}
	cat, err := catalog.Discover(roots)
	if err != nil {
		return err
	}
	if opts.verbose {
		for _, bad := range cat.Ignored {
			fmt.Fprintf(errOut, "Note: ignoring a manifest that does not load: %v\n", bad)
		}
	}
	all := cat.Entries
	for _, e := range all {
		reportShadowed(errOut, e.Kind, e.Name, e.Config, e.Shadowed)
	}
	if opts.name != "" {
		return inspectCatalog(opts, roots, all, kind)
	}

	entries := all
	filter := func(attr, want string, get func(*catalog.Entry) string) {
		if want == "" {
			return
		}
		var kept []catalog.Entry
		missing := 0
		for i := range entries {
			v := get(&entries[i])
			if v == "" {
				missing++
				continue
			}
			if v == want {
				kept = append(kept, entries[i])
			}
		}
		if missing == 1 {
			fmt.Fprintf(errOut, "Warning: 1 catalog entry has no %s metadata and could not be matched.\n", attr)
		} else if missing > 1 {
			fmt.Fprintf(errOut, "Warning: %d catalog entries have no %s metadata and could not be matched.\n", missing, attr)
		}
		entries = kept
	}
	if opts.query != "" {
		var kept []catalog.Entry
		for i := range entries {
			if entries[i].Matches(opts.query) {
				kept = append(kept, entries[i])
			}
		}
		entries = kept
	}
	filter("domain", opts.domain, func(e *catalog.Entry) string { return e.Domain })
	filter("kind", kind, func(e *catalog.Entry) string { return e.Kind })
	filter("modality", opts.modality, func(e *catalog.Entry) string { return e.Modality })
	filter("licensing", opts.licensing, func(e *catalog.Entry) string { return e.Licensing })
	filter("status", opts.status, func(e *catalog.Entry) string { return e.Status })
	filter("lifecycle", opts.lifecycle, func(e *catalog.Entry) string { return e.Lifecycle })
	// Whether a benchmark can run without Python (--builtin-servers prefer).
	benchmarks, check := opts.typ == listBenchmarks, pythonCheck(roots)

	if opts.json {
		rows := make([]catalogJSON, 0, len(entries))
		for _, e := range entries {
			row := catalogJSON{Name: e.Name, Kind: e.Kind, Status: e.Status,
				Domain: strPtr(e.Domain), Description: strPtr(e.Description),
				Version: strPtr(e.Version), IntegrationProfile: strPtr(e.IntegrationProfile),
				Modality: strPtr(e.Modality), Licensing: strPtr(e.Licensing), Lifecycle: strPtr(e.Lifecycle)}
			if benchmarks {
				servers, err := e.PythonServers(roots, check)
				_, row.NeedsPython = needsPython(servers, err)
				row.PythonServers = servers
			}
			rows = append(rows, row)
		}
		return writeJSONLine(out, rows)
	}
	if len(entries) == 0 {
		if opts.query != "" {
			_, err := fmt.Fprintf(out, "No environments match '%s'.\n", opts.query)
			return err
		}
		_, err := fmt.Fprintln(out, "No environments found.")
		return err
	}
	counts := fmt.Sprintf("(%d; manifests %d/%d)", len(entries), cat.Manifests(), len(all))
	title := "Available environments and benchmarks " + counts
	if opts.query != "" {
		title = fmt.Sprintf("Catalog entries matching '%s' %s", opts.query, counts)
	}
	header := []string{"Name", "Kind", "Status", "Lifecycle", "Domain", "Description"}
	if benchmarks {
		header = []string{"Name", "Kind", "Status", "Lifecycle", "Domain", "Needs Python", "Description"}
	}
	rows := make([][]string, len(entries))
	for i, e := range entries {
		rows[i] = []string{e.Name, e.Kind, e.Status, e.Lifecycle, e.Domain}
		if benchmarks {
			cell, _ := needsPython(e.PythonServers(roots, check))
			rows[i] = append(rows[i], cell)
		}
		rows[i] = append(rows[i], e.Description)
	}
	return writeTable(out, title, header, rows)
}

func inspectCatalog(opts *listOptions, roots *resolve.Roots, all []catalog.Entry, kind string) error {
	var pool []string
	for i := range all {
		e := &all[i]
		if kind != "" && e.Kind != kind {
			continue
		}
		pool = append(pool, e.Name)
		if e.Name == opts.name {
			var check catalog.PythonCheck
			if e.Kind == catalog.KindBenchmark {
				check = pythonCheck(roots)
			}
			return inspectOut(opts, catalog.InspectEntry(e, roots, check))
		}
	}
	for _, e := range all {
		if e.Name == opts.name {
			return fmt.Errorf("'%s' is %s %s, not %s %s. Try `gym list %ss %s`.",
				e.Name, article(e.Kind), e.Kind, article(kind), kind, e.Kind, e.Name)
		}
	}
	noun := kind
	if noun == "" {
		noun = catalog.KindEnvironment
	}
	return unknownName(noun, opts.name, pool)
}

func article(noun string) string {
	if strings.IndexAny(noun[:1], "aeiou") == 0 {
		return "an"
	}
	return "a"
}

func listAgentsRun(opts *listOptions, roots *resolve.Roots) error {
	out := opts.f.IO.Out
	var agents []catalog.Agent
	var names []string
	for _, a := range catalog.Agents(roots) {
		reportShadowed(opts.f.IO.ErrOut, "agent", a.Name, a.Dir, a.Shadowed)
		names = append(names, a.Name)
		if opts.name != "" && a.Name == opts.name {
			return inspectOut(opts, catalog.InspectAgent(&a))
		}
		if a.Matches(opts.query) {
			agents = append(agents, a)
		}
	}
	if opts.name != "" {
		return unknownName("agent", opts.name, names)
	}
	if opts.json {
		type agentJSON struct {
			Name          string   `json:"name"`
			Pattern       string   `json:"pattern"`
			SelfContained bool     `json:"self_contained"`
			Variants      []string `json:"variants"`
			Description   *string  `json:"description"`
		}
		rows := make([]agentJSON, 0, len(agents))
		for _, a := range agents {
			v := a.Variants
			if v == nil {
				v = []string{}
			}
			rows = append(rows, agentJSON{a.Name, a.Pattern(), a.SelfContained, v, strPtr(a.Description)})
		}
		return writeJSONLine(out, rows)
	}
	if len(agents) == 0 {
		_, err := fmt.Fprintln(out, "No agents found.")
		return err
	}
	title := "NeMo Gym agents"
	if opts.query != "" {
		title = fmt.Sprintf("Agents matching '%s'", opts.query)
	}
	rows := make([][]string, len(agents))
	for i, a := range agents {
		variants := "—"
		if len(a.Variants) > 0 {
			variants = strings.Join(a.Variants, ", ")
		}
		rows[i] = []string{a.Name, a.Composition(), variants, a.Description}
	}
	return writeTable(out, title, []string{"agent", "composition", "variants", "description"}, rows)
}

func listModelsRun(opts *listOptions, roots *resolve.Roots) error {
	out := opts.f.IO.Out
	var models []catalog.Config
	var names []string
	for _, c := range catalog.Models(roots) {
		reportShadowed(opts.f.IO.ErrOut, "model", c.Name, c.Path, c.Shadowed)
		names = append(names, c.Name)
		if opts.name != "" && c.Name == opts.name {
			return inspectOut(opts, catalog.InspectModel(&c))
		}
		if catalog.FuzzyMatches(opts.query, c.Name, c.Group) {
			models = append(models, c)
		}
	}
	if opts.name != "" {
		return unknownName("model", opts.name, names)
	}
	if opts.json {
		type modelJSON struct {
			Name       string `json:"name"`
			Model      string `json:"model"`
			ModelGroup string `json:"model_group"`
		}
		rows := make([]modelJSON, 0, len(models))
		for _, c := range models {
			rows = append(rows, modelJSON{c.Name, c.Name, c.Group})
		}
		return writeJSONLine(out, rows)
	}
	if len(models) == 0 {
		_, err := fmt.Fprintln(out, "No models found.")
		return err
	}
	title := "NeMo Gym models"
	if opts.query != "" {
		title = fmt.Sprintf("Models matching '%s'", opts.query)
	}
	rows := make([][]string, len(models))
	for i, c := range models {
		rows[i] = []string{c.Name, c.Group}
	}
	return writeTable(out, title, []string{"Model", "Model group"}, rows)
}

func listResourcesServersRun(opts *listOptions, roots *resolve.Roots) error {
	out := opts.f.IO.Out
	var servers []catalog.Config
	var names []string
	for _, c := range catalog.ResourcesServers(roots) {
		reportShadowed(opts.f.IO.ErrOut, "resources server", c.Name, c.Path, c.Shadowed)
		names = append(names, c.Name)
		if opts.name != "" && c.Name == opts.name {
			return inspectOut(opts, catalog.InspectResourcesServer(&c))
		}
		if catalog.FuzzyMatches(opts.query, c.Name, c.Domain, c.Description) {
			servers = append(servers, c)
		}
	}
	if opts.name != "" {
		return unknownName("resources server", opts.name, names)
	}
	if opts.json {
		type rsJSON struct {
			Name        string  `json:"name"`
			Domain      *string `json:"domain"`
			Description *string `json:"description"`
		}
		rows := make([]rsJSON, 0, len(servers))
		for _, c := range servers {
			rows = append(rows, rsJSON{c.Name, strPtr(c.Domain), strPtr(c.Description)})
		}
		return writeJSONLine(out, rows)
	}
	if len(servers) == 0 {
		_, err := fmt.Fprintln(out, "No resources servers found.")
		return err
	}
	title := fmt.Sprintf("Available resources servers in NeMo Gym (%d)", len(servers))
	if opts.query != "" {
		title = fmt.Sprintf("Resources servers matching '%s' (%d)", opts.query, len(servers))
	}
	rows := make([][]string, len(servers))
	for i, c := range servers {
		rows[i] = []string{c.Name, c.Domain, c.Description}
	}
	return writeTable(out, title, []string{"Name", "Domain", "Description"}, rows)
}
