package config

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nemo-gym-go/gym/internal/resolve"
)

// writeGymTree lays out a tree shaped like NeMo Gym's: 300 component configs
// (resources servers, agents, models) and 110 benchmarks, each benchmark
// chaining a resources-server config that chains the agent and model.
func writeGymTree(tb testing.TB, dir string) {
	tb.Helper()
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	write("responses_api_models/openai_model/configs/openai_model.yaml", `policy_model:
  responses_api_models:
    openai_model:
      entrypoint: app.py
      openai_base_url: ${policy_base_url}
      openai_api_key: ${policy_api_key}
      openai_model: ${policy_model_name}
      openai_default_headers: {}
      drop_input_reasoning_items: ${oc.env:POLICY_DROP_REASONING_ITEMS,false}
`)
	for i := range 150 {
		write(fmt.Sprintf("resources_servers/env_%03d/configs/env_%03d.yaml", i, i), fmt.Sprintf(`config_paths:
- responses_api_models/openai_model/configs/openai_model.yaml
env_%03d_resources_server:
  resources_servers:
    env_%03d:
      entrypoint: app.py
      domain: math
      description: Environment number %d, with a description long enough to fold in the output like real ones do.
      judge_model_server:
        type: responses_api_models
        name: policy_model
      judge_responses_create_params:
        input: []
        max_output_tokens: 4096
        temperature: 0.0
env_%03d_simple_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server:
        type: resources_servers
        name: env_%03d_resources_server
      model_server:
        type: responses_api_models
        name: policy_model
      datasets:
      - name: train
        type: train
        jsonl_fpath: resources_servers/env_%03d/data/train.jsonl
        num_repeats: 1
        license: Apache 2.0
      - name: example
        type: example
        jsonl_fpath: resources_servers/env_%03d/data/example.jsonl
`, i, i, i, i, i, i, i))
		write(fmt.Sprintf("responses_api_agents/agent_%03d/configs/agent_%03d.yaml", i, i), fmt.Sprintf("agent_%03d:\n  max_steps: 10\n", i))
	}
	for i := range 110 {
		write(fmt.Sprintf("benchmarks/bench_%03d/config.yaml", i), fmt.Sprintf(`config_paths:
- resources_servers/env_%03d/configs/env_%03d.yaml
env_%03d_simple_agent:
  responses_api_agents:
    simple_agent:
      datasets:
      - name: bench_%03d
        type: benchmark
        jsonl_fpath: benchmarks/bench_%03d/data/bench.jsonl
        prepare_script: benchmarks/bench_%03d/prepare.py
        num_repeats: 4
`, i, i, i, i, i, i))
	}
}

// BenchmarkResolveBenchmarkConfig measures loading one benchmark and its
// chain (benchmark → resources server → model) through the whole pipeline
// and printing it resolved, as `gym env resolve --benchmark X` does.
func BenchmarkResolveBenchmarkConfig(b *testing.B) {
	dir := b.TempDir()
	writeGymTree(b, dir)
	next := int64(0)
	env := Env{
		LookupEnv: func(string) (string, bool) { return "", false },
		Cwd:       dir,
		Home:      dir,
		Roots:     resolve.NewRoots("", dir, dir),
		PortFree:  func(int) bool { return true },
		RandInt:   func(n int64) int64 { next++; return next % n },
	}
	req := Request{Overrides: []string{
		"+config_paths=[" + dir + "/benchmarks/bench_042/config.yaml]",
		"+policy_base_url=http://localhost:8000/v1", "+policy_api_key=k", "+policy_model_name=m",
	}}
	b.ReportAllocs()
	for b.Loop() {
		res, err := Load(context.Background(), env, req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := res.Resolved(true); err != nil {
			b.Fatal(err)
		}
	}
}

var benchTree = flag.String("benchtree", "", "write the benchmark tree to this directory (for bench/resolve.sh)")

// TestWriteBenchTree writes the benchmark tree for bench/resolve.sh; it does
// nothing unless -benchtree is given.
func TestWriteBenchTree(t *testing.T) {
	if *benchTree == "" {
		t.Skip("no -benchtree")
	}
	writeGymTree(t, *benchTree)
}
