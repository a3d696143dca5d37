package oracle

import (
	"archive/zip"
	"context"
	_ "embed"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

//go:embed testdata/harbor_validate.py
var harborValidateScript []byte

// harborVersion is the Harbor release whose ATIF models (ATIF-v1.0 to
// v1.8) the exports are held against.
const harborVersion = "0.26.0"

// harborPackage puts Harbor's ATIF models and validator (only those: the
// rest of Harbor needs its own dependencies) under dir/harbor, from the
// harbor wheel on PyPI, downloaded once into the CI cache.
func harborPackage(t *testing.T, dir string) {
	t.Helper()
	home, _ := os.UserHomeDir()
	cache := filepath.Join(home, ".cache", "gym-ci", "harbor-"+harborVersion)
	wheels, _ := filepath.Glob(filepath.Join(cache, "harbor-*.whl"))
	if len(wheels) == 0 {
		cmd := exec.Command("python3", "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", "3.13", "-d", cache, "harbor=="+harborVersion)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("cannot download harbor==%s from PyPI to validate against: %v\n%s", harborVersion, err, out)
		}
		wheels, _ = filepath.Glob(filepath.Join(cache, "harbor-*.whl"))
	}
	if len(wheels) != 1 {
		t.Fatalf("harbor wheel in %s: %v", cache, wheels)
	}
	zr, err := zip.OpenReader(wheels[0])
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") || !strings.HasPrefix(f.Name, "harbor/models/trajectories/") && f.Name != "harbor/utils/trajectory_validator.py" {
			continue
		}
		dst := filepath.Join(dir, f.Name)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(rc)
		rc.Close()
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, pkg := range []string{"harbor", "harbor/models", "harbor/utils"} {
		os.WriteFile(filepath.Join(dir, pkg, "__init__.py"), nil, 0o644)
	}
}

// Every trajectory gym exports holds against Harbor's own ATIF validator:
// a tool-calling benchmark with its model calls captured (per-step
// metrics), a judged one (the judge's calls kept under extra), and rows
// with what ATIF cannot represent kept under extra (without --strict).
func TestATIFExportValidatesWithHarbor(t *testing.T) {
	e := setup(t)
	pkg := filepath.Join(e.tmp, "harborpkg")
	harborPackage(t, pkg)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(e.tmp, "atif-work")
	os.MkdirAll(work, 0o755)
	gym := func(args ...string) {
		t.Helper()
		cmd := exec.Command(e.gym, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GYM_INSTALL_ROOT="+repo, "NEMO_GYM_EXTRA_ROOTS=", "NO_COLOR=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("gym %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, b := range []string{"example_single_tool_call", "math_example", "mcqa_example"} {
		gym("eval", "run", "--benchmark", b, "--model-type", "replay_model", "--split", "benchmark", "-o", b+"/r.jsonl", "++head_server.port=0",
			"++observability_enabled=true", "++model_call_capture_dir="+filepath.Join(work, b, "calls"))
		gym("eval", "export", "--format", "atif", "--strict", "-i", b+"/r.jsonl", "-o", b+"/atif", "--agent-version", "1.0")
	}
	odd := `{"responses_create_params":{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_image","image_url":"data:x"}]}]},"response":{"model":"m","output":[{"type":"program","id":"p1","code":"x"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}","caller":{"type":"program"}},{"type":"function_call_output","call_id":"c1","output":"ok"},{"type":"program_output","id":"po","output":"1"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done","annotations":[{"type":"url_citation"}]}]}]},"reward":0,"_ng_task_index":0,"_ng_rollout_index":0,"agent_ref":{"name":"a"}}`
	os.WriteFile(filepath.Join(work, "odd.jsonl"), []byte(odd+"\n"), 0o644)
	gym("eval", "export", "--format", "atif", "-i", "odd.jsonl", "-o", "odd")

	files, _ := filepath.Glob(filepath.Join(work, "*", "atif", "*-*.json"))
	odds, _ := filepath.Glob(filepath.Join(work, "odd", "*-*.json"))
	files = append(files, odds...)
	if len(files) != 21 {
		t.Fatalf("%d trajectory files: %v", len(files), files)
	}
	script := filepath.Join(e.tmp, "harbor_validate.py")
	os.WriteFile(script, harborValidateScript, 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stdout, stderr, code, err := e.run(ctx, e.tmp, []string{"PYTHONPATH=" + pkg}, append([]string{"/opt/nemo-gym/bin/python", script}, files...)...)
	if err != nil || code != 0 {
		t.Fatalf("Harbor's validator: exit %d, %v\n%s\n%s", code, err, stdout, stderr)
	}
	if strings.Count(stdout, "ok ") != len(files) {
		t.Errorf("validator output:\n%s", stdout)
	}
}
