package hubtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParquet fuzzes read, a reader of the parquet file at a path, with
// damaged parquet files: it must give rows or an error, never crash or
// take over 5 s. Each seed is added whole and cut in half, and
// "PAR1PAR1" besides.
func FuzzParquet(f *testing.F, read func(path string), seeds ...[]byte) {
	for _, b := range seeds {
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte("PAR1PAR1"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "f.parquet")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { read(p); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("reading %d bytes took over 5 s", len(b))
		}
	})
}
