package capture

import (
	"errors"
	"fmt"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"sort"
	"strconv"
)

// NeMo Gym's trajectory models (rollout_observability.py), as the
// collector validates an agent's own ng_trajectory: pydantic in lax mode,
// unknown keys refused, every field written back in its declared order
// with its default. What is typed Any is kept as it came.

type fieldKind int

const (
	fStr fieldKind = iota
	fInt
	fFloat
	fBool
	fAny
	fLit
	fModel
	fList // of elem, or of anything when elem is nil
)

type field struct {
	name     string
	kind     fieldKind
	required bool
	nullable bool
	def      string // the default's JSON text, for a field that may be missing
	lits     []string
	min      *float64
	model    *schema // fModel, or fList's element
}

type schema struct {
	fields      []field
	ignoreExtra bool
	check       func(*jvalue) error
}

var (
	zero, one = 0.0, 1.0

	modelServerRef = &schema{ignoreExtra: true, fields: []field{
		{name: "type", kind: fLit, required: true, lits: []string{"responses_api_models"}},
		{name: "name", kind: fStr, required: true},
	}}
	modelCallRef = &schema{fields: []field{
		{name: "model_call_id", kind: fStr, nullable: true, def: "null"},
		{name: "model_ref", kind: fModel, nullable: true, def: "null", model: modelServerRef},
		{name: "response_id", kind: fStr, nullable: true, def: "null"},
	}, check: func(v *jvalue) error {
		if !v.get("model_call_id").truthy() && !(v.get("model_ref").isObject() && v.get("response_id").truthy()) {
			return errors.New("model_call_id or both model_ref and response_id are required")
		}
		return nil
	}}
	tokenStats = &schema{fields: []field{
		{name: "prompt_tokens", kind: fInt, nullable: true, def: "null", min: &zero},
		{name: "completion_tokens", kind: fInt, nullable: true, def: "null", min: &zero},
		{name: "reasoning_tokens", kind: fInt, nullable: true, def: "null", min: &zero},
		{name: "total_tokens", kind: fInt, nullable: true, def: "null", min: &zero},
		{name: "cached_tokens", kind: fInt, nullable: true, def: "null", min: &zero},
	}}
	responseMetadata = &schema{fields: []field{
		{name: "response_id", kind: fStr, nullable: true, def: "null"},
		{name: "model_ref", kind: fModel, nullable: true, def: "null", model: modelServerRef},
		{name: "model", kind: fStr, nullable: true, def: "null"},
		{name: "dialect", kind: fStr, nullable: true, def: "null"},
		{name: "status_code", kind: fInt, nullable: true, def: "null"},
		{name: "response_status", kind: fStr, nullable: true, def: "null"},
		{name: "finish_reason", kind: fStr, nullable: true, def: "null"},
		{name: "upstream_attempted", kind: fBool, nullable: true, def: "null"},
		{name: "response_source", kind: fLit, nullable: true, def: "null", lits: []string{"upstream", "local"}},
		{name: "upstream_status_code", kind: fInt, nullable: true, def: "null"},
		{name: "local_response_reason", kind: fStr, nullable: true, def: "null"},
		{name: "error_category", kind: fStr, nullable: true, def: "null"},
		{name: "latency_ttft_ms", kind: fFloat, nullable: true, def: "null", min: &zero},
	}}
	trajectoryModelCall = &schema{fields: []field{
		{name: "model_call_id", kind: fStr, nullable: true, def: "null"},
		{name: "started_at", kind: fFloat, nullable: true, def: "null"},
		{name: "completed_at", kind: fFloat, nullable: true, def: "null"},
		{name: "duration_ms", kind: fFloat, nullable: true, def: "null", min: &zero},
		{name: "request", kind: fAny, nullable: true, def: "null"},
		{name: "response", kind: fAny, nullable: true, def: "null"},
		{name: "response_metadata", kind: fModel, def: "{}", model: responseMetadata},
		{name: "token_stats", kind: fModel, def: "{}", model: tokenStats},
	}}
	trajectoryTurn = &schema{fields: []field{
		{name: "invocation_id", kind: fStr, required: true},
		{name: "task_id", kind: fStr, required: true},
		{name: "rollout_id", kind: fStr, required: true},
		{name: "turn_no", kind: fInt, required: true, min: &one},
		{name: "timestamp", kind: fFloat, required: true},
		{name: "question", kind: fAny, nullable: true, def: "null"},
		{name: "answer", kind: fAny, nullable: true, def: "null"},
		{name: "reasoning_content", kind: fAny, nullable: true, def: "null"},
		{name: "resolved", kind: fBool, nullable: true, def: "null"},
		{name: "step_count", kind: fInt, required: true, min: &zero},
		{name: "model_calls", kind: fList, def: "[]", model: modelCallRef},
	}}
	agentInvocation = &schema{fields: []field{
		{name: "kind", kind: fLit, def: `"agent_invocation"`, lits: []string{"agent_invocation"}},
		{name: "invocation_id", kind: fStr, required: true},
		{name: "parent_invocation_id", kind: fStr, nullable: true, def: "null"},
		{name: "spawned_by_tool_call_id", kind: fStr, nullable: true, def: "null"},
		{name: "status", kind: fLit, def: `"unknown"`, lits: []string{"completed", "failed", "incomplete", "unknown"}},
		{name: "duration_ms", kind: fFloat, nullable: true, def: "null", min: &zero},
		{name: "error_type", kind: fStr, nullable: true, def: "null"},
		{name: "model_calls", kind: fList, def: "[]", model: modelCallRef},
		{name: "conversation", kind: fList, def: "[]"},
	}}
	trajectoryToolCall = &schema{fields: []field{
		{name: "kind", kind: fLit, def: `"tool_call"`, lits: []string{"tool_call"}},
		{name: "invocation_id", kind: fStr, required: true},
		{name: "tool_call_id", kind: fStr, required: true},
		{name: "sandbox_id", kind: fStr, nullable: true, def: "null"},
		{name: "tool_name", kind: fStr, nullable: true, def: "null"},
		{name: "started_at", kind: fFloat, nullable: true, def: "null"},
		{name: "completed_at", kind: fFloat, nullable: true, def: "null"},
		{name: "duration_ms", kind: fFloat, nullable: true, def: "null", min: &zero},
		{name: "timing_source", kind: fLit, nullable: true, def: "null", lits: []string{"executor", "artifact", "harness"}},
		{name: "status", kind: fLit, def: `"unknown"`, lits: []string{"completed", "failed", "timeout", "cancelled", "incomplete", "unknown"}},
		{name: "error_type", kind: fStr, nullable: true, def: "null"},
		{name: "output", kind: fAny, nullable: true, def: "null"},
	}, check: func(v *jvalue) error {
		s, sok := floatOf(v.get("started_at"))
		c, cok := floatOf(v.get("completed_at"))
		if sok && cok && c < s {
			return errors.New("completed_at must not precede started_at")
		}
		return nil
	}}
	observationGap = &schema{fields: []field{
		{name: "code", kind: fStr, required: true},
		{name: "invocation_id", kind: fStr, nullable: true, def: "null"},
		{name: "detail", kind: fStr, nullable: true, def: "null"},
	}}
	trajectoryRecord = &schema{fields: []field{
		{name: "schema_version", kind: fLit, def: `"1.0"`, lits: []string{"1.0"}},
		{name: "task_id", kind: fStr, required: true},
		{name: "rollout_id", kind: fStr, required: true},
		{name: "invocations", kind: fList, def: "[]", model: agentInvocation},
		{name: "turns", kind: fList, def: "[]", model: trajectoryTurn},
		{name: "model_calls", kind: fList, def: "[]", model: trajectoryModelCall},
		{name: "tool_calls", kind: fList, def: "[]", model: trajectoryToolCall},
		{name: "gaps", kind: fList, def: "[]", model: observationGap},
	}, check: checkRecordIdentity}
)

// checkRecordIdentity is TrajectoryRecord's own validator.
func checkRecordIdentity(v *jvalue) error {
	seen := map[string]bool{}
	for _, inv := range v.get("invocations").items {
		id := *inv.get("invocation_id").str
		if seen[id] {
			return errors.New("invocation_id must be unique within a trajectory")
		}
		seen[id] = true
	}
	calls := map[string]bool{}
	for _, mc := range v.get("model_calls").items {
		if id := mc.get("model_call_id"); id.truthy() {
			if calls[*id.str] {
				return errors.New("model_call_id must be unique within a trajectory")
			}
			calls[*id.str] = true
		}
	}
	task, rollout := *v.get("task_id").str, *v.get("rollout_id").str
	turns := map[string]bool{}
	for _, t := range v.get("turns").items {
		if *t.get("task_id").str != task || *t.get("rollout_id").str != rollout {
			return errors.New("turn identity must match the trajectory")
		}
		k := *t.get("invocation_id").str + "\x00" + string(t.get("turn_no").text)
		if turns[k] {
			return errors.New("turn number must be unique within an invocation")
		}
		turns[k] = true
	}
	return nil
}

// validate is s.model_validate(v).model_dump(mode="json").
func validate(v *jvalue, s *schema) (*jvalue, error) {
	if !v.isObject() {
		return nil, errors.New("a mapping is required")
	}
	known := map[string]bool{}
	for _, f := range s.fields {
		known[f.name] = true
	}
	if !s.ignoreExtra {
		for _, k := range v.keys {
			if !known[k] {
				return nil, fmt.Errorf("%s: extra inputs are not permitted", k)
			}
		}
	}
	out := newObject()
	for _, f := range s.fields {
		val, present := v.members[f.name]
		if !present {
			if f.required {
				return nil, fmt.Errorf("%s: field required", f.name)
			}
			d, _ := parse([]byte(f.def))
			if f.kind == fModel && d.isObject() {
				if d, _ = validate(d, f.model); d == nil {
					return nil, fmt.Errorf("%s: bad default", f.name)
				}
			}
			out.set(f.name, d)
			continue
		}
		if val.isNull() {
			if !f.nullable && f.kind != fAny {
				return nil, fmt.Errorf("%s: a value is required, not null", f.name)
			}
			out.set(f.name, rawValue("null"))
			continue
		}
		got, err := coerce(val, f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		out.set(f.name, got)
	}
	if s.check != nil {
		if err := s.check(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func coerce(v *jvalue, f field) (*jvalue, error) {
	var got *jvalue
	ok := true
	switch f.kind {
	case fAny:
		return v, nil
	case fStr:
		got, ok = asStr(v)
	case fInt:
		got, ok = laxInt(v)
	case fFloat:
		got, ok = laxFloat(v)
	case fBool:
		got, ok = asBool(v)
	case fLit:
		ok = false
		if v.str != nil {
			for _, l := range f.lits {
				if *v.str == l {
					got, ok = v, true
				}
			}
		}
	case fModel:
		return validate(v, f.model)
	case fList:
		if v.kind != 'a' {
			return nil, errors.New("a list is required")
		}
		list := &jvalue{kind: 'a'}
		for i, it := range v.items {
			if f.model == nil {
				if !it.isObject() {
					return nil, fmt.Errorf("[%d]: an item object is required", i)
				}
				list.items = append(list.items, it)
				continue
			}
			x, err := validate(it, f.model)
			if err != nil {
				return nil, fmt.Errorf("[%d].%w", i, err)
			}
			list.items = append(list.items, x)
		}
		return list, nil
	}
	if !ok {
		return nil, fmt.Errorf("invalid value %s", v.appendTo(nil))
	}
	if f.min != nil {
		n, _ := strconv.ParseFloat(string(got.text), 64)
		if n < *f.min {
			return nil, fmt.Errorf("must be at least %v", *f.min)
		}
	}
	return got, nil
}

// laxInt and laxFloat are pydantic's lax int and float: booleans count.
func laxInt(v *jvalue) (*jvalue, bool) {
	switch string(v.text) {
	case "true":
		return rawValue("1"), true
	case "false":
		return rawValue("0"), true
	}
	return asInt(v)
}

func laxFloat(v *jvalue) (*jvalue, bool) {
	switch string(v.text) {
	case "true":
		return rawValue("1.0"), true
	case "false":
		return rawValue("0.0"), true
	}
	return asFloat(v)
}

// producerTrajectory is NeMo Gym's _build_trajectory_record for an agent
// that sent its own trajectory: the producer's invocations, turns and tool
// calls, checked and in their canonical form, the captured calls merged
// into its model calls by model_call_id (what the capture knows wins) or
// appended, and the gaps of both. An error is a record NeMo Gym cannot
// make, whose trajectory the collector drops.
func producerTrajectory(traj *jvalue, taskID, key string, calls []*callRecord, captureGaps []gap) (*jvalue, error) {
	var gaps []*jvalue
	invocations, turns, tools, modelCalls := []*jvalue{}, []*jvalue{}, []*jvalue{}, []*jvalue{}
	turnsObserved := false
	p, err := validate(traj, trajectoryRecord)
	if err != nil {
		gaps = append(gaps, gapValue("producer_trajectory_invalid", nil, strp("ValidationError")))
	} else {
		turnsObserved = true
		var mismatch []string
		if *p.get("task_id").str != taskID {
			mismatch = append(mismatch, "task_id")
		}
		if *p.get("rollout_id").str != key {
			mismatch = append(mismatch, "rollout_id")
		}
		turns = p.get("turns").items
		if len(mismatch) > 0 {
			detail := mismatch[0]
			if len(mismatch) == 2 {
				detail = "task_id,rollout_id"
			}
			gaps = append(gaps, gapValue("producer_trajectory_identity_mismatch", nil, &detail))
			for i, t := range turns {
				c := t.copyObject()
				c.set("task_id", strValue(taskID))
				c.set("rollout_id", strValue(key))
				turns[i] = c
			}
		}
		gaps = append(gaps, p.get("gaps").items...)
		invocations, tools, modelCalls = p.get("invocations").items, p.get("tool_calls").items, p.get("model_calls").items
	}
	sort.SliceStable(turns, func(i, j int) bool {
		a, b := turns[i], turns[j]
		ta, _ := floatOf(a.get("timestamp"))
		tb, _ := floatOf(b.get("timestamp"))
		if ta != tb {
			return ta < tb
		}
		if ia, ib := *a.get("invocation_id").str, *b.get("invocation_id").str; ia != ib {
			return ia < ib
		}
		na, _ := intOf(a.get("turn_no"))
		nb, _ := intOf(b.get("turn_no"))
		return na < nb
	})

	positions := map[string]int{}
	for i, mc := range modelCalls {
		if id := mc.get("model_call_id"); id != nil && id.str != nil {
			positions[*id.str] = i
		}
	}
	modelCalls = append([]*jvalue(nil), modelCalls...)
	for _, c := range calls {
		projected := projectCall(c)
		id := c.fields["model_call_id"]
		if id != nil && id.str != nil {
			if i, ok := positions[*id.str]; ok {
				delete(positions, *id.str)
				modelCalls[i] = mergeCall(modelCalls[i], projected)
				continue
			}
		}
		modelCalls = append(modelCalls, projected)
	}
	for _, g := range captureGaps {
		gaps = append(gaps, g.dump(true))
	}
	if len(modelCalls) == 0 {
		gaps = append(gaps, gapValue("model_calls_unavailable", nil, nil))
	}
	if len(turns) == 0 && !turnsObserved {
		gaps = append(gaps, gapValue("turns_unavailable", nil, nil))
	}
	conversation := false
	for _, inv := range invocations {
		if c := inv.get("conversation"); c != nil && len(c.items) > 0 {
			conversation = true
		}
	}
	if !conversation {
		gaps = append(gaps, gapValue("conversation_unavailable", nil, nil))
	}

	t := newObject()
	t.set("schema_version", strValue("1.0"))
	t.set("task_id", strValue(taskID))
	t.set("rollout_id", strValue(key))
	t.set("invocations", &jvalue{kind: 'a', items: invocations})
	t.set("turns", &jvalue{kind: 'a', items: turns})
	t.set("model_calls", &jvalue{kind: 'a', items: modelCalls})
	t.set("tool_calls", &jvalue{kind: 'a', items: tools})
	seen := map[string]bool{}
	g := &jvalue{kind: 'a'}
	for _, x := range gaps {
		k := string(x.get("code").appendTo(nil)) + "\x00" + string(x.get("invocation_id").appendTo(nil)) + "\x00" + string(x.get("detail").appendTo(nil))
		if !seen[k] {
			seen[k] = true
			g.items = append(g.items, x)
		}
	}
	t.set("gaps", g)
	return validate(t, trajectoryRecord)
}

func strp(s string) *string { return &s }

func gapValue(code string, invocation, detail *string) *jvalue {
	o := newObject()
	o.set("code", strValue(code))
	for _, f := range []struct {
		k string
		v *string
	}{{"invocation_id", invocation}, {"detail", detail}} {
		if f.v != nil {
			o.set(f.k, strValue(*f.v))
		} else {
			o.set(f.k, rawValue("null"))
		}
	}
	return o
}

// projectCall is a captured call as a TrajectoryModelCall.
func projectCall(c *callRecord) *jvalue {
	mc := newObject()
	mc.set("model_call_id", orNull(c.fields["model_call_id"]))
	mc.set("started_at", orNull(c.fields["started_at"]))
	mc.set("completed_at", orNull(c.fields["completed_at"]))
	mc.set("duration_ms", orNull(c.fields["latency_total_ms"]))
	mc.set("request", orNull(firstNonNull(c.fields["request"], c.fields["request_raw"])))
	mc.set("response", orNull(firstNonNull(c.fields["response"], c.fields["response_raw"])))
	meta := newObject()
	for _, k := range responseMetadataFields {
		meta.set(k, orNull(c.fields[k]))
	}
	if meta.get("response_status").isNull() {
		if r := c.fields["response"]; r.isObject() {
			if s := r.get("status"); s != nil && s.str != nil {
				meta.set("response_status", s)
			}
		}
	}
	mc.set("response_metadata", meta)
	stats := newObject()
	for _, s := range [][2]string{{"prompt_tokens", "tokens_in"}, {"completion_tokens", "tokens_out"}, {"reasoning_tokens", "tokens_reasoning"}, {"total_tokens", "tokens_total"}, {"cached_tokens", "cached_tokens"}} {
		if n, ok := count(c.fields[s[1]]); ok {
			stats.set(s[0], intValue(n))
		} else {
			stats.set(s[0], rawValue("null"))
		}
	}
	mc.set("token_stats", stats)
	return mc
}

// mergeCall is the producer's model call updated with what the capture
// knows of it: every value the capture has wins, the producer's own stay
// where it has none.
func mergeCall(producer, captured *jvalue) *jvalue {
	merged := producer.copyObject()
	for _, k := range captured.keys {
		v := captured.members[k]
		if k == "response_metadata" || k == "token_stats" {
			sub := merged.get(k).copyObject()
			for _, sk := range v.keys {
				if sv := v.members[sk]; !sv.isNull() {
					sub.set(sk, sv)
				}
			}
			merged.set(k, sub)
			continue
		}
		if !v.isNull() {
			merged.set(k, v)
		}
	}
	return merged
}

// ngPerf is NeMo Gym's _build_ng_perf: what one rollout's trajectory says
// of its turns, tool calls and the tokens of the model calls its
// invocations own; nil for a trajectory with no invocation (the
// collector's own projection), which has no turns to speak of.
// t is a record validate made — NeMo Gym validates it again, which changes
// nothing a second time; latencyMS is the /run's wall-clock time, when
// known.
func ngPerf(t *jvalue, latencyMS *float64) *jvalue {
	if !t.isObject() || len(t.get("invocations").items) == 0 {
		return nil
	}
	calls := t.get("model_calls").items
	refText := func(v *jvalue) string {
		if v.isNull() {
			return ""
		}
		return string(v.appendTo(nil))
	}
	byID, byResponse := map[string][]int{}, map[string][]int{}
	for i, c := range calls {
		if id := c.get("model_call_id"); id.truthy() {
			byID[*id.str] = append(byID[*id.str], i)
		}
		meta := c.get("response_metadata")
		if ref, rid := meta.get("model_ref"), meta.get("response_id"); ref.isObject() && rid.truthy() {
			k := refText(ref) + "\x00" + *rid.str
			byResponse[k] = append(byResponse[k], i)
		}
	}
	match := func(ref *jvalue) int {
		var cands []int
		switch id, mref, rid := ref.get("model_call_id"), ref.get("model_ref"), ref.get("response_id"); {
		case id.truthy():
			for _, i := range byID[*id.str] {
				meta := calls[i].get("response_metadata")
				if (mref.isNull() || refText(mref) == refText(meta.get("model_ref"))) && (rid.isNull() || refText(rid) == refText(meta.get("response_id"))) {
					cands = append(cands, i)
				}
			}
		case mref.isObject() && rid.truthy():
			cands = byResponse[refText(mref)+"\x00"+*rid.str]
		}
		if len(cands) == 1 {
			return cands[0]
		}
		return -1
	}
	claimed := map[int]bool{}
	var owned []*jvalue
	ownedBy, toolsBy, turnsBy := map[string]int{}, map[string]int{}, map[string]int{}
	invocations := t.get("invocations").items
	for _, inv := range invocations {
		for _, ref := range inv.get("model_calls").items {
			i := match(ref)
			if i < 0 || claimed[i] {
				continue
			}
			claimed[i] = true
			owned = append(owned, calls[i])
			ownedBy[*inv.get("invocation_id").str]++
		}
	}
	for _, tc := range t.get("tool_calls").items {
		toolsBy[*tc.get("invocation_id").str]++
	}
	for _, turn := range t.get("turns").items {
		turnsBy[*turn.get("invocation_id").str]++
	}
	numTurns, numTools := 0, 0
	for _, inv := range invocations {
		id := *inv.get("invocation_id").str
		numTools += toolsBy[id]
		switch {
		case turnsBy[id] > 0:
			numTurns += turnsBy[id]
		case ownedBy[id] > 0:
			numTurns += ownedBy[id]
		default:
			numTurns++
		}
	}
	perf := newObject()
	perf.set("num_turns", intValue(int64(numTurns)))
	perf.set("num_tool_calls", intValue(int64(numTools)))
	perf.set("token_observability_coverage", rawValue(string(tree.AppendOrjsonFloat(nil, min(1.0, float64(len(owned))/float64(numTurns))))))
	for _, f := range [][2]string{{"prompt_tokens", "prompt_tokens"}, {"cached_prompt_tokens", "cached_tokens"}, {"completion_tokens", "completion_tokens"}, {"reasoning_tokens", "reasoning_tokens"}} {
		var sum int64
		seen := false
		for _, c := range owned {
			if n, ok := intOf(c.get("token_stats").get(f[1])); ok {
				sum += n
				seen = true
			}
		}
		if seen {
			perf.set(f[0], intValue(sum))
		}
	}
	if latencyMS != nil {
		perf.set("total_latency_ms", rawValue(string(tree.AppendOrjsonFloat(nil, *latencyMS))))
	}
	return perf
}
