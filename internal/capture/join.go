package capture

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/agent"
	"github.com/nemo-gym-go/gym/internal/config/tree"
)

// Key is the capture key of a /run row or its result: the rollout id
// the agent prefixes the row's model calls with (agent.RolloutIDFromRun,
// NeMo Gym's maybe_rollout_id_from_run_body), "" when the row has neither
// _ng_rollout_id nor both indices; an id that could not name a file is an
// error.
func Key(row []byte) (string, error) {
	return agent.Correlation{On: true}.RolloutIDFromRun(row)
}

// pyStr is Python's str() of a JSON scalar.
func pyStr(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return v.Str
	case gjson.True:
		return "True"
	case gjson.False:
		return "False"
	case gjson.Number:
		if strings.ContainsAny(v.Raw, ".eE") {
			return tree.PythonFloatRepr(v.Num)
		}
	}
	return v.Raw
}

// noResultClasses are the failure classes of rows NeMo Gym's collector
// joins no capture into: the agent produced no result.
var noResultClasses = map[string]bool{"agent_request_failed": true, "agent_run_error": true, "environment_server_failed": true, "rollout_request_failed": true}

// Join adds a rollout's captured calls to its result row as NeMo Gym's
// collector does: ng_model_call_capture (metrics, calls, gaps),
// ng_trajectory — the agent's own, checked and merged with the captured
// calls, or, for an agent that sent none, the collector's projection of
// the calls — and, for an agent's trajectory, ng_perf. row is the /run row
// as dispatched; the capture is the one under its key, found in the first
// of dirs that has it; latencyMS is the /run's wall-clock time when known.
// A result with no key, or no result at all, is returned as is. The bool
// reports an agent's ng_agent_observations, which gym leaves as it came.
func Join(result, row []byte, dirs []*Store, latencyMS *float64) ([]byte, bool, error) {
	if len(dirs) == 0 {
		return result, false, nil
	}
	res, err := parse(result)
	if err != nil {
		// NeMo Gym's collector cannot write such a row either (orjson
		// refuses it); gym keeps the row and says the capture is missing.
		return result, false, fmt.Errorf("the result cannot carry its capture: %w", err)
	}
	if !res.isObject() {
		return result, false, nil
	}
	if fc := res.get("_ng_failure_class"); fc != nil && fc.str != nil && noResultClasses[*fc.str] || res.get("_ng_dispatch_drained").truthy() {
		return result, false, nil
	}
	key, err := Key(result)
	if err != nil || key == "" {
		return result, false, err
	}
	calls, gaps := readCalls(dirs, key)
	capture := newObject()
	capture.set("rollout_id", strValue(key))
	capture.set("metrics", metrics(calls))
	list := &jvalue{kind: 'a'}
	for _, c := range calls {
		list.items = append(list.items, c.dump(true))
	}
	capture.set("calls", list)
	if len(gaps) > 0 {
		g := &jvalue{kind: 'a'}
		for _, gap := range gaps {
			g.items = append(g.items, gap.dump(false))
		}
		capture.set("gaps", g)
	}
	res.set("ng_model_call_capture", capture)
	if res.get("ng_agent_observations") != nil {
		return res.appendTo(nil), true, nil
	}
	var traj *jvalue
	if own := res.get("ng_trajectory"); own.isObject() {
		traj, err = producerTrajectory(own, taskID(row), key, calls, gaps)
	} else {
		traj, err = validate(trajectory(taskID(row), key, calls, gaps), trajectoryRecord)
	}
	if err != nil {
		// NeMo Gym's _attach_trajectory_record when the record cannot be
		// made: no trajectory, a gap that says why, the payloads kept.
		res.remove("ng_trajectory")
		g := capture.get("gaps")
		if g == nil {
			g = &jvalue{kind: 'a'}
			capture.set("gaps", g)
		}
		g.items = append(g.items, gap{code: "trajectory_projection_failed", detail: "ValidationError"}.dump(false))
	} else {
		res.set("ng_trajectory", traj)
		for _, item := range list.items {
			for _, k := range []string{"request", "response", "request_raw", "response_raw"} {
				item.remove(k)
			}
		}
	}
	if perf := ngPerf(res.get("ng_trajectory"), latencyMS); perf != nil {
		res.set("ng_perf", perf)
	}
	return res.appendTo(nil), false, nil
}

func (v *jvalue) remove(k string) {
	if _, ok := v.members[k]; !ok {
		return
	}
	delete(v.members, k)
	for i, key := range v.keys {
		if key == k {
			v.keys = append(v.keys[:i], v.keys[i+1:]...)
			return
		}
	}
}

type gap struct{ code, detail string }

func (g gap) dump(withNulls bool) *jvalue {
	o := newObject()
	o.set("code", strValue(g.code))
	if withNulls {
		o.set("invocation_id", rawValue("null"))
	}
	if g.detail != "" {
		o.set("detail", strValue(g.detail))
	} else if withNulls {
		o.set("detail", rawValue("null"))
	}
	return o
}

// readCalls reads key's records from the first store that has them.
func readCalls(dirs []*Store, key string) ([]*callRecord, []gap) {
	var store *Store
	for _, s := range dirs {
		if s.has(key) {
			store = s
			break
		}
	}
	if store == nil {
		return nil, []gap{{code: "model_call_capture_no_records"}}
	}
	lines, err := store.lines(key)
	if err != nil {
		return nil, []gap{{code: "model_call_capture_unreadable"}}
	}
	var calls []*callRecord
	invalid := 0
	for _, l := range lines {
		v, err := parse(l.text)
		if err != nil || !v.isObject() {
			invalid++
			continue
		}
		c, ok := buildCall(v, l.index)
		if !ok {
			invalid++
			continue
		}
		calls = append(calls, c)
	}
	var gaps []gap
	if invalid > 0 {
		gaps = append(gaps, gap{code: "model_call_capture_records_unreadable", detail: "count=" + strconv.Itoa(invalid)})
	}
	if store.incomplete(key) {
		gaps = append(gaps, gap{code: "model_call_capture_incomplete"})
	} else if len(calls) == 0 && invalid == 0 {
		gaps = append(gaps, gap{code: "model_call_capture_no_records"})
	}
	return calls, gaps
}

// callRecord is NeMo Gym's ModelCallRecord of one captured exchange.
type callRecord struct {
	fields map[string]*jvalue // every field, nil for null
}

// callFields is ModelCallRecord's field order.
var callFields = []string{"model_call_id", "response_id", "client_session_id", "call_index", "model_ref", "model", "dialect", "status_code",
	"response_status", "finish_reason", "upstream_attempted", "response_source", "upstream_status_code",
	"local_response_reason", "started_at", "completed_at", "tokens_in", "tokens_out", "tokens_reasoning",
	"tokens_total", "request", "response", "request_raw", "response_raw", "tool_calls", "reasoning_content",
	"cache_hit", "cached_tokens", "cache_creation_tokens", "error_category", "latency_total_ms", "latency_ttft_ms"}

func (c *callRecord) dump(payloads bool) *jvalue {
	o := newObject()
	for _, f := range callFields {
		if !payloads && (f == "request" || f == "response" || f == "request_raw" || f == "response_raw") {
			continue
		}
		o.set(f, orNull(c.fields[f]))
	}
	return o
}

func orNull(v *jvalue) *jvalue {
	if v == nil {
		return rawValue("null")
	}
	return v
}

// buildCall is build_model_call_record with ModelCallRecord's validation:
// false where pydantic would refuse the line.
func buildCall(ex *jvalue, index int) (*callRecord, bool) {
	f := map[string]*jvalue{}
	response, request := ex.get("response"), ex.get("request")
	resp, req := response, request
	if !resp.isObject() {
		resp = newObject()
	}
	if !req.isObject() {
		req = newObject()
	}
	usage := resp.get("usage")
	tokens(usage, f)
	cacheSignal(usage, f)
	calls, reasoning, ok := toolCallsAndReasoning(resp)
	if !ok {
		return nil, false
	}
	f["tool_calls"] = calls
	if reasoning != "" {
		f["reasoning_content"] = strValue(reasoning)
	}
	first := newObject()
	if choices := resp.get("choices"); choices != nil && choices.kind == 'a' && len(choices.items) > 0 && choices.items[0].isObject() {
		first = choices.items[0]
	}
	details := resp.get("incomplete_details")
	if !details.isObject() {
		details = newObject()
	}
	for _, v := range []*jvalue{resp.get("stop_reason"), first.get("finish_reason"), details.get("reason")} {
		if v != nil && v.str != nil {
			f["finish_reason"] = v
			break
		}
	}
	if m := or(resp.get("model"), req.get("model")); m != nil && m.str != nil {
		f["model"] = m
	}
	if v := resp.get("id"); v != nil && v.str != nil {
		f["response_id"] = v
	}
	if v := resp.get("status"); v != nil && v.str != nil {
		f["response_status"] = v
	}
	if v := ex.get("client_session_id"); v != nil && v.str != nil {
		f["client_session_id"] = v
	}
	for _, k := range []string{"request_raw", "response_raw"} {
		if v := ex.get(k); v != nil && v.str != nil {
			f[k] = v
		}
	}
	if request.isObject() {
		f["request"] = request
	}
	if response.isObject() {
		f["response"] = response
	}
	f["call_index"] = rawValue(strconv.Itoa(index))
	// The fields copied from the exchange, checked as pydantic's lax mode
	// checks them.
	copies := []struct {
		field, from string
		check       func(*jvalue) (*jvalue, bool)
	}{
		{"model_call_id", "model_call_id", asStr},
		{"model_ref", "model_ref", asModelRef},
		{"dialect", "dialect", asStr},
		{"status_code", "status_code", asInt},
		{"upstream_attempted", "upstream_attempted", asBool},
		{"response_source", "response_source", asSource},
		{"upstream_status_code", "upstream_status_code", asInt},
		{"local_response_reason", "local_response_reason", asStr},
		{"started_at", "started_at", asFloat},
		{"completed_at", "completed_at", asFloat},
		{"error_category", "error_category", asStr},
		{"latency_total_ms", "latency_ms", asFloat},
		{"latency_ttft_ms", "latency_ttft_ms", asFloat},
	}
	for _, c := range copies {
		v := ex.get(c.from)
		if v.isNull() {
			continue
		}
		checked, ok := c.check(v)
		if !ok {
			return nil, false
		}
		f[c.field] = checked
	}
	return &callRecord{fields: f}, true
}

func asStr(v *jvalue) (*jvalue, bool) { return v, v.str != nil }

func asModelRef(v *jvalue) (*jvalue, bool) {
	t, name := v.get("type"), v.get("name")
	if !v.isObject() || t == nil || t.str == nil || *t.str != "responses_api_models" || name == nil || name.str == nil {
		return nil, false
	}
	o := newObject()
	o.set("type", t)
	o.set("name", name)
	return o, true
}

func asSource(v *jvalue) (*jvalue, bool) {
	return v, v.str != nil && (*v.str == "upstream" || *v.str == "local")
}

func asInt(v *jvalue) (*jvalue, bool) {
	if n, ok := intOf(v); ok {
		return rawValue(strconv.FormatInt(n, 10)), true
	}
	if v.str != nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(*v.str), 10, 64); err == nil {
			return rawValue(strconv.FormatInt(n, 10)), true
		}
		return nil, false
	}
	if f, ok := floatOf(v); ok && f == math.Trunc(f) && !math.IsInf(f, 0) {
		return rawValue(strconv.FormatInt(int64(f), 10)), true
	}
	return nil, false
}

func asFloat(v *jvalue) (*jvalue, bool) {
	if v.str != nil {
		f, err := strconv.ParseFloat(strings.TrimSpace(*v.str), 64)
		if err != nil {
			return nil, false
		}
		return rawValue(string(tree.AppendOrjsonFloat(nil, f))), true
	}
	f, ok := floatOf(v)
	if !ok {
		return nil, false
	}
	return rawValue(string(tree.AppendOrjsonFloat(nil, f))), true
}

func asBool(v *jvalue) (*jvalue, bool) {
	switch string(v.text) {
	case "true", "false":
		return v, true
	case "1":
		return rawValue("true"), true
	case "0":
		return rawValue("false"), true
	}
	if v.str != nil {
		switch strings.ToLower(*v.str) {
		case "true", "t", "yes", "y", "on", "1":
			return rawValue("true"), true
		case "false", "f", "no", "n", "off", "0":
			return rawValue("false"), true
		}
	}
	return nil, false
}

// intOf is a JSON integer (not a bool, not a float).
func intOf(v *jvalue) (int64, bool) {
	if v == nil || v.kind != 's' || v.str != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v.text), 10, 64)
	return n, err == nil
}

func floatOf(v *jvalue) (float64, bool) {
	if v == nil || v.kind != 's' || v.str != nil {
		return 0, false
	}
	switch string(v.text) {
	case "true", "false", "null":
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v.text), 64)
	return f, err == nil
}

// count is _token_count: a JSON integer of at least 0.
func count(v *jvalue) (int64, bool) {
	n, ok := intOf(v)
	return n, ok && n >= 0
}

func detailCount(usage *jvalue, groups, fields []string) (int64, bool) {
	for _, g := range groups {
		d := usage.get(g)
		if !d.isObject() {
			continue
		}
		for _, name := range fields {
			if n, ok := count(d.get(name)); ok {
				return n, true
			}
		}
	}
	return 0, false
}

func intValue(n int64) *jvalue { return rawValue(strconv.FormatInt(n, 10)) }

// tokens is extract_token_stats.
func tokens(usage *jvalue, f map[string]*jvalue) {
	if !usage.isObject() {
		return
	}
	in, hasIn := count(usage.get("input_tokens"))
	if !hasIn {
		in, hasIn = count(usage.get("prompt_tokens"))
	}
	out, hasOut := count(usage.get("output_tokens"))
	if !hasOut {
		out, hasOut = count(usage.get("completion_tokens"))
	}
	read, hasRead := count(usage.get("cache_read_input_tokens"))
	creation, hasCreation := count(usage.get("cache_creation_input_tokens"))
	if hasRead || hasCreation {
		total := read + creation
		if hasIn || total > 0 {
			in, hasIn = in+total, true
		}
	}
	total, hasTotal := count(usage.get("total_tokens"))
	if !hasTotal && hasIn && hasOut {
		total, hasTotal = in+out, true
	}
	reasoning, hasReasoning := detailCount(usage, []string{"output_tokens_details", "completion_tokens_details"}, []string{"reasoning_tokens"})
	if !hasReasoning {
		reasoning, hasReasoning = count(usage.get("reasoning_output_tokens"))
	}
	for _, t := range []struct {
		field string
		n     int64
		ok    bool
	}{{"tokens_in", in, hasIn}, {"tokens_out", out, hasOut}, {"tokens_reasoning", reasoning, hasReasoning}, {"tokens_total", total, hasTotal}, {"cache_creation_tokens", creation, hasCreation}} {
		if t.ok {
			f[t.field] = intValue(t.n)
		}
	}
}

// cacheSignal is _cache_signal.
func cacheSignal(usage *jvalue, f map[string]*jvalue) {
	if !usage.isObject() {
		return
	}
	cached, ok := detailCount(usage, []string{"prompt_tokens_details", "input_tokens_details"}, []string{"cached_tokens", "cached_input_tokens"})
	if !ok {
		cached, ok = count(usage.get("cache_read_input_tokens"))
	}
	if !ok {
		cached, ok = count(usage.get("cached_input_tokens"))
	}
	if !ok {
		return
	}
	f["cached_tokens"] = intValue(cached)
	f["cache_hit"] = rawValue(strconv.FormatBool(cached > 0))
}

// arguments is _as_arguments.
func arguments(v *jvalue) *jvalue {
	switch {
	case v.isObject():
		return v
	case v != nil && v.str != nil:
		if parsed, err := parse([]byte(*v.str)); err == nil {
			return parsed
		}
		o := newObject()
		o.set("_raw", v)
		return o
	}
	return newObject()
}

func toolCall(id, name, args *jvalue) *jvalue {
	o := newObject()
	o.set("call_id", orNull(id))
	o.set("name", orNull(name))
	o.set("arguments", args)
	return o
}

// toolCallsAndReasoning is _tool_calls_and_reasoning, over the three
// answer shapes.
func toolCallsAndReasoning(resp *jvalue) (*jvalue, string, bool) {
	calls := &jvalue{kind: 'a'}
	var reasoning []string
	joined := func() string { return strings.Join(reasoning, "\n") }
	if output := resp.get("output"); output != nil && output.kind == 'a' {
		for _, item := range output.items {
			if !item.isObject() {
				continue
			}
			t := item.get("type")
			switch {
			case t != nil && t.str != nil && *t.str == "function_call":
				calls.items = append(calls.items, toolCall(or(item.get("call_id"), item.get("id")), item.get("name"), arguments(item.get("arguments"))))
			case t != nil && t.str != nil && *t.str == "reasoning":
				summaries, ok := iterable(item.get("summary"))
				if !ok {
					return nil, "", false
				}
				for _, s := range summaries {
					if text := s.get("text"); text != nil && text.str != nil && *text.str != "" {
						reasoning = append(reasoning, *text.str)
					}
				}
			}
		}
		return calls, joined(), true
	}
	if choices := resp.get("choices"); choices != nil && choices.kind == 'a' {
		for _, choice := range choices.items {
			msg := choice.get("message")
			if !msg.isObject() {
				continue
			}
			tcs, ok := iterable(msg.get("tool_calls"))
			if !ok {
				return nil, "", false
			}
			for _, tc := range tcs {
				if !tc.isObject() {
					continue
				}
				fn := or(tc.get("function"), newObject())
				if !fn.isObject() {
					fn = newObject()
				}
				calls.items = append(calls.items, toolCall(tc.get("id"), fn.get("name"), arguments(fn.get("arguments"))))
			}
			if text := or(msg.get("reasoning_content"), msg.get("reasoning")); text != nil && text.str != nil && *text.str != "" {
				reasoning = append(reasoning, *text.str)
			}
		}
		return calls, joined(), true
	}
	if content := resp.get("content"); content != nil && content.kind == 'a' {
		for _, block := range content.items {
			if !block.isObject() {
				continue
			}
			t := block.get("type")
			switch {
			case t != nil && t.str != nil && *t.str == "tool_use":
				calls.items = append(calls.items, toolCall(block.get("id"), block.get("name"), or(block.get("input"), newObject())))
			case t != nil && t.str != nil && (*t.str == "thinking" || *t.str == "redacted_thinking"):
				if th := block.get("thinking"); th != nil && th.str != nil {
					reasoning = append(reasoning, *th.str)
				}
			}
		}
		return calls, joined(), true
	}
	return calls, "", true
}

// metrics is aggregate_model_call_records: sums over the calls that
// report a value (null when none does), and every call counted.
func metrics(calls []*callRecord) *jvalue {
	m := newObject()
	for _, field := range []string{"tokens_in", "tokens_out", "tokens_reasoning", "tokens_total", "cached_tokens"} {
		var sum int64
		seen := false
		for _, c := range calls {
			if n, ok := intOf(c.fields[field]); ok {
				sum += n
				seen = true
			}
		}
		if seen {
			m.set(field, intValue(sum))
		} else {
			m.set(field, rawValue("null"))
		}
	}
	var lat []float64
	for _, c := range calls {
		if f, ok := floatOf(c.fields["latency_total_ms"]); ok {
			lat = append(lat, f)
		}
	}
	if len(lat) > 0 {
		m.set("latency_total_ms", rawValue(string(tree.AppendOrjsonFloat(nil, pySum(lat)))))
	} else {
		m.set("latency_total_ms", rawValue("null"))
	}
	m.set("num_calls", intValue(int64(len(calls))))
	return m
}

// pySum is Python 3.12+'s sum() of floats: Neumaier's compensated sum.
func pySum(v []float64) float64 {
	s, c := v[0], 0.0
	for _, x := range v[1:] {
		t := s + x
		if math.Abs(s) >= math.Abs(x) {
			c += (s - t) + x
		} else {
			c += (x - t) + s
		}
		s = t
	}
	if c != 0 && !math.IsInf(c, 0) && !math.IsNaN(c) {
		s += c
	}
	return s
}

// responseMetadataFields is TrajectoryResponseMetadata's field order.
var responseMetadataFields = []string{"response_id", "model_ref", "model", "dialect", "status_code", "response_status",
	"finish_reason", "upstream_attempted", "response_source", "upstream_status_code", "local_response_reason",
	"error_category", "latency_ttft_ms"}

// taskID is the trajectory's task_id, as NeMo Gym's _trajectory_identity
// takes it from the dispatched row: task_id, problem_id or instance_id,
// else the task index.
func taskID(row []byte) string {
	for _, k := range []string{"task_id", "problem_id", "instance_id"} {
		if v := gjson.GetBytes(row, k); v.Exists() && v.Type != gjson.Null {
			return pyStr(v)
		}
	}
	return pyStr(gjson.GetBytes(row, "_ng_task_index"))
}

// trajectory is the ng_trajectory NeMo Gym's collector builds for an agent
// that sent none: no invocations or turns, the captured calls, and the
// gaps that say so.
func trajectory(taskID, key string, calls []*callRecord, captureGaps []gap) *jvalue {
	t := newObject()
	t.set("schema_version", strValue("1.0"))
	t.set("task_id", strValue(taskID))
	t.set("rollout_id", strValue(key))
	t.set("invocations", &jvalue{kind: 'a'})
	t.set("turns", &jvalue{kind: 'a'})
	mcs := &jvalue{kind: 'a'}
	for _, c := range calls {
		mcs.items = append(mcs.items, projectCall(c))
	}
	t.set("model_calls", mcs)
	t.set("tool_calls", &jvalue{kind: 'a'})
	gaps := append([]gap{}, captureGaps...)
	if len(calls) == 0 {
		gaps = append(gaps, gap{code: "model_calls_unavailable"})
	}
	gaps = append(gaps, gap{code: "turns_unavailable"}, gap{code: "conversation_unavailable"})
	seen := map[gap]bool{}
	g := &jvalue{kind: 'a'}
	for _, x := range gaps {
		if !seen[x] {
			seen[x] = true
			g.items = append(g.items, x.dump(true))
		}
	}
	t.set("gaps", g)
	return t
}

func firstNonNull(a, b *jvalue) *jvalue {
	if a != nil && !a.isNull() {
		return a
	}
	return b
}
