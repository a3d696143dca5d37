// Package prepare runs NeMo Gym benchmark prepare.py scripts that only
// download a Hugging Face dataset and reshape its rows, without Python:
// each ported script is a Recipe that reads the same rows (the Hub's
// parquet files) and writes the same JSONL, byte for byte.
package prepare

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/nemo-gym-go/gym/internal/hub"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/pyjson"
)

// Ports reports whether script (a prepare.py's content) is a version this
// recipe reproduces.
func (r Recipe) Ports(script []byte) bool {
	sum := sha256.Sum256(script)
	return slices.Contains(r.SHA256, hex.EncodeToString(sum[:]))
}

// Run downloads the recipe's rows from the Hub and writes its JSONL under
// root, replacing the file only once every row is written. It returns
// the file's path and its row count.
func Run(ctx context.Context, c *hub.Client, r Recipe, root string, log io.Writer) (string, int, error) {
	files, err := dataFiles(ctx, c, r.Source)
	if err != nil {
		return "", 0, err
	}
	var local []string
	for _, u := range files {
		p, err := c.Download(ctx, u)
		if err != nil {
			return "", 0, err
		}
		local = append(local, p)
	}
	out := filepath.Join(root, filepath.FromSlash(r.Output))
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", 0, err
	}
	count := 0
	err = jsonl.WriteFileAtomic(out, func(w *bufio.Writer) error {
		for i, p := range local {
			inFile := 0
			err := readParquet(p, func(row Row) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				obj, err := r.convert(row)
				if err == nil {
					var b []byte
					if b, err = pyjson.Dumps(obj, false); err == nil {
						w.Write(b)
						w.WriteByte('\n')
					}
				}
				if err != nil {
					return fmt.Errorf("%s: row %d of %s: %w", r.Source.Repo, inFile, files[i], err)
				}
				inFile++
				count++
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", 0, err
	}
	fmt.Fprintf(log, "Wrote %d problems to %s\n", count, out)
	return out, count, nil
}

// dataFiles are the URLs of the source's rows, in the order
// load_dataset reads them.
func dataFiles(ctx context.Context, c *hub.Client, s Source) ([]string, error) {
	if s.Revision == "" {
		return c.ParquetFiles(ctx, s.Repo, s.Config, s.Split)
	}
	// The Hub converts only a dataset's latest revision to parquet, so a
	// pinned one is read from the repository's own files at that commit.
	entries, err := c.Files(ctx, s.Repo, s.Revision)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, e := range entries {
		if e.Type == "file" {
			paths = append(paths, e.Path)
		}
	}
	var readme []byte
	if slices.Contains(paths, "README.md") {
		p, err := c.Download(ctx, c.ResolveURL(s.Repo, s.Revision, "README.md"))
		if err != nil {
			return nil, err
		}
		if readme, err = os.ReadFile(p); err != nil {
			return nil, err
		}
	}
	chosen, err := splitFiles(paths, readme, s.Config, s.Split)
	if err != nil {
		return nil, fmt.Errorf("dataset %s at revision %s: %w", s.Repo, s.Revision, err)
	}
	urls := make([]string, len(chosen))
	for i, p := range chosen {
		urls[i] = c.ResolveURL(s.Repo, s.Revision, p)
	}
	return urls, nil
}
