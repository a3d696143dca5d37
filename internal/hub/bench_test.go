package hub_test

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/hub"
	"github.com/nemo-gym-go/gym/internal/hub/hubtest"
)

// BenchmarkLFSRoundTrip uploads a 32 MiB file through the LFS batch API
// and downloads it back (sha256-checked), both against the local Hub.
func BenchmarkLFSRoundTrip(b *testing.B) {
	s := hubtest.New()
	defer s.Close()
	const size = 32 << 20
	data := make([]byte, size)
	rand.Read(data)
	local := filepath.Join(b.TempDir(), "big.jsonl")
	if err := os.WriteFile(local, data, 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(2 * size)
	for i := 0; b.Loop(); i++ {
		c := &hub.Client{Endpoint: s.Hub.URL, CacheDir: b.TempDir(), Backoff: time.Millisecond}
		repo := "org/bench"
		if i == 0 {
			if _, err := c.CreateDatasetRepo(ctx, repo, true); err != nil {
				b.Fatal(err)
			}
		}
		// A different first byte each time: the Hub would skip an object it has.
		data[0] = byte(i)
		os.WriteFile(local, data, 0o644)
		if _, err := c.Commit(ctx, hub.CommitRequest{Repo: repo, Summary: "s", Files: []hub.CommitFile{{PathInRepo: "big.jsonl", Local: local}}}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Download(ctx, c.ResolveURL(repo, "main", "big.jsonl")); err != nil {
			b.Fatal(err)
		}
	}
}
