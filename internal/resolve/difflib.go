package resolve

import (
	"fmt"
	"sort"
)

// This file ports the parts of Python's difflib that NeMo Gym's hints use, so
// that gym suggests exactly what NeMo Gym suggests: SequenceMatcher (with its
// autojunk heuristic and no junk function) and get_close_matches. Strings are
// compared as sequences of code points, as Python compares str.

// DidYouMean returns " Did you mean `best`?" (with the leading space) for the
// candidate closest to value by CloseMatches(value, candidates, 1, 0.6), or ""
// when none is close enough.
func DidYouMean(value string, candidates []string) string {
	best := CloseMatches(value, candidates, 1, 0.6)
	if len(best) == 0 {
		return ""
	}
	return " Did you mean `" + best[0] + "`?"
}

// CloseMatches is difflib.get_close_matches: up to n candidates whose
// SequenceMatcher ratio against word (word as the second sequence) is at least
// cutoff, best first. Equal scores go to the lexicographically larger
// candidate, because Python keeps the largest (score, candidate) tuples.
// n must be positive and cutoff within [0, 1]; anything else is a programming
// error and panics, as Python raises ValueError.
func CloseMatches(word string, candidates []string, n int, cutoff float64) []string {
	if n <= 0 {
		panic(fmt.Sprintf("resolve.CloseMatches: n must be > 0, got %d", n))
	}
	if !(cutoff >= 0 && cutoff <= 1) {
		panic(fmt.Sprintf("resolve.CloseMatches: cutoff must be in [0.0, 1.0], got %v", cutoff))
	}
	type scored struct {
		score float64
		s     string
	}
	var hits []scored
	m := newMatcher([]rune(word))
	for _, c := range candidates {
		m.setA([]rune(c))
		// The cheap upper bounds only skip work: a candidate they reject
		// could not reach the cutoff with the full ratio either.
		if m.realQuickRatio() >= cutoff && m.quickRatio() >= cutoff {
			if r := m.ratio(); r >= cutoff {
				hits = append(hits, scored{r, c})
			}
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].s > hits[j].s
	})
	if len(hits) > n {
		hits = hits[:n]
	}
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.s
	}
	return out
}

// Ratio is difflib.SequenceMatcher(None, a, b).ratio(): 2·M/(len(a)+len(b)),
// M being the total size of the Ratcliff/Obershelp matching blocks. Not
// symmetric in general, and below 1 even for a == b once the autojunk
// heuristic drops popular characters of a 200+ code point b.
func Ratio(a, b string) float64 {
	m := newMatcher([]rune(b))
	m.setA([]rune(a))
	return m.ratio()
}

// matcher is a SequenceMatcher with isjunk=None and autojunk=True: b is fixed
// and indexed once, a changes, as in get_close_matches.
type matcher struct {
	a, b       []rune
	b2j        map[rune][]int // positions of each non-popular element of b
	fullbcount map[rune]int   // element counts of b, for quickRatio

	// find_longest_match's j2len dicts as arrays indexed by j+1, with the
	// entries set so far, so they can be cleared without scanning all of b.
	j2len, newj2len     []int
	touched, newTouched []int
}

type match struct{ i, j, size int }

func newMatcher(b []rune) *matcher {
	m := &matcher{
		b:          b,
		b2j:        make(map[rune][]int),
		fullbcount: make(map[rune]int),
		j2len:      make([]int, len(b)+1),
		newj2len:   make([]int, len(b)+1),
	}
	for j, r := range b {
		m.b2j[r] = append(m.b2j[r], j)
		m.fullbcount[r]++
	}
	// Autojunk: in a long b, an element filling more than 1% (plus one) of it
	// is treated as noise and never starts a match.
	if n := len(b); n >= 200 {
		ntest := n/100 + 1
		for r, idx := range m.b2j {
			if len(idx) > ntest {
				delete(m.b2j, r)
			}
		}
	}
	return m
}

func (m *matcher) setA(a []rune) { m.a = a }

// findLongestMatch is SequenceMatcher.find_longest_match with no junk: the
// longest block a[i:i+k] == b[j:j+k] within the ranges, earliest in a and then
// in b on ties, grown over popular elements at both ends.
func (m *matcher) findLongestMatch(alo, ahi, blo, bhi int) match {
	a, b := m.a, m.b
	besti, bestj, bestsize := alo, blo, 0
	for i := alo; i < ahi; i++ {
		for _, j := range m.b2j[a[i]] {
			if j < blo {
				continue
			}
			if j >= bhi {
				break
			}
			k := m.j2len[j] + 1
			m.newj2len[j+1] = k
			m.newTouched = append(m.newTouched, j+1)
			if k > bestsize {
				besti, bestj, bestsize = i-k+1, j-k+1, k
			}
		}
		m.clear()
		m.j2len, m.newj2len = m.newj2len, m.j2len
		m.touched, m.newTouched = m.newTouched, m.touched
	}
	m.clear()
	for besti > alo && bestj > blo && a[besti-1] == b[bestj-1] {
		besti, bestj, bestsize = besti-1, bestj-1, bestsize+1
	}
	for besti+bestsize < ahi && bestj+bestsize < bhi && a[besti+bestsize] == b[bestj+bestsize] {
		bestsize++
	}
	return match{besti, bestj, bestsize}
}

// clear zeroes the current j2len row so the arrays are all-zero between rows
// and between calls.
func (m *matcher) clear() {
	for _, t := range m.touched {
		m.j2len[t] = 0
	}
	m.touched = m.touched[:0]
}

// matchingBlocks is get_matching_blocks without the final sort and merge of
// adjacent blocks, which change neither the blocks found nor their total.
func (m *matcher) matchingBlocks() []match {
	type span struct{ alo, ahi, blo, bhi int }
	queue := []span{{0, len(m.a), 0, len(m.b)}}
	var blocks []match
	for len(queue) > 0 {
		s := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		x := m.findLongestMatch(s.alo, s.ahi, s.blo, s.bhi)
		if x.size == 0 {
			continue
		}
		blocks = append(blocks, x)
		if s.alo < x.i && s.blo < x.j {
			queue = append(queue, span{s.alo, x.i, s.blo, x.j})
		}
		if x.i+x.size < s.ahi && x.j+x.size < s.bhi {
			queue = append(queue, span{x.i + x.size, s.ahi, x.j + x.size, s.bhi})
		}
	}
	return blocks
}

func (m *matcher) ratio() float64 {
	matches := 0
	for _, x := range m.matchingBlocks() {
		matches += x.size
	}
	return calculateRatio(matches, len(m.a)+len(m.b))
}

// quickRatio bounds ratio from above by counting the elements a and b share,
// ignoring order.
func (m *matcher) quickRatio() float64 {
	avail := make(map[rune]int)
	matches := 0
	for _, r := range m.a {
		numb, ok := avail[r]
		if !ok {
			numb = m.fullbcount[r]
		}
		avail[r] = numb - 1
		if numb > 0 {
			matches++
		}
	}
	return calculateRatio(matches, len(m.a)+len(m.b))
}

// realQuickRatio bounds ratio from above by the lengths alone.
func (m *matcher) realQuickRatio() float64 {
	la, lb := len(m.a), len(m.b)
	return calculateRatio(min(la, lb), la+lb)
}

func calculateRatio(matches, length int) float64 {
	if length == 0 {
		return 1.0
	}
	return 2.0 * float64(matches) / float64(length)
}
