package capture

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"sort"
	"strconv"
	"time"
)

// ErrNoTokenIDs is an answer that carries no token ids: the rollout's
// token capture is then incomplete, and the call itself goes on.
var ErrNoTokenIDs = errors.New("the response carries no token ids")

// TokenCall is one model call of a rollout under training-token capture,
// from its request to its entry: the parent it continues is decided, and
// its dispatch recorded, before it is generated (Begin), and the entry is
// written from the whole answer (Finish).
type TokenCall struct {
	store      *TokenStore
	key, id    string
	items      []*jvalue
	resolution string // root, resolved or unresolved
	reason     string
	parent     string
}

// Begin starts call id of rollout key from its request body (Responses,
// Chat Completions or, converted, Messages). An error is a call that must
// not be generated: its rollout's capture is already taken.
func (s *TokenStore) Begin(key, id string, request []byte) (*TokenCall, error) {
	c := &TokenCall{store: s, key: key, id: id}
	items, err := requestItems(request)
	if err != nil {
		c.resolution, c.reason = "unresolved", "lookup_error"
	} else {
		c.items = items
		c.resolve()
	}
	if err := s.BeginCall(key, id); err != nil {
		return nil, err
	}
	return c, nil
}

// requestItems are NeMo Gym's request turns: messages, or a list input,
// after a pseudo-turn holding instructions and tools when there are any.
func requestItems(request []byte) ([]*jvalue, error) {
	body, err := parse(request)
	if err != nil {
		return nil, err
	}
	var turns []*jvalue
	list := body.get("messages")
	if list == nil || list.kind != 'a' {
		list = body.get("input")
	}
	if list != nil && list.kind == 'a' {
		for _, it := range list.items {
			if !it.isNull() {
				turns = append(turns, it)
			}
		}
	}
	instructions, tools := body.get("instructions"), body.get("tools")
	if !instructions.truthy() && !tools.truthy() {
		return turns, nil
	}
	env := newObject()
	for _, f := range [...]struct {
		key string
		v   *jvalue
	}{{"instructions", instructions}, {"tools", tools}} {
		if f.v == nil {
			f.v = rawValue("null")
		}
		env.set(f.key, f.v)
	}
	envelope := newObject()
	envelope.set("role", strValue("_ng_request_envelope"))
	envelope.set("content", strValue(string(env.appendPyDumps(nil))))
	return append([]*jvalue{envelope}, turns...), nil
}

// lineageEntry is what parent lookup reads of an entry.
type lineageEntry struct {
	ModelCallID               string  `json:"model_call_id"`
	ContinuationFingerprint   string  `json:"continuation_fingerprint"`
	FingerprintVersion        *int    `json:"fingerprint_version"`
	ContinuationContextLen    int     `json:"continuation_context_len"`
	ContinuationContextDigest string  `json:"continuation_context_digest"`
	Digest                    *string `json:"digest"`
	CumLen                    *int    `json:"cum_len"`
}

// resolve is NeMo Gym's lineage resolution: a request with no
// model-authored turn is a root; otherwise the one earlier call of the
// rollout whose answer ends the request's model-authored turns and whose
// own request opens this one is its parent (calls with the same tokens
// count as one); none or several leave it unresolved.
func (c *TokenCall) resolve() {
	fp, err := assistantFingerprint(c.items)
	if err != nil {
		c.resolution, c.reason = "unresolved", "lookup_error"
		return
	}
	if fp == "" {
		c.resolution = "root"
		return
	}
	lines, err := c.store.entryLines(c.key)
	if err != nil {
		c.resolution, c.reason = "unresolved", "lookup_error"
		return
	}
	seen := map[string]bool{}
	var found []lineageEntry
	for _, l := range lines {
		var e lineageEntry
		if err := json.Unmarshal(l, &e); err != nil {
			c.resolution, c.reason = "unresolved", "lookup_error"
			return
		}
		if seen[e.ModelCallID] || e.ContinuationFingerprint != fp || e.FingerprintVersion == nil || *e.FingerprintVersion != fingerprintVersion ||
			e.ContinuationContextDigest == "" || e.ContinuationContextLen < 0 || len(c.items) < e.ContinuationContextLen {
			continue
		}
		if d, err := conversationDigest(c.items[:e.ContinuationContextLen]); err != nil || d != e.ContinuationContextDigest {
			continue
		}
		seen[e.ModelCallID] = true
		found = append(found, e)
	}
	if len(found) > 1 && sameTokens(found) {
		sort.Slice(found, func(i, j int) bool { return found[i].ModelCallID < found[j].ModelCallID })
		found = found[:1]
	}
	switch len(found) {
	case 1:
		c.resolution, c.parent = "resolved", found[0].ModelCallID
	case 0:
		c.resolution, c.reason = "unresolved", "no_match"
	default:
		c.resolution, c.reason = "unresolved", "ambiguous"
	}
}

func sameTokens(es []lineageEntry) bool {
	key := func(e lineageEntry) string {
		if e.Digest == nil || e.CumLen == nil {
			return ""
		}
		return *e.Digest + "/" + strconv.Itoa(*e.CumLen)
	}
	first := key(es[0])
	if first == "" || *es[0].Digest == "" {
		return false
	}
	for _, e := range es[1:] {
		if key(e) != first {
			return false
		}
	}
	return true
}

// Finish writes the call's entry from its whole answer (a Responses
// object or a chat completion). ErrNoTokenIDs, or any error, leaves the
// rollout marked incomplete.
func (c *TokenCall) Finish(answer []byte) error {
	if len(answer) == 0 {
		return errors.Join(ErrNoTokenIDs, c.store.MarkIncomplete(c.key, c.id))
	}
	entry, err := c.entry(answer)
	if err == nil {
		err = c.store.Append(c.key, c.id, entry)
	}
	if err != nil {
		return errors.Join(err, c.store.MarkIncomplete(c.key, c.id))
	}
	return nil
}

// tokenFieldNames are the fields a token-bearing item carries, which the
// entry holds once, off its items.
var tokenFieldNames = [...]string{"prompt_token_ids", "generation_token_ids", "generation_log_probs", "routed_experts"}

// entry is the call's TokenEntry as NeMo Gym writes it: sorted keys.
func (c *TokenCall) entry(answer []byte) ([]byte, error) {
	payload, err := parse(answer)
	if err != nil {
		return nil, err
	}
	if !payload.isObject() {
		return nil, ErrNoTokenIDs
	}
	items := outputItems(payload)
	var carriers []*jvalue
	for _, it := range items {
		for _, f := range tokenFieldNames[:3] {
			if v := it.get(f); v != nil && !v.isNull() {
				carriers = append(carriers, it)
				break
			}
		}
	}
	switch len(carriers) {
	case 0:
		return nil, ErrNoTokenIDs
	case 1:
	default:
		return nil, errors.New("multiple response items carry token metadata")
	}
	src := carriers[0]
	var missing []string
	for _, f := range tokenFieldNames[:3] {
		if src.get(f).isNull() {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("partial token metadata is missing: %v", missing)
	}
	prompt, err := tokenIDs(src.get("prompt_token_ids"), "prompt_token_ids")
	if err != nil {
		return nil, err
	}
	gen, err := tokenIDs(src.get("generation_token_ids"), "generation_token_ids")
	if err != nil {
		return nil, err
	}
	logps, err := logProbs(src.get("generation_log_probs"))
	if err != nil {
		return nil, err
	}
	if len(gen) != len(logps) {
		return nil, fmt.Errorf("generation_token_ids and generation_log_probs must have the same length (got %d and %d)", len(gen), len(logps))
	}
	stripped := make([]*jvalue, len(items))
	tokenItem := -1
	for i, it := range items {
		if g := it.get("generation_token_ids"); g != nil && !g.isNull() {
			tokenItem = i
		}
		s := newObject()
		for _, k := range it.keys {
			if k != "prompt_token_ids" && k != "generation_token_ids" && k != "generation_log_probs" && k != "routed_experts" {
				s.set(k, it.members[k])
			}
		}
		stripped[i] = s
	}
	cumulative := append(append([]int64(nil), prompt...), gen...)
	digest, err := tokenDigest(cumulative)
	if err != nil {
		return nil, err
	}
	withOutput := append(append([]*jvalue(nil), c.items...), stripped...)
	fingerprint, err := assistantFingerprint(withOutput)
	if err != nil {
		return nil, err
	}
	context, err := conversationDigest(c.items)
	if err != nil {
		return nil, err
	}

	// The keys in sorted order, as orjson's OPT_SORT_KEYS writes them.
	e := []byte(`{"continuation_context_digest":`)
	e = appendString(e, context)
	e = append(e, `,"continuation_context_len":`...)
	e = strconv.AppendInt(e, int64(len(c.items)), 10)
	e = append(e, `,"continuation_fingerprint":`...)
	e = appendString(e, fingerprint)
	e = append(e, `,"created_at":`...)
	e = tree.AppendOrjsonFloat(e, epochSeconds(time.Now()))
	e = append(e, `,"cum_len":`...)
	e = strconv.AppendInt(e, int64(len(cumulative)), 10)
	e = append(e, `,"digest":`...)
	e = appendString(e, digest)
	e = append(e, `,"fingerprint_version":`...)
	e = strconv.AppendInt(e, fingerprintVersion, 10)
	e = append(e, `,"generation_log_probs":[`...)
	for i, lp := range logps {
		if i > 0 {
			e = append(e, ',')
		}
		e = tree.AppendOrjsonFloat(e, lp)
	}
	e = append(e, `],"generation_token_ids":`...)
	e = appendInts(e, gen)
	e = append(e, `,"model":`...)
	model := ""
	if m := payload.get("model"); m.truthy() {
		model = pyStrV(m)
	}
	e = appendString(e, model)
	e = append(e, `,"model_call_id":`...)
	e = appendString(e, c.id)
	e = append(e, `,"output_items":[`...)
	for i, it := range stripped {
		if i > 0 {
			e = append(e, ',')
		}
		e = it.appendSorted(e)
	}
	e = append(e, `],"parent_call_id":`...)
	e = appendNullable(e, c.parent)
	e = append(e, `,"parent_resolution":`...)
	e = appendString(e, c.resolution)
	e = append(e, `,"parent_resolution_reason":`...)
	e = appendString(e, c.reason)
	e = append(e, `,"prefix_requested":false,"prefix_supplied":false,"prompt_is_delta":false,"prompt_token_ids":`...)
	e = appendInts(e, prompt)
	e = append(e, `,"response_id":`...)
	if id := payload.get("id"); id.truthy() {
		e = appendString(e, pyStrV(id))
	} else {
		e = append(e, "null"...)
	}
	e = append(e, `,"rollout_id":`...)
	e = appendString(e, c.key)
	e = append(e, `,"routed_experts":`...)
	if re := src.get("routed_experts"); re != nil {
		e = re.appendSorted(e)
	} else {
		e = append(e, "null"...)
	}
	e = append(e, `,"schema_version":1,"token_item_index":`...)
	if tokenItem >= 0 {
		e = strconv.AppendInt(e, int64(tokenItem), 10)
	} else {
		e = append(e, "null"...)
	}
	return append(e, '}'), nil
}

// outputItems are the answer's items (NeMo Gym's response_to_output_items):
// a Responses output, or each chat choice's message as an assistant
// message item.
func outputItems(payload *jvalue) []*jvalue {
	var items []*jvalue
	if out := payload.get("output"); out != nil && out.kind == 'a' && len(out.items) > 0 {
		for _, it := range out.items {
			if it.isObject() {
				items = append(items, it)
			}
		}
		return items
	}
	if choices := payload.get("choices"); choices != nil && choices.kind == 'a' {
		for _, ch := range choices.items {
			msg := ch.get("message")
			if !msg.isObject() {
				continue
			}
			it := msg.copyObject()
			if it.get("type") == nil {
				it.set("type", strValue("message"))
			}
			if it.get("role") == nil {
				it.set("role", strValue("assistant"))
			}
			items = append(items, it)
		}
	}
	return items
}

// tokenIDs reads a list of token ids as pydantic's list[int] does.
func tokenIDs(v *jvalue, field string) ([]int64, error) {
	if v == nil || v.kind != 'a' {
		return nil, fmt.Errorf("%s is not a list", field)
	}
	out := make([]int64, len(v.items))
	for i, it := range v.items {
		f, err := strconv.ParseFloat(string(it.text), 64)
		if it.kind != 's' || it.str != nil || err != nil || f != float64(int64(f)) {
			return nil, fmt.Errorf("%s[%d] is not an integer", field, i)
		}
		n, err := strconv.ParseInt(string(it.text), 10, 64)
		if err != nil {
			n = int64(f)
		}
		if n < 0 {
			return nil, fmt.Errorf("%s[%d] is negative", field, i)
		}
		out[i] = n
	}
	return out, nil
}

// logProbs reads log probabilities as pydantic's list[float] does.
func logProbs(v *jvalue) ([]float64, error) {
	if v == nil || v.kind != 'a' {
		return nil, errors.New("generation_log_probs is not a list")
	}
	out := make([]float64, len(v.items))
	for i, it := range v.items {
		f, err := strconv.ParseFloat(string(it.text), 64)
		if it.kind != 's' || it.str != nil || err != nil {
			return nil, fmt.Errorf("generation_log_probs[%d] is not a number", i)
		}
		out[i] = f
	}
	return out, nil
}

func appendInts(dst []byte, ids []int64) []byte {
	dst = append(dst, '[')
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, id, 10)
	}
	return append(dst, ']')
}
