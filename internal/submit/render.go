package submit

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/override"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

const (
	// healthInterval is how often a service's health check is polled.
	healthInterval = 5
	// maxShardRequeues bounds how often a failing shard is put back in
	// the queue to resume.
	maxShardRequeues = 2
	// serviceStopGrace is how long services get to stop after the driver.
	serviceStopGrace = 30
)

// Job is one benchmark's Slurm job: its directory and scripts.
type Job struct {
	Benchmark string
	Dir       string // <run dir>/<benchmark>
	Script    string // job.sh: the evaluation, an array of Shards tasks when Shards > 1
	Aggregate string // aggregate.sh: merges the shards after every task succeeded; "" unless sharded
}

// RenderOptions say where the run lives and how it is split.
type RenderOptions struct {
	RunDir string
	Gym    string // the gym binary the job runs, staged in the run dir
	Shards int    // 1 runs the evaluation as one job
}

// Render writes each benchmark's scripts.
func (c *Config) Render(o RenderOptions) []Job {
	jobs := make([]Job, 0, len(c.Driver.Benchmarks))
	for _, b := range c.Driver.Benchmarks {
		dir := filepath.Join(o.RunDir, b.Name)
		j := Job{Benchmark: b.Name, Dir: dir, Script: c.script(b, dir, o)}
		if o.Shards > 1 {
			j.Aggregate = c.aggregateScript(b, dir, o)
		}
		jobs = append(jobs, j)
	}
	return jobs
}

func (c *Config) directives(w *strings.Builder, name, dir string, sharded bool) {
	line := func(format string, args ...any) { fmt.Fprintf(w, "#SBATCH "+format+"\n", args...) }
	line("--job-name=%s", name)
	line("--account=%s", c.Compute.Account)
	if c.Compute.Walltime != "" {
		line("--time=%s", c.Compute.Walltime)
	}
	line("--chdir=%s", dir)
	if sharded {
		line("--output=%s", filepath.Join(dir, "logs", "slurm-%A_%a.out"))
	} else {
		line("--output=%s", filepath.Join(dir, "logs", "slurm-%j.out"))
	}
	for _, kv := range c.Compute.ExtraArgs {
		line("--%s=%s", kv.Key, kv.Value)
	}
	if len(c.Compute.Pools) > 0 {
		p := c.Compute.Pools[0]
		nodes := 0
		for _, q := range c.Compute.Pools {
			nodes += q.Nodes
		}
		line("--partition=%s", p.Partition)
		line("--nodes=%d", nodes)
		line("--ntasks-per-node=%d", p.TasksPerNode)
		if p.GPUsPerNode != nil {
			line("--gpus-per-node=%d", *p.GPUsPerNode)
		}
		for _, q := range c.Compute.Pools {
			for _, kv := range q.ExtraArgs {
				line("--%s=%s", kv.Key, kv.Value)
			}
		}
	}
}

func (c *Config) script(b Benchmark, dir string, o RenderOptions) string {
	var w strings.Builder
	w.WriteString("#!/bin/bash\n")
	sharded := o.Shards > 1
	c.directives(&w, "gym-"+b.Name, dir, sharded)
	if sharded {
		fmt.Fprintf(&w, "#SBATCH --array=0-%d\n#SBATCH --requeue\n#SBATCH --open-mode=append\n", o.Shards-1)
		if len(c.Services) > 0 {
			// Services listen on fixed ports: two tasks on one node would
			// collide, and one would drive the other's server.
			w.WriteString("#SBATCH --exclusive\n")
		}
	}
	w.WriteString("\nset -o pipefail\ncd " + shellQuote(dir) + "\n")
	fail(&w, sharded)
	var pids []string
	for _, s := range c.Services {
		pids = append(pids, c.service(&w, s))
	}
	for _, s := range c.Services {
		health(&w, s)
	}
	w.WriteString("\n")
	out := filepath.Join(dir, "artifacts", "rollouts.jsonl")
	if sharded {
		out = filepath.Join(dir, "artifacts", "shard_${SLURM_ARRAY_TASK_ID}.jsonl")
	}
	// Servers bind the node's own address, so that what runs elsewhere in
	// the allocation reaches them; the head server takes a free port, since
	// tasks of one array may share a node.
	cmd := []string{shellQuote(o.Gym) + " eval run", "++output_jsonl_fpath=" + hydraShell(out), "++use_absolute_ip=true", "++head_server.port=0"}
	cmd = append(cmd, c.configArgs(b)...)
	if sharded {
		// A requeued task resumes its own shard: what its first run wrote
		// is kept, and nothing is done twice.
		cmd = append(cmd, `--shard "${SLURM_ARRAY_TASK_ID}/`+strconv.Itoa(o.Shards)+`"`, "--disable-aggregation", "--resume")
	}
	if b.Prepare != nil && b.Prepare.Len() > 0 {
		prep := []string{shellQuote(o.Gym), "eval", "prepare"}
		for _, tok := range flatten("", b.Prepare) {
			prep = append(prep, shellQuote(tok))
		}
		w.WriteString(strings.Join(prep, " ") + " || fail $?\n")
	}
	fmt.Fprintf(&w, "GYM_CMD=(\n  %s\n)\n", strings.Join(cmd, "\n  "))
	w.WriteString(envPrefix(c.Driver.Env))
	w.WriteString("srun --overlap --nodes=1 --ntasks=1 " + containerFlags(c.Driver.Container, append(c.Driver.Mounts, dir+":"+dir)) +
		"--output=" + shellQuote(filepath.Join(dir, "logs")) + "/driver-${SLURM_JOB_ID}.log \"${GYM_CMD[@]}\"\n")
	w.WriteString("DRIVER_RC=$?\n")
	if len(pids) > 0 {
		// A service that ignores SIGTERM must not hold the job to its
		// walltime.
		fmt.Fprintf(&w, `kill %[1]s 2>/dev/null
for _ in $(seq %[2]d); do kill -0 %[1]s 2>/dev/null || break; sleep 1; done
kill -9 %[1]s 2>/dev/null
wait
`, strings.Join(pids, " "), serviceStopGrace)
	}
	w.WriteString(`[ "$DRIVER_RC" = 0 ] || fail "$DRIVER_RC"` + "\n")
	return w.String()
}

// fail is the script's way out on an error: a shard goes back in the queue
// to resume, a bounded number of times (Slurm itself requeues a pre-empted
// one); anything else exits.
func fail(w *strings.Builder, sharded bool) {
	if !sharded {
		w.WriteString("fail() { exit \"$1\"; }\n")
		return
	}
	fmt.Fprintf(w, `fail() {
  if [ "${SLURM_RESTART_COUNT:-0}" -lt %d ]; then
    echo "shard ${SLURM_ARRAY_TASK_ID} failed (exit $1); requeued to resume" >&2
    scontrol requeue "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
  fi
  exit "$1"
}
`, maxShardRequeues)
}

// service starts s in the background and returns its pid variable.
func (c *Config) service(w *strings.Builder, s Service) string {
	var cmd string
	switch s.Type {
	case "vllm":
		args := []string{"vllm", "serve", shellQuote(s.Model), "--port", strconv.Itoa(s.Port), "--tensor-parallel-size", strconv.Itoa(s.TensorParallel)}
		if s.ServedModelName != "" {
			args = append(args, "--served-model-name", shellQuote(s.ServedModelName))
		}
		if s.PipelineParallel > 1 {
			args = append(args, "--pipeline-parallel-size", strconv.Itoa(s.PipelineParallel))
		}
		if s.ExtraArgs != "" {
			args = append(args, s.ExtraArgs)
		}
		if s.Instances > 1 {
			args = append(args, "--data-parallel-size", strconv.Itoa(s.Instances), "--data-parallel-rpc-port", strconv.Itoa(s.DataParallelPort))
		}
		if s.TrustRemoteCode {
			args = append(args, "--trust-remote-code")
		}
		cmd = strings.Join(args, " ")
	case "ray":
		args := []string{"ray", "start", "--block", "--head", "--port", strconv.Itoa(s.RayPort)}
		if s.RayNumCPUs != nil {
			args = append(args, "--num-cpus", strconv.Itoa(*s.RayNumCPUs))
		}
		if s.RayGPUs != nil {
			args = append(args, "--num-gpus", strconv.Itoa(*s.RayGPUs))
		}
		if s.ExtraArgs != "" {
			args = append(args, s.ExtraArgs)
		}
		cmd = strings.Join(args, " ")
	}
	if s.Pre != "" {
		cmd = "bash -c " + shellQuote(s.Pre+"\nexec "+cmd)
	}
	pid := pidVar(s.Name)
	fmt.Fprintf(w, "\n%ssrun --overlap --nodes=1 --ntasks=1 %s--output=logs/%s-${SLURM_JOB_ID}.log %s &\n%s=$!\n",
		envPrefix(s.Env), containerFlags(s.Container, s.Mounts), s.Name, cmd, pid)
	return "$" + pid
}

func health(w *strings.Builder, s Service) {
	if s.Health == nil {
		return
	}
	attempts := max(s.Health.Timeout/healthInterval, 1)
	pid := pidVar(s.Name)
	fmt.Fprintf(w, `
for attempt in $(seq %[1]d); do
  if ! kill -0 "$%[2]s" 2>/dev/null; then echo "%[3]s died during startup." >&2; fail 1; fi
  if curl -sf --max-time %[4]d %[5]s >/dev/null; then break; fi
  if [ "$attempt" = %[1]d ]; then echo "ERROR: %[3]s did not become healthy after %[1]d attempts." >&2; fail 1; fi
  sleep %[4]d
done
`, attempts, pid, s.Name, healthInterval, shellQuote(fmt.Sprintf("http://localhost:%d%s", s.Health.Port, s.Health.Path)))
}

func (c *Config) aggregateScript(b Benchmark, dir string, o RenderOptions) string {
	var w strings.Builder
	w.WriteString("#!/bin/bash\n")
	c.directives(&w, "gym-"+b.Name+"-aggregate", dir, false)
	w.WriteString("\nset -o pipefail\ncd " + shellQuote(dir) + "\n")
	// The merge reads the evaluation's own config, so that the metrics are
	// its resources server's, as an unsharded run computes them.
	cmd := []string{shellQuote(o.Gym) + " eval aggregate",
		"-i " + shellQuote(filepath.Join(dir, "artifacts", "shard_*.jsonl")),
		"-o " + shellQuote(filepath.Join(dir, "artifacts", "rollouts.jsonl"))}
	cmd = append(cmd, c.configArgs(b)...)
	fmt.Fprintf(&w, "GYM_CMD=(\n  %s\n)\n", strings.Join(cmd, "\n  "))
	fmt.Fprintf(&w, "srun --overlap --nodes=1 --ntasks=1 --output=%s/aggregate-${SLURM_JOB_ID}.log \"${GYM_CMD[@]}\"\n", shellQuote(filepath.Join(dir, "logs")))
	return w.String()
}

// configArgs are what makes a benchmark's config: the model type and the
// run's overrides.
func (c *Config) configArgs(b Benchmark) []string {
	var args []string
	if c.Driver.PolicyModelType != "" {
		args = append(args, "--model-type "+shellQuote(c.Driver.PolicyModelType))
	}
	for _, tok := range flatten("", b.Run) {
		args = append(args, shellQuote(tok))
	}
	return args
}

// containerFlags are Pyxis' flags for image; none without one, so that
// the command runs on the node itself.
func containerFlags(image string, mounts []string) string {
	if image == "" {
		return ""
	}
	f := "--no-container-mount-home "
	if len(mounts) > 0 {
		f += "--container-mounts=" + shellQuote(strings.Join(mounts, ",")) + " "
	}
	return f + "--container-image=" + shellQuote(image) + " "
}

func envPrefix(env []EnvVar) string {
	if len(env) == 0 {
		return ""
	}
	parts := []string{"env"}
	for _, v := range env {
		if v.FromVar {
			parts = append(parts, v.Name+`="${`+v.Value+`}"`)
		} else {
			parts = append(parts, v.Name+"="+shellQuote(v.Value))
		}
	}
	return strings.Join(parts, " ") + " "
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]`)

func pidVar(name string) string { return strings.ToUpper(nonWord.ReplaceAllString(name, "_")) + "_PID" }

// flatten turns a mapping of overrides into `++a.b=v` tokens, values in
// Hydra's grammar.
func flatten(prefix string, n *tree.Node) []string {
	var out []string
	for _, e := range n.Entries {
		key := e.Key
		if prefix != "" {
			key = prefix + "." + key
		}
		if e.Value.Kind == tree.Map && e.Value.Len() > 0 {
			out = append(out, flatten(key, e.Value)...)
			continue
		}
		if key == "config_paths" {
			// `+config_paths=[...]` joins the paths gym's own flags
			// (--model-type) add; `++` would replace them.
			out = append(out, "+"+key+"="+hydraValue(e.Value))
			continue
		}
		out = append(out, "++"+key+"="+hydraValue(e.Value))
	}
	return out
}

// plainHydra is a string Hydra reads back as the same string unquoted.
var plainHydra = regexp.MustCompile(`^[A-Za-z_/][A-Za-z0-9_./:@+-]*$`)

func hydraValue(v *tree.Node) string {
	switch v.Kind {
	case tree.Null:
		return "null"
	case tree.Bool, tree.Int:
		return scalarText(v)
	case tree.Float:
		return tree.PythonFloatRepr(v.Float)
	case tree.BigInt:
		return v.IntText()
	case tree.String:
		switch strings.ToLower(v.Str) {
		case "true", "false", "null", "yes", "no", "on", "off", "nan", "inf":
			return override.Quote(v.Str)
		}
		if plainHydra.MatchString(v.Str) {
			return v.Str
		}
		return override.Quote(v.Str)
	case tree.List:
		items := make([]string, len(v.Items))
		for i, it := range v.Items {
			items[i] = hydraValue(it)
		}
		return "[" + strings.Join(items, ",") + "]"
	case tree.Map:
		var parts []string
		for _, e := range v.Entries {
			parts = append(parts, e.Key+":"+hydraValue(e.Value))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return override.Quote(v.GoString())
}

// hydraShell is a path as an override value inside a double-quoted shell
// word, so that ${SLURM_ARRAY_TASK_ID} in it expands.
func hydraShell(path string) string { return `"` + path + `"` }

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@%+=,-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
