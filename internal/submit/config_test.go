package submit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func load(t *testing.T, yaml string, overrides ...string) (*Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "submit.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(path, overrides, env(map[string]string{"HF_TOKEN": "hf-secret"}))
}

const minimal = `compute:
  cluster: {type: slurm, account: acct}
services: {}
driver:
  policy_model_type: replay_model
  benchmarks:
    mcqa: {run: {config_paths: [benchmarks/mcqa_example/config.yaml], split: benchmark}}
job: {output_path: results}
`

const withPolicy = `compute:
  cluster:
    type: slurm
    account: acct
    walltime: "2-00:00:00"
    node_pools:
      gpu: {partition: batch, nodes: 1, gpus_per_node: 8}
services:
  policy:
    type: vllm
    container: nvcr.io/nvidia/vllm:25.01
    model: Qwen/Qwen3-8B
    tensor_parallel_size: 4
    env: {HF_TOKEN: "host:HF_TOKEN", CUDA_CACHE: "lit:/tmp/cuda", WORK: "runtime:SLURM_SUBMIT_DIR"}
driver:
  policy_model: policy
  benchmarks:
    aime: {run: {config_paths: [benchmarks/aime25/config.yaml], split: benchmark}}
job: {output_path: /out}
`

func TestLoadReadsNeMoGymsSubmitConfig(t *testing.T) {
	c, err := load(t, withPolicy, "compute.cluster.account=other")
	if err != nil {
		t.Fatal(err)
	}
	if c.Compute.Account != "other" || c.Compute.Walltime != "2-00:00:00" || len(c.Compute.Pools) != 1 || *c.Compute.Pools[0].GPUsPerNode != 8 {
		t.Errorf("compute %+v", c.Compute)
	}
	s := c.Services[0]
	if s.Port != 8000 || s.TensorParallel != 4 || s.Health.Path != "/health" || s.Health.Port != 8000 || s.Health.Timeout != 60 {
		t.Errorf("service %+v", s)
	}
	// A host: value is passed on by sbatch, never written into the script.
	want := []EnvVar{{"HF_TOKEN", "HF_TOKEN", true}, {"CUDA_CACHE", "/tmp/cuda", false}, {"WORK", "SLURM_SUBMIT_DIR", true}}
	if len(s.Env) != 3 || s.Env[0] != want[0] || s.Env[1] != want[1] || s.Env[2] != want[2] {
		t.Errorf("env %v", s.Env)
	}
	run := c.Driver.Benchmarks[0].Run
	for k, v := range map[string]string{"policy_base_url": "http://localhost:8000/v1", "policy_model_name": "Qwen/Qwen3-8B", "policy_api_key": "dummy"} {
		if n := run.Get(k); n == nil || n.Str != v {
			t.Errorf("run.%s = %v, want %s", k, n, v)
		}
	}
	if c.Output != "/out" {
		t.Errorf("output %s", c.Output)
	}
}

func TestLoadRefusesWhatCannotBeSubmitted(t *testing.T) {
	tests := []struct {
		name, yaml string
		overrides  []string
		want       string
	}{
		{"unknown key, with its line", minimal + "jobs: 1\n", nil, "jobs (Extra inputs are not permitted, at "},
		{"unknown nested key", strings.Replace(minimal, "account: acct", "account: acct, acount: x", 1), nil, "compute.cluster.acount (Extra inputs are not permitted"},
		{"missing required", "services: {}\ndriver: {benchmarks: {}}\njob: {}\n", nil, "missing required configuration: compute, job.output_path"},
		{"two computes", strings.Replace(minimal, "compute:\n", "compute:\n  other: {type: slurm, account: a}\n", 1), nil, "Multiple compute resources are not supported yet (cluster, other)."},
		{"not slurm", strings.Replace(minimal, "type: slurm", "type: k8s", 1), nil, "does not match any of the expected tags: 'slurm'"},
		{"walltime", strings.Replace(minimal, "account: acct", "account: acct, walltime: 'soon'", 1), nil, `walltime "soon" is not a Slurm time limit`},
		{"too many GPUs", strings.Replace(withPolicy, "tensor_parallel_size: 4", "tensor_parallel_size: 16", 1), nil, "Service 'policy' requires 16 GPUs (tensor_parallel_size=16 x pipeline_parallel_size=1 x number_of_instances=1), which exceeds the node pool's gpus_per_node (8) on compute 'cluster'"},
		{"unknown policy model", strings.Replace(withPolicy, "policy_model: policy", "policy_model: judge", 1), nil, "driver.policy_model 'judge' does not match any service (policy)."},
		{"policy key set twice", withPolicy, []string{"+driver.benchmarks.aime.run.policy_api_key=x"}, "Benchmark 'aime' run config already sets ['policy_api_key'] but driver.policy_model is also set. Remove one."},
		{"env without prefix", strings.Replace(withPolicy, `"lit:/tmp/cuda"`, "/tmp/cuda", 1), nil, "'/tmp/cuda' must start with one of the prefixes 'lit:', 'host:', or 'runtime:'"},
		{"host env unset", strings.Replace(withPolicy, "host:HF_TOKEN", "host:NOPE", 1), nil, "references host:NOPE, but 'NOPE' is not set in the submitting shell's environment"},
		{"prefill/decode", strings.Replace(withPolicy, "type: vllm", "type: vllm_pd", 1), nil, "prefill/decode disaggregated vLLM (vllm_pd)"},
		{"otel on", minimal + "otel: {enabled: true}\n", nil, "OpenTelemetry collector"},
		{"benchmark name", strings.Replace(minimal, "mcqa:", "'my bench':", 1), nil, "Invalid benchmark name(s) 'my bench'"},
		{"unknown pool", strings.Replace(withPolicy, "tensor_parallel_size: 4", "tensor_parallel_size: 4\n    node_pool: cpu", 1), nil, "Service 'policy' node_pool 'cpu' does not match any node pool of compute 'cluster' (gpu)."},
		{"scratch added by override", "_x: 1\n" + minimal, []string{"+_y=2"}, "Refusing override '+_y=2': scratch namespace '_y' must be fully defined in the config file"},
		{"several nodes", strings.Replace(withPolicy, "nodes: 1,", "nodes: 2,", 1), nil, "asks for 2 nodes per job, but gym runs a job's services and driver on one node"},
		{"service name", strings.Replace(withPolicy, "  policy:\n    type: vllm", "  'my policy':\n    type: vllm", 1), nil, "Invalid service name 'my policy'"},
		{"ray health without port", strings.Replace(minimal, "services: {}", "services: {r: {type: ray, health_check: {path: /api/version}}}", 1), nil, "Service 'r' has a health_check without a port"},
		{"output path", strings.Replace(minimal, "output_path: results", "output_path: '/tmp/my results'", 1), nil, `job.output_path "/tmp/my results" has characters`},
		{"remote host, relative output", strings.Replace(minimal, "account: acct", "account: acct, hostname: login.example.com", 1), nil, "job.output_path (is relative, but the run directory is on login.example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, tt.yaml, tt.overrides...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant it to say %q", err, tt.want)
			}
		})
	}
}

// Scratch keys are interpolated from, then dropped.
func TestLoadDropsScratchKeys(t *testing.T) {
	c, err := load(t, "_acct: shared\n"+strings.Replace(minimal, "account: acct", "account: '${_acct}'", 1))
	if err != nil {
		t.Fatal(err)
	}
	if c.Compute.Account != "shared" {
		t.Errorf("account %q", c.Compute.Account)
	}
}

func TestParseWalltime(t *testing.T) {
	for in, want := range map[string]int{"90": 5400, "10:30": 630, "04:00:00": 14400, "2-00:00:00": 172800, "0-12:30": 45000, "1-6": 108000} {
		if got, err := ParseWalltime(in); err != nil || got != want {
			t.Errorf("ParseWalltime(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "1:2:3:4", "-1", "1-", "0", "00:00:00", "1-2:3:4:5"} {
		if _, err := ParseWalltime(in); err == nil {
			t.Errorf("ParseWalltime(%q) accepted", in)
		}
	}
}
