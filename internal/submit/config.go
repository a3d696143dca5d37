// Package submit is `gym eval submit`: NeMo Gym's submit config (services,
// one Slurm compute, the driver's benchmarks, the job's output path), its
// validation, the sbatch scripts it renders, and their submission, with
// gym's sharding beyond NeMo Gym: one evaluation as an array job whose
// tasks are requeued and resumed, and a dependent job that merges them.
package submit

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// ConfigError is a submit config that cannot be submitted; the command
// maps it to exit code 1, as NeMo Gym's ConfigError.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

// KV is one name and value, in the order the config gave them.
type KV struct{ Key, Value string }

// EnvVar is one variable a step of the job gets: a literal value, or
// (FromVar) the value of another variable where the step runs.
type EnvVar struct {
	Name, Value string
	FromVar     bool
}

// Config is NeMo Gym's SubmitConfig, the part gym runs.
type Config struct {
	File     string // the submit config, absolute
	Services []Service
	Compute  Compute
	Driver   Driver
	Output   string // job.output_path, absolute
	// HostVars are the submitting shell's variables that host: env values
	// name; sbatch hands them to the job.
	HostVars []string
	// Resolved is the submit config after overrides and interpolation,
	// without its scratch (_-prefixed) keys: what --resolve-only prints.
	Resolved *tree.Node
}

// Service is a server the job starts once and health-checks before the
// driver runs: `vllm` (any OpenAI-compatible `vllm serve`) or `ray`.
type Service struct {
	Name      string
	Type      string
	Container string // "" runs the command on the node itself
	Placement string // the compute it runs on; "" for the one there is
	NodePool  string
	Env       []EnvVar
	Mounts    []string
	Pre       string
	Health    *HealthCheck // nil for none (ray)

	// vllm
	Model               string
	Port                int
	ServedModelName     string
	TensorParallel      int
	PipelineParallel    int
	TrustRemoteCode     bool
	Instances           int
	ExtraArgs           string
	DataParallelPort    int
	RayPort             int
	RayNumCPUs, RayGPUs *int
}

// HealthCheck is polled every 5 s until it answers or its time is up.
type HealthCheck struct {
	Path    string
	Port    int
	Timeout int // seconds
}

// Compute is the one Slurm cluster of the submission.
type Compute struct {
	Name      string
	Account   string
	Hostname  string
	Walltime  string
	Pools     []NodePool
	ExtraArgs []KV
}

// NodePool is a set of nodes of one partition.
type NodePool struct {
	Name         string
	Partition    string
	Nodes        int
	TasksPerNode int
	GPUsPerNode  *int
	ExtraArgs    []KV
}

// Driver runs the benchmarks.
type Driver struct {
	Container       string
	Env             []EnvVar
	Mounts          []string
	PolicyModel     string
	PolicyHost      string
	PolicyModelType string
	Benchmarks      []Benchmark
}

// Benchmark is one evaluation: `gym eval run` with Run as overrides.
type Benchmark struct {
	Name    string
	Prepare *tree.Node // a mapping of `gym eval prepare` overrides, or nil
	Run     *tree.Node // a mapping of `gym eval run` overrides
}

// benchmarkName keeps names usable as directory and job names.
var benchmarkName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// safePath is a path that needs no quoting in a #SBATCH line, a shell
// word or an override value.
var safePath = regexp.MustCompile(`^[A-Za-z0-9/._-]+$`)

// envName is a shell variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Load reads the submit config at path with the Hydra overrides, as NeMo
// Gym composes it: overrides apply to the file (k=v replaces an existing
// key, +k=v adds one), interpolations are resolved, root keys starting with
// `_` are scratch space and dropped; then every key is checked.
func Load(path string, overrides []string, lookupEnv func(string) (string, bool)) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() {
		what := "was not found"
		if err == nil {
			what = "is a directory, not a file"
		}
		return nil, &ConfigError{Msg: fmt.Sprintf("Submit config '%s' %s. Check the path is spelled correctly and is relative to your working directory.", abs, what)}
	}
	root, err := config.LoadFile(abs)
	if err != nil {
		return nil, err
	}
	for _, tok := range overrides {
		ov, err := override.Parse(tok)
		if err != nil {
			return nil, err
		}
		if first := strings.Split(ov.Key, ".")[0]; strings.HasPrefix(first, "_") && (ov.Op == override.Add || ov.Op == override.ForceAdd) {
			return nil, &ConfigError{Msg: fmt.Sprintf("Refusing override '%s': scratch namespace '%s' must be fully defined in the config file. Only pre-existing fields may be overridden; use a bare 'key=value' override instead of '+'/'++' so a typo is rejected rather than silently adding an unused field.", tok, first)}
		}
		if err := override.Apply(root, ov); err != nil {
			return nil, err
		}
	}
	resolved := tree.NewMap()
	for _, e := range root.Entries {
		v, err := config.ResolveGlobal(root, e.Key, lookupEnv)
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(e.Key, "_") {
			resolved.SetEntry(tree.Entry{Key: e.Key, KeyKind: e.KeyKind, Value: v})
		}
	}
	c, err := decode(abs, resolved, lookupEnv)
	if err != nil {
		return nil, err
	}
	c.Resolved = resolved
	return c, nil
}

func decode(file string, root *tree.Node, lookupEnv func(string) (string, bool)) (*Config, error) {
	d := &decoder{hostVars: map[string]bool{}}
	top := d.object("", root)
	c := &Config{File: file}
	top.require("services")
	top.each("services", func(name string, o *obj) { c.Services = append(c.Services, d.service(name, o, lookupEnv)) })
	top.require("compute")
	var computes []string
	top.each("compute", func(name string, o *obj) {
		computes = append(computes, name)
		c.Compute = d.compute(name, o)
	})
	top.require("driver")
	c.Driver = d.driver(top.child("driver"), lookupEnv)
	top.require("job")
	job := top.child("job")
	if out := job.requiredStr("output_path"); out != "" {
		c.Output = out
		if !filepath.IsAbs(out) {
			if c.Compute.Hostname != "" && !isThisMachine(c.Compute.Hostname) {
				d.bad(job.at("output_path"), job.get("output_path"), "is relative, but the run directory is on %s, where it would be relative to wherever SSH lands; give an absolute path on the cluster's shared filesystem", c.Compute.Hostname)
			}
			c.Output = filepath.Join(filepath.Dir(file), out)
		}
	}
	job.done()
	c.HostVars = slices.Sorted(maps.Keys(d.hostVars))
	if o := top.child("otel"); o.present() {
		if o.boolean("enabled", true) {
			d.bad("otel.enabled", o.get("enabled"), "gym does not run NeMo Gym's OpenTelemetry collector; set otel.enabled: false or remove the otel block")
		}
		for _, e := range o.n.Entries {
			o.read[e.Key] = true
		}
	}
	top.done()
	if err := d.err(file); err != nil {
		return nil, err
	}
	return c, c.validate(computes)
}

func (d *decoder) service(name string, o *obj, lookupEnv func(string) (string, bool)) Service {
	s := Service{Name: name, Type: o.requiredStr("type")}
	s.Container = o.str("container", "")
	s.NodePool = o.str("node_pool", "")
	s.Placement = o.str("placement", "")
	s.Env = d.env(o, lookupEnv)
	s.Mounts = o.strList("mounts")
	s.Pre = o.str("pre_command", "")
	switch s.Type {
	case "vllm":
		s.Model = o.requiredStr("model")
		s.Port = o.integer("port", 8000)
		s.ServedModelName = o.str("served_model_name", "")
		s.TensorParallel = o.integer("tensor_parallel_size", 1)
		s.PipelineParallel = o.integer("pipeline_parallel_size", 1)
		s.TrustRemoteCode = o.boolean("trust_remote_code", false)
		s.Instances = o.integer("number_of_instances", 1)
		if s.Instances < 1 {
			d.bad(o.at("number_of_instances"), o.get("number_of_instances"), "number_of_instances must be >= 1, got %d", s.Instances)
		}
		if o.boolean("use_ray_serve", false) {
			d.bad(o.at("use_ray_serve"), o.get("use_ray_serve"), "gym does not deploy NeMo Gym's Ray Serve gateway; use number_of_instances for vLLM's own data parallelism")
		}
		s.ExtraArgs = o.str("extra_args", "")
		s.DataParallelPort = o.integer("data_parallel_rpc_port", 13345)
		s.Health = &HealthCheck{Path: "/health", Port: s.Port, Timeout: 60}
	case "ray":
		if pools := o.strList("node_pools"); len(pools) > 0 {
			d.bad(o.at("node_pools"), o.get("node_pools"), "gym starts a ray service on the driver's node only; multi-node Ray clusters are not supported yet")
		}
		s.RayPort = o.integer("port", 6379)
		s.RayNumCPUs, s.RayGPUs = o.optInt("num_cpus"), o.optInt("num_gpus")
		s.ExtraArgs = o.str("extra_args", "")
		if r := o.get("resources"); r != nil {
			d.bad(o.at("resources"), r, "per-pool Ray resources are not supported yet")
		}
	case "vllm_pd":
		d.bad(o.at("type"), o.get("type"), "gym does not deploy prefill/decode disaggregated vLLM (vllm_pd) yet; use type: vllm")
		for _, e := range o.n.Entries {
			o.read[e.Key] = true
		}
	case "":
	default:
		d.bad(o.at("type"), o.get("type"), "Input tag '%s' found using 'type' does not match any of the expected tags: 'vllm', 'ray', 'vllm_pd'", s.Type)
		for _, e := range o.n.Entries {
			o.read[e.Key] = true
		}
	}
	if h := o.child("health_check"); h.present() {
		port := s.Port
		if s.Health == nil {
			s.Health = &HealthCheck{Path: "/health", Timeout: 60}
		}
		s.Health.Path = h.str("path", "/health")
		s.Health.Port = h.integer("port", port)
		s.Health.Timeout = h.integer("timeout_seconds", 60)
		h.done()
	}
	return s
}

// env reads NeMo Gym's prefixed env values: lit:V is V, host:VAR is VAR
// of the submitting shell (which must be set), runtime:VAR is ${VAR} on
// the node.
func (d *decoder) env(o *obj, lookupEnv func(string) (string, bool)) []EnvVar {
	var out []EnvVar
	for _, kv := range o.strMap("env") {
		where := fmt.Sprintf("%s['%s']", o.at("env"), kv.Key)
		if !envName.MatchString(kv.Key) {
			d.invalid = append(d.invalid, fmt.Sprintf("%s (Invalid environment variable name: '%s')", where, kv.Key))
			continue
		}
		kind, val, ok := strings.Cut(kv.Value, ":")
		switch {
		case ok && kind == "lit":
			out = append(out, EnvVar{Name: kv.Key, Value: val})
		case ok && (kind == "host" || kind == "runtime"):
			if !envName.MatchString(val) {
				d.invalid = append(d.invalid, fmt.Sprintf("%s ('%s' is not a valid environment variable name for %s:%s)", where, val, kind, val))
				continue
			}
			if kind == "runtime" {
				out = append(out, EnvVar{Name: kv.Key, Value: val, FromVar: true})
				continue
			}
			// The value reaches the job through the environment sbatch
			// passes on, so that no secret is written into a script.
			if _, set := lookupEnv(val); !set {
				d.invalid = append(d.invalid, fmt.Sprintf("%s (references host:%s, but '%s' is not set in the submitting shell's environment)", where, val, val))
				continue
			}
			d.hostVars[val] = true
			out = append(out, EnvVar{Name: kv.Key, Value: val, FromVar: true})
		default:
			d.invalid = append(d.invalid, fmt.Sprintf("%s ('%s' must start with one of the prefixes 'lit:', 'host:', or 'runtime:')", where, kv.Value))
		}
	}
	return out
}

func (d *decoder) compute(name string, o *obj) Compute {
	c := Compute{Name: name}
	if t := o.requiredStr("type"); t != "" && t != "slurm" {
		d.bad(o.at("type"), o.get("type"), "Input tag '%s' found using 'type' does not match any of the expected tags: 'slurm'", t)
	}
	c.Account = o.requiredStr("account")
	c.Hostname = o.str("hostname", "")
	c.Walltime = o.str("walltime", "")
	if c.Walltime != "" {
		if _, err := ParseWalltime(c.Walltime); err != nil {
			d.bad(o.at("walltime"), o.get("walltime"), "%v", err)
		}
	}
	o.each("node_pools", func(pool string, p *obj) {
		np := NodePool{Name: pool, Partition: p.requiredStr("partition"), Nodes: p.integer("nodes", 1), TasksPerNode: p.integer("ntasks_per_node", 1)}
		np.GPUsPerNode = p.optInt("gpus_per_node")
		np.ExtraArgs = p.strMap("extra_args")
		c.Pools = append(c.Pools, np)
	})
	c.ExtraArgs = o.strMap("extra_args")
	return c
}

func (d *decoder) driver(o *obj, lookupEnv func(string) (string, bool)) Driver {
	dr := Driver{Container: o.str("container", ""), PolicyHost: o.str("policy_host", "localhost"), PolicyModelType: o.str("policy_model_type", "openai_model")}
	if g := o.get("gym_install"); g != nil {
		d.bad(o.at("gym_install"), g, "gym runs the job with the gym binary that submits it, staged into the run directory; there is nothing to install")
	}
	dr.PolicyModel = o.str("policy_model", "")
	dr.Env = d.env(o, lookupEnv)
	dr.Mounts = o.strList("mounts")
	o.require("benchmarks")
	o.each("benchmarks", func(name string, b *obj) {
		bm := Benchmark{Name: name, Prepare: b.get("prepare"), Run: b.get("run")}
		for _, m := range []struct {
			key string
			n   *tree.Node
		}{{"prepare", bm.Prepare}, {"run", bm.Run}} {
			if m.n != nil && m.n.Kind != tree.Map {
				d.bad(b.at(m.key), m.n, "must be a mapping of overrides, got %s", describe(m.n))
			}
		}
		if c := b.get("command"); c != nil {
			d.bad(b.at("command"), c, "gym runs `gym eval run` for a benchmark; a free command is not supported yet")
		}
		if r := b.get("resumable"); r != nil && !(r.Kind == tree.Bool && !r.Bool) {
			d.bad(b.at("resumable"), r, "gym resumes by Slurm requeue of sharded jobs (--shards); NeMo Gym's resume chain is not supported")
		}
		if bm.Run == nil {
			bm.Run = tree.NewMap()
		}
		dr.Benchmarks = append(dr.Benchmarks, bm)
	})
	o.done()
	return dr
}

// isThisMachine is NeMo Gym's test for submitting without SSH: the
// hostname is this machine's own.
func isThisMachine(hostname string) bool {
	h, err := os.Hostname()
	return err == nil && h == hostname
}

// validate runs NeMo Gym's cross-field rules.
func (c *Config) validate(computes []string) error {
	if len(computes) > 1 {
		return &ConfigError{Msg: fmt.Sprintf("Submit config '%s' is invalid: invalid configuration: compute (Multiple compute resources are not supported yet (%s).).", c.File, strings.Join(slices.Sorted(slices.Values(computes)), ", "))}
	}
	if len(computes) == 0 {
		return &ConfigError{Msg: fmt.Sprintf("Submit config '%s' is invalid: invalid configuration: compute (one Slurm compute entry is required).", c.File)}
	}
	if isThisMachine(c.Compute.Hostname) {
		// NeMo Gym's rule: naming the machine gym runs on is submitting
		// here, without SSH.
		c.Compute.Hostname = ""
	}
	pidVars := map[string]string{}
	for _, s := range c.Services {
		if !benchmarkName.MatchString(s.Name) {
			return &ConfigError{Msg: fmt.Sprintf("Invalid service name '%s': names must match %s so they can name log files and script variables.", s.Name, benchmarkName)}
		}
		if other, ok := pidVars[pidVar(s.Name)]; ok {
			return &ConfigError{Msg: fmt.Sprintf("Services '%s' and '%s' would share the script variable %s; rename one.", other, s.Name, pidVar(s.Name))}
		}
		pidVars[pidVar(s.Name)] = s.Name
		if s.Health != nil && s.Health.Port <= 0 {
			return &ConfigError{Msg: fmt.Sprintf("Service '%s' has a health_check without a port; give health_check.port.", s.Name)}
		}
	}
	if !safePath.MatchString(c.Output) {
		return &ConfigError{Msg: fmt.Sprintf("job.output_path %q has characters that #SBATCH lines and override values cannot carry as they are; use letters, digits and / . _ - only", c.Output)}
	}
	var bad []string
	for _, b := range c.Driver.Benchmarks {
		if !benchmarkName.MatchString(b.Name) {
			bad = append(bad, "'"+b.Name+"'")
		}
	}
	if len(bad) > 0 {
		return &ConfigError{Msg: fmt.Sprintf("Invalid benchmark name(s) %s: names must match %s so they can name job directories.", strings.Join(bad, ", "), benchmarkName)}
	}
	pools := map[string]NodePool{}
	nodes := 0
	for _, p := range c.Compute.Pools {
		pools[p.Name] = p
		nodes += p.Nodes
	}
	if nodes > 1 {
		return &ConfigError{Msg: fmt.Sprintf("compute '%s' asks for %d nodes per job, but gym runs a job's services and driver on one node, so the others would sit idle; set nodes: 1 and spread an evaluation over nodes with --shards", c.Compute.Name, nodes)}
	}
	for _, s := range c.Services {
		if s.Placement != "" && s.Placement != c.Compute.Name {
			return &ConfigError{Msg: fmt.Sprintf("Service '%s' placement '%s' does not match any compute resource (%s).", s.Name, s.Placement, c.Compute.Name)}
		}
		if s.NodePool != "" {
			if _, ok := pools[s.NodePool]; !ok {
				return &ConfigError{Msg: fmt.Sprintf("Service '%s' node_pool '%s' does not match any node pool of compute '%s' (%s).", s.Name, s.NodePool, c.Compute.Name, poolNames(c.Compute.Pools))}
			}
		}
		if err := c.checkFootprint(s); err != nil {
			return err
		}
	}
	return c.fillPolicy()
}

// checkFootprint holds a vllm service's GPUs to what its node can give:
// gym runs every service on one node.
func (c *Config) checkFootprint(s Service) error {
	if s.Type != "vllm" {
		return nil
	}
	scope := c.Compute.Pools
	if s.NodePool != "" {
		for _, p := range c.Compute.Pools {
			if p.Name == s.NodePool {
				scope = []NodePool{p}
			}
		}
	}
	gpus := -1
	for _, p := range scope {
		if p.GPUsPerNode != nil {
			gpus = max(gpus, *p.GPUsPerNode)
		}
	}
	if gpus < 0 {
		return nil
	}
	needed := s.TensorParallel * s.PipelineParallel * s.Instances
	footprint := fmt.Sprintf("tensor_parallel_size=%d x pipeline_parallel_size=%d x number_of_instances=%d", s.TensorParallel, s.PipelineParallel, s.Instances)
	if needed > gpus {
		return &ConfigError{Msg: fmt.Sprintf("Service '%s' requires %d GPUs (%s), which exceeds the node pool's gpus_per_node (%d) on compute '%s'. Reduce number_of_instances/tensor_parallel_size/pipeline_parallel_size, or add more nodes/GPUs.", s.Name, needed, footprint, gpus, c.Compute.Name)}
	}
	return nil
}

// IdleGPUs warns of a vllm service that leaves GPUs of its node unused.
func (c *Config) IdleGPUs() []string {
	var warnings []string
	for _, s := range c.Services {
		if s.Type != "vllm" {
			continue
		}
		for _, p := range c.Compute.Pools {
			if (s.NodePool == "" || p.Name == s.NodePool) && p.GPUsPerNode != nil {
				if needed := s.TensorParallel * s.PipelineParallel * s.Instances; needed < *p.GPUsPerNode {
					warnings = append(warnings, fmt.Sprintf("Service '%s' uses %d GPU(s) of node pool '%s', leaving %d GPU(s) idle on each node", s.Name, needed, p.Name, *p.GPUsPerNode-needed))
				}
			}
		}
	}
	return warnings
}

// fillPolicy points every benchmark's run at driver.policy_model.
func (c *Config) fillPolicy() error {
	if c.Driver.PolicyModel == "" {
		return nil
	}
	var policy *Service
	var names []string
	for i := range c.Services {
		names = append(names, c.Services[i].Name)
		if c.Services[i].Name == c.Driver.PolicyModel {
			policy = &c.Services[i]
		}
	}
	if policy == nil {
		return &ConfigError{Msg: fmt.Sprintf("driver.policy_model '%s' does not match any service (%s).", c.Driver.PolicyModel, strings.Join(slices.Sorted(slices.Values(names)), ", "))}
	}
	if policy.Type != "vllm" {
		return nil
	}
	served := policy.ServedModelName
	if served == "" {
		served = policy.Model
	}
	values := []KV{
		{"policy_base_url", fmt.Sprintf("http://%s:%d/v1", c.Driver.PolicyHost, policy.Port)},
		{"policy_model_name", served},
		{"policy_api_key", "dummy"},
	}
	for _, b := range c.Driver.Benchmarks {
		var clash []string
		for _, kv := range values {
			if b.Run.Has(kv.Key) {
				clash = append(clash, "'"+kv.Key+"'")
			}
		}
		if len(clash) > 0 {
			return &ConfigError{Msg: fmt.Sprintf("Benchmark '%s' run config already sets [%s] but driver.policy_model is also set. Remove one.", b.Name, strings.Join(clash, ", "))}
		}
		for _, kv := range values {
			b.Run.Set(kv.Key, tree.NewString(kv.Value))
		}
	}
	return nil
}

// ParseWalltime reads a Slurm time limit (minutes, MM:SS, HH:MM:SS,
// D-HH, D-HH:MM, D-HH:MM:SS) into seconds.
func ParseWalltime(s string) (int, error) {
	bad := fmt.Errorf("walltime %q is not a Slurm time limit: use minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS, e.g. '04:00:00' or '2-00:00:00'", s)
	days := 0
	rest := s
	if d, r, ok := strings.Cut(s, "-"); ok {
		n, err := atoiStrict(d)
		if err != nil {
			return 0, bad
		}
		days, rest = n, r
	}
	parts := strings.Split(rest, ":")
	nums := make([]int, len(parts))
	for i, p := range parts {
		n, err := atoiStrict(p)
		if err != nil {
			return 0, bad
		}
		nums[i] = n
	}
	var secs int
	switch {
	case days > 0 || strings.Contains(s, "-"):
		// After a day count the fields are hours[:minutes[:seconds]].
		if len(nums) > 3 {
			return 0, bad
		}
		mult := []int{3600, 60, 1}
		for i, n := range nums {
			secs += n * mult[i]
		}
		secs += days * 86400
	case len(nums) == 1:
		secs = nums[0] * 60
	case len(nums) == 2:
		secs = nums[0]*60 + nums[1]
	case len(nums) == 3:
		secs = nums[0]*3600 + nums[1]*60 + nums[2]
	default:
		return 0, bad
	}
	if secs <= 0 || secs > math.MaxInt32 {
		return 0, bad
	}
	return secs, nil
}

// atoiStrict reads digits only: no sign, no space.
func atoiStrict(s string) (int, error) {
	n, err := strconv.ParseUint(s, 10, 30)
	return int(n), err
}

func poolNames(pools []NodePool) string {
	if len(pools) == 0 {
		return "none declared"
	}
	var names []string
	for _, p := range pools {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}
