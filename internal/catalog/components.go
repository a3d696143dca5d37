package catalog

import (
	"path/filepath"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/resolve"
)

// Agent is one responses_api_agents/<dir> (spec §2.3).
type Agent struct {
	Name          string
	Dir           string
	SelfContained bool
	Variants      []string // stems of its agent configs, sorted
	Description   string
	Shadowed      []string // Dirs of hidden copies in lower-priority roots
}

// Pattern is the JSON "pattern" field.
func (a *Agent) Pattern() string {
	if a.SelfContained {
		return "B (self-contained)"
	}
	return "A (composable)"
}

// Composition is the human "composition" column.
func (a *Agent) Composition() string {
	if a.SelfContained {
		return "self-contained (B)"
	}
	return "composable (A)"
}

// Matches reports whether the agent matches a search query.
func (a *Agent) Matches(query string) bool {
	return FuzzyMatches(query, append([]string{a.Name, a.Description}, a.Variants...)...)
}

// Config is one named config of a model or resources server:
// <tree>/<dir>/configs/<stem>.yaml, named `<dir>` or `<dir>/<stem>`.
type Config struct {
	Name  string
	Group string // <dir>
	Path  string
	Metadata
	// Value is the resources server's declared `value`, "" when none.
	Value    string
	Shadowed []string // Paths of same-named configs in lower-priority roots
}

// Agents lists the agents over roots, first root winning.
func Agents(roots *resolve.Roots) []Agent {
	var out []Agent
	for _, f := range roots.Scan("responses_api_agents") {
		var a Agent
		found := false
		for _, dir := range append([]string{f.Dir}, f.Shadowed...) {
			cand, ok := readAgent(dir)
			switch {
			case !ok:
				// A directory that is no agent does not take the name.
			case !found:
				a, found = cand, true
			default:
				a.Shadowed = append(a.Shadowed, dir)
			}
		}
		if found {
			a.Name = f.Name
			out = append(out, a)
		}
	}
	return out
}

func readAgent(dir string) (Agent, bool) {
	a := Agent{Dir: dir}
	var blocks []*tree.Node
	for _, f := range yamlFiles(filepath.Join(dir, "configs")) {
		n := loadRaw(f)
		if !hasGroup(n, "responses_api_agents") {
			continue
		}
		a.Variants = append(a.Variants, strings.TrimSuffix(filepath.Base(f), ".yaml"))
		for _, s := range servers(n) {
			if s.group == "responses_api_agents" {
				blocks = append(blocks, s.body)
			}
		}
	}
	if len(a.Variants) == 0 && !isFile(filepath.Join(dir, "app.py")) {
		return a, false
	}
	if len(blocks) > 0 {
		var rs, framework, anthropic bool
		for _, b := range blocks {
			rs = rs || b.Has("resources_server")
			framework = framework || b.Has("agent_framework")
			anthropic = anthropic || b.Has("anthropic_api_key")
			if a.Description == "" {
				a.Description = str(b.Get("description"))
			}
		}
		a.SelfContained = !(rs && !framework && !anthropic)
	}
	return a, true
}

// Models lists every responses_api_models/*/configs/*.yaml over roots,
// first root winning per name, in root order.
func Models(roots *resolve.Roots) []Config {
	return configs(roots, "responses_api_models", func(*tree.Node) bool { return true }, nil)
}

// ResourcesServers lists the resources_servers/*/configs/*.yaml that
// declare a resources server, first root winning per name.
func ResourcesServers(roots *resolve.Roots) []Config {
	return configs(roots, "resources_servers",
		func(n *tree.Node) bool { return hasGroup(n, "resources_servers") },
		func(c *Config, n *tree.Node) {
			c.Metadata = ReadMetadata(c.Path, roots)
			for _, s := range servers(n) {
				if s.group == "resources_servers" && c.Value == "" {
					c.Value = text(s.body.Get("value"))
				}
			}
		})
}

func configs(roots *resolve.Roots, typeDir string, keep func(*tree.Node) bool, fill func(*Config, *tree.Node)) []Config {
	var out []Config
	index := map[string]int{}
	for _, root := range roots.List() {
		base := filepath.Join(root, typeDir)
		for _, d := range subdirs(base) {
			for _, f := range yamlFiles(filepath.Join(base, d, "configs")) {
				n := loadRaw(f)
				if !keep(n) {
					continue
				}
				name := flavorName(d, f)
				if i, ok := index[name]; ok {
					out[i].Shadowed = append(out[i].Shadowed, f)
					continue
				}
				c := Config{Name: name, Group: d, Path: f}
				if fill != nil {
					fill(&c, n)
				}
				index[name] = len(out)
				out = append(out, c)
			}
		}
	}
	return out
}
