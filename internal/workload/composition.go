package workload

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/interp"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// composition is what a workload's config resolves to: the servers a
// manifest mirrors.
type composition struct {
	resourcesServer, agentServer, modelServer string
	datasets                                  []Dataset
	rolloutDriver, gradingMode                string
	components                                []Component
	// resourcesDir is the resources server's <type>/<implementation>.
	resourcesDir string
	// resources is the resources server instance, and config the loaded
	// config it runs in.
	resources *instance
	config    *config.Result
}

// instance is one server of the resolved config.
type instance struct {
	name, typ, impl string
	inner           *tree.Node // resolved
}

func (in *instance) datasets() []*tree.Node {
	var out []*tree.Node
	if ds := in.inner.Get("datasets"); ds != nil && ds.Kind == tree.List {
		for _, d := range ds.Items {
			if d.Kind == tree.Map {
				out = append(out, d)
			}
		}
	}
	return out
}

func (in *instance) entrypoint() *string {
	if e := in.inner.Get("entrypoint"); e != nil && e.Kind != tree.Null {
		s := interp.PythonStr(e)
		return &s
	}
	return nil
}

// ref is the instance name a server reference field (`resources_server:
// {type: ..., name: ...}`) names, "" if none.
func ref(inner *tree.Node, field string) string {
	if n := inner.Get(field); n != nil && n.Kind == tree.Map {
		if name := n.Get("name"); name != nil && name.Kind == tree.String {
			return name.Str
		}
	}
	return ""
}

// compose loads the config as a run would (no model: the seed stands in)
// and resolves which agent, resources server and model server the
// workload's datasets go through, as NeMo Gym's
// _resolve_manifest_composition does. Problems go to r; nil when the
// config does not resolve.
func (r *run) compose(ctx context.Context, configPath string) *composition {
	env := r.o.Env
	env.Roots = r.roots
	res, err := config.Load(ctx, env, config.Request{Overrides: []string{configPathsToken(configPath)}, Seed: r.o.Seed, Offline: true})
	if err != nil {
		r.problems = append(r.problems, configProblem(configPath, err))
		return nil
	}
	resolved, err := res.Resolved(false)
	if err != nil {
		r.problems = append(r.problems, configProblem(configPath, err))
		return nil
	}
	byName := map[string]*instance{}
	var ordered []*instance
	for _, in := range res.Instances {
		inner := resolved.Get(in.Name).Get(in.Type).Get(in.Implementation)
		i := &instance{name: in.Name, typ: in.Type, impl: in.Implementation, inner: inner}
		byName[in.Name] = i
		ordered = append(ordered, i)
	}
	fail := func(in *instance, msg string) *composition {
		p := Problem{File: configPath, Message: msg}
		if in != nil {
			if ds := in.inner.Get("datasets"); ds != nil && ds.Origin.Kind == tree.FromFile {
				p.File, p.Line = ds.Origin.File, ds.Origin.Line
			}
		}
		r.problems = append(r.problems, p)
		return nil
	}

	var datasetRS, agent *instance
	var rsWithData []*instance
	for _, in := range ordered {
		if in.typ == "resources_servers" && len(in.datasets()) > 0 {
			rsWithData = append(rsWithData, in)
		}
	}
	switch owner := r.m.DatasetOwner; {
	case owner != "":
		in := byName[owner]
		if in == nil || (in.typ != "resources_servers" && in.typ != "responses_api_agents") || len(in.datasets()) == 0 {
			r.manifestProblem("dataset_owner", fmt.Sprintf("dataset_owner %s must name a dataset-bearing resources server or agent instance.", pyRepr(owner)))
			return nil
		}
		name, err := r.datasetAgent(ordered, in)
		if err != "" {
			return fail(in, err)
		}
		if agent = byName[name]; agent == nil || agent.typ != "responses_api_agents" {
			r.manifestProblem("dataset_owner", fmt.Sprintf("dataset_owner %s does not resolve to an agent instance.", pyRepr(owner)))
			return nil
		}
		if in.typ == "resources_servers" {
			datasetRS = in
		}
	case len(rsWithData) > 1:
		names := make([]string, len(rsWithData))
		for i, in := range rsWithData {
			names[i] = in.name
		}
		return fail(rsWithData[1], "Workload config must define exactly one dataset-bearing instance; found resources servers: "+strings.Join(names, ", ")+".")
	case len(rsWithData) == 1:
		datasetRS = rsWithData[0]
		name, err := r.datasetAgent(ordered, datasetRS)
		if err != "" {
			return fail(datasetRS, err)
		}
		if agent = byName[name]; agent == nil {
			return fail(datasetRS, fmt.Sprintf("Datasets on %s route to agent %s, which is not defined in the config.", pyRepr(datasetRS.name), pyRepr(name)))
		}
	default:
		var withData []*instance
		for _, in := range ordered {
			if in.typ == "responses_api_agents" && len(in.datasets()) > 0 {
				withData = append(withData, in)
			}
		}
		if len(withData) != 1 {
			found := "none"
			if len(withData) > 0 {
				var names []string
				for _, in := range withData {
					names = append(names, fmt.Sprintf("%s (%s)", in.name, in.impl))
				}
				found = strings.Join(names, ", ")
			}
			return fail(nil, "Workload config must define exactly one dataset-bearing agent instance; found: "+found+".")
		}
		agent = withData[0]
		if _, err := r.datasetAgent(ordered, agent); err != "" {
			return fail(agent, err)
		}
	}

	c := &composition{agentServer: agent.impl, modelServer: ref(agent.inner, "model_server"), config: res}
	resources := datasetRS
	if resources == nil {
		resources = byName[ref(agent.inner, "resources_server")]
	}
	owner := agent
	if datasetRS != nil {
		owner = datasetRS
	}
	for _, d := range owner.datasets() {
		c.datasets = append(c.datasets, configDataset(d))
	}
	if resources != nil {
		c.resourcesServer, c.resources = resources.impl, resources
		c.resourcesDir = resources.typ + "/" + resources.impl
		if g := resources.inner.Get("grading_mode"); g != nil && g.Kind != tree.Null {
			c.gradingMode = interp.PythonStr(g)
		}
		c.components = append(c.components, Component{Role: "resources_server", Name: resources.name, Implementation: resources.impl,
			Boundary: "resources_servers", Entrypoint: resources.entrypoint()})
	}
	c.components = append(c.components, Component{Role: "agent_server", Name: agent.name, Implementation: agent.impl,
		Boundary: "responses_api_agents", Entrypoint: agent.entrypoint()})
	if c.modelServer != "" {
		model := Component{Role: "model_server", Name: c.modelServer, Implementation: c.modelServer, Boundary: "responses_api_models"}
		if in := byName[c.modelServer]; in != nil {
			model.Implementation, model.Entrypoint = in.impl, in.entrypoint()
		}
		if model.Implementation == "dummy_model" {
			model.Implementation = "runtime-selected"
		}
		c.components = append(c.components, model)
	}
	if d := resolved.Get("rollout_collection_driver"); d != nil && d.Kind != tree.Null {
		c.rolloutDriver = interp.PythonStr(d)
	}
	return c
}

// configDataset is a config dataset as the manifest mirrors it.
func configDataset(d *tree.Node) Dataset {
	text := func(key string) string {
		if n := d.Get(key); n != nil && n.Kind != tree.Null {
			return strings.TrimSpace(interp.PythonStr(n))
		}
		return ""
	}
	out := Dataset{Name: text("name"), Type: text("type"), JSONLPath: text("jsonl_fpath"),
		PrepareScript: text("prepare_script"), PromptConfig: text("prompt_config"), NumRepeats: 1}
	if n := d.Get("num_repeats"); n != nil && n.Kind != tree.Null {
		if k, msg := integer(n); msg == "" {
			out.NumRepeats = k
		}
	}
	return out
}

// datasetAgent is the agent the datasets of owner are dispatched to (NeMo
// Gym's resolve_dataset_agent with the dataset `agent:` pins), or why
// there is none.
func (r *run) datasetAgent(ordered []*instance, owner *instance) (string, string) {
	var pins []string
	tasksets := false
	for _, d := range owner.datasets() {
		if p := d.Get("agent"); p != nil && p.Kind == tree.String && !slices.Contains(pins, p.Str) {
			pins = append(pins, p.Str)
		}
		if t := d.Get("taskset"); t != nil && t.Kind != tree.Null {
			tasksets = true
		}
	}
	if len(pins) > 1 {
		sorted := slices.Clone(pins)
		sort.Strings(sorted)
		return "", fmt.Sprintf("Datasets on %s pin conflicting agents (%s); rows route by the declaring instance alone, so all pins on one instance must agree.", pyRepr(owner.name), pyList(sorted))
	}
	if tasksets {
		r.warnings = append(r.warnings, fmt.Sprintf("Datasets on %s route by taskset (environment_server_routes), which gym does not check: the agent is resolved as if they did not.", pyRepr(owner.name)))
	}
	pin := ""
	if len(pins) == 1 {
		pin = pins[0]
	}
	prefix := fmt.Sprintf("Datasets on %s: ", pyRepr(owner.name))
	if owner.typ == "responses_api_agents" {
		if pin != "" && pin != owner.name {
			return "", prefix + fmt.Sprintf("dataset declared by agent %s pins agent %s, but rows are dispatched to the declaring agent, so the pin would silently not apply. Drop the `agent:` key, or declare the dataset on the resources server and pin there.", pyRepr(owner.name), pyRepr(pin))
		}
		return owner.name, ""
	}
	var candidates []string
	for _, in := range ordered {
		if in.typ == "responses_api_agents" && ref(in.inner, "resources_server") == owner.name {
			candidates = append(candidates, in.name)
		}
	}
	sorted := slices.Clone(candidates)
	sort.Strings(sorted)
	switch {
	case pin != "":
		if !slices.Contains(candidates, pin) {
			agents := "none"
			if len(sorted) > 0 {
				agents = pyList(sorted)
			}
			return "", prefix + fmt.Sprintf("the dataset pins agent %s, but no agent of that name references resources server %s (rows are dispatched along the agent -> resources server edge). Agents referencing it: %s.", pyRepr(pin), pyRepr(owner.name), agents)
		}
		return pin, ""
	case len(candidates) == 0:
		return "", prefix + fmt.Sprintf("no agent in the running config references resources server %s. Point an agent's `resources_server` at it, or declare the dataset on the agent.", pyRepr(owner.name))
	case len(candidates) > 1:
		return "", prefix + fmt.Sprintf("%d agents reference this resources server (%s). Pin the harness with an `agent:` key on the dataset declaration, or pass +agent_map={%s: <agent>} to pick one at run time.", len(candidates), pyList(sorted), owner.name)
	}
	return candidates[0], ""
}

func pyList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = pyRepr(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
