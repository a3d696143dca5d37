// Package table prints the aligned text tables of gym's commands (gym list,
// gym env status, the launcher's ready table), all one way.
package table

import (
	"bytes"
	"io"
	"strings"
	"text/tabwriter"
)

// Write writes rows as columns aligned at their natural width, two spaces
// apart, without trailing blanks (an empty last cell leaves none).
func Write(w io.Writer, rows [][]string) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		io.WriteString(tw, strings.Join(r, "\t")+"\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var out bytes.Buffer
	for line := range bytes.Lines(buf.Bytes()) {
		out.Write(bytes.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	_, err := w.Write(out.Bytes())
	return err
}

// WithRule is header, a rule of dashes as wide as each header cell, then
// rows.
func WithRule(header []string, rows [][]string) [][]string {
	rule := make([]string, len(header))
	for i, h := range header {
		rule[i] = strings.Repeat("-", len(h))
	}
	return append([][]string{header, rule}, rows...)
}
