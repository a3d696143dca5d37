package scaffold

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// reusedVerifier is an existing resources server's config a workload
// scores with.
type reusedVerifier struct {
	selector         string
	configReference  string
	resourceInstance string
	agentInstance    string // its bundled simple_agent, "" when none
	environment      *reusedEnvironment
}

// reusedEnvironment is the environment server a reused config puts in
// front of its bundled agent; the workload inherits it under its own name.
type reusedEnvironment struct {
	instance       string
	implementation string
	agentFields    []string
}

type serverEntry struct {
	instance, implementation string
	config                   *tree.Node
}

// serverEntries lists the top-level instances of one server type.
func serverEntries(raw *tree.Node, serverType string) ([]serverEntry, error) {
	var out []serverEntry
	for _, e := range raw.Entries {
		impls := e.Value.Get(serverType)
		if impls == nil || impls.Kind != tree.Map {
			continue
		}
		for _, impl := range impls.Entries {
			if impl.Value.Kind != tree.Map {
				return nil, errorf("%s config for %q is not a mapping", serverType, impl.Key)
			}
			out = append(out, serverEntry{e.Key, impl.Key, impl.Value})
		}
	}
	return out, nil
}

func resolveReusedVerifier(root string, searchRoots []string, selector string, goImplemented func(string) bool) (*reusedVerifier, error) {
	ref := "resources_servers/" + selector + "/configs/" + selector + ".yaml"
	var candidates []string
	seen := map[string]bool{}
	for _, r := range append([]string{root}, searchRoots...) {
		c := filepath.Join(r, filepath.FromSlash(ref))
		if abs, err := filepath.Abs(c); err == nil {
			c = abs
		}
		if !seen[c] {
			seen[c] = true
			candidates = append(candidates, c)
		}
	}
	configPath := ""
	for _, c := range candidates {
		if info, err := os.Stat(c); err == nil && !info.IsDir() {
			configPath = c
			break
		}
	}
	if configPath == "" {
		return nil, errorf("reuse_verifier %q was not found. Looked in:\n  - %s", selector, strings.Join(candidates, "\n  - "))
	}
	data, err := os.ReadFile(configPath)
	if err != nil {
		return nil, errorf("could not read reused verifier config %s: %v", configPath, err)
	}
	raw, err := pyyaml.Load(data, configPath)
	if err != nil {
		return nil, errorf("could not read reused verifier config %s: %v", configPath, err)
	}
	if raw == nil || raw.Kind != tree.Map {
		return nil, errorf("reused verifier config %s is not a mapping", configPath)
	}
	resources, err := serverEntries(raw, "resources_servers")
	if err != nil {
		return nil, err
	}
	if len(resources) != 1 || resources[0].implementation != selector {
		return nil, errorf("reused verifier %q config %s must define exactly one resources-server instance of that type", selector, configPath)
	}
	models, err := serverEntries(raw, "responses_api_models")
	if err != nil {
		return nil, err
	}
	if len(models) > 0 {
		return nil, errorf("reused verifier %q config %s may not bundle a model server", selector, configPath)
	}
	res := resources[0]
	entry := res.config.Get("entrypoint")
	if entry == nil || entry.Kind != tree.String || entry.Str == "" {
		return nil, errorf("reused verifier %q does not define a resources-server entrypoint in %s", selector, configPath)
	}
	app := entry.Str
	if !filepath.IsAbs(app) {
		app = filepath.Join(filepath.Dir(filepath.Dir(configPath)), app)
	}
	if err := requireFixture(app, selector, goImplemented); err != nil {
		return nil, err
	}
	agents, err := serverEntries(raw, "responses_api_agents")
	if err != nil {
		return nil, err
	}
	if len(agents) > 1 || (len(agents) == 1 && agents[0].implementation != "simple_agent") {
		return nil, errorf("reused verifier %q config may bundle only one simple_agent", selector)
	}
	v := &reusedVerifier{selector: selector, configReference: ref, resourceInstance: res.instance}
	if len(agents) == 1 {
		a := agents[0]
		rs := a.config.Get("resources_server")
		if name := rs.Get("name"); rs == nil || rs.Kind != tree.Map || name == nil || name.Kind != tree.String || name.Str != res.instance {
			return nil, errorf("reused verifier %q simple_agent must reference resources instance %q", selector, res.instance)
		}
		v.agentInstance = a.instance
		if v.environment, err = reusedEnvironmentServer(raw, selector, a.instance); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// agentReferenceFields are the fields of an environment server's config
// that name the agent: agent_server may leave its type out, any other
// field counts only when typed responses_api_agents.
func agentReferenceFields(config *tree.Node, agent string) []string {
	var fields []string
	for _, e := range config.Entries {
		v := e.Value
		if v.Kind != tree.Map {
			continue
		}
		if name := v.Get("name"); name == nil || name.Kind != tree.String || name.Str != agent {
			continue
		}
		typ := v.Get("type")
		switch {
		case typ == nil && e.Key == "agent_server", typ != nil && typ.Kind == tree.String && typ.Str == "responses_api_agents":
			fields = append(fields, e.Key)
		}
	}
	return fields
}

func reusedEnvironmentServer(raw *tree.Node, selector, agent string) (*reusedEnvironment, error) {
	servers, err := serverEntries(raw, "environment_servers")
	if err != nil {
		return nil, err
	}
	var fronting []reusedEnvironment
	for _, s := range servers {
		if fields := agentReferenceFields(s.config, agent); len(fields) > 0 {
			fronting = append(fronting, reusedEnvironment{s.instance, s.implementation, fields})
		}
	}
	if len(fronting) == 0 {
		return nil, nil
	}
	const manual = "; compose the workload config by hand instead of using --reuse-verifier"
	if len(fronting) > 1 {
		var names []string
		for _, f := range fronting {
			names = append(names, f.instance)
		}
		sort.Strings(names)
		return nil, errorf("reused verifier %q simple_agent must be fronted by at most one environment server, found: %s%s", selector, strings.Join(names, ", "), manual)
	}
	s := fronting[0]
	block := raw.Get(s.instance)
	if block.Has("_inherit_from") || block.Has("_copy") {
		return nil, errorf("reused verifier %q environment server %q is itself derived with _inherit_from or _copy and cannot be inherited again%s", selector, s.instance, manual)
	}
	if routes := raw.Get("environment_server_routes"); routes != nil && routes.Kind == tree.Map {
		for _, e := range routes.Entries {
			if e.Value.Kind == tree.String && e.Value.Str == s.instance {
				return nil, errorf("reused verifier %q routes tasksets to environment server %q, which reuse would rename%s", selector, s.instance, manual)
			}
		}
	}
	return &s, nil
}

// fixturePattern finds a top-level VERIFIER_FIXTURE that is a
// VerifierFixture(...) or is imported: what NeMo Gym's verifier runner
// needs from a reused verifier.
var (
	fixtureAssign = regexp.MustCompile(`(?m)^VERIFIER_FIXTURE\s*(?::[^=\n]*)?=\s*(?:[A-Za-z_][A-Za-z0-9_]*\.)*VerifierFixture\s*\(`)
	pyComment     = regexp.MustCompile(`#[^\n]*`)
	fixtureImport = regexp.MustCompile(`(?ms)^from\s+\S+\s+import\s+(\([^)]*\)|[^\n]*)`)
)

// requireFixture checks that a reused verifier can be exercised: its
// Python entrypoint declares a VERIFIER_FIXTURE, or, with no entrypoint
// file, gym has a Go implementation of it.
func requireFixture(app, selector string, goImplemented func(string) bool) error {
	data, err := os.ReadFile(app)
	if errors.Is(err, fs.ErrNotExist) {
		if goImplemented != nil && goImplemented("resources_servers/"+selector) {
			return nil
		}
		return errorf("reused verifier %q entrypoint was not found: %s", selector, app)
	}
	if err != nil {
		return errorf("could not inspect reused verifier entrypoint %s: %v", app, err)
	}
	src := string(data)
	if fixtureAssign.MatchString(src) {
		return nil
	}
	for _, m := range fixtureImport.FindAllStringSubmatch(src, -1) {
		names := pyComment.ReplaceAllString(m[1], "")
		for _, alias := range strings.Split(strings.Trim(names, "() \t\n"), ",") {
			f := strings.Fields(alias)
			if len(f) == 3 && f[1] == "as" {
				f = f[2:]
			}
			if len(f) == 1 && f[0] == "VERIFIER_FIXTURE" {
				return nil
			}
		}
	}
	return errorf("reused verifier %q must declare a VERIFIER_FIXTURE from %s", selector, app)
}
