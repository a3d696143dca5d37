package datastore

import (
	"bufio"
	"io"
	"testing"

	"github.com/nemo-gym-go/gym/internal/hub/hubtest"
)

// FuzzParquetRows feeds damaged parquet files to the split writer: an
// error or rows, never a crash or a hang.
func FuzzParquetRows(f *testing.F) {
	b, err := hubtest.ParquetFromJSON([]byte(`[{"q": "a", "n": 1, "l": ["x"], "w": 0.5}, {"q": null, "n": 2, "l": [], "w": null}]`))
	if err != nil {
		f.Fatal(err)
	}
	hubtest.FuzzParquet(f, func(p string) { copyParquetRows(p, "f.parquet", bufio.NewWriter(io.Discard)) }, b)
}
