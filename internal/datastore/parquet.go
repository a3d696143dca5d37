package datastore

import (
	"bufio"
	"fmt"
	"maps"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/nemo-gym-go/gym/internal/prepare"
	"github.com/nemo-gym-go/gym/internal/pyjson"
)

// copyParquetRows writes every row of a parquet file as a JSON line, as
// Python's json.dumps writes a dict: columns and struct fields in the
// schema's order.
func copyParquetRows(p, name string, w *bufio.Writer) error {
	n := 0
	return prepare.ParquetRows(p, name, func(schema *parquet.Schema, pr parquet.Row) error {
		n++
		row := map[string]any{}
		if err := schema.Reconstruct(&row, pr); err != nil {
			return fmt.Errorf("%s: row %d: %w", name, n, err)
		}
		line, err := pyjson.Dumps(ordered(row, schema), false)
		if err != nil {
			return fmt.Errorf("%s: row %d: %w", name, n, err)
		}
		w.Write(line)
		w.WriteByte('\n')
		return nil
	})
}

// ordered turns a reconstructed value into one pyjson writes in the
// schema's order: a struct's fields as they are declared, a list's
// elements by its element type, a map's keys sorted.
func ordered(v any, node parquet.Node) any {
	if v == nil || node.Leaf() {
		return v
	}
	switch {
	case logicalIs[*format.ListType](node):
		items, ok := v.([]any)
		if !ok {
			return v
		}
		elem := listElement(node)
		out := make([]any, len(items))
		for i, it := range items {
			out[i] = ordered(it, elem)
		}
		return out
	case logicalIs[*format.MapType](node):
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		obj := make(pyjson.Object, 0, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			obj = append(obj, pyjson.Member{Key: k, Value: m[k]})
		}
		return obj
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	obj := make(pyjson.Object, 0, len(m))
	for _, f := range node.Fields() {
		if val, ok := m[f.Name()]; ok {
			obj = append(obj, pyjson.Member{Key: f.Name(), Value: ordered(val, f)})
		}
	}
	return obj
}

func logicalIs[T any](node parquet.Node) bool {
	lt := node.Type().LogicalType()
	if lt == nil {
		return false
	}
	_, ok := lt.Value.(T)
	return ok
}

// listElement is the element node of a LIST: list (repeated) > element.
func listElement(node parquet.Node) parquet.Node {
	fields := node.Fields()
	if len(fields) != 1 {
		return node
	}
	inner := fields[0]
	if inner.Leaf() || len(inner.Fields()) != 1 {
		return inner
	}
	return inner.Fields()[0]
}
