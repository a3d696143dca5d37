package catalog

import (
	"strings"

	"github.com/nemo-gym-go/gym/internal/resolve"
)

// fuzzyCutoff is the Ratcliff–Obershelp ratio a field or token must reach.
const fuzzyCutoff = 0.70

// FuzzyMatches is NeMo Gym's fuzzy_matches (spec §2.7): the lowercased
// query is a substring of some non-empty lowercased field, or is within
// difflib ratio 0.70 of the whole field or one of its words (split on
// whitespace, `_` and `-`). An empty query matches everything.
func FuzzyMatches(query string, fields ...string) bool {
	if query == "" {
		return true
	}
	needle := strings.ToLower(query)
	for _, f := range fields {
		if f == "" {
			continue
		}
		hay := strings.ToLower(f)
		if strings.Contains(hay, needle) {
			return true
		}
		cands := append([]string{hay}, strings.Fields(strings.NewReplacer("_", " ", "-", " ").Replace(hay))...)
		if len(resolve.CloseMatches(needle, cands, 1, fuzzyCutoff)) > 0 {
			return true
		}
	}
	return false
}
