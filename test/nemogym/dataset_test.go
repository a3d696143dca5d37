package nemogym

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/datastore/gitlabtest"
	"github.com/nemo-gym-go/gym/internal/hub/hubtest"
)

// datasetRows has what a JSON round trip through pandas could change:
// non-ASCII text, a slash, a float, nesting.
const datasetRows = `{"responses_create_params": {"input": [{"role": "user", "content": "Wie viel ist 1/2 + 1/2? é ü 数"}]}, "expected": "1", "weight": 0.5}
{"responses_create_params": {"input": [{"role": "user", "content": "2+2?"}], "temperature": 1.0}, "expected": "4", "weight": 1.5}
`

// gymOnHost runs gym with only itself on PATH, in the workspace.
func (h *harness) gymOnHost(t *testing.T, stdin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(buildDir, "gym"), args...)
	cmd.Dir = h.work
	cmd.Env = append([]string{"PATH=" + buildDir, "HOME=" + filepath.Join(h.work, "home"), "NO_COLOR=1"}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gym %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (h *harness) ngRun(t *testing.T, env, line string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := h.run(ctx, "env "+env+" NO_PROXY=127.0.0.1 no_proxy=127.0.0.1 "+line)
	if err != nil {
		t.Fatalf("NeMo Gym's %s: %v\n%s", line, err, out)
	}
	return out
}

func (h *harness) readBytes(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.work, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonRows parses JSON Lines into values, so two writers' rows compare
// by content.
func jsonRows(t *testing.T, b []byte) []any {
	t.Helper()
	var rows []any
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		rows = append(rows, v)
	}
	return rows
}

// TestDatasetHubMatchesNeMoGym uploads one dataset with gym and with NeMo
// Gym 0.7.0's own `ng dataset upload` (huggingface_hub 2.4 over the
// Hub's LFS protocol) to one local Hub: the repositories must hold the same
// files, byte for byte, the card included, for a new repo and for one whose
// card has metadata. Then each reads what the other uploaded: NeMo Gym's
// download of gym's raw file is the same bytes, its load_dataset split the
// same rows.
func TestDatasetHubMatchesNeMoGym(t *testing.T) {
	h := newHarness(t)
	hub := hubtest.New()
	defer hub.Close()
	hub.Token = "hf_oracle_secret"
	hub.LFSThreshold = 64
	hub.AddCollection("my-org/nemo-gym-data-abc123")
	h.write("env.yaml", "hf_token: hf_oracle_secret\nhf_organization: my-org\nhf_collection_name: NeMo Gym Data\nhf_collection_slug: abc123\n", 0o644)
	h.write("resources_servers/my_rs/configs/my_rs.yaml", "my_rs:\n  resources_servers:\n    my_rs:\n      entrypoint: app.py\n      domain: Math\n", 0o644)
	h.write("data/train.jsonl", datasetRows, 0o644)
	card := "---\nlicense: mit\ntags:\n- math\n- nemo-gym\npretty_name: My set\n---\n# My set\n\nRows for RL.\n"
	for _, who := range []string{"gym", "ng"} {
		hub.AddFile("my-org/Nemotron-RL-math-"+who+"card", "main", "README.md", []byte(card))
	}
	ngEnv := "HF_ENDPOINT=" + hub.Hub.URL + " HF_HOME=" + filepath.Join(h.in, "hf") + " HF_HUB_DISABLE_XET=1 HF_HUB_DISABLE_TELEMETRY=1"
	gymEnv := []string{"HF_ENDPOINT=" + hub.Hub.URL}
	resource := "+resource_config_path=resources_servers/my_rs/configs/my_rs.yaml"
	// A new repo, one whose card has metadata, and a pull request to that one.
	for _, name := range []string{"set", "card", "card --create-pr"} {
		rev, want := "main", "Dataset upload successful"
		if strings.HasSuffix(name, "--create-pr") {
			rev, want = "refs/pr/1", "Pull Request created: "+hub.Hub.URL+"/datasets/my-org/Nemotron-RL-math-ngcard/discussions/1"
		}
		start := time.Now()
		gymOut := h.gymOnHost(t, "", gymEnv, append([]string{"dataset", "upload", "-i", "data/train.jsonl", "--name", "gym" + strings.Fields(name)[0], resource}, strings.Fields(name)[1:]...)...)
		gymTook := time.Since(start)
		start = time.Now()
		ngOut := h.ngRun(t, ngEnv, "ng dataset upload -i data/train.jsonl --name ng"+name+" "+resource)
		ngTook := time.Since(start)
		if !strings.Contains(ngOut, want) || !strings.Contains(gymOut, strings.ReplaceAll(want, "ngcard", "gymcard")) {
			t.Fatalf("the uploads' messages lack %q:\n gym: %s\n  ng: %s", want, gymOut, ngOut)
		}
		name = strings.Fields(name)[0]
		for _, f := range []string{"README.md", "train.jsonl"} {
			g, gok := hub.File("my-org/Nemotron-RL-math-gym"+name, rev, f)
			n, nok := hub.File("my-org/Nemotron-RL-math-ng"+name, rev, f)
			if !gok || !nok || !bytes.Equal(g, n) {
				t.Errorf("%s of the %s upload: gym %q (%v), NeMo Gym %q (%v)", f, name, g, gok, n, nok)
			}
		}
		if !hub.IsLFS("my-org/Nemotron-RL-math-gym"+name, rev, "train.jsonl") || !hub.IsLFS("my-org/Nemotron-RL-math-ng"+name, rev, "train.jsonl") {
			t.Error("train.jsonl was not stored in LFS by both")
		}
		t.Logf("upload %s: same repository files; NeMo Gym %s, gym %s", name, ngTook.Round(100*time.Millisecond), gymTook.Round(time.Millisecond))
	}
	var summaries []string
	for _, c := range hub.Commits {
		summaries = append(summaries, c.Repo+": "+c.Summary+" ["+strings.Join(c.Files, ",")+"]")
	}
	t.Logf("commits:\n%s", strings.Join(summaries, "\n"))
	if items := hub.Collection("my-org/nemo-gym-data-abc123"); len(items) != 4 {
		t.Errorf("collection %v; want the four repos", items)
	}
	if hub.StorageAuth != 0 {
		t.Errorf("a token reached the storage host %d times", hub.StorageAuth)
	}

	// NeMo Gym reads gym's upload: the raw file, and the train split.
	h.ngRun(t, ngEnv, "ng dataset download --repo-id my-org/Nemotron-RL-math-gymset --artifact train.jsonl -o ng_raw/train.jsonl")
	if got := h.readBytes(t, "ng_raw/train.jsonl"); string(got) != datasetRows {
		t.Errorf("NeMo Gym's download of gym's file:\n%s", got)
	}
	h.ngRun(t, ngEnv, "ng dataset download --repo-id my-org/Nemotron-RL-math-gymset --split train -o ng_split/train.jsonl")
	// gym reads NeMo Gym's upload the same two ways.
	h.gymOnHost(t, "", gymEnv, "dataset", "download", "--repo-id", "my-org/Nemotron-RL-math-ngset", "--artifact", "train.jsonl", "-o", "gym_raw/train.jsonl")
	if got := h.readBytes(t, "gym_raw/train.jsonl"); string(got) != datasetRows {
		t.Errorf("gym's download of NeMo Gym's file:\n%s", got)
	}
	h.gymOnHost(t, "", gymEnv, "dataset", "download", "--repo-id", "my-org/Nemotron-RL-math-ngset", "--split", "train", "-o", "gym_split/train.jsonl")
	ngSplit, gymSplit := h.readBytes(t, "ng_split/train.jsonl"), h.readBytes(t, "gym_split/train.jsonl")
	if !reflect.DeepEqual(jsonRows(t, ngSplit), jsonRows(t, gymSplit)) {
		t.Errorf("the train split's rows differ:\n  ng: %s\n gym: %s", ngSplit, gymSplit)
	}
	t.Logf("split rows equal; NeMo Gym's bytes (pandas) %q, gym's %q", firstLine(ngSplit), firstLine(gymSplit))

	// A split held in parquet, laid out as the Hub's datasets usually are.
	for _, rows := range []string{"aime", "mmlu_pro"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "internal", "prepare", "testdata", rows+".rows.json"))
		if err != nil {
			t.Fatal(err)
		}
		data, err := hubtest.ParquetFromJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		repo := "my-org/pq-" + strings.ReplaceAll(rows, "_", "-")
		hub.AddFile(repo, "main", "README.md", []byte("# rows\n"))
		hub.AddFile(repo, "main", "data/test-00000-of-00001.parquet", data)
		h.ngRun(t, ngEnv, "ng dataset download --repo-id "+repo+" --split test -o ng_pq/"+rows+".jsonl")
		h.gymOnHost(t, "", gymEnv, "dataset", "download", "--repo-id", repo, "--split", "test", "-o", "gym_pq/"+rows+".jsonl")
		ngRows, gymRows := h.readBytes(t, "ng_pq/"+rows+".jsonl"), h.readBytes(t, "gym_pq/"+rows+".jsonl")
		if !reflect.DeepEqual(jsonRows(t, ngRows), jsonRows(t, gymRows)) {
			t.Errorf("the parquet split %s differs:\n  ng: %s\n gym: %s", rows, ngRows, gymRows)
		}
		t.Logf("parquet split %s: %d rows equal", rows, len(jsonRows(t, gymRows)))
	}
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return string(line)
}

// TestDatasetGitLabMatchesNeMoGym runs NeMo Gym 0.7.0's GitLab storage
// (MLflow 3's MlflowClient and HTTP artifact repository) and gym's against
// one local GitLab registry: each downloads what the other uploaded, byte
// for byte, and each deletes what the other uploaded.
func TestDatasetGitLabMatchesNeMoGym(t *testing.T) {
	h := newHarness(t)
	gl := gitlabtest.New()
	defer gl.Close()
	gl.Token = "glpat-oracle-secret"
	h.write("env.yaml", "mlflow_tracking_uri: "+gl.TrackingURI()+"\nmlflow_tracking_token: glpat-oracle-secret\n", 0o644)
	h.write("data/train.jsonl", datasetRows, 0o644)
	ngEnv := "MLFLOW_HTTP_REQUEST_MAX_RETRIES=0"

	gymOut := h.gymOnHost(t, "", nil, "dataset", "upload", "--storage", "gitlab", "--name", "gymset", "--revision", "0.0.1", "-i", "data/train.jsonl")
	gymCalls := len(gl.Requests())
	ngOut := h.ngRun(t, ngEnv, "ng dataset upload --storage gitlab --name ngset --revision 0.0.1 -i data/train.jsonl")
	// The same calls, in the same order; only the version's id differs.
	calls := gl.Requests()
	if g, n := strings.Join(calls[:gymCalls], "\n"), strings.ReplaceAll(strings.Join(calls[gymCalls:], "\n"), "/ml_models/2/", "/ml_models/1/"); g != n {
		t.Errorf("upload calls differ:\n gym:\n%s\n  ng:\n%s", g, n)
	}
	if i, j := strings.Index(gymOut, "Download this artifact:"), strings.Index(ngOut, "Download this artifact:"); i < 0 || j < 0 ||
		strings.ReplaceAll(gymOut[i:], "gymset", "X") != strings.ReplaceAll(strings.TrimRight(ngOut[j:], "\n")+"\n\n", "ngset", "X") {
		t.Errorf("upload messages differ:\n gym: %q\n  ng: %q", gymOut, ngOut)
	}
	for _, name := range []string{"gymset", "ngset"} {
		if b, ok := gl.File(name, "0.0.1", "train.jsonl"); !ok || string(b) != datasetRows {
			t.Errorf("the registry's %s: %q, %v", name, b, ok)
		}
	}
	// NeMo Gym opens the output without making its folder.
	h.ngRun(t, ngEnv, "ng dataset download --storage gitlab --name gymset --revision 0.0.1 --artifact train.jsonl -o ng_dl.jsonl")
	h.gymOnHost(t, "", nil, "dataset", "download", "--storage", "gitlab", "--name", "ngset", "--revision", "0.0.1", "--artifact", "train.jsonl", "-o", "gym_dl/train.jsonl")
	for _, f := range []string{"ng_dl.jsonl", "gym_dl/train.jsonl"} {
		if got := h.readBytes(t, f); string(got) != datasetRows {
			t.Errorf("%s: %q", f, got)
		}
	}
	h.ngRun(t, ngEnv, "bash -c 'echo y | ng dataset rm --name gymset'")
	h.gymOnHost(t, "y\n", nil, "dataset", "rm", "--name", "ngset")
	if gl.HasModel("gymset") || gl.HasModel("ngset") {
		t.Errorf("after both deletions: gymset %v, ngset %v", gl.HasModel("gymset"), gl.HasModel("ngset"))
	}
	t.Logf("requests NeMo Gym and gym made:\n%s", strings.Join(gl.Requests(), "\n"))
}
