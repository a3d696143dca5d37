package catalog

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/nemo-gym-go/gym/internal/resolve"
)

// Listing is one `gym list` or `gym search` answer: a titled table for
// people, the same rows as JSON for tools, or what to say when it is empty.
type Listing struct {
	Title  string
	Header []string
	Rows   [][]string
	// JSON is the --json value: a list, never null.
	JSON  any
	Empty string
}

// Filters narrow the catalog of environments and benchmarks. Empty fields
// do not filter.
type Filters struct {
	Query                                                string
	Kind, Domain, Status, Lifecycle, Modality, Licensing string
}

// Choices of the enumerated filters, in NeMo Gym's order.
var (
	KindChoices      = []string{KindEnvironment, KindBenchmark}
	StatusChoices    = []string{StatusExperimental, StatusNoManifest}
	LifecycleChoices = []string{LifecycleActive, LifecycleDeprecated}
)

// Select keeps the entries that match every filter. An entry without the
// metadata a filter asks about cannot match it; how many there were goes
// to warn, as NeMo Gym warns.
func (c *Catalog) Select(f Filters, warn io.Writer) []Entry {
	entries := c.Entries
	if f.Query != "" {
		var kept []Entry
		for i := range entries {
			if entries[i].Matches(f.Query) {
				kept = append(kept, entries[i])
			}
		}
		entries = kept
	}
	filter := func(attr, want string, get func(*Entry) string) {
		if want == "" {
			return
		}
		var kept []Entry
		missing := 0
		for i := range entries {
			switch v := get(&entries[i]); v {
			case "":
				missing++
			case want:
				kept = append(kept, entries[i])
			}
		}
		if missing == 1 {
			fmt.Fprintf(warn, "Warning: 1 catalog entry has no %s metadata and could not be matched.\n", attr)
		} else if missing > 1 {
			fmt.Fprintf(warn, "Warning: %d catalog entries have no %s metadata and could not be matched.\n", missing, attr)
		}
		entries = kept
	}
	filter("domain", f.Domain, func(e *Entry) string { return e.Domain })
	filter("kind", f.Kind, func(e *Entry) string { return e.Kind })
	filter("modality", f.Modality, func(e *Entry) string { return e.Modality })
	filter("licensing", f.Licensing, func(e *Entry) string { return e.Licensing })
	filter("status", f.Status, func(e *Entry) string { return e.Status })
	filter("lifecycle", f.Lifecycle, func(e *Entry) string { return e.Lifecycle })
	return entries
}

// entryJSON is one catalog entry in --json output.
type entryJSON struct {
	Name               string  `json:"name"`
	Kind               string  `json:"kind"`
	Status             string  `json:"status,omitempty"` // NeMo Gym leaves out a status of None
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

// EntryListing lists selected entries of c. With check (gym list
// benchmarks), each row says whether a server needs Python.
func EntryListing(c *Catalog, entries []Entry, query string, roots *resolve.Roots, check PythonCheck) *Listing {
	l := &Listing{Empty: "No environments found."}
	if query != "" {
		l.Empty = fmt.Sprintf("No environments match '%s'.", query)
	}
	counts := fmt.Sprintf("(%d; manifests %d/%d)", len(entries), c.Manifests(), len(c.Entries))
	l.Title = "Available environments and benchmarks " + counts
	if query != "" {
		l.Title = fmt.Sprintf("Catalog entries matching '%s' %s", query, counts)
	}
	l.Header = []string{"Name", "Kind", "Status", "Lifecycle", "Domain", "Description"}
	if check != nil {
		l.Header = []string{"Name", "Kind", "Status", "Lifecycle", "Domain", "Needs Python", "Description"}
	}
	rows := make([]entryJSON, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		row := entryJSON{Name: e.Name, Kind: e.Kind, Status: e.Status,
			Domain: nonEmpty(e.Domain), Description: nonEmpty(e.Description),
			Version: nonEmpty(e.Version), IntegrationProfile: nonEmpty(e.IntegrationProfile),
			Modality: nonEmpty(e.Modality), Licensing: nonEmpty(e.Licensing), Lifecycle: nonEmpty(e.Lifecycle)}
		cells := []string{e.Name, e.Kind, e.Status, e.Lifecycle, e.Domain}
		if check != nil {
			servers, err := e.PythonServers(roots, check)
			var cell string
			cell, row.NeedsPython = needsPython(servers, err)
			row.PythonServers = servers
			cells = append(cells, cell)
		}
		rows = append(rows, row)
		l.Rows = append(l.Rows, append(cells, e.Description))
	}
	l.JSON = rows
	return l
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

// NotFoundError is an inspect of a name nothing has.
type NotFoundError struct {
	Noun, Name string
	Known      []string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("Unknown %s '%s'.%s", e.Noun, e.Name, resolve.DidYouMean(e.Name, e.Known))
}

// FindEntry is the entry named name of kind ("" for any), or an error
// that says what the name is when it is of another kind.
func FindEntry(all []Entry, name, kind string) (*Entry, error) {
	var pool []string
	for i := range all {
		e := &all[i]
		if kind != "" && e.Kind != kind {
			continue
		}
		pool = append(pool, e.Name)
		if e.Name == name {
			return e, nil
		}
	}
	for _, e := range all {
		if e.Name == name {
			return nil, fmt.Errorf("'%s' is %s %s, not %s %s. Try `gym list %ss %s`.",
				e.Name, article(e.Kind), e.Kind, article(kind), kind, e.Kind, e.Name)
		}
	}
	noun := kind
	if noun == "" {
		noun = KindEnvironment
	}
	return nil, &NotFoundError{Noun: noun, Name: name, Known: pool}
}

func article(noun string) string {
	if noun != "" && strings.IndexAny(noun[:1], "aeiou") == 0 {
		return "an"
	}
	return "a"
}

// Shadowed reports, to w, which copies a winner hides.
func Shadowed(w io.Writer, what, name, winner string, shadowed []string) {
	for _, s := range shadowed {
		fmt.Fprintf(w, "Note: %s '%s' from %s shadows %s\n", what, name, winner, s)
	}
}

// AgentListing lists the agents that match query, or inspects the one
// named name.
func AgentListing(roots *resolve.Roots, name, query string, warn io.Writer) (*Listing, *Inspect, error) {
	type agentJSON struct {
		Name          string   `json:"name"`
		Pattern       string   `json:"pattern"`
		SelfContained bool     `json:"self_contained"`
		Variants      []string `json:"variants"`
		Description   *string  `json:"description"`
	}
	l := &Listing{Title: "NeMo Gym agents", Empty: "No agents found.", Header: []string{"agent", "composition", "variants", "description"}}
	if query != "" {
		l.Title = fmt.Sprintf("Agents matching '%s'", query)
	}
	rows := []agentJSON{}
	var names []string
	for _, a := range Agents(roots) {
		Shadowed(warn, "agent", a.Name, a.Dir, a.Shadowed)
		names = append(names, a.Name)
		if name != "" && a.Name == name {
			return nil, InspectAgent(&a), nil
		}
		if !a.Matches(query) {
			continue
		}
		variants := "—"
		if len(a.Variants) > 0 {
			variants = strings.Join(a.Variants, ", ")
		}
		l.Rows = append(l.Rows, []string{a.Name, a.Composition(), variants, a.Description})
		rows = append(rows, agentJSON{a.Name, a.Pattern(), a.SelfContained, append([]string{}, a.Variants...), nonEmpty(a.Description)})
	}
	if name != "" {
		return nil, nil, &NotFoundError{Noun: "agent", Name: name, Known: names}
	}
	l.JSON = rows
	return l, nil, nil
}

// ModelListing lists the model configs that match query, or inspects the
// one named name.
func ModelListing(roots *resolve.Roots, name, query string, warn io.Writer) (*Listing, *Inspect, error) {
	type modelJSON struct {
		Name       string `json:"name"`
		Model      string `json:"model"`
		ModelGroup string `json:"model_group"`
	}
	l := &Listing{Title: "NeMo Gym models", Empty: "No models found.", Header: []string{"Model", "Model group"}}
	if query != "" {
		l.Title = fmt.Sprintf("Models matching '%s'", query)
	}
	rows := []modelJSON{}
	var names []string
	for _, c := range Models(roots) {
		Shadowed(warn, "model", c.Name, c.Path, c.Shadowed)
		names = append(names, c.Name)
		if name != "" && c.Name == name {
			return nil, InspectModel(&c), nil
		}
		if FuzzyMatches(query, c.Name, c.Group) {
			l.Rows = append(l.Rows, []string{c.Name, c.Group})
			rows = append(rows, modelJSON{c.Name, c.Name, c.Group})
		}
	}
	if name != "" {
		return nil, nil, &NotFoundError{Noun: "model", Name: name, Known: names}
	}
	l.JSON = rows
	return l, nil, nil
}

// ResourcesServerListing lists the resources server configs that match
// query, or inspects the one named name.
func ResourcesServerListing(roots *resolve.Roots, name, query string, warn io.Writer) (*Listing, *Inspect, error) {
	type rsJSON struct {
		Name        string  `json:"name"`
		Domain      *string `json:"domain"`
		Description *string `json:"description"`
	}
	l := &Listing{Empty: "No resources servers found.", Header: []string{"Name", "Domain", "Description"}}
	rows := []rsJSON{}
	var names []string
	for _, c := range ResourcesServers(roots) {
		Shadowed(warn, "resources server", c.Name, c.Path, c.Shadowed)
		names = append(names, c.Name)
		if name != "" && c.Name == name {
			return nil, InspectResourcesServer(&c), nil
		}
		if FuzzyMatches(query, c.Name, c.Domain, c.Description) {
			l.Rows = append(l.Rows, []string{c.Name, c.Domain, c.Description})
			rows = append(rows, rsJSON{c.Name, nonEmpty(c.Domain), nonEmpty(c.Description)})
		}
	}
	if name != "" {
		return nil, nil, &NotFoundError{Noun: "resources server", Name: name, Known: names}
	}
	l.Title = fmt.Sprintf("Available resources servers in NeMo Gym (%d)", len(rows))
	if query != "" {
		l.Title = fmt.Sprintf("Resources servers matching '%s' (%d)", query, len(rows))
	}
	l.JSON = rows
	return l, nil, nil
}

// ValidChoice says whether value is one of choices ("" is no filter).
func ValidChoice(value string, choices []string) bool {
	return value == "" || slices.Contains(choices, value)
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
