package override

import "strings"

// Quote writes s as a single-quoted override value that reads back as the
// string s, whatever it holds: a model name such as "123" stays a string,
// and ',', '=', quotes and backslashes survive. Backslashes are doubled
// only before a quote and at the end, where Hydra reads them as escapes.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	backslashes := 0
	for _, r := range s {
		switch r {
		case '\\':
			backslashes++
			b.WriteRune(r)
			continue
		case '\'':
			b.WriteString(strings.Repeat(`\`, backslashes))
			b.WriteString(`\'`)
		default:
			b.WriteRune(r)
		}
		backslashes = 0
	}
	b.WriteString(strings.Repeat(`\`, backslashes))
	b.WriteByte('\'')
	return b.String()
}
