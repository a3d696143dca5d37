package prepare

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/hub"
	"github.com/nemo-gym-go/gym/internal/hub/hubtest"
)

// rowsParquet makes a parquet file of testdata/NAME.rows.json.
func rowsParquet(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name+".rows.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := hubtest.ParquetFromJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRecipesWriteWhatPrepareWrites: the golden files are NeMo Gym
// 0.7.0's own prepare.py run on the same rows (testdata/golden.py).
func TestRecipesWriteWhatPrepareWrites(t *testing.T) {
	for _, tc := range []struct{ rows, script string }{
		{"aime", "benchmarks/aime24/prepare.py"},
		{"aime_str", "benchmarks/aime25/prepare.py"},
		{"aime_float", "benchmarks/apex25/prepare.py"},
		{"gpqa", "benchmarks/gpqa/prepare.py"},
		{"mmlu_pro", "benchmarks/mmlu_pro/prepare.py"},
	} {
		t.Run(tc.rows, func(t *testing.T) {
			r, ok := Lookup(tc.script)
			if !ok {
				t.Fatalf("no recipe for %s", tc.script)
			}
			s := hubtest.New()
			defer s.Close()
			data := rowsParquet(t, tc.rows)
			if r.Source.Revision == "" {
				s.AddParquet(r.Source.Repo, r.Source.Config, r.Source.Split, data)
			} else {
				s.AddFile(r.Source.Repo, r.Source.Revision, "data/train-00000-of-00001.parquet", data)
				s.AddFile(r.Source.Repo, r.Source.Revision, "README.md", []byte("# a card without configs\n"))
			}
			c := &hub.Client{Endpoint: s.Hub.URL, CacheDir: t.TempDir(), Backoff: time.Millisecond}
			root := t.TempDir()
			var log bytes.Buffer
			out, n, err := Run(context.Background(), c, r, root, &log)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(out)
			want, _ := os.ReadFile(filepath.Join("testdata", tc.rows+".golden.jsonl"))
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from NeMo Gym's prepare.py:\n got: %s\nwant: %s", out, got, want)
			}
			if n != bytes.Count(want, []byte("\n")) || !strings.Contains(log.String(), "Wrote") {
				t.Errorf("count %d, log %q", n, log.String())
			}
			if out != filepath.Join(root, r.Output) {
				t.Errorf("wrote %s; the script writes %s", out, r.Output)
			}
		})
	}
}

func TestRecipesPortTheShippedScripts(t *testing.T) {
	for _, r := range recipes {
		if r.Ports([]byte("print('an edited prepare.py')\n")) {
			t.Errorf("%s ports any script", r.Script)
		}
		if !strings.HasPrefix(r.Output, strings.TrimSuffix(r.Script, "prepare.py")+"data/") {
			t.Errorf("%s writes %s, outside its data folder", r.Script, r.Output)
		}
	}
}

func TestBadRowsSayWhere(t *testing.T) {
	r, _ := Lookup("benchmarks/gpqa/prepare.py")
	s := hubtest.New()
	defer s.Close()
	b, err := hubtest.Parquet([]hubtest.Column{{Name: "Question", Type: "string"}, {Name: "Correct Answer", Type: "int64"}},
		[]map[string]any{{"Question": "q", "Correct Answer": int64(3)}})
	if err != nil {
		t.Fatal(err)
	}
	s.AddParquet(r.Source.Repo, r.Source.Config, r.Source.Split, b)
	c := &hub.Client{Endpoint: s.Hub.URL, CacheDir: t.TempDir()}
	root := t.TempDir()
	_, _, err = Run(context.Background(), c, r, root, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), `Idavidrein/gpqa: row 0 of http://`) || !strings.Contains(err.Error(), `column "Correct Answer" is an int, not a string`) {
		t.Fatalf("error = %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, r.Output)); !os.IsNotExist(err) {
		t.Errorf("a failed run left %s: %v", r.Output, err)
	}

	s.AddParquet(r.Source.Repo, r.Source.Config, r.Source.Split, []byte("PAR1 not really"))
	_, _, err = Run(context.Background(), c, r, root, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "parquet") {
		t.Fatalf("a corrupt shard: %v", err)
	}
}

func TestSplitFiles(t *testing.T) {
	card := []byte("---\nconfigs:\n- config_name: gpqa_diamond\n  data_files:\n  - split: train\n    path: gpqa_diamond*.parquet\n- config_name: gpqa_main\n  data_files: main/**/*.parquet\n---\n# GPQA\n")
	for _, tc := range []struct {
		name          string
		paths         []string
		readme        []byte
		config, split string
		want          string
	}{
		{"data folder shards", []string{"README.md", ".gitattributes", "data/train-00001-of-00002.parquet", "data/train-00000-of-00002.parquet", "data/test-00000-of-00001.parquet"}, nil, "default", "train", "data/train-00000-of-00002.parquet data/train-00001-of-00002.parquet"},
		{"hidden files and folders", []string{".cache/train.parquet", "data/_tmp/train.parquet", "data/_train.parquet", "data/train.parquet"}, nil, "default", "train", "data/train.parquet"},
		{"test split", []string{"data/train-0.parquet", "data/test-0.parquet"}, nil, "default", "test", "data/test-0.parquet"},
		{"unmarked files are train", []string{"aime.parquet"}, nil, "default", "train", "aime.parquet"},
		{"split folder", []string{"validation/part.parquet", "train/part.parquet"}, nil, "default", "validation", "validation/part.parquet"},
		{"card pattern", []string{"gpqa_diamond.parquet", "gpqa_main.parquet", "main/x/y.parquet"}, card, "gpqa_diamond", "train", "gpqa_diamond.parquet"},
		{"card ** pattern, all train", []string{"gpqa_diamond.parquet", "main/x/y.parquet", "main/z.parquet"}, card, "gpqa_main", "train", "main/x/y.parquet main/z.parquet"},
		{"csv refused", []string{"data/train.csv"}, nil, "default", "train", "error: split train has data/train.csv; gym reads the Hub's parquet files only"},
		{"no such split", []string{"data/train.parquet"}, nil, "default", "test", "error: no data files for config default, split test"},
		{"no such config", []string{"x.parquet"}, card, "other", "train", "error: README.md declares no config other"},
		{"card config without this split", []string{"gpqa_diamond.parquet", "data/test-0.parquet"}, card, "gpqa_diamond", "test", "error: no data files for config gpqa_diamond, split test"},
		{"CRLF card", []string{"gpqa_diamond.parquet", "data/train-0.parquet"}, []byte(strings.ReplaceAll(string(card), "\n", "\r\n")), "gpqa_diamond", "train", "gpqa_diamond.parquet"},
		{"unnamed card config is default", []string{"a.parquet", "data/train-0.parquet"}, []byte("---\nconfigs:\n- data_files: a.parquet\n---\n"), "default", "train", "a.parquet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := splitFiles(tc.paths, tc.readme, tc.config, tc.split)
			s := strings.Join(got, " ")
			ok := s == tc.want
			if err != nil {
				s = "error: " + err.Error()
				ok = strings.HasPrefix(tc.want, "error: ") && strings.Contains(s, strings.TrimPrefix(tc.want, "error: "))
			}
			if !ok {
				t.Errorf("splitFiles = %s; want %s", s, tc.want)
			}
		})
	}
}

func TestUUID5AsPython(t *testing.T) {
	// str(uuid.uuid5(uuid.NAMESPACE_URL, name)) in Python 3.
	for name, want := range map[string]string{
		"":           "1b4db7eb-4057-5ddf-91e0-36dec72071f5",
		"python.org": "7af94e2b-4dd9-50f0-9c9a-8a48519bdef0",
		"Ünïcödé 😀":  "cab4e894-db4d-552f-80c4-44b769a37eeb",
	} {
		if got := uuid5URL(name); got != want {
			t.Errorf("uuid5(%q) = %s; Python's %s", name, got, want)
		}
	}
}
