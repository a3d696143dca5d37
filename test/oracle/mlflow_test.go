package oracle

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startMLflow runs a real MLflow tracking server (the mlflow the nemo-gym
// wheel depends on, in the root) on a free loopback port, with its store
// and artifacts in the test's temp dir; it is stopped at the test's end.
func startMLflow(t *testing.T, e *env) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := filepath.Join(e.tmp, "mlflow")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{e.root, "--bind", e.tmp}
	for _, kv := range e.commonEnvs {
		args = append(args, "--env", kv)
	}
	args = append(args, "--", "/opt/nemo-gym/bin/mlflow", "server", "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--backend-store-uri", "sqlite:///"+filepath.Join(dir, "mlflow.db"), "--artifacts-destination", filepath.Join(dir, "artifacts"), "--workers", "1")
	cmd := exec.Command(e.inroot, args...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	uri := "http://127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		resp, err := http.Get(uri + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return uri
			}
		}
		if cmd.ProcessState != nil {
			break
		}
	}
	t.Fatalf("mlflow server did not answer /health:\n%s", logs.String())
	return ""
}

// mlflowGet reads a REST answer of the tracking server into out.
func mlflowGet(t *testing.T, uri, path string, out any) {
	t.Helper()
	resp, err := http.Get(uri + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, data)
		}
	}
}

// An evaluation with NeMo Gym's mlflow_* keys is a run on a real MLflow
// tracking server, read back through MLflow's own REST API: the config as
// params (secrets masked) and the global_config.json artifact, the
// aggregate metrics under <agent>/<metric>, the rollouts as the
// rollouts.json table, and the run FINISHED.
func TestEvaluationTrackedInMLflow(t *testing.T) {
	e := setup(t)
	uri := startMLflow(t, e)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	cmd := exec.Command(e.gym, "eval", "run", "--benchmark", "mcqa_example", "--model-type", "replay_model", "--split", "benchmark",
		"-o", "results/mcqa.jsonl", "++head_server.port=0",
		"+mlflow_tracking_uri="+uri, "+mlflow_experiment_name=gym-oracle", "+mlflow_run_name=mcqa-replay", "+my_api_key=sk-not-to-be-seen")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GYM_INSTALL_ROOT="+repo, "NEMO_GYM_EXTRA_ROOTS=", "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gym eval run: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "MLflow: could not") {
		t.Errorf("gym warned about MLflow:\n%s", out)
	}

	var exp struct {
		Experiment struct {
			ID string `json:"experiment_id"`
		} `json:"experiment"`
	}
	mlflowGet(t, uri, "/api/2.0/mlflow/experiments/get-by-name?experiment_name=gym-oracle", &exp)
	var runs struct {
		Runs []struct {
			Info struct {
				Status      string `json:"status"`
				RunName     string `json:"run_name"`
				ArtifactURI string `json:"artifact_uri"`
			} `json:"info"`
			Data struct {
				Metrics []struct {
					Key   string  `json:"key"`
					Value float64 `json:"value"`
				} `json:"metrics"`
				Params []struct{ Key, Value string } `json:"params"`
				Tags   []struct{ Key, Value string } `json:"tags"`
			} `json:"data"`
		} `json:"runs"`
	}
	body, _ := json.Marshal(map[string]any{"experiment_ids": []string{exp.Experiment.ID}})
	resp, err := http.Post(uri+"/api/2.0/mlflow/runs/search", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(data, &runs); err != nil || len(runs.Runs) != 1 {
		t.Fatalf("runs: %v %s", err, data)
	}
	run := runs.Runs[0]
	if run.Info.Status != "FINISHED" || run.Info.RunName != "mcqa-replay" {
		t.Errorf("run info %+v", run.Info)
	}
	metrics := map[string]float64{}
	for _, m := range run.Data.Metrics {
		metrics[m.Key] = m.Value
	}
	if got, ok := metrics["mcqa_example_mcqa_simple_agent/mean/reward"]; !ok || got != 0.8 {
		t.Errorf("mean/reward = %v (%v); metrics %v", got, ok, metrics)
	}
	if _, ok := metrics["key_metrics/mcqa_example_mcqa_simple_agent/mean/reward"]; !ok {
		t.Errorf("no key metrics: %v", metrics)
	}
	params := map[string]string{}
	for _, p := range run.Data.Params {
		params[p.Key] = p.Value
	}
	tags := map[string]string{}
	for _, tag := range run.Data.Tags {
		tags[tag.Key] = tag.Value
	}
	if tags["mlflow.loggedArtifacts"] != `[{"path": "rollouts.json", "type": "table"}]` {
		t.Errorf("mlflow.loggedArtifacts = %q", tags["mlflow.loggedArtifacts"])
	}
	if params["my_api_key"] != "****" || params["mlflow_run_name"] != "mcqa-replay" {
		t.Errorf("params: my_api_key=%q mlflow_run_name=%q", params["my_api_key"], params["mlflow_run_name"])
	}
	for k, v := range params {
		if strings.Contains(v, "sk-not-to-be-seen") {
			t.Errorf("param %s holds the secret", k)
		}
	}

	artifactRoot := strings.TrimPrefix(run.Info.ArtifactURI, "mlflow-artifacts:")
	get := func(name string) []byte {
		resp, err := http.Get(uri + "/api/2.0/mlflow-artifacts/artifacts/" + strings.Trim(artifactRoot, "/") + "/" + url.PathEscape(name))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("artifact %s: %d %s", name, resp.StatusCode, data)
		}
		return data
	}
	var table struct {
		Columns []string   `json:"columns"`
		Data    [][]string `json:"data"`
	}
	if err := json.Unmarshal(get("rollouts.json"), &table); err != nil || len(table.Data) != 10 || table.Columns[0] != "Rollout" {
		t.Fatalf("rollouts.json: %v %+v", err, table)
	}
	var row map[string]any
	if err := json.Unmarshal([]byte(table.Data[0][0]), &row); err != nil || row["reward"] == nil {
		t.Errorf("a rollout cell: %v %.300s", err, table.Data[0][0])
	}
	if config := get("global_config.json"); bytes.Contains(config, []byte("sk-not-to-be-seen")) || !bytes.Contains(config, []byte(`"my_api_key": "****"`)) {
		t.Errorf("global_config.json:\n%.2000s", config)
	}

	// A sharded evaluation is one run: the shards are not tracked, the
	// aggregate that merges them is.
	tracking := []string{"+mlflow_tracking_uri=" + uri, "+mlflow_experiment_name=gym-oracle", "+mlflow_run_name=mcqa-sharded"}
	for _, shard := range []string{"0/2", "1/2"} {
		args := append([]string{"eval", "run", "--benchmark", "mcqa_example", "--model-type", "replay_model", "--split", "benchmark",
			"-o", "shards/s" + shard[:1] + ".jsonl", "++head_server.port=0", "--shard", shard, "--disable-aggregation"}, tracking...)
		cmd := exec.Command(e.gym, args...)
		cmd.Dir, cmd.Env = work, append(os.Environ(), "GYM_INSTALL_ROOT="+repo, "NEMO_GYM_EXTRA_ROOTS=", "NO_COLOR=1")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "is not tracked in MLflow on its own") {
			t.Fatalf("shard %s: %v\n%s", shard, err, out)
		}
	}
	cmd = exec.Command(e.gym, append([]string{"eval", "aggregate", "--benchmark", "mcqa_example", "-i", "shards/s*.jsonl", "-o", "shards/merged.jsonl"}, tracking...)...)
	cmd.Dir, cmd.Env = work, append(os.Environ(), "GYM_INSTALL_ROOT="+repo, "NEMO_GYM_EXTRA_ROOTS=", "NO_COLOR=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gym eval aggregate: %v\n%s", err, out)
	}
	resp, err = http.Post(uri+"/api/2.0/mlflow/runs/search", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	data, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	runs.Runs = nil
	if err := json.Unmarshal(data, &runs); err != nil || len(runs.Runs) != 2 {
		t.Fatalf("after the sharded evaluation, %d runs: %v %s", len(runs.Runs), err, data)
	}
	var merged bool
	for _, r := range runs.Runs {
		if r.Info.RunName == "mcqa-sharded" {
			merged = r.Info.Status == "FINISHED"
			for _, m := range r.Data.Metrics {
				if m.Key == "mcqa_example_mcqa_simple_agent/mean/reward" && m.Value != 0.8 {
					t.Errorf("the merged run's mean reward is %v", m.Value)
				}
			}
		}
	}
	if !merged {
		t.Errorf("no finished run for the merged evaluation: %s", data)
	}
}
