package nemogym

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/hub/hubtest"
)

// hubDataset is one Hub dataset a ported prepare.py reads, served by a
// local Hub both ways: as the repository's own files (what NeMo Gym's
// load_dataset reads) and as the Hub's parquet conversion (what gym reads).
type hubDataset struct {
	benchmark, repo, config, split, revision string
	rows                                     string // internal/prepare/testdata/<rows>.rows.json
	card                                     string // README.md; its YAML header may name the data files
	files                                    []string
	token                                    string
}

var hubDatasets = []hubDataset{
	{benchmark: "aime24", repo: "HuggingFaceH4/aime_2024", config: "default", split: "train", rows: "aime",
		card: "# AIME 2024\n", files: []string{"data/train-00000-of-00001.parquet"}},
	{benchmark: "apex25", repo: "MathArena/apex_2025", config: "default", split: "train", revision: "ac8a641db12cc87be39e61ea89f2e04c80c5f2e7", rows: "aime_float",
		card: "# APEX 2025\n", files: []string{"data/train-00000-of-00001.parquet"}},
	{benchmark: "gpqa", repo: "Idavidrein/gpqa", config: "gpqa_diamond", split: "train", rows: "gpqa", token: "hf_test_gated",
		card:  "---\nconfigs:\n- config_name: gpqa_diamond\n  data_files: gpqa_diamond.parquet\n- config_name: gpqa_main\n  data_files: gpqa_main.parquet\n---\n# GPQA\n",
		files: []string{"gpqa_diamond.parquet", "gpqa_main.parquet"}},
	{benchmark: "mmlu_pro", repo: "TIGER-Lab/MMLU-Pro", config: "default", split: "test", rows: "mmlu_pro",
		card: "# MMLU-Pro\n", files: []string{"data/test-00000-of-00001.parquet", "data/validation-00000-of-00001.parquet"}},
}

// TestPrepareMatchesNeMoGymPrepare runs NeMo Gym 0.7.0's own `ng eval
// prepare` (its prepare.py, the datasets library, huggingface_hub) and
// gym's port, with only gym on PATH, against the same local Hub: the
// JSONL files must be equal byte for byte.
func TestPrepareMatchesNeMoGymPrepare(t *testing.T) {
	h := newHarness(t)
	for _, dir := range []string{"benchmarks/prompts", "resources_servers/mcqa", "resources_servers/math_with_judge",
		"responses_api_agents/simple_agent", "environment_servers/legacy_agent", "responses_api_models/openai_model", "responses_api_models/vllm_model"} {
		h.copyShipped(dir)
	}
	for _, d := range hubDatasets {
		t.Run(d.benchmark, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", "internal", "prepare", "testdata", d.rows+".rows.json"))
			if err != nil {
				t.Fatal(err)
			}
			data, err := hubtest.ParquetFromJSON(raw)
			if err != nil {
				t.Fatal(err)
			}
			hub := hubtest.New()
			defer hub.Close()
			hub.Token = d.token
			rev := d.revision
			if rev == "" {
				rev = "main"
				hub.AddParquet(d.repo, d.config, d.split, data)
			}
			hub.AddFile(d.repo, rev, "README.md", []byte(d.card))
			for _, f := range d.files {
				hub.AddFile(d.repo, rev, f, data)
			}
			h.copyShipped("benchmarks/" + d.benchmark)
			out := filepath.Join(h.work, "benchmarks", d.benchmark, "data", d.benchmark+"_benchmark.jsonl")
			if d.benchmark == "gpqa" {
				out = filepath.Join(h.work, "benchmarks/gpqa/data/gpqa_diamond_benchmark.jsonl")
			}
			os.Remove(out)

			tokenArg := ""
			if d.token != "" {
				tokenArg = " +hf_token=" + d.token
			}
			start := time.Now()
			ngOut, err := h.run(context.Background(), "env HF_ENDPOINT="+hub.Hub.URL+" HF_HOME="+filepath.Join(h.in, "hf-"+d.benchmark)+
				" HF_HUB_DISABLE_TELEMETRY=1 HF_UPDATE_DOWNLOAD_COUNTS=0 NO_PROXY=127.0.0.1 no_proxy=127.0.0.1"+
				" ng eval prepare --benchmark "+d.benchmark+tokenArg+" ++uv_cache_dir=/var/cache/uv")
			if err != nil {
				t.Fatalf("NeMo Gym's eval prepare --benchmark %s: %v\n%s", d.benchmark, err, ngOut)
			}
			ngTook := time.Since(start)
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("NeMo Gym wrote no %s: %v\n%s", out, err, ngOut)
			}
			os.Remove(out)

			start = time.Now()
			gym := exec.Command(filepath.Join(buildDir, "gym"), "eval", "prepare", "--benchmark", d.benchmark, "--search-dir", h.work)
			gym.Dir = h.work
			gym.Env = []string{"PATH=" + buildDir, "HOME=" + filepath.Join(h.work, "home"), "NO_COLOR=1", "HF_ENDPOINT=" + hub.Hub.URL, "HF_TOKEN=" + d.token}
			gymOut, err := gym.CombinedOutput()
			if err != nil {
				t.Fatalf("gym eval prepare --benchmark %s with only gym on PATH: %v\n%s", d.benchmark, err, gymOut)
			}
			gymTook := time.Since(start)
			if !strings.Contains(string(gymOut), "no Python needed") {
				t.Errorf("gym did not run its port:\n%s", gymOut)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("gym's %s differs from NeMo Gym's:\n gym: %s\n  ng: %s", out, got, want)
			}
			if hub.StorageAuth != 0 {
				t.Errorf("a token reached the storage host %d times", hub.StorageAuth)
			}
			t.Logf("prepare %s: %d rows, %d bytes, identical; NeMo Gym %s, gym %s", d.benchmark, bytes.Count(want, []byte("\n")), len(want),
				ngTook.Round(100*time.Millisecond), gymTook.Round(time.Millisecond))
		})
	}
}
