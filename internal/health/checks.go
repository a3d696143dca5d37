package health

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Check is one rollout-health check of NeMo Gym 0.7.0's registry.
type Check struct {
	ID    string
	Scope string // rollout or task
	reads reads
}

type reads uint8

const (
	readsTrajectory reads = 1 << iota
	readsTurns
	readsObservedCalls
	readsBoundCalls // model calls referred to by the turns
	readsOwnedCalls // model calls referred to by the turns or the invocations
)

// Registry is every check, in NeMo Gym's order (the order of the
// summary's coverage and issues).
var Registry = []Check{
	{"check_execution_error", "rollout", 0},
	{"record_unreadable", "rollout", 0},
	{"rollout_duplicate_identity", "rollout", 0},
	{"rollout_missing_agent_turns", "rollout", readsTrajectory | readsTurns},
	{"rollout_ended_on_failed_model_call", "rollout", readsTrajectory | readsObservedCalls},
	{"agent_turn_hollow", "rollout", readsTrajectory | readsTurns},
	{"model_call_zero_completion_tokens", "rollout", readsTrajectory | readsOwnedCalls},
	{"model_call_missing_token_counts", "rollout", readsTrajectory | readsOwnedCalls},
	{"trajectory_capture_mismatch", "rollout", readsTrajectory | readsOwnedCalls},
	{"model_call_failed", "rollout", readsTrajectory | readsOwnedCalls},
	{"rollout_token_count_mismatch", "rollout", readsTrajectory | readsBoundCalls},
	{"model_call_runaway_generation", "rollout", readsTrajectory | readsOwnedCalls},
	{"task_consistently_unhealthy", "task", 0},
	{"task_no_successful_model_calls", "task", 0},
}

// NormalizeIgnored trims, de-duplicates and checks ignored check IDs.
func NormalizeIgnored(ids []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, id := range ids {
		id = strings.TrimSpace(id)
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	var unknown []string
	for _, id := range out {
		if !slices.ContainsFunc(Registry, func(c Check) bool { return c.ID == id }) {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, &UsageError{fmt.Sprintf("Unknown rollout health check(s): %s", strings.Join(unknown, ", "))}
	}
	return out, nil
}

// UsageError is bad input to the check itself (an unknown check, a
// missing file): NeMo Gym reports it as an argument error.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// kv is one member of a finding's locator or detail, in order.
type kv struct {
	key string
	val any // nil, string, int, int64, bool or []string
}

// Finding is evidence a check emits; verdicts are derived from findings.
type Finding struct {
	Check   string
	Locator []kv // nil: none
	Detail  []kv
}

var lengthLimitReasons = map[string]bool{"length": true, "max_output_tokens": true, "max_tokens": true}

var incompleteCallGaps = []string{"model_calls_unavailable", "model_call_capture_incomplete", "model_call_capture_records_unreadable", "model_call_capture_unreadable"}

// contradictionGaps are the trajectory's own word that a reference did
// not join: the kind of capture mismatch each stands for.
var contradictionGaps = map[string]string{
	"model_call_reference_unmatched": "missing_captured_call",
	"model_call_reference_ambiguous": "duplicated_captured_call",
	"model_call_reference_conflict":  "conflicting_call_ownership",
}

func (t *trajectory) contradictions() []gap {
	var out []gap
	for _, g := range t.gaps {
		if _, ok := contradictionGaps[g.code]; ok {
			out = append(out, g)
		}
	}
	return out
}

var toolCallTypes = map[string]bool{
	"function_call": true, "tool_call": true, "tool_use": true, "mcp_call": true, "mcp_list_tools": true,
	"mcp_approval_request": true, "file_search_call": true, "web_search_call": true, "computer_call": true,
	"image_generation_call": true, "code_interpreter_call": true, "local_shell_call": true, "custom_tool_call": true,
}

// pyIsSpace is str.isspace() of one character.
func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// nonempty is whether a value carries content: a string with more than
// whitespace, a list with such an item, an object with such a text field.
func nonempty(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.TrimFunc(x, pyIsSpace) != ""
	case []any:
		return slices.ContainsFunc(x, nonempty)
	case map[string]any:
		for _, k := range []string{"text", "content", "output_text", "answer", "refusal", "encrypted_content", "reasoning", "reasoning_content", "summary"} {
			if nonempty(x[k]) {
				return true
			}
		}
	}
	return false
}

// truthy is Python's bool() of a JSON value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case json.Number:
		f, _ := x.Float64()
		return f != 0
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// hasToolCall is whether an answer holds a tool call. A type that is a
// list or an object cannot be looked up in NeMo Gym's set of tool-call
// types: Python raises TypeError there.
func hasToolCall(v any) (bool, errExecution) {
	switch x := v.(type) {
	case []any:
		for _, it := range x {
			if has, exc := hasToolCall(it); has || exc != "" {
				return has, exc
			}
		}
	case map[string]any:
		switch t := x["type"].(type) {
		case string:
			if toolCallTypes[t] {
				return true, ""
			}
		case []any, map[string]any:
			return false, "TypeError"
		}
		return truthy(x["tool_calls"]), ""
	}
	return false, ""
}

func refKey(r callRef) string {
	if truthyStr(r.modelCallID) {
		return "call:" + *r.modelCallID
	}
	if r.modelRef != nil && truthyStr(r.responseID) {
		return "response:" + r.modelRef.typ + ":" + r.modelRef.name + ":" + *r.responseID
	}
	return ""
}

func (c *call) failed() bool {
	return (c.statusCode != nil && *c.statusCode >= 400) || truthyStr(c.errorCategory) ||
		(c.responseStatus != nil && (*c.responseStatus == "failed" || *c.responseStatus == "error" || *c.responseStatus == "cancelled"))
}

func (c *call) successful() bool {
	return !c.failed() && (c.statusCode == nil || (*c.statusCode >= 200 && *c.statusCode < 400))
}

// identity is a call's replay identity: Gym's model_call_id, else the
// provider's response id (under its model when known).
func (c *call) identity() string {
	if truthyStr(c.modelCallID) {
		return "call:" + *c.modelCallID
	}
	if c.modelRef != nil && truthyStr(c.responseID) {
		return "response:" + c.modelRef.typ + ":" + c.modelRef.name + ":" + *c.responseID
	}
	if truthyStr(c.responseID) {
		return "response::" + *c.responseID
	}
	return ""
}

func (c *call) locator(fallback int) []kv {
	id := strconv.Itoa(fallback)
	if truthyStr(c.modelCallID) {
		id = *c.modelCallID
	} else if truthyStr(c.responseID) {
		id = *c.responseID
	}
	return []kv{{"call_id", id}}
}

func optVal[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// bindings are the calls a trajectory's references resolve to.
type bindings struct {
	references []string
	matched    []*call
	missing    []string
	duplicated []struct {
		ref   string
		count int
	}
}

func (b *bindings) observed() bool { return len(b.references) > 0 }
func (b *bindings) complete() bool {
	return b.observed() && len(b.missing) == 0 && len(b.duplicated) == 0
}

type refItem struct {
	key string
	raw callRef
}

type refSignature struct{ callID, typ, name, responseID string }

func signature(r callRef) refSignature {
	s := refSignature{callID: derefOr(r.modelCallID), responseID: derefOr(r.responseID)}
	if r.modelRef != nil {
		s.typ, s.name = r.modelRef.typ, r.modelRef.name
	}
	return s
}

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func refItems(lists ...[]callRef) []refItem {
	var out []refItem
	for _, l := range lists {
		for _, r := range l {
			if k := refKey(r); k != "" {
				out = append(out, refItem{k, r})
			}
		}
	}
	return out
}

func dedupe(items []refItem) []refItem {
	var out []refItem
	seen := map[refSignature]bool{}
	for _, it := range items {
		s := signature(it.raw)
		if !seen[s] {
			seen[s] = true
			out = append(out, it)
		}
	}
	return out
}

func sameRef(a, b *modelRef) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// bind joins the turns' references (turn) and the turns' and invocations'
// (owned) to the captured calls.
func bind(t *trajectory, calls []*call) (turnB, owned bindings) {
	var turnRefs [][]callRef
	for _, tr := range t.turns {
		turnRefs = append(turnRefs, tr.modelCalls)
	}
	turnItems := dedupe(refItems(turnRefs...))
	ownedItems := dedupe(append(append([]refItem(nil), turnItems...), refItems(t.invocations...)...))

	byCallID := map[string][]*call{}
	type respKey struct{ typ, name, id string }
	byResponse := map[respKey][]*call{}
	for _, c := range calls {
		if truthyStr(c.modelCallID) {
			byCallID[*c.modelCallID] = append(byCallID[*c.modelCallID], c)
		}
		if c.modelRef != nil && truthyStr(c.responseID) {
			k := respKey{c.modelRef.typ, c.modelRef.name, *c.responseID}
			byResponse[k] = append(byResponse[k], c)
		}
	}
	resolved := map[refSignature][]*call{}
	for _, it := range ownedItems {
		r := it.raw
		var matches []*call
		if truthyStr(r.modelCallID) {
			for _, c := range byCallID[*r.modelCallID] {
				if (r.modelRef == nil || sameRef(r.modelRef, c.modelRef)) && (r.responseID == nil || (c.responseID != nil && *r.responseID == *c.responseID)) {
					matches = append(matches, c)
				}
			}
		} else {
			matches = byResponse[respKey{r.modelRef.typ, r.modelRef.name, *r.responseID}]
		}
		resolved[signature(r)] = matches
	}
	build := func(items []refItem) bindings {
		var b bindings
		seen := map[int]bool{}
		for _, it := range items {
			b.references = append(b.references, it.key)
			m := resolved[signature(it.raw)]
			switch {
			case len(m) == 0:
				b.missing = append(b.missing, it.key)
			case len(m) > 1:
				b.duplicated = append(b.duplicated, struct {
					ref   string
					count int
				}{it.key, len(m)})
			case !seen[m[0].index]:
				seen[m[0].index] = true
				b.matched = append(b.matched, m[0])
			}
		}
		slices.SortFunc(b.matched, func(x, y *call) int { return cmp.Compare(x.index, y.index) })
		return b
	}
	return build(turnItems), build(ownedItems)
}

// chains groups calls by the model they went to, in first-seen order.
func chains(calls []*call) ([]string, map[string][]*call) {
	var keys []string
	by := map[string][]*call{}
	for _, c := range calls {
		k := "\x00" // no model named
		if c.modelRef != nil {
			k = c.modelRef.typ + "/" + c.modelRef.name
		}
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], c)
	}
	return keys, by
}

func timeOrder(chain []*call) []*call {
	ordered := slices.Clone(chain)
	slices.SortStableFunc(ordered, func(a, b *call) int {
		var sa, sb float64
		if a.startedAt != nil {
			sa = *a.startedAt
		}
		if b.startedAt != nil {
			sb = *b.startedAt
		}
		return cmp.Or(cmp.Compare(sa, sb), cmp.Compare(a.index, b.index))
	})
	return ordered
}

// chainEndedOnFailure is whether a model's own last call, in time,
// failed. A chain that cannot be ordered (a call without started_at) says
// nothing unless every call failed.
func chainEndedOnFailure(chain []*call) bool {
	failed := 0
	for _, c := range chain {
		if c.failed() {
			failed++
		}
	}
	if failed == 0 {
		return false
	}
	if failed == len(chain) {
		return true
	}
	for _, c := range chain {
		if c.startedAt == nil {
			return false
		}
	}
	o := timeOrder(chain)
	return o[len(o)-1].failed()
}

func endedOnFailedCall(calls []*call) bool {
	keys, by := chains(calls)
	for _, k := range keys {
		if chainEndedOnFailure(by[k]) {
			return true
		}
	}
	return false
}

func tokenCount(p *int64) int64 {
	if p == nil || *p < 0 {
		return 0
	}
	return *p
}

// errExecution stands for a Python exception inside a check: the check is
// unobserved and a check_execution_error names the exception type.
type errExecution string

// responseHasContent is whether a model call's response carries anything.
func responseHasContent(v any) (bool, errExecution) {
	r, ok := v.(map[string]any)
	if !ok {
		return false, ""
	}
	if nonempty(r["output_text"]) || nonempty(r["content"]) {
		return true, ""
	}
	chat := false
	if truthy(r["choices"]) {
		switch choices := r["choices"].(type) {
		case []any:
			for _, ch := range choices {
				m, ok := ch.(map[string]any)
				if !ok {
					continue
				}
				if nonempty(m["text"]) {
					chat = true
					break
				}
				msg := m["message"]
				if truthy(msg) {
					mm, ok := msg.(map[string]any)
					if !ok {
						return false, "AttributeError"
					}
					if nonempty(mm["content"]) {
						chat = true
						break
					}
				}
			}
		case string, map[string]any:
		default:
			return false, "TypeError"
		}
	}
	return nonempty(r["output"]) || chat, ""
}

// runCheck runs one rollout check on what it reads.
func runCheck(id string, usage tokenUsage, t *trajectory, calls []*call, b *bindings) ([]Finding, errExecution) {
	switch id {
	case "rollout_missing_agent_turns", "agent_turn_hollow":
		// Every turn is looked at first, as NeMo Gym's _agent_steps does.
		tools := make([]bool, len(t.turns))
		for i, tr := range t.turns {
			var exc errExecution
			if tools[i], exc = hasToolCall(tr.answer); exc != "" {
				return nil, exc
			}
		}
		var out []Finding
		active := false
		for i, tr := range t.turns {
			message := nonempty(tr.answer) || nonempty(tr.reasoning)
			active = active || message || tools[i] || len(refItems(tr.modelCalls)) > 0
			if !message && !tools[i] {
				out = append(out, Finding{Check: id, Locator: []kv{{"turn", tr.turnNo}}, Detail: []kv{{"reason", "agent turn has no message or tool calls"}}})
			}
		}
		if id == "agent_turn_hollow" {
			return out, ""
		}
		if active {
			return nil, ""
		}
		return []Finding{{Check: id, Detail: []kv{{"reason", "no agent turn with model activity"}}}}, ""
	case "rollout_ended_on_failed_model_call":
		var out []Finding
		keys, by := chains(calls)
		for _, k := range keys {
			chain := by[k]
			if !chainEndedOnFailure(chain) {
				continue
			}
			o := timeOrder(chain)
			last := o[len(o)-1]
			var model any
			if k != "\x00" {
				model = k
			}
			ok := 0
			for _, c := range chain {
				if c.successful() {
					ok++
				}
			}
			out = append(out, Finding{Check: id, Locator: last.locator(last.index), Detail: []kv{
				{"model_ref", model}, {"status", optVal(last.statusCode)}, {"error_category", optVal(last.errorCategory)},
				{"observed_calls", len(chain)}, {"successful_calls", ok}}})
		}
		return out, ""
	case "model_call_zero_completion_tokens":
		var out []Finding
		for i, c := range b.matched {
			if c.tokensOut != nil && *c.tokensOut == 0 {
				out = append(out, Finding{Check: id, Locator: c.locator(i), Detail: []kv{{"completion_tokens", 0}}})
			}
		}
		return out, ""
	case "model_call_missing_token_counts":
		var out []Finding
		for i, c := range b.matched {
			missing := []string{}
			if c.tokensIn == nil {
				missing = append(missing, "prompt_tokens")
			}
			if c.tokensOut == nil {
				missing = append(missing, "completion_tokens")
			}
			if len(missing) > 0 {
				out = append(out, Finding{Check: id, Locator: c.locator(i), Detail: []kv{{"missing", missing}}})
			}
		}
		return out, ""
	case "trajectory_capture_mismatch":
		var out []Finding
		type seenKey struct{ kind, loc string }
		seen := map[seenKey]bool{}
		last := func(ref string) string { return ref[strings.LastIndex(ref, ":")+1:] }
		for _, ref := range b.missing {
			k := seenKey{"missing_captured_call", last(ref)}
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, Finding{Check: id, Locator: []kv{{"call_id", k.loc}}, Detail: []kv{{"kind", k.kind}}})
		}
		for _, d := range b.duplicated {
			k := seenKey{"duplicated_captured_call", last(d.ref)}
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, Finding{Check: id, Locator: []kv{{"call_id", k.loc}}, Detail: []kv{{"kind", k.kind}, {"count", d.count}}})
		}
		// NeMo Gym does not add the gaps' own keys to what it has seen, so
		// repeated gaps each give a finding.
		for _, g := range t.contradictions() {
			detail := "unknown"
			if truthyStr(g.detail) {
				detail = *g.detail
			}
			k := seenKey{contradictionGaps[g.code], last(detail)}
			if seen[k] {
				continue
			}
			out = append(out, Finding{Check: id, Locator: []kv{{"call_id", k.loc}}, Detail: []kv{{"kind", k.kind}, {"observation_gap", g.code}, {"invocation_id", optVal(g.invocationID)}}})
		}
		return out, ""
	case "model_call_failed":
		terminal := -1
		for _, c := range b.matched {
			terminal = max(terminal, c.index)
		}
		var out []Finding
		for i, c := range b.matched {
			if c.failed() {
				out = append(out, Finding{Check: id, Locator: c.locator(i), Detail: []kv{
					{"status", optVal(c.statusCode)}, {"error_category", optVal(c.errorCategory)},
					{"terminal", b.complete() && terminal >= 0 && c.index == terminal}}})
			}
		}
		return out, ""
	case "rollout_token_count_mismatch":
		tp, tc, present := usage.prompt, usage.completion, usage.present
		var cp, cc int64
		for _, c := range b.matched {
			cp += tokenCount(c.tokensIn)
			cc += tokenCount(c.tokensOut)
		}
		if present && (tp != cp || tc != cc) {
			return []Finding{{Check: id, Detail: []kv{{"transcript_prompt", tp}, {"transcript_completion", tc}, {"capture_prompt", cp}, {"capture_completion", cc}}}}, ""
		}
		return nil, ""
	case "model_call_runaway_generation":
		var out []Finding
		for i, c := range b.matched {
			if c.finishReason == nil || !lengthLimitReasons[*c.finishReason] {
				continue
			}
			has, exc := responseHasContent(c.response)
			if exc != "" {
				return nil, exc
			}
			if !has {
				out = append(out, Finding{Check: id, Locator: c.locator(i), Detail: []kv{{"finish_reason", *c.finishReason}}})
			}
		}
		return out, ""
	}
	// check_execution_error, record_unreadable and rollout_duplicate_identity
	// are decided outside the per-rollout checks.
	return nil, ""
}
