package prepare

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/hub/hubtest"
)

// FuzzReadParquet: any bytes give rows or an error, never a crash or a hang.
func FuzzReadParquet(f *testing.F) {
	var seeds [][]byte
	for _, name := range []string{"aime", "gpqa", "mmlu_pro"} {
		raw, err := os.ReadFile(filepath.Join("testdata", name+".rows.json"))
		if err != nil {
			f.Fatal(err)
		}
		b, err := hubtest.ParquetFromJSON(raw)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	hubtest.FuzzParquet(f, func(p string) { readParquet(p, func(Row) error { return nil }) }, seeds...)
}

// FuzzSplitFiles: any dataset card and file names give files or an error.
func FuzzSplitFiles(f *testing.F) {
	f.Add("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/*.parquet\n---\n", "data/train-0.parquet\nREADME.md", "train")
	f.Add("---\nconfigs: [1, {data_files: {split: 3}}]\n---", "a.parquet", "test")
	f.Add("---\n---", "x/validation/y.parquet", "validation")
	f.Fuzz(func(t *testing.T, card, paths, split string) {
		got, err := splitFiles(strings.Split(paths, "\n"), []byte(card), "default", split)
		if err == nil && len(got) == 0 {
			t.Errorf("no files and no error")
		}
		if name, err := DefaultConfig([]byte(card)); err == nil && name == "" {
			t.Errorf("DefaultConfig named no config and gave no error")
		}
		if splits, err := CardSplits([]byte(card), "default"); err == nil && slices.Contains(splits, "") {
			t.Errorf("CardSplits gave an empty split name: %q", splits)
		}
	})
}
