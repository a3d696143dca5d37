package replaymodel

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// explainMiss says which recording the input comes closest to and where
// it leaves it.
func (idx *index) explainMiss(instructions, input gjson.Result) string {
	ids := []uint64{idx.hs.instructions(instructions)}
	labels := []string{describeInstructions(instructions)}
	forEachInputItem(input, func(item gjson.Result) {
		ids = append(ids, idx.hs.item(item))
		labels = append(labels, describeItem(item))
	})
	rec, agree := idx.closest(ids, labels)
	where := func(i int) string {
		if i == 0 {
			return "the instructions"
		}
		return "input[" + strconv.Itoa(i-1) + "]"
	}
	head := fmt.Sprintf("no recorded turn follows this input (%d items); the closest recording is %s", len(ids)-1, rec.source)
	switch {
	case agree < len(ids) && agree < len(rec.ids):
		return fmt.Sprintf("%s, which first differs at %s: this input has %s, the recording has %s", head, where(agree), labels[agree], rec.labels[agree])
	case agree < len(ids):
		return fmt.Sprintf("%s, which this input repeats in full (%d items) before going on with %s", head, len(rec.ids)-1, labels[agree])
	case agree < len(rec.ids):
		return fmt.Sprintf("%s, which this input follows to its end but where it is not the model's turn: the recording goes on with %s", head, rec.labels[agree])
	}
	// Equal sequences are indexed unless the recording ends with a tool's
	// output, where the recorded episode stopped (max_steps).
	return head + ", which this input repeats in full; the recorded episode stopped there, before the model's next turn"
}

// closest is the recording that shares the longest prefix with ids (whose
// labels describe them). Ties go to the recording whose first differing
// element has more words in common with the input's, then to the one
// holding more of ids anywhere, then to the first.
func (idx *index) closest(ids []uint64, labels []string) (*recording, int) {
	want := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	var best *recording
	bestAgree, bestWords, bestShared := -1, -1, -1
	for _, rec := range idx.recordings {
		agree := 0
		for agree < len(ids) && agree < len(rec.ids) && ids[agree] == rec.ids[agree] {
			agree++
		}
		words := 0
		if agree < len(ids) && agree < len(rec.ids) {
			words = commonWords(labels[agree], rec.labels[agree])
		}
		shared := 0
		for _, id := range rec.ids {
			if want[id] {
				shared++
			}
		}
		better := agree > bestAgree ||
			(agree == bestAgree && words > bestWords) ||
			(agree == bestAgree && words == bestWords && shared > bestShared)
		if better {
			best, bestAgree, bestWords, bestShared = rec, agree, words, shared
		}
	}
	return best, bestAgree
}

// commonWords counts the distinct words of a that b also has.
func commonWords(a, b string) int {
	in := map[string]bool{}
	for _, w := range strings.Fields(b) {
		in[w] = true
	}
	n := 0
	for _, w := range strings.Fields(a) {
		if in[w] {
			n++
			delete(in, w)
		}
	}
	return n
}

func describeInstructions(v gjson.Result) string {
	if t := textOf(v); v.Exists() && v.Type != gjson.Null && t != "" {
		return "instructions " + strconv.Quote(clip(t))
	}
	return "no instructions"
}
