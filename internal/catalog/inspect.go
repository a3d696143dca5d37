package catalog

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// Detail is one labelled line of an inspect view.
type Detail struct{ Label, Value string }

// Inspect is the shared view of one component (spec §2.8).
type Inspect struct {
	Name        string
	Type        string // the noun: "environment", "agent", "resources server", …
	Domain      string
	Description string
	Details     []Detail // in display order
	Usage       string
}

// MarshalJSON writes the view as NeMo Gym does, details in order and
// empty strings as null.
func (v *Inspect) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"name":`)
	writeJSON(&b, v.Name)
	b.WriteString(`,"type":`)
	writeJSON(&b, v.Type)
	b.WriteString(`,"domain":`)
	writeJSON(&b, nullable(v.Domain))
	b.WriteString(`,"description":`)
	writeJSON(&b, nullable(v.Description))
	b.WriteString(`,"details":{`)
	for i, d := range v.Details {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(&b, d.Label)
		b.WriteByte(':')
		writeJSON(&b, d.Value)
	}
	b.WriteString(`},"usage_example":`)
	writeJSON(&b, nullable(v.Usage))
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeJSON(b *bytes.Buffer, v any) {
	data, _ := json.Marshal(v)
	b.Write(data)
}

// nullable maps "" to JSON null.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// WriteText writes the human view: a heading, the description, the
// details and the usage example, separated by blank lines.
func (v *Inspect) WriteText(w io.Writer) error {
	var sections []string
	head := "The " + v.Name + " " + v.Type
	if v.Domain != "" {
		head += " (domain: " + v.Domain + ")"
	}
	sections = append(sections, head)
	if v.Description != "" {
		sections = append(sections, v.Description)
	}
	if len(v.Details) > 0 {
		lines := []string{"Details:"}
		for _, d := range v.Details {
			lines = append(lines, d.Label+": "+d.Value)
		}
		sections = append(sections, strings.Join(lines, "\n"))
	}
	if v.Usage != "" {
		sections = append(sections, "Usage example:\n"+v.Usage)
	}
	_, err := io.WriteString(w, strings.Join(sections, "\n\n")+"\n")
	return err
}

// abs anchors a path found under a root at the working directory.
func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// shadowDetail is a "shadows" line naming the hidden copies, if any.
func shadowDetail(paths []string) []Detail {
	if len(paths) == 0 {
		return nil
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = abs(p)
	}
	return []Detail{{"shadows", strings.Join(out, ", ")}}
}

// InspectEntry is the inspect view of a catalog entry. What the entry
// lacks of domain and description is read from its config, as the list
// commands do for legacy entries.
func InspectEntry(e *Entry, roots *resolve.Roots, check PythonCheck) *Inspect {
	v := &Inspect{Name: e.Name, Type: e.Kind, Domain: e.Domain, Description: e.Description, Usage: e.Usage()}
	if v.Domain == "" || v.Description == "" {
		parsed := ReadMetadata(e.Config, roots)
		v.Domain = cmp.Or(v.Domain, parsed.Domain)
		v.Description = cmp.Or(v.Description, parsed.Description)
	}
	v.Details = []Detail{{"config", abs(e.Config)}}
	if e.Status != "" {
		v.Details = append(v.Details, Detail{"status", e.Status})
	}
	if e.Manifest != "" {
		v.Details = append(v.Details, Detail{"manifest", abs(e.Manifest)})
	}
	for _, d := range []Detail{
		{"version", e.Version}, {"profile", e.IntegrationProfile}, {"modality", e.Modality},
		{"licensing", e.Licensing}, {"lifecycle", e.Lifecycle},
	} {
		if d.Value != "" {
			v.Details = append(v.Details, d)
		}
	}
	var rs, datasets []string
	agent, value := "", ""
	for _, s := range servers(loadRaw(e.Config)) {
		switch s.group {
		case "resources_servers":
			rs = append(rs, s.impl)
			if value == "" {
				value = text(s.body.Get("value"))
			}
		case "responses_api_agents":
			if agent == "" {
				agent = s.impl
			}
			if ds := s.body.Get("datasets"); ds != nil && ds.Kind == tree.List {
				for _, d := range ds.Items {
					if name := text(d.Get("name")); name != "" {
						datasets = append(datasets, name)
					}
				}
			}
		}
	}
	if len(rs) > 0 {
		v.Details = append(v.Details, Detail{"resources servers", strings.Join(rs, ", ")})
	}
	if agent != "" {
		v.Details = append(v.Details, Detail{"agent", agent})
	}
	if len(datasets) > 0 {
		v.Details = append(v.Details, Detail{"datasets", strings.Join(datasets, ", ")})
	}
	if check != nil {
		v.Details = append(v.Details, Detail{"needs Python", pythonDetail(e.PythonServers(roots, check))})
	}
	v.Details = append(v.Details, shadowDetail(e.Shadowed)...)
	if value != "" {
		v.Description += "\nValue: " + value
	}
	return v
}

// pythonDetail says whether an entry needs Python under builtin_servers: prefer.
func pythonDetail(servers []string, err error) string {
	switch {
	case err != nil:
		return "unknown: " + strings.ReplaceAll(err.Error(), "\n", " ")
	case len(servers) == 0:
		return "no: with --builtin-servers prefer, no server but the policy model needs Python"
	}
	return "yes: " + strings.Join(servers, "; ")
}

// InspectAgent is the inspect view of an agent.
func InspectAgent(a *Agent) *Inspect {
	v := &Inspect{Name: a.Name, Type: "agent", Description: a.Description}
	v.Details = []Detail{{"path", abs(a.Dir)}, {"composition", a.Composition()}}
	if len(a.Variants) > 0 {
		v.Details = append(v.Details, Detail{"variants", strings.Join(a.Variants, ", ")})
	}
	v.Details = append(v.Details, shadowDetail(a.Shadowed)...)
	return v
}

// InspectModel is the inspect view of a model config.
func InspectModel(c *Config) *Inspect {
	v := &Inspect{Name: c.Name, Type: "model",
		Usage: "gym env start --resources-server example_single_tool_call --model-type " + c.Name}
	v.Details = append([]Detail{{"config", abs(c.Path)}}, shadowDetail(c.Shadowed)...)
	return v
}

// InspectResourcesServer is the inspect view of a resources server config.
func InspectResourcesServer(c *Config) *Inspect {
	v := &Inspect{Name: c.Name, Type: "resources server", Domain: c.Domain, Description: c.Description,
		Usage: "gym env start --resources-server " + c.Name + " --model-type vllm_model"}
	if c.Value != "" {
		v.Description += "\nValue: " + c.Value
	}
	v.Details = append([]Detail{{"config", abs(c.Path)}}, shadowDetail(c.Shadowed)...)
	return v
}
