package dataset

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
)

// BenchmarkCollate collates 20,000 chat rows (about 8 MB) in
// example_validation mode: the per-dataset pass, the prepared file and the
// collated one.
func BenchmarkCollate(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&sb, `{"responses_create_params": {"input": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "question %d %s"}], "temperature": 0.%d}, "expected_answer": "%d", "score": %d.5, "id": %d}`+"\n",
			i, strings.Repeat("word ", 10+i%50), i%10, i%7, i%3, i)
	}
	os.WriteFile(filepath.Join(dir, "big.jsonl"), []byte(sb.String()), 0o644)
	cfg, err := pyyaml.Load([]byte(agentWith(`{name: big, type: example, jsonl_fpath: big.jsonl}`)), "c.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(sb.Len()))
	b.ResetTimer()
	for i := range b.N {
		if err := Collate(context.Background(), options(dir, cfg, ModeExample, fmt.Sprintf("out%d", i))); err != nil {
			b.Fatal(err)
		}
		os.Remove(filepath.Join(dir, "big_metrics.json"))
	}
}
