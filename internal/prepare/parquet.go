package prepare

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"
)

// Row is one dataset row as the datasets library hands it to a script:
// column name to value (nil, bool, integers, float32/float64, string,
// []byte, []any, map[string]any).
type Row map[string]any

// readParquet calls each with every row of the parquet file at path, in
// file order.
func readParquet(path string, each func(Row) error) error {
	return ParquetRows(path, path, func(schema *parquet.Schema, pr parquet.Row) error {
		row := Row{}
		if err := schema.Reconstruct((*map[string]any)(&row), pr); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return each(row)
	})
}

// ParquetRows calls each with every row of the parquet file at path, in
// file order, and the file's schema to read it by. Errors name the file
// as name. A file the reader cannot decode is an error, never a crash.
func ParquetRows(path, name string, each func(*parquet.Schema, parquet.Row) error) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: not a readable parquet file: %v", name, r)
		}
	}()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return fmt.Errorf("%s: not a parquet file: %w", name, err)
	}
	schema := pf.Schema()
	r := parquet.NewReader(pf)
	defer r.Close()
	buf := make([]parquet.Row, 256)
	for {
		n, readErr := r.ReadRows(buf)
		for _, pr := range buf[:n] {
			if err := each(schema, pr); err != nil {
				return err
			}
		}
		if errors.Is(readErr, io.EOF) {
			return nil
		}
		if readErr != nil {
			return fmt.Errorf("%s: %w", name, readErr)
		}
	}
}
