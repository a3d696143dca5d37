package scaffold

import (
	"fmt"
	"math"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/gosource"
)

// WorkloadOptions say which manifest-backed environment or benchmark to
// make.
type WorkloadOptions struct {
	Root    string // the scaffold root (the working directory)
	Kind    Kind
	Name    string
	Profile Profile // CustomGymVerifier when empty
	// ReuseVerifier names an existing resources server to score with
	// instead of a new one; it requires RewardRange and HigherIsBetter.
	ReuseVerifier  string
	RewardRange    *[2]float64
	HigherIsBetter *bool
	// SearchRoots are where a reused verifier's config is looked for
	// after Root, in order.
	SearchRoots []string
	// Lang is the language of the resources server the scaffold writes
	// (none when it reuses one); Go says where gym's module is for LangGo.
	Lang Lang
	Go   *gosource.Module
	// GoImplemented reports whether gym has a Go implementation of a
	// resources server (resources_servers/<name>): it scores without the
	// Python VERIFIER_FIXTURE NeMo Gym asks a reused verifier for.
	GoImplemented func(kind string) bool
}

// composition is the wiring a workload scaffold writes.
type composition struct {
	kind                   Kind
	name                   string
	profile                Profile
	assetDir               string // benchmarks/<name> or environments/<name>
	resourceImplementation string
	resourceInstance       string
	agentImplementation    string
	agentInstance          string
	environmentInstance    string
	dataset                *tree.Node
	rewardRange            [2]float64
	higherIsBetter         bool
	configReference        string
	promptPath             string
	rolloutDriver          string
	reused                 *reusedVerifier
}

// Workload makes a manifest-backed environment or benchmark, with the
// resources server (unless reused) and agent (for the agent-loop
// profiles) it needs.
func Workload(o WorkloadOptions) (*Result, error) {
	if o.Kind != Environment && o.Kind != Benchmark {
		return nil, errorf("kind must be one of: environment, benchmark; got %q", o.Kind)
	}
	if o.Profile == "" {
		o.Profile = CustomGymVerifier
	}
	if !validProfile(o.Profile) {
		return nil, errorf("profile must be one of: %s; got %q", profileList(), o.Profile)
	}
	if o.Lang == LangGo && (o.ReuseVerifier != "" || o.Go == nil) {
		return nil, errorf("a Go resources server is written only when no verifier is reused, and needs the location of gym's Go module")
	}
	// The agent loops' agent and the rollout driver are Python modules
	// named after the workload, whatever the resources server is written in.
	createsPython := (o.ReuseVerifier == "" && o.Lang != LangGo) || o.Profile != CustomGymVerifier
	if err := ValidateName(o.Name, createsPython); err != nil {
		return nil, err
	}
	if err := checkRoot(o.Root); err != nil {
		return nil, err
	}
	var reused *reusedVerifier
	if o.ReuseVerifier != "" {
		if !namePattern.MatchString(o.ReuseVerifier) || pythonKeywords[o.ReuseVerifier] {
			return nil, errorf("reuse_verifier must be a canonical resources-server name")
		}
		var err error
		if reused, err = resolveReusedVerifier(o.Root, o.SearchRoots, o.ReuseVerifier, o.GoImplemented); err != nil {
			return nil, err
		}
		if o.RewardRange == nil || o.HigherIsBetter == nil {
			return nil, errorf("reuse_verifier requires reward_range and higher_is_better")
		}
	} else if o.RewardRange != nil || o.HigherIsBetter != nil {
		return nil, errorf("reward_range and higher_is_better are only accepted with reuse_verifier")
	}
	rewardRange, higher := [2]float64{0, 1}, true
	if o.RewardRange != nil {
		rewardRange = *o.RewardRange
		for _, v := range rewardRange {
			if math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, errorf("invalid reward contract: reward.range must hold finite numbers, not %v", v)
			}
		}
		if rewardRange[0] > rewardRange[1] {
			return nil, errorf("invalid reward contract: reward.range must be ordered with lower <= upper, got [%v, %v]", rewardRange[0], rewardRange[1])
		}
	}
	if o.HigherIsBetter != nil {
		higher = *o.HigherIsBetter
	}
	c, err := compose(o, reused, rewardRange, higher)
	if err != nil {
		return nil, err
	}
	return Write(o.Root, c.assetDir, workloadFiles(o, c))
}

func validProfile(p Profile) bool {
	for _, q := range Profiles {
		if p == q {
			return true
		}
	}
	return false
}

func profileList() string {
	names := make([]string, len(Profiles))
	for i, p := range Profiles {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

func compose(o WorkloadOptions, reused *reusedVerifier, rewardRange [2]float64, higher bool) (*composition, error) {
	module := o.Name
	parent := "environments"
	if o.Kind == Benchmark {
		parent = "benchmarks"
	}
	c := &composition{
		kind: o.Kind, name: o.Name, profile: o.Profile,
		assetDir:               parent + "/" + o.Name,
		resourceImplementation: module,
		resourceInstance:       module + "_resources_server",
		agentImplementation:    "simple_agent",
		agentInstance:          module + "_agent",
		environmentInstance:    module + "_environment_server",
		rewardRange:            rewardRange,
		higherIsBetter:         higher,
		configReference:        "resources_servers/" + module + "/configs/" + module + ".yaml",
		reused:                 reused,
	}
	if o.Profile == CustomGymAgentLoop || o.Profile == ExternalAgentLoop {
		c.agentImplementation = module + "_agent"
	}
	taken := map[string]bool{}
	if reused != nil {
		c.resourceImplementation, c.resourceInstance, c.configReference = reused.selector, reused.resourceInstance, reused.configReference
		taken[reused.resourceInstance] = true
		if reused.agentInstance != "" {
			taken[reused.agentInstance] = true
		}
		if reused.environment != nil {
			taken[reused.environment.instance] = true
		}
	}
	if taken[c.agentInstance] {
		c.agentInstance = module + "_catalog_agent"
	}
	// The workload inherits a reused environment server under its own
	// name, so another workload reusing the same scorer keeps its own.
	if taken[c.environmentInstance] {
		c.environmentInstance = module + "_catalog_environment_server"
	}
	if taken[c.agentInstance] || taken[c.environmentInstance] {
		return nil, errorf("name %q collides with instances in reused verifier %q", o.Name, reused.selector)
	}
	base := c.assetDir
	dataset := tree.NewMap()
	dataset.Set("name", tree.NewString(o.Name))
	if o.Kind == Benchmark {
		c.promptPath = base + "/prompt.yaml"
		dataset.Set("type", tree.NewString("benchmark"))
		dataset.Set("jsonl_fpath", tree.NewString(base+"/data/example.jsonl"))
		dataset.Set("prepare_script", tree.NewString(base+"/prepare.py"))
		dataset.Set("prompt_config", tree.NewString(c.promptPath))
	} else {
		dataset.Set("type", tree.NewString("example"))
		dataset.Set("jsonl_fpath", tree.NewString(base+"/data/example.jsonl"))
	}
	dataset.Set("num_repeats", tree.NewInt(1))
	c.dataset = dataset
	if o.Profile == ExternalRolloutDriver {
		c.rolloutDriver = parent + "." + o.Name + ".rollout_driver:run_rollout_collection"
	}
	return c, nil
}

// manifest is manifest.yaml as NeMo Gym's dump_manifest writes it: the
// fields in the model's order, unset optional ones left out.
func manifest(c *composition) string {
	m := tree.NewMap()
	m.Set("name", tree.NewString(c.name))
	m.Set("version", tree.NewString("0.1.0"))
	m.Set("experimental", tree.NewBool(true))
	m.Set("kind", tree.NewString(string(c.kind)))
	m.Set("integration_profile", tree.NewString(string(c.profile)))
	m.Set("domain", tree.NewString("other"))
	m.Set("description", tree.NewString(fmt.Sprintf("TODO: Describe the %s %s.", c.name, c.kind)))
	m.Set("modality", tree.NewString("text"))
	m.Set("licensing", tree.NewString("unknown"))
	m.Set("authors", tree.NewList(tree.NewString("TODO")))
	reward := tree.NewMap()
	reward.Set("range", tree.NewList(tree.NewFloat(c.rewardRange[0]), tree.NewFloat(c.rewardRange[1])))
	reward.Set("higher_is_better", tree.NewBool(c.higherIsBetter))
	m.Set("reward", reward)
	m.Set("determinism", tree.NewString("unknown"))
	m.Set("resources_server", tree.NewString(c.resourceImplementation))
	m.Set("agent_server", tree.NewString(c.agentImplementation))
	m.Set("datasets", tree.NewList(c.dataset))
	m.Set("model_server", tree.NewString("policy_model"))
	if c.rolloutDriver != "" {
		m.Set("rollout_driver", tree.NewString(c.rolloutDriver))
	}
	if c.kind == Benchmark {
		m.Set("canonical_split", tree.NewString("TODO"))
		m.Set("standard_prompt_config", tree.NewString(c.promptPath))
	}
	m.Set("lifecycle", tree.NewString("active"))
	return dump(m)
}

func ref(typ, name string) *tree.Node {
	m := tree.NewMap()
	m.Set("type", tree.NewString(typ))
	m.Set("name", tree.NewString(name))
	return m
}

// assetConfig is the workload's config.yaml: the resources server's config
// pulled in, the agent, the dataset on the resources server (on the agent
// when the verifier is reused, whose implementation key is unknown), and an
// environment server in front of the agent.
func assetConfig(c *composition) string {
	agent := tree.NewMap()
	if c.reused == nil || c.reused.agentInstance == "" {
		agent.Set("entrypoint", tree.NewString("app.py"))
	}
	agent.Set("resources_server", ref("resources_servers", c.resourceInstance))
	agent.Set("model_server", ref("responses_api_models", "policy_model"))
	if c.reused != nil {
		agent.Set("datasets", tree.NewList(c.dataset))
	}
	cfg := tree.NewMap()
	cfg.Set("config_paths", tree.NewList(tree.NewString(c.configReference)))
	agentEntry := tree.NewMap()
	if c.reused != nil && c.reused.agentInstance != "" {
		agentEntry.Set("_inherit_from", tree.NewString(c.reused.agentInstance))
	}
	agentEntry.Set("responses_api_agents", nest(c.agentImplementation, agent))
	cfg.Set(c.agentInstance, agentEntry)
	if c.reused == nil {
		cfg.Set(c.resourceInstance, nest("resources_servers", c.resourceImplementation, nest("datasets", tree.NewList(c.dataset))))
	}
	env := tree.NewMap()
	if c.reused != nil && c.reused.environment != nil {
		server := tree.NewMap()
		for _, field := range c.reused.environment.agentFields {
			server.Set(field, nest("name", tree.NewString(c.agentInstance)))
		}
		env.Set("_inherit_from", tree.NewString(c.reused.environment.instance))
		env.Set("environment_servers", nest(c.reused.environment.implementation, server))
	} else {
		legacy := tree.NewMap()
		legacy.Set("entrypoint", tree.NewString("app.py"))
		legacy.Set("agent_server", ref("responses_api_agents", c.agentInstance))
		env.Set("environment_servers", nest("legacy_agent", legacy))
	}
	cfg.Set(c.environmentInstance, env)
	if c.rolloutDriver != "" {
		cfg.Set("rollout_collection_driver", tree.NewString(c.rolloutDriver))
	}
	text := dump(cfg)
	// A blank line between config_paths and the instances, as NeMo Gym
	// writes it.
	return strings.Replace(text, "\n"+c.agentInstance+":\n", "\n\n"+c.agentInstance+":\n", 1)
}

func workloadFiles(o WorkloadOptions, c *composition) Files {
	root := o.Root
	a := c.assetDir
	scorer := "resources_servers/" + c.name
	if c.reused != nil {
		scorer = c.reused.selector
	}
	files := Files{
		a + "/__init__.py":   packageInit,
		a + "/manifest.yaml": manifest(c),
		a + "/config.yaml":   assetConfig(c),
		a + "/README.md": fmt.Sprintf("# %s\n\nTODO: Describe this %s and replace the sample data.\n\n- Integration profile: `%s`\n- Scorer: `%s`\n",
			c.name, c.kind, c.profile, scorer),
	}
	if c.kind == Benchmark {
		source := `{"question": "What is 6 x 7?", "expected_answer": "42"}` + "\n"
		files[a+"/data/source.jsonl"] = source
		files[a+"/data/example.jsonl"] = source
		files[a+"/prompt.yaml"] = render("python/benchmark_prompt.yaml", nil)
		files[a+"/prepare.py"] = python("benchmark_prepare.py", struct{ Name string }{c.name})
	} else {
		files[a+"/data/example.jsonl"] = exampleRow()
	}
	if c.reused == nil {
		dir := "resources_servers/" + c.name
		server := pythonResourcesServerFiles(dir, c.name,
			manifestResourcesServerConfig(c.resourceInstance, c.resourceImplementation, "app.py"),
			fmt.Sprintf("# %s resources server\n\nTODO: Document the verifier.\n", c.name),
			requirements(root, dir))
		if o.Lang == LangGo {
			server = goResourcesServerFiles(dir, c.name, o.Go,
				manifestResourcesServerConfig(c.resourceInstance, c.resourceImplementation, "run"))
		}
		for p, content := range server {
			files[p] = content
		}
	}
	if c.profile == CustomGymAgentLoop || c.profile == ExternalAgentLoop {
		dir := "responses_api_agents/" + c.agentImplementation
		instruction := fmt.Sprintf("TODO: Implement the `%s` agent behavior.", c.profile)
		template := "agent_app_custom_loop.py"
		if c.profile == ExternalAgentLoop {
			instruction += " Replace run() with external episode delegation, then make responses() raise NotImplementedError."
			template = "agent_app_external_loop.py"
		}
		files[dir+"/__init__.py"] = packageInit
		files[dir+"/README.md"] = fmt.Sprintf("# %s\n\n%s\n", c.agentImplementation, instruction)
		files[dir+"/app.py"] = python(template, struct{ Class string }{className(c.name)})
		files[dir+"/requirements.txt"] = requirements(root, dir)
	}
	if c.rolloutDriver != "" {
		files[a+"/rollout_driver.py"] = python("rollout_driver.py", nil)
	}
	return files
}
