package capture

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// TokenBuild is what finalizing one rollout's training-token capture did.
type TokenBuild struct {
	// Masked is a rollout that training must leave out (mask_sample).
	Masked bool
	// Reasons are why, for the collector's count of masked rollouts.
	Reasons []string
	key     string
	// snapshotID and version name the frozen capture a durable row may
	// retire; empty when it must be kept as evidence.
	snapshotID string
	version    int64
}

// Retirable is a build whose capture may be retired once its row is
// durable.
func (b *TokenBuild) Retirable() bool { return b != nil && b.snapshotID != "" }

// Retire drops the frozen capture the row was built from, once the row is
// durable; a masked or failed build keeps its capture as evidence.
func (b *TokenBuild) Retire(s *TokenStore) error {
	if b == nil || b.snapshotID == "" {
		return nil
	}
	_, err := s.Drop(b.key, b.snapshotID, b.version)
	return err
}

// Finalize is NeMo Gym's finalize_rollout_token_capture on a finished
// rollout's row: a row whose output already carries token ids is left as
// it is; otherwise its response.output is rebuilt from the calls the
// rollout's capture holds, one prefix-contiguous sequence of prompt and
// generated tokens, and _ng_token_capture says what the build kept and
// lost. A rollout whose tokens are missing, incomplete or ambiguous is
// marked mask_sample. It never fails the row: a capture that cannot be read
// masks it. The build is nil where NeMo Gym builds nothing (an output with
// token ids whose capture cannot be frozen).
func (s *TokenStore) Finalize(row []byte) ([]byte, *TokenBuild) {
	key, err := Key(row)
	if err != nil {
		return unusable(row, "malformed rollout id: "+err.Error())
	}
	if carriesTokenIDs(row) {
		if key == "" {
			return row, nil
		}
		snap, err := s.Freeze(key)
		if err != nil {
			return row, nil
		}
		return row, &TokenBuild{key: key, snapshotID: snap.SnapshotID, version: snap.Version}
	}
	if key == "" {
		return unusable(row, "no capture key")
	}
	response := gjson.GetBytes(row, "response")
	var verified *jvalue
	model := ""
	if response.IsObject() {
		if v, err := parse([]byte(response.Raw)); err == nil && len(v.keys) > 0 {
			verified = v
			if m := v.get("model"); m.truthy() {
				model = pyStrV(m)
			}
		}
	}
	explicit, declared := truthyString(row, "_ng_terminal_model_call_id"), truthyString(row, "terminal_response_id")

	b := &TokenBuild{key: key}
	var metrics *jvalue
	var output []byte
	var buildErr string
	snap, err := s.Freeze(key)
	switch {
	case err != nil:
		metrics, buildErr = nCalls(0), pyError(err)
	case len(snap.Entries) == 0:
		metrics, buildErr = nCalls(0), "capture contains no token records"
	default:
		output, metrics, buildErr, b.Masked = assemble(key, snap.Entries, verified, model, explicit, declared)
	}
	if buildErr != "" {
		b.Masked = true
	}
	if snap != nil && snap.Incomplete {
		b.Masked = true
		metrics.set("capture_incomplete", rawValue("true"))
	}
	if b.Masked {
		// NeMo Gym's order, which its abort message keeps.
		if snap != nil && snap.Incomplete {
			b.Reasons = append(b.Reasons, "capture_incomplete")
		}
		if metrics.get("unresolved_parent_calls").truthy() {
			b.Reasons = append(b.Reasons, "unresolved_parent_calls")
		}
		if buildErr != "" {
			b.Reasons = append(b.Reasons, buildErr)
		}
	} else if snap != nil && output != nil {
		b.snapshotID, b.version = snap.SnapshotID, snap.Version
	}
	if output != nil {
		path := "response.output"
		if !response.IsObject() {
			path = "response"
			output = projectedResponse(key, model, output)
		}
		if out, err := sjson.SetRawBytes(row, path, output); err == nil {
			row = out
		}
	}
	if buildErr != "" {
		metrics.set("error", strValue(buildErr))
	}
	if b.Masked {
		row, _ = sjson.SetRawBytes(row, "mask_sample", []byte("true"))
	}
	row, _ = sjson.SetRawBytes(row, "_ng_token_capture", metrics.appendTo(nil))
	return row, b
}

// unusable masks a row whose tokens cannot be looked up.
func unusable(row []byte, why string) ([]byte, *TokenBuild) {
	metrics := nCalls(0)
	metrics.set("error", strValue(why))
	row, _ = sjson.SetRawBytes(row, "mask_sample", []byte("true"))
	row, _ = sjson.SetRawBytes(row, "_ng_token_capture", metrics.appendTo(nil))
	return row, &TokenBuild{Masked: true, Reasons: []string{why}}
}

func nCalls(n int) *jvalue {
	m := newObject()
	m.set("n_calls", rawValue(strconv.Itoa(n)))
	return m
}

// pyError is an error as NeMo Gym's rows name one: its Python type, then
// its message.
func pyError(err error) string {
	var se *SyntaxError
	if errors.As(err, &se) {
		return "JSONDecodeError: " + err.Error()
	}
	return "RuntimeError: " + err.Error()
}

func truthyString(row []byte, key string) string {
	v := gjson.GetBytes(row, key)
	switch {
	case !v.Exists() || v.Type == gjson.Null || v.Type == gjson.False:
		return ""
	case v.Type == gjson.String:
		return v.Str
	}
	if p, err := parse([]byte(v.Raw)); err == nil && p.truthy() {
		return pyStrV(p)
	}
	return ""
}

// carriesTokenIDs is a row whose output already holds what the policy
// sampled: it is what training gets, not a rebuild.
func carriesTokenIDs(row []byte) bool {
	found := false
	gjson.GetBytes(row, "response.output").ForEach(func(_, it gjson.Result) bool {
		if g := it.Get("generation_token_ids"); it.IsObject() && g.Exists() && truthyJSON(g) {
			found = true
		}
		return !found
	})
	return found
}

func truthyJSON(v gjson.Result) bool {
	p, err := parse([]byte(v.Raw))
	return err == nil && p.truthy()
}

// assemble builds the rollout's trajectory from its entries: the output
// items of its main chain (nil when there is none), the metrics, the
// build's error and whether the rollout is masked.
func assemble(key string, lines [][]byte, verified *jvalue, model, explicit, declared string) (output []byte, metrics *jvalue, buildErr string, mask bool) {
	entries := make([]*tokenEntry, 0, len(lines))
	for _, l := range lines {
		e, err := readTokenEntry(l)
		if err != nil {
			return nil, nCalls(0), "ValidationError: " + err.Error(), true
		}
		entries = append(entries, e)
	}
	att := resolveTerminal(entries, verified, explicit, declared)
	attMetric := func(chainStatus string) *jvalue {
		m := newObject()
		method := att.method
		if method == "" {
			method = "none"
		}
		m.set("method", strValue(method))
		if att.callID != "" {
			m.set("call_id", strValue(att.callID))
		} else {
			m.set("call_id", rawValue("null"))
		}
		m.set("reason", strValue(att.reason))
		m.set("chain", strValue(chainStatus))
		return m
	}
	notes := prefixMerging(entries, att.callID)
	items, err := projectMain(notes.chainsOut)
	if err == nil {
		err = prefixContiguous(items)
	}
	if err != nil {
		m := nCalls(len(entries))
		status := notes.terminalChain
		if status == "" {
			status = "error"
		}
		m.set("terminal_attribution", attMetric(status))
		return nil, m, err.Error(), true
	}
	m := nCalls(len(entries))
	m.set("terminal_attribution", attMetric(notes.terminalChain))
	m.set("chains", rawValue(strconv.Itoa(notes.chains)))
	m.set("roots", rawValue(strconv.Itoa(notes.roots)))
	m.set("quarantined_calls", rawValue(strconv.Itoa(len(notes.quarantined))))
	m.set("quarantined_fraction", rawValue(string(tree.AppendOrjsonFloat(nil, pyRound(float64(len(notes.quarantined))/float64(len(entries)), 4)))))
	m.set("delivered_fraction", rawValue(string(tree.AppendOrjsonFloat(nil, notes.deliveredFraction))))
	m.set("generated_tokens_captured", rawValue(strconv.Itoa(notes.captured)))
	m.set("generated_tokens_delivered", rawValue(strconv.Itoa(notes.delivered)))
	failures := newObject()
	for _, f := range notes.linkFailures {
		failures.set(f, rawValue(strconv.Itoa(notes.linkFailureCounts[f])))
	}
	m.set("parent_link_failures", failures)
	m.set("unresolved_parent_calls", rawValue(strconv.Itoa(len(notes.unresolvedParents))))
	m.set("empty_generation_calls", rawValue(strconv.Itoa(len(notes.emptyGeneration))))
	switch {
	case notes.terminalChain == "delivered":
	case att.callID != "" || declared != "":
		mask = true
	default:
		mask = len(notes.unresolvedRetries) > 0 || len(notes.unresolvedParents) > 0 || notes.roots != 1 || notes.chains != 1
	}
	out := []byte{'['}
	generated := false
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = it.appendTo(out)
		if g := it.get("generation_token_ids"); g.truthy() {
			generated = true
		}
	}
	return append(out, ']'), m, "", mask || !generated
}

// projectMain is the main chain as output items: each call's items, the
// one that carried its tokens given the whole prompt so far (the root's
// prompt, the generations and what came between) and its generation.
func projectMain(chains []*chain) ([]*jvalue, error) {
	if len(chains) == 0 {
		return nil, errors.New("ValueError: capture produced no safe trainable chain")
	}
	main := chains[0]
	for _, c := range chains {
		if c.id == "main" {
			main = c
			break
		}
	}
	var items []*jvalue
	cumulative := append([]int64(nil), main.rootPrompt...)
	for step, link := range main.links {
		if step > 0 {
			cumulative = append(cumulative, link.interstitial...)
		}
		e := link.e
		content := make([]*jvalue, len(e.items))
		for i, it := range e.items {
			content[i] = it.copyObject()
		}
		var generated []*jvalue
		switch {
		case e.tokenItem >= 0 && e.tokenItem < len(content):
			generated = content[e.tokenItem : e.tokenItem+1]
		default:
			for _, it := range content {
				if !it.get("generation_token_ids").isNull() {
					generated = append(generated, it)
				}
			}
		}
		if len(generated) == 0 && len(content) > 0 {
			generated = content[len(content)-1:]
		}
		if len(content) == 0 {
			it := newObject()
			it.set("type", strValue("message"))
			content = []*jvalue{it}
			generated = content
		}
		for _, it := range generated {
			it.set("prompt_token_ids", rawValue(string(appendInts(nil, cumulative))))
			it.set("generation_token_ids", rawValue(string(appendInts(nil, e.gen))))
			lp := []byte{'['}
			for i, p := range e.logps {
				if i > 0 {
					lp = append(lp, ',')
				}
				lp = tree.AppendOrjsonFloat(lp, p)
			}
			it.set("generation_log_probs", rawValue(string(append(lp, ']'))))
			if e.experts != nil {
				it.set("routed_experts", e.experts)
			}
		}
		items = append(items, content...)
		cumulative = append(cumulative, e.gen...)
	}
	for _, it := range items {
		if it.get("generation_token_ids").truthy() {
			return items, nil
		}
	}
	return nil, errors.New("ValueError: capture produced no trainable generated tokens")
}

// prefixContiguous requires each generated item's prompt to extend every
// token before it.
func prefixContiguous(items []*jvalue) error {
	var seen []int64
	for _, it := range items {
		if it.get("generation_token_ids").isNull() {
			continue
		}
		prompt, _ := tokenIDs(it.get("prompt_token_ids"), "prompt_token_ids")
		gen, _ := tokenIDs(it.get("generation_token_ids"), "generation_token_ids")
		if !hasPrefix(prompt, seen) {
			return errors.New("AssertionError: projection is not prefix-contiguous: an output item's prompt_token_ids does not extend the tokens seen so far")
		}
		seen = append(append([]int64(nil), prompt...), gen...)
	}
	return nil
}

// projectedResponse is the rebuilt Responses object, for a row without a
// response object of its own.
func projectedResponse(key, model string, output []byte) []byte {
	items, _ := parse(output)
	in, out := 0, 0
	first := true
	for _, it := range items.items {
		g := it.get("generation_token_ids")
		if g.isNull() {
			continue
		}
		if first {
			in, first = len(it.get("prompt_token_ids").items), false
		}
		out += len(g.items)
	}
	r := []byte(`{"id":`)
	r = appendString(r, "proj-"+key)
	r = append(r, `,"model":`...)
	r = appendString(r, model)
	r = append(r, `,"object":"response","output":`...)
	r = append(r, output...)
	return fmt.Appendf(r, `,"usage":{"input_tokens":%d,"output_tokens":%d}}`, in, out)
}
