package datastore

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/datastore/gitlabtest"
	"github.com/nemo-gym-go/gym/internal/hub"
	"github.com/nemo-gym-go/gym/internal/hub/hubtest"
	"github.com/nemo-gym-go/gym/internal/jsonl"
)

// The wanted cards are what huggingface_hub 2.4's DatasetCard printed for
// the same input after NeMo Gym's tag update.
func TestTagCard(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "---\ntags:\n- rl-environment\n- nemo-gym\n---\n"},
		{"---\nlicense: mit\ntags:\n- math\n- nemo-gym\npretty_name: X\n---\n# Title\n\nbody\n",
			"---\nlicense: mit\ntags:\n- math\n- nemo-gym\n- rl-environment\npretty_name: X\n---\n# Title\n\nbody\n"},
		{"# Only text\n", "---\ntags:\n- rl-environment\n- nemo-gym\n---\n# Only text\n"},
		{"---\nlicense: mit\nsize: null\n---\nbody", "---\nlicense: mit\ntags:\n- rl-environment\n- nemo-gym\n---\nbody"},
		// No metadata block: its closing line must follow a line break after the opening one.
		{"---\n---\n", "---\ntags:\n- rl-environment\n- nemo-gym\n---\n---\n---\n"},
		{"---\n\n---\ntext", "---\ntags:\n- rl-environment\n- nemo-gym\n---\ntext"},
	} {
		got, err := TagCard([]byte(tc.in), "rl-environment", "nemo-gym")
		if err != nil || string(got) != tc.want {
			t.Errorf("TagCard(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := TagCard([]byte("---\n- a list\n---\n"), "x"); err == nil {
		t.Error("a metadata block that is a list was accepted")
	}
}

func FuzzTagCard(f *testing.F) {
	for _, s := range []string{"", "---\na: 1\n---\ntext", "---\r\ntags: [a, b]\r\n---\r\n", "---\n---", "  ---\nx: [\n---\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := TagCard([]byte(s), "nemo-gym")
		if err != nil {
			return
		}
		again, err := TagCard(out, "nemo-gym")
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("tagging %q twice changed it: %q then %q (%v)", s, out, again, err)
		}
	})
}

func TestRepoID(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("config_paths: [a.yaml]\nmy_server:\n  resources_servers:\n    my_impl:\n      domain: Math\n      entrypoint: app.py\n"), 0o644)
	u := HFUpload{Organization: "nvidia", Prefix: "Nemotron-RL", ResourceConfig: "resources_servers/my_impl/configs/c.yaml", ResourceConfigFile: cfg,
		CollectionName: "NeMo Gym Data", CollectionSlug: "abc123"}
	if id, err := u.RepoID(); err != nil || id != "nvidia/Nemotron-RL-math-my_impl" {
		t.Errorf("RepoID = %q, %v", id, err)
	}
	u.DatasetName, u.Prefix = "mine", ""
	if id, _ := u.RepoID(); id != "nvidia/math-mine" {
		t.Errorf("RepoID with a name and no prefix = %q", id)
	}
	if c := u.CollectionID(); c != "nvidia/nemo-gym-data-abc123" {
		t.Errorf("CollectionID = %q", c)
	}
	u.ResourceConfig = "c.yaml"
	if _, err := u.RepoID(); err == nil || !strings.Contains(err.Error(), "second part") {
		t.Errorf("a path without a server name: %v", err)
	}
}

func TestCheckJSONL(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	os.WriteFile(good, []byte(`{"responses_create_params":{"input":[]}}`+"\n"+`{"responses_create_params":{}}`), 0o644)
	if err := CheckJSONL(good); err != nil {
		t.Error(err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"responses_create_params":{}}`+"\n"+`{"question":"x"}`+"\n"+"[1]\n"), 0o644)
	err := CheckJSONL(bad)
	if err == nil || !strings.Contains(err.Error(), "bad.jsonl:2: no responses_create_params") || !strings.Contains(err.Error(), "bad.jsonl:3: not a JSON object") {
		t.Errorf("CheckJSONL(bad) = %v", err)
	}
}

func gitlab(s *gitlabtest.Server, token string) *GitLab {
	return &GitLab{TrackingURI: s.TrackingURI(), Token: token, Backoff: time.Millisecond}
}

func TestGitLabRoundTrip(t *testing.T) {
	s := gitlabtest.New()
	defer s.Close()
	s.Token = "glpat-secret"
	g := gitlab(s, "glpat-secret")
	ctx := context.Background()
	dir := t.TempDir()
	in := filepath.Join(dir, "train.jsonl")
	data := bytes.Repeat([]byte(`{"responses_create_params":{}}`+"\n"), 100)
	os.WriteFile(in, data, 0o644)
	var out bytes.Buffer
	if err := UploadGitLab(ctx, g, "ds", "0.0.1", in, in, &out); err != nil {
		t.Fatal(err)
	}
	if b, ok := s.File("ds", "0.0.1", "train.jsonl"); !ok || !bytes.Equal(b, data) {
		t.Fatalf("the registry holds %d bytes, %v", len(b), ok)
	}
	if !strings.Contains(out.String(), "+artifact_fpath=train.jsonl") {
		t.Errorf("upload printed %q", out.String())
	}
	// A second upload to the same version reuses it.
	if err := UploadGitLab(ctx, g, "ds", "0.0.1", in, in, &out); err != nil {
		t.Fatal(err)
	}

	// A cut download is resumed in the same run, by a range request.
	s.CutNext("train.jsonl", 1000)
	dst := filepath.Join(dir, "out", "train.jsonl")
	if err := DownloadGitLab(ctx, g, "ds", "0.0.1", "train.jsonl", dst); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); !bytes.Equal(b, data) {
		t.Fatalf("downloaded %d bytes, want %d", len(b), len(data))
	}
	if !hasLine(s.Requests(), "Range: bytes=1000-") {
		t.Errorf("no range request after the cut: %q", s.Requests())
	}
	if _, err := os.Stat(dst + ".part"); !os.IsNotExist(err) {
		t.Error("the .part file was left behind")
	}

	err := DownloadGitLab(ctx, g, "ds", "0.0.1", "missing.jsonl", dst)
	if err == nil || !strings.Contains(err.Error(), "artifact_fpath") {
		t.Errorf("a missing artifact: %v", err)
	}
	err = DownloadGitLab(ctx, g, "ds", "9.9.9", "train.jsonl", dst)
	if !NotFound(err) || !strings.Contains(err.Error(), "no dataset ds at version 9.9.9") {
		t.Errorf("a missing version: %v", err)
	}
}

func hasLine(lines []string, part string) bool {
	for _, l := range lines {
		if strings.Contains(l, part) {
			return true
		}
	}
	return false
}

// A second run resumes what a first, cut off for good, left in the part:
// one download, from where the part ends, whether or not the server's
// answer names the file's size (bytes 100-499/*: the size is then left
// unchecked, where it was taken as 0, which failed the resumed try and
// fetched the whole file again).
func TestGitLabResumesAnEarlierRunsPart(t *testing.T) {
	for _, unsized := range []bool{false, true} {
		s := gitlabtest.New()
		defer s.Close()
		data := []byte(strings.Repeat("0123456789", 50))
		s.AddVersion("ds", "1.0.0", "d.jsonl", data)
		g := gitlab(s, "")
		ctx := context.Background()
		dst := filepath.Join(t.TempDir(), "d.jsonl")
		// The first run is cut off for good: every try stops at 100 bytes.
		g.Retries = -1
		s.CutNext("d.jsonl", 100)
		if err := DownloadGitLab(ctx, g, "ds", "1.0.0", "d.jsonl", dst); err == nil {
			t.Fatal("a cut download with no retries succeeded")
		}
		if jsonl.FileSize(dst+".part") != 100 {
			t.Fatalf(".part holds %d bytes", jsonl.FileSize(dst+".part"))
		}
		before := len(s.Requests())
		if unsized {
			s.UnsizedNext("d.jsonl")
		}
		g.Retries = 3
		if err := DownloadGitLab(ctx, g, "ds", "1.0.0", "d.jsonl", dst); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(dst); !bytes.Equal(b, data) {
			t.Errorf("unsized %v: resumed file differs", unsized)
		}
		var downloads []string
		for _, l := range s.Requests()[before:] {
			if strings.HasPrefix(l, "GET") && strings.Contains(l, "d.jsonl") {
				downloads = append(downloads, l)
			}
		}
		if len(downloads) != 1 || !strings.Contains(downloads[0], "Range: bytes=100-") {
			t.Errorf("unsized %v: downloads of the second run %q; want the one resumed from byte 100", unsized, downloads)
		}
	}
}

func TestGitLabErrors(t *testing.T) {
	s := gitlabtest.New()
	defer s.Close()
	s.Token = "glpat-write"
	s.ReadToken = "glpat-read"
	s.AddVersion("ds", "1.0.0", "d.jsonl", []byte("{}\n"))
	ctx := context.Background()
	in := filepath.Join(t.TempDir(), "d.jsonl")
	os.WriteFile(in, []byte("{}\n"), 0o644)
	for _, tc := range []struct {
		token, want string
	}{
		{"", "set mlflow_tracking_token"},
		{"glpat-wrong", "refused the token"},
		{"glpat-read", "Developer role"},
	} {
		err := UploadGitLab(ctx, gitlab(s, tc.token), "ds", "1.0.0", in, in, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.token != "" && strings.Contains(err.Error(), tc.token)) {
			t.Errorf("token %q: %v; want %q, without the token", tc.token, err, tc.want)
		}
	}
	g := gitlab(s, "glpat-write")
	g.Retries = 1
	s.Refuse(2, http.StatusTooManyRequests)
	if _, err := g.RegisteredModelExists(ctx, "ds"); err == nil || !strings.Contains(err.Error(), "rate-limiting") {
		t.Errorf("persistent 429: %v", err)
	}
	s.Refuse(1, http.StatusTooManyRequests)
	if ok, err := g.RegisteredModelExists(ctx, "ds"); err != nil || !ok {
		t.Errorf("one 429 is retried: %v, %v", ok, err)
	}
	bad := &GitLab{TrackingURI: s.URL + "/api/v4/projects/7/ml/mlflow", Token: "glpat-write"}
	if _, err := bad.RegisteredModelExists(ctx, "ds"); err == nil || !strings.Contains(err.Error(), "check mlflow_tracking_uri") {
		t.Errorf("a wrong project: %v", err)
	}
}

func TestDeleteGitLabAsks(t *testing.T) {
	s := gitlabtest.New()
	defer s.Close()
	s.AddVersion("ds", "1.0.0", "d.jsonl", []byte("{}\n"))
	g := gitlab(s, "")
	ctx := context.Background()
	var out bytes.Buffer
	for _, answer := range []string{"", "n\n", "nope\n"} {
		if err := DeleteGitLab(ctx, g, "ds", strings.NewReader(answer), &out); err != nil || !s.HasModel("ds") {
			t.Fatalf("answer %q deleted the model (%v)", answer, err)
		}
	}
	if err := DeleteGitLab(ctx, g, "ds", strings.NewReader("YES\n"), &out); err != nil || s.HasModel("ds") {
		t.Fatalf("answer YES kept the model (%v)", err)
	}
	out.Reset()
	if err := DeleteGitLab(ctx, g, "ds", strings.NewReader("y\n"), &out); err != nil || !strings.Contains(out.String(), "not found in Gitlab") {
		t.Errorf("deleting a missing model: %v, %q", err, out.String())
	}
}

func TestHFUploadThenDownload(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	s.Token = "hf_write"
	s.LFSThreshold = 64
	s.AddCollection("org/nemo-gym-abc")
	c := &hub.Client{Endpoint: s.Hub.URL, Token: "hf_write", CacheDir: t.TempDir(), Backoff: time.Millisecond}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "rs.yaml")
	os.WriteFile(cfg, []byte("rs:\n  resources_servers:\n    rs:\n      domain: coding\n"), 0o644)
	in := filepath.Join(dir, "validation.jsonl")
	rows := `{"responses_create_params":{"input":"a"}}` + "\n" + `{"responses_create_params":{"input":"b"}}` + "\n"
	os.WriteFile(in, []byte(rows), 0o644)
	u := HFUpload{Organization: "org", CollectionName: "NeMo Gym", CollectionSlug: "abc", Input: in, Split: "validation",
		ResourceConfig: "resources_servers/rs/configs/rs.yaml", ResourceConfigFile: cfg, Prefix: "Nemotron-RL"}
	ctx := context.Background()
	var out bytes.Buffer
	if err := UploadHF(ctx, c, u, &out); err != nil {
		t.Fatal(err)
	}
	repo := "org/Nemotron-RL-coding-rs"
	want := "[Nemo-Gym] - Repo '" + repo + "' is ready for use\n[Nemo-Gym] - Dataset '" + repo + "' added to collection 'org/nemo-gym-abc'\n[Nemo-Gym] - Dataset upload successful\n"
	if out.String() != want {
		t.Errorf("upload printed\n%s\nwant\n%s", out.String(), want)
	}
	if card, _ := s.File(repo, "main", "README.md"); string(card) != "---\ntags:\n- rl-environment\n- nemo-gym\n---\n" {
		t.Errorf("card %q", card)
	}
	if cm := s.Commits[len(s.Commits)-1]; cm.Summary != "Upload validation.jsonl" || strings.Join(cm.Files, ",") != "validation.jsonl,README.md" {
		t.Errorf("commit %+v", cm)
	}
	out.Reset()
	if err := UploadHF(ctx, c, u, &out); err != nil || !strings.Contains(out.String(), "Dataset 'rs' under Repo '"+repo+"' is already in Collection 'org/nemo-gym-abc'") {
		t.Errorf("a second upload: %v\n%s", err, out.String())
	}

	outDir := filepath.Join(dir, "dl")
	out.Reset()
	if err := DownloadHF(ctx, c, HFDownload{Repo: repo, OutputDir: outDir}, &out); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(outDir, "validation.jsonl")); string(b) != rows {
		t.Errorf("validation split = %q", b)
	}
	if out.String() != "[Nemo-Gym] - Downloaded validation split to: "+filepath.Join(outDir, "validation.jsonl")+"\n" {
		t.Errorf("download printed %q", out.String())
	}
	err := DownloadHF(ctx, c, HFDownload{Repo: repo, Split: "train", Output: filepath.Join(dir, "t.jsonl")}, &out)
	if err == nil || !strings.Contains(err.Error(), "no data files for config default, split train") {
		t.Errorf("a split the repo lacks: %v", err)
	}
	s.CutNext("validation.jsonl", 10)
	c2 := &hub.Client{Endpoint: s.Hub.URL, Token: "hf_write", CacheDir: t.TempDir(), Backoff: time.Millisecond}
	if err := DownloadHF(ctx, c2, HFDownload{Repo: repo, Artifact: "validation.jsonl", Output: filepath.Join(dir, "raw.jsonl")}, &out); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "raw.jsonl")); string(b) != rows || s.Ranges["validation.jsonl"] != 1 {
		t.Errorf("artifact %q after a cut; %d range requests", b, s.Ranges["validation.jsonl"])
	}
}

func TestHFDownloadChecks(t *testing.T) {
	for _, tc := range []struct {
		d    HFDownload
		want string
	}{
		{HFDownload{Repo: "a/b"}, "Either output_dirpath or output_fpath"},
		{HFDownload{Repo: "a/b", Output: "x", OutputDir: "y"}, "Cannot specify both output_dirpath"},
		{HFDownload{Repo: "a/b", Output: "x", Artifact: "f", Split: "train"}, "Cannot specify both artifact_fpath and split"},
		{HFDownload{Repo: "a/b", Output: "x"}, "split must be specified"},
		{HFDownload{Repo: "a/b", OutputDir: "x", Split: "dev"}, `split="dev": must be one of`},
	} {
		if err := tc.d.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want %q", tc.d, err, tc.want)
		}
	}
}

func TestHFDownloadParquetSplit(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	data, err := hubtest.ParquetFromJSON([]byte(`[{"question": "Was ist 1/2? é", "n": 1, "w": 0.5, "tags": ["a", "b"]},
		{"question": "q2", "n": 2, "w": null, "tags": []}]`))
	if err != nil {
		t.Fatal(err)
	}
	s.AddFile("org/pq", "main", "data/test-00000-of-00001.parquet", data)
	s.AddFile("org/pq", "main", "README.md", []byte("# pq\n"))
	c := &hub.Client{Endpoint: s.Hub.URL, CacheDir: t.TempDir(), Backoff: time.Millisecond}
	out := filepath.Join(t.TempDir(), "test.jsonl")
	if err := DownloadHF(context.Background(), c, HFDownload{Repo: "org/pq", Split: "test", Output: out}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	// The columns in the file's order (hubtest sorts them by name), as json.dumps writes a dict.
	want := `{"n": 1, "question": "Was ist 1/2? \u00e9", "tags": ["a", "b"], "w": 0.5}` + "\n" +
		`{"n": 2, "question": "q2", "tags": [], "w": null}` + "\n"
	if b, _ := os.ReadFile(out); string(b) != want {
		t.Errorf("parquet split:\n%s\nwant\n%s", b, want)
	}
}

func TestHFDownloadPicksTheDefaultConfig(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	s.AddFile("org/cfg", "main", "README.md", []byte("---\nconfigs:\n- config_name: main\n  data_files:\n  - split: test\n    path: main/test-*.jsonl\n---\n"))
	s.AddFile("org/cfg", "main", "main/test-0.jsonl", []byte("{\"a\": 1}\n"))
	s.AddFile("org/two", "main", "README.md", []byte("---\nconfigs:\n- config_name: main\n  data_files: a.jsonl\n- config_name: socratic\n  data_files: b.jsonl\n---\n"))
	c := &hub.Client{Endpoint: s.Hub.URL, CacheDir: t.TempDir(), Backoff: time.Millisecond}
	dir := t.TempDir()
	if err := DownloadHF(context.Background(), c, HFDownload{Repo: "org/cfg", Split: "test", Output: filepath.Join(dir, "t.jsonl")}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "t.jsonl")); string(b) != "{\"a\": 1}\n" {
		t.Errorf("the only config's test split: %q", b)
	}
	err := DownloadHF(context.Background(), c, HFDownload{Repo: "org/two", OutputDir: dir}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "available configs: ['main', 'socratic']") {
		t.Errorf("two configs, none default: %v", err)
	}
}

func TestHFDownloadEveryCardSplit(t *testing.T) {
	s := hubtest.New()
	defer s.Close()
	s.AddFile("org/custom", "main", "README.md", []byte("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: benchmark\n    path: bench.jsonl\n  - split: train\n    path: t/*.jsonl\n---\n"))
	s.AddFile("org/custom", "main", "bench.jsonl", []byte("{\"b\": 1}\n"))
	s.AddFile("org/custom", "main", "t/0.jsonl", []byte("{\"t\": 1}\n"))
	c := &hub.Client{Endpoint: s.Hub.URL, CacheDir: t.TempDir(), Backoff: time.Millisecond}
	dir := t.TempDir()
	var out bytes.Buffer
	if err := DownloadHF(context.Background(), c, HFDownload{Repo: "org/custom", OutputDir: dir}, &out); err != nil {
		t.Fatal(err)
	}
	want := "[Nemo-Gym] - Downloaded benchmark split to: " + filepath.Join(dir, "benchmark.jsonl") + "\n[Nemo-Gym] - Downloaded train split to: " + filepath.Join(dir, "train.jsonl") + "\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "benchmark.jsonl")); string(b) != "{\"b\": 1}\n" {
		t.Errorf("benchmark split %q", b)
	}
}

// A resumed answer that does not say the file's size leaves the size
// unchecked; it is not taken as 0, which failed every resume and
// downloaded the file again from the start.
func TestRangeTotal(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   int64
	}{
		{"bytes 4-9/10", 10}, {"bytes 4-9/*", -1}, {"", -1}, {"bytes 4-9/x", -1}, {"bytes 4-9/-3", -1}, {"bytes 0-0/1", 1},
	} {
		if got := rangeTotal(tc.header); got != tc.want {
			t.Errorf("rangeTotal(%q) = %d, want %d", tc.header, got, tc.want)
		}
	}
}
