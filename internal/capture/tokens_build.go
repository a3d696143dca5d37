package capture

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// tokenEntry is a TokenEntry as the builder reads it.
type tokenEntry struct {
	callID      string
	prompt, gen []int64
	logps       []float64
	items       []*jvalue // output_items, without their token fields
	tokenItem   int       // -1 when no item carried the tokens
	responseID  string
	createdAt   float64
	parent      *string
	resolution  string // root, resolved, unresolved; "" when not recorded
	cumLen      *int64
	digest      string
	fingerprint string
	fpVersion   *int64
	delta       bool
	experts     *jvalue // nil when there are none
}

// readTokenEntry reads an entry line with TokenEntry's checks.
func readTokenEntry(line []byte) (*tokenEntry, error) {
	v, err := parse(line)
	if err != nil {
		return nil, err
	}
	if !v.isObject() {
		return nil, errors.New("a token entry is not an object")
	}
	e := &tokenEntry{tokenItem: -1}
	if sv := v.get("schema_version"); sv != nil {
		n, ok := jsonInt(sv)
		switch {
		case !ok:
			return nil, errors.New("schema_version is not an integer")
		case n > 1:
			return nil, fmt.Errorf("token record is schema_version %d, but this reader understands up to 1", n)
		case n < 1:
			return nil, fmt.Errorf("token record is schema_version %d, below the supported minimum 1", n)
		}
	}
	id := v.get("model_call_id")
	if id == nil || id.str == nil {
		return nil, errors.New("model_call_id is missing or not a string")
	}
	e.callID = *id.str
	if e.prompt, err = tokenIDs(v.get("prompt_token_ids"), "prompt_token_ids"); err != nil {
		return nil, err
	}
	if e.gen, err = tokenIDs(v.get("generation_token_ids"), "generation_token_ids"); err != nil {
		return nil, err
	}
	if e.logps, err = logProbs(v.get("generation_log_probs")); err != nil {
		return nil, err
	}
	if len(e.gen) != len(e.logps) {
		return nil, fmt.Errorf("generation_token_ids and generation_log_probs must have the same length (got %d and %d)", len(e.gen), len(e.logps))
	}
	if items := v.get("output_items"); items != nil && items.kind == 'a' {
		for _, it := range items.items {
			if !it.isObject() {
				return nil, errors.New("an output item is not an object")
			}
			e.items = append(e.items, it)
		}
	}
	if ti := v.get("token_item_index"); !ti.isNull() {
		n, ok := jsonInt(ti)
		if !ok || n < 0 || n >= int64(len(e.items)) {
			return nil, fmt.Errorf("token_item_index %s is outside output_items of length %d", ti.text, len(e.items))
		}
		e.tokenItem = int(n)
	}
	if r := v.get("response_id"); r != nil && r.str != nil {
		e.responseID = *r.str
	}
	if c := v.get("created_at"); c != nil && c.kind == 's' && c.str == nil {
		e.createdAt, _ = strconv.ParseFloat(string(c.text), 64)
	}
	if p := v.get("parent_call_id"); p != nil && p.str != nil {
		e.parent = p.str
	}
	if r := v.get("parent_resolution"); r != nil && r.str != nil {
		e.resolution = *r.str
	}
	switch {
	case e.resolution == "resolved" && (e.parent == nil || *e.parent == ""):
		return nil, errors.New("resolved parent metadata requires parent_call_id")
	case (e.resolution == "root" || e.resolution == "unresolved") && e.parent != nil:
		return nil, fmt.Errorf("%s parent metadata cannot carry parent_call_id", e.resolution)
	}
	if n, ok := jsonInt(v.get("cum_len")); ok {
		if n < 0 {
			return nil, fmt.Errorf("cum_len %d is negative", n)
		}
		e.cumLen = &n
	}
	if d := v.get("digest"); d != nil && d.str != nil {
		e.digest = *d.str
	}
	if f := v.get("continuation_fingerprint"); f != nil && f.str != nil {
		e.fingerprint = *f.str
	}
	if n, ok := jsonInt(v.get("fingerprint_version")); ok {
		e.fpVersion = &n
	}
	e.delta = v.get("prompt_is_delta").truthy()
	if e.delta && (e.parent == nil || e.resolution != "resolved") {
		return nil, errors.New("a delta prompt requires a RESOLVED parent_call_id to reconstruct from")
	}
	if re := v.get("routed_experts"); !re.isNull() {
		e.experts = re
	}
	return e, nil
}

func jsonInt(v *jvalue) (int64, bool) {
	if v == nil || v.kind != 's' || v.str != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v.text), 10, 64)
	return n, err == nil
}

func (e *tokenEntry) cumulative() []int64 { return append(append([]int64(nil), e.prompt...), e.gen...) }

// identity is the entry's whole token sequence, for telling retries that
// generated the same tokens from ones that did not.
func (e *tokenEntry) identity() string {
	if e.digest != "" && e.cumLen != nil {
		return e.digest + "/" + strconv.FormatInt(*e.cumLen, 10)
	}
	return fmt.Sprint(e.prompt, "|", e.gen)
}

// collapseIdentical is the one candidate, or the smallest call id of
// candidates with one token sequence; nil for none or different ones.
func collapseIdentical(cs []*tokenEntry) *tokenEntry {
	if len(cs) == 0 {
		return nil
	}
	first := cs[0].identity()
	best := cs[0]
	for _, c := range cs[1:] {
		if c.identity() != first {
			return nil
		}
		if c.callID < best.callID {
			best = c
		}
	}
	return best
}

// terminalAttribution is NeMo Gym's resolve_terminal: the captured call
// whose answer the verifier scored, from the witnesses that name one.
type terminalAttribution struct {
	callID, method, reason string
}

func resolveTerminal(entries []*tokenEntry, response *jvalue, explicit, declared string) terminalAttribution {
	var reasons []string
	type witness struct {
		method string
		e      *tokenEntry
	}
	var ws []witness
	if explicit != "" {
		found := false
		for _, e := range entries {
			if e.callID == explicit {
				ws = append(ws, witness{"explicit", e})
				found = true
				break
			}
		}
		if !found {
			reasons = append(reasons, "explicit_terminal_not_captured")
		}
	}
	if declared != "" {
		var matches []*tokenEntry
		for _, e := range entries {
			if e.responseID == declared {
				matches = append(matches, e)
			}
		}
		w := collapseIdentical(matches)
		if w == nil {
			if len(matches) > 0 {
				reasons = append(reasons, "declared_ambiguous")
			} else {
				reasons = append(reasons, "declared_terminal_not_captured")
			}
			return terminalAttribution{reason: strings.Join(reasons, ",")}
		}
		ws = append(ws, witness{"declared", w})
	}
	if response.isObject() {
		if id := firstTruthy(response.get("id")); id != "" {
			var matches []*tokenEntry
			for _, e := range entries {
				if e.responseID != "" && e.responseID == id {
					matches = append(matches, e)
				}
			}
			switch w := collapseIdentical(matches); {
			case len(matches) == 0:
				reasons = append(reasons, "response_id_no_match")
			case w == nil:
				reasons = append(reasons, "response_id_ambiguous")
			default:
				ws = append(ws, witness{"response_id", w})
			}
		} else {
			reasons = append(reasons, "response_has_no_id")
		}
		if method, w := contentWitness(entries, response, &reasons); w != nil {
			ws = append(ws, witness{method, w})
		}
	} else {
		reasons = append(reasons, "no_response_object")
	}
	if len(ws) == 0 {
		return terminalAttribution{reason: strings.Join(reasons, ",")}
	}
	named := make([]*tokenEntry, len(ws))
	for i, w := range ws {
		named[i] = w.e
	}
	if collapseIdentical(named) == nil {
		var detail []string
		for _, w := range ws {
			detail = append(detail, w.method+"="+w.e.callID)
		}
		reasons = append(reasons, "witness_disagreement["+strings.Join(detail, ";")+"]")
		return terminalAttribution{reason: strings.Join(reasons, ",")}
	}
	if len(ws) > 1 {
		var others []string
		for _, w := range ws[1:] {
			others = append(others, w.method)
		}
		reasons = append(reasons, "corroborated_by="+strings.Join(others, "+"))
	}
	return terminalAttribution{callID: ws[0].e.callID, method: ws[0].method, reason: strings.Join(reasons, ",")}
}

// contentWitness names the call whose model-authored output the scored
// response ends with: by the whole transcript, the call's own output or
// the transcript's trailing model-authored block.
func contentWitness(entries []*tokenEntry, response *jvalue, reasons *[]string) (string, *tokenEntry) {
	out := response.get("output")
	if out == nil || out.kind != 'a' || len(out.items) == 0 {
		*reasons = append(*reasons, "response_has_no_output")
		return "", nil
	}
	var items []*jvalue
	for _, it := range out.items {
		if it.isObject() {
			items = append(items, it)
		}
	}
	target, err := assistantFingerprint(items)
	if err != nil {
		*reasons = append(*reasons, "response_output_unfingerprintable")
		return "", nil
	}
	if target == "" {
		*reasons = append(*reasons, "no_model_authored_output")
		return "", nil
	}
	trailing := 0
	for i := len(items) - 1; i >= 0 && (pyEquals(items[i].get("role"), "assistant") || pyEquals(items[i].get("type"), "function_call")); i-- {
		trailing++
	}
	tail := ""
	if trailing > 0 && trailing != len(items) {
		tail, _ = assistantFingerprint(items[len(items)-trailing:])
	}
	matches := map[string]*tokenEntry{}
	cumulativeHit := false
	for _, e := range entries {
		if e.fingerprint != "" && e.fingerprint == target && (e.fpVersion == nil || *e.fpVersion == fingerprintVersion) {
			matches[e.callID] = e
			cumulativeHit = true
		}
		if len(e.items) > 0 {
			own, err := assistantFingerprint(e.items)
			if err != nil {
				continue
			}
			if own != "" && (own == target || (tail != "" && own == tail)) {
				matches[e.callID] = e
			}
		}
	}
	var cands []*tokenEntry
	for _, e := range matches {
		cands = append(cands, e)
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].callID < cands[j].callID })
	if w := collapseIdentical(cands); w != nil {
		if cumulativeHit {
			return "content_cumulative", w
		}
		return "content_output", w
	}
	if len(matches) > 0 {
		*reasons = append(*reasons, "content_ambiguous")
	} else {
		*reasons = append(*reasons, "no_content_match")
	}
	return "", nil
}

// The builder: NeMo Gym's prefix_merging, which chains the calls by their
// recorded parents, each verified against the child's prompt tokens.

type chainLink struct {
	e            *tokenEntry
	interstitial []int64
}

type chain struct {
	id         string
	links      []chainLink
	rootPrompt []int64
}

type buildNotes struct {
	roots, chains       int
	captured, delivered int
	deliveredFraction   float64
	unresolvedRetries   []string
	terminalChain       string
	emptyGeneration     []string
	linkFailures        []string // in first-seen order
	linkFailureCounts   map[string]int
	unresolvedParents   []string
	quarantined         []string
	chainsOut           []*chain
}

func (n *buildNotes) fail(note string) {
	if n.linkFailureCounts[note] == 0 {
		n.linkFailures = append(n.linkFailures, note)
	}
	n.linkFailureCounts[note]++
}

type buildNode struct {
	e                     *tokenEntry
	cumulative            []int64
	parent                *buildNode
	children              []*buildNode
	quarantined, boundary bool
}

func hasPrefix(s, p []int64) bool {
	if len(p) > len(s) {
		return false
	}
	for i := range p {
		if s[i] != p[i] {
			return false
		}
	}
	return true
}

func equalIDs(a, b []int64) bool { return len(a) == len(b) && hasPrefix(a, b) }

// materializeDeltas gives delta entries their whole prompt from their
// parent chains; the ids of those whose chain is broken come back apart.
func materializeDeltas(entries []*tokenEntry) ([]*tokenEntry, []string) {
	byID := map[string]*tokenEntry{}
	for _, e := range entries {
		byID[e.callID] = e
	}
	memo := map[string][]int64{}
	broken := map[string]bool{}
	var cum func(id string, depth int) []int64
	cum = func(id string, depth int) []int64 {
		if c, ok := memo[id]; ok || broken[id] {
			return c
		}
		e := byID[id]
		if e == nil || depth > 10000 {
			broken[id] = true
			return nil
		}
		if !e.delta {
			memo[id] = e.cumulative()
			return memo[id]
		}
		broken[id] = true // until its parent is known: a cycle stays broken
		p := cum(*e.parent, depth+1)
		if p == nil {
			return nil
		}
		delete(broken, id)
		memo[id] = append(append(append([]int64(nil), p...), e.prompt...), e.gen...)
		return memo[id]
	}
	var out []*tokenEntry
	var bad []string
	for _, e := range entries {
		if !e.delta {
			out = append(out, e)
			continue
		}
		c := cum(e.callID, 0)
		if c == nil {
			bad = append(bad, e.callID)
			continue
		}
		full := *e
		full.prompt, full.delta = c[:len(c)-len(e.gen)], false
		if d, err := tokenDigest(c); full.digest != "" && (err != nil || d != full.digest) {
			bad = append(bad, e.callID)
			continue
		}
		out = append(out, &full)
	}
	return out, bad
}

func prefixMerging(input []*tokenEntry, terminal string) *buildNotes {
	n := &buildNotes{linkFailureCounts: map[string]int{}}
	seen := map[string]*tokenEntry{}
	var entries, conflicts []*tokenEntry
	for _, e := range input {
		if prev, ok := seen[e.callID]; ok {
			if !equalIDs(prev.prompt, e.prompt) || !equalIDs(prev.gen, e.gen) {
				conflicts = append(conflicts, e)
			}
			continue
		}
		seen[e.callID] = e
		entries = append(entries, e)
	}
	entries, unreconstructable := materializeDeltas(entries)
	var kept []*tokenEntry
	for _, e := range entries {
		if len(e.gen) == 0 {
			n.emptyGeneration = append(n.emptyGeneration, e.callID)
			continue
		}
		kept = append(kept, e)
	}
	for _, c := range conflicts {
		n.fail("duplicate_call_id_conflict")
		n.unresolvedParents = append(n.unresolvedParents, c.callID)
	}
	for _, id := range unreconstructable {
		n.fail("delta_chain_unreconstructable")
		n.unresolvedParents = append(n.unresolvedParents, id)
	}
	if len(kept) == 0 {
		if terminal != "" {
			n.terminalChain = "not_captured"
		}
		return n
	}
	sort.SliceStable(kept, func(i, j int) bool {
		if len(kept[i].prompt) != len(kept[j].prompt) {
			return len(kept[i].prompt) < len(kept[j].prompt)
		}
		return kept[i].callID < kept[j].callID
	})
	var nodes, roots []*buildNode
	byID := map[string]*buildNode{}
	for _, e := range kept {
		node := &buildNode{e: e, cumulative: e.cumulative()}
		parent, note := resolveBuildParent(node, byID, nodes)
		if note != "" {
			n.fail(note)
			if !strings.HasSuffix(note, "_recovered") {
				node.boundary = true
				n.unresolvedParents = append(n.unresolvedParents, e.callID)
			}
		}
		if parent != nil {
			node.parent = parent
			parent.children = append(parent.children, node)
		} else {
			roots = append(roots, node)
		}
		nodes = append(nodes, node)
		byID[e.callID] = node
	}
	terminalNode := byID[terminal]
	onTerminalPath := map[*buildNode]bool{}
	for a := terminalNode; a != nil; a = a.parent {
		onTerminalPath[a] = true
	}

	// Retries: siblings with the same prompt keep the one the verifier
	// scored, else those a child extends, else the smallest call id.
	type group struct {
		parent *buildNode
		nodes  []*buildNode
	}
	var groups []*group
	byParent := map[*buildNode]*group{}
	var rootGroup *group
	for _, node := range nodes {
		var g *group
		if node.parent == nil {
			if rootGroup == nil {
				rootGroup = &group{}
				groups = append(groups, rootGroup)
			}
			g = rootGroup
		} else if g = byParent[node.parent]; g == nil {
			g = &group{parent: node.parent}
			byParent[node.parent] = g
			groups = append(groups, g)
		}
		g.nodes = append(g.nodes, node)
	}
	for _, g := range groups {
		var order []string
		byPrompt := map[string][]*buildNode{}
		for _, node := range g.nodes {
			k := fmt.Sprint(node.e.prompt)
			if _, ok := byPrompt[k]; !ok {
				order = append(order, k)
			}
			byPrompt[k] = append(byPrompt[k], node)
		}
		for _, k := range order {
			retries := byPrompt[k]
			if len(retries) < 2 {
				continue
			}
			keep := map[*buildNode]bool{}
			for _, r := range retries {
				if onTerminalPath[r] {
					keep[r] = true
				}
			}
			if len(keep) == 0 {
				for _, r := range retries {
					for _, c := range r.children {
						if !c.quarantined {
							keep[r] = true
							break
						}
					}
				}
			}
			if len(keep) == 0 {
				least := retries[0]
				for _, r := range retries[1:] {
					if r.e.callID < least.e.callID {
						least = r
					}
				}
				keep[least] = true
				if terminalNode == nil {
					for _, r := range retries {
						n.unresolvedRetries = append(n.unresolvedRetries, r.e.callID)
					}
				}
			}
			for _, r := range retries {
				if !keep[r] && !r.quarantined {
					r.quarantined = true
					n.quarantined = append(n.quarantined, r.e.callID)
				}
			}
		}
	}

	pathTo := func(node *buildNode) []*buildNode {
		var rev []*buildNode
		for c := node; c != nil; c = c.parent {
			rev = append(rev, c)
		}
		for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
			rev[i], rev[j] = rev[j], rev[i]
		}
		return rev
	}
	chainFrom := func(path []*buildNode) *chain {
		c := &chain{rootPrompt: path[0].e.prompt}
		prev := path[0].e.prompt
		for step, node := range path {
			var inter []int64
			if step > 0 && len(prev) <= len(node.e.prompt) {
				inter = node.e.prompt[len(prev):]
			}
			c.links = append(c.links, chainLink{e: node.e, interstitial: inter})
			prev = node.cumulative
		}
		return c
	}
	var terminalChain *chain
	if terminal != "" {
		if terminalNode == nil {
			n.terminalChain = "not_captured"
		} else {
			path := pathTo(terminalNode)
			n.terminalChain = "delivered"
			for _, node := range path {
				if node.quarantined || node.boundary {
					n.terminalChain = "broken"
				}
			}
			if n.terminalChain == "delivered" {
				terminalChain = chainFrom(path)
			}
		}
	}
	var chains []*chain
	for _, leaf := range nodes {
		if len(leaf.children) > 0 {
			continue
		}
		path := pathTo(leaf)
		skip := false
		for _, node := range path {
			if node.quarantined || (terminalChain != nil && node == terminalNode) {
				skip = true
			}
		}
		if !skip {
			chains = append(chains, chainFrom(path))
		}
	}
	if terminalChain != nil {
		chains = append([]*chain{terminalChain}, chains...)
	}
	delivered := 0
	if len(chains) > 0 {
		main := terminalChain
		if main == nil {
			main = chains[0]
			for _, c := range chains[1:] {
				a, b := c.links[0].e, main.links[0].e
				if a.createdAt < b.createdAt || (a.createdAt == b.createdAt && a.callID < b.callID) {
					main = c
				}
			}
		}
		main.id = "main"
		branch := 0
		for _, c := range chains {
			if c != main {
				c.id = "branch-" + strconv.Itoa(branch)
				branch++
			}
		}
		for _, l := range main.links {
			delivered += len(l.e.gen)
		}
	}
	for _, e := range kept {
		n.captured += len(e.gen)
	}
	n.roots, n.chains, n.delivered, n.chainsOut = len(roots), len(chains), delivered, chains
	if n.captured > 0 {
		n.deliveredFraction = pyRound(float64(delivered)/float64(n.captured), 4)
	}
	return n
}

// resolveBuildParent is the recorded parent of node, verified by digest
// against node's prompt; a parent missing from the snapshot is found by
// the longest unique token prefix among the calls before it.
func resolveBuildParent(node *buildNode, byID map[string]*buildNode, earlier []*buildNode) (*buildNode, string) {
	e := node.e
	switch {
	case e.resolution == "root":
		return nil, ""
	case e.resolution == "unresolved":
		return nil, "parent_unresolved"
	case e.resolution != "resolved" && e.parent == nil:
		return nil, "missing_resolution"
	case e.parent == nil:
		return nil, "resolved_parent_missing_id"
	}
	parent := byID[*e.parent]
	if parent == nil {
		if p := longestPrefixParent(e.prompt, earlier); p != nil {
			return p, "parent_call_id_missing_recovered"
		}
		return nil, "parent_call_id_missing"
	}
	cumLen := int64(len(parent.cumulative))
	if parent.e.cumLen != nil {
		cumLen = *parent.e.cumLen
	}
	want := parent.e.digest
	if want == "" {
		want, _ = tokenDigest(parent.cumulative)
	}
	if cumLen <= int64(len(e.prompt)) {
		if got, err := tokenDigest(e.prompt[:cumLen]); err == nil && got == want {
			return parent, ""
		}
	}
	return nil, "parent_digest_mismatch"
}

// longestPrefixParent is the earlier call whose whole sequence is the
// longest prefix of prompt, when exactly one is.
func longestPrefixParent(prompt []int64, earlier []*buildNode) *buildNode {
	var best []*buildNode
	bestLen := 0
	for _, c := range earlier {
		if l := len(c.cumulative); l > 0 && hasPrefix(prompt, c.cumulative) {
			switch {
			case l > bestLen:
				best, bestLen = []*buildNode{c}, l
			case l == bestLen:
				best = append(best, c)
			}
		}
	}
	if len(best) == 1 {
		return best[0]
	}
	return nil
}
