package datastore

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/hub/hubtest"
)

// FuzzParquetRows feeds damaged parquet files to the split writer: an
// error or rows, never a crash or a hang.
func FuzzParquetRows(f *testing.F) {
	b, err := hubtest.ParquetFromJSON([]byte(`[{"q": "a", "n": 1, "l": ["x"], "w": 0.5}, {"q": null, "n": 2, "l": [], "w": null}]`))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add([]byte("PAR1PAR1"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "f.parquet")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			copyParquetRows(p, "f.parquet", bufio.NewWriter(io.Discard))
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("reading %d bytes took over 5 s", len(b))
		}
	})
}
