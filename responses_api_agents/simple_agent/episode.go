package simpleagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/agent"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/openai"
	"github.com/nemo-gym-go/gym/internal/server"
)

// emptyTurnMessage is what NeMo Gym 0.7.0's simple_agent says when it ends
// an episode whose model answered with neither a tool call nor an
// assistant message, in the response's metadata.ng_termination_message.
const emptyTurnMessage = "Ending trajectory: model returned no assistant message or tool calls " +
	"(reasoning-only or empty output) without reported truncation. " +
	"This is the stop-token case (finish_reason='stop'), not length truncation " +
	"(finish_reason='length', handled separately via incomplete_details). " +
	"This indicates either a badly trained model requiring training-level fixes " +
	"or a bug in the inference engine."

// responses is POST /v1/responses (and its /ng-rollout twins): the tool
// loop of spec §5.3. The cookies it came with are the resources session;
// both sessions go back on the response, for /run to hand to /verify.
func (a *simpleAgent) responses(w http.ResponseWriter, r *http.Request) error {
	var scratch [24]jsonl.Member
	body, members, object, err := server.DecodeJSONObject(r, scratch[:0])
	if err != nil {
		return err
	}
	e := &episode{
		a:                a,
		modelURL:         a.modelURL + agent.URLPathForRequest("/v1/responses", r),
		resourcesCookies: r.Cookies(),
	}
	if err := e.readRequest(bodyParams(body, members, object)); err != nil {
		return err
	}
	if id := server.RolloutID(r); id != "" && a.Correlation.Observability {
		e.traj = newTrajectory(id, a.modelServer)
	}
	final, err := e.run(r.Context())
	if err != nil {
		return err
	}
	agent.SetCookies(w.Header(), e.resourcesCookies)
	agent.SetCookies(w.Header(), e.modelCookies)
	return agent.WriteJSON(w, final)
}

// readRequest takes the episode's parameters and input items from a
// /v1/responses body.
func (e *episode) readRequest(p params) error {
	if err := checkParams(p, []any{"body"}); err != nil {
		return err
	}
	body := p.doc
	input := p.members[jsonl.Lookup(body, p.members, "input")]
	e.paramsHead, e.paramsTail = body[p.start:input.ValueStart], body[input.ValueEnd:]
	if in := input.Value(body); in[0] == '"' {
		// A bare string is one user message (NeMoGymEasyInputMessage, type
		// left implied as NeMo Gym sends it).
		e.items = []string{`{"role":"user","content":` + string(in) + `}`}
	} else {
		items, _ := jsonl.Elements(body, input.ValueStart, nil)
		e.items = make([]string, len(items))
		doc := string(body) // one copy for all the items
		for i, it := range items {
			e.items[i] = doc[it.Start:it.End]
		}
	}
	e.inputLen = len(e.items)
	return nil
}

// params is a request's parameters (the /v1/responses body, or a /run
// row's responses_create_params) read with its own members, whose offsets
// are in doc.
type params struct {
	doc        []byte
	start, end int // the value, in doc
	members    []jsonl.Member
	object     bool
}

// bodyParams is a request body as params, with the members
// server.DecodeJSONObject found.
func bodyParams(body []byte, members []jsonl.Member, object bool) params {
	return params{doc: body, start: jsonl.SkipSpace(body, 0), end: len(body), members: members, object: object}
}

// memberParams is the value of m, a member of the valid object in doc, as
// params.
func memberParams(doc []byte, m jsonl.Member, scratch []jsonl.Member) params {
	p := params{doc: doc, start: m.ValueStart, end: m.ValueEnd}
	if p.object = doc[m.ValueStart] == '{'; p.object {
		p.members, _ = jsonl.MembersAt(doc, m.ValueStart, scratch)
	}
	return p
}

func (p params) raw() []byte { return p.doc[p.start:p.end:p.end] }

// checkParams holds a request to what NeMoGymResponseCreateParamsNonStreaming
// requires of the fields the loop relies on; the rest goes to the model
// server untouched.
func checkParams(p params, loc []any) error {
	at := func(key string) []any { return append(append([]any{}, loc...), key) }
	if !p.object {
		return invalid("model_attributes_type", loc, "Input should be a valid dictionary or object to extract fields from", json.RawMessage(p.raw()))
	}
	i := jsonl.Lookup(p.doc, p.members, "input")
	if i < 0 {
		return invalid("missing", at("input"), "Field required", json.RawMessage(p.raw()))
	}
	if in := p.members[i].Value(p.doc); in[0] != '"' && in[0] != '[' {
		return invalid("list_type", at("input"), "Input should be a valid string or list", json.RawMessage(in))
	}
	// The loop reads whole responses; it cannot relay a stream.
	if i := jsonl.Lookup(p.doc, p.members, "stream"); i >= 0 {
		if s := p.members[i].Value(p.doc); string(s) != "false" && string(s) != "null" {
			return invalid("literal_error", at("stream"), "Input should be False", json.RawMessage(s))
		}
	}
	return nil
}

// episode is one run of the tool loop. Items stay raw JSON, so what the
// model said is replayed to it byte for byte.
type episode struct {
	a *simpleAgent
	// The request's parameters either side of its input, which each
	// model request replaces with the items so far.
	paramsHead, paramsTail []byte
	modelURL               string
	// items is the input, then every item the episode added.
	items    []string
	inputLen int
	usage    openai.Usage
	// Each session is relayed to its own server only.
	resourcesCookies []*http.Cookie
	modelCookies     []*http.Cookie
	// traj is the episode's trajectory, kept with observability on.
	traj *trajectory
}

// run calls the model until it answers, returning the last response with
// output set to the episode's new items and usage to their sum.
func (e *episode) run(ctx context.Context) ([]byte, error) {
	client := e.a.Runtime.Client
	var last turn
	var ended *termination
	for step := 1; ; step++ {
		started := time.Now()
		resp, set, err := client.PostJSON(ctx, e.modelURL, e.request(), e.modelCookies)
		if err != nil {
			return nil, fmt.Errorf("calling the model (step %d): %w", step, err)
		}
		e.modelCookies = agent.RelayCookies(e.modelCookies, set)
		t, err := parseTurn(resp)
		if err != nil {
			return nil, fmt.Errorf("received an invalid response from the model server (%v): %s", err, short(resp))
		}
		last = t
		asked := len(e.items)
		e.items = append(e.items, t.items...)
		if e.traj != nil {
			e.traj.turn(step, started, e.items, asked, gjson.Parse(t.raw))
		}
		e.usage = e.usage.Add(t.usage)
		if t.incomplete {
			e.setIncomplete()
			break
		}
		if len(t.calls) == 0 {
			if !t.answered {
				// NeMo Gym 0.7.0 ends the episode here, marked incomplete.
				e.setIncomplete()
				ended = &termination{reason: "empty_output"}
				if len(t.items) > 0 {
					ended.reason = "incomplete_reasoning"
				}
				e.a.Logger().Warn(emptyTurnMessage, "model_server", e.a.modelServer, "response_id", gjson.Get(t.raw, "id").Str, "step", step, "url", e.modelURL)
			}
			break
		}
		for _, c := range t.calls {
			toolStarted := time.Now()
			res, err := e.callTool(ctx, c)
			if err != nil {
				return nil, err
			}
			if e.traj != nil {
				e.traj.tool(c, toolStarted, time.Since(toolStarted), res)
			}
			e.items = append(e.items, `{"type":"function_call_output","call_id":`+c.callID+`,"output":`+jsonString(res.output)+`}`)
		}
		if e.a.maxSteps > 0 && step >= e.a.maxSteps {
			e.setIncomplete()
			break
		}
	}
	usage := "null"
	if e.usage.Reported() {
		usage = string(e.usage.ResponsesJSON())
	}
	final, err := last.response(appendJSONArray(nil, e.items[e.inputLen:]), usage)
	if err == nil && ended != nil {
		final, err = ended.mark(final)
	}
	if err == nil && e.traj != nil {
		e.traj.conversation = e.items
		if !handOver(ctx, e.traj) {
			final, err = sjson.SetRaw(final, responsesTrajectoryKey, e.traj.json())
		}
	}
	if err != nil {
		return nil, fmt.Errorf("building the episode's response: %w", err)
	}
	return []byte(final), nil
}

// request is the next model request: the parameters with the items so far
// as their input.
func (e *episode) request() []byte {
	n := len(e.paramsHead) + len(e.paramsTail) + 2 + len(e.items) // the brackets, and a comma each at most
	for _, it := range e.items {
		n += len(it)
	}
	req := make([]byte, 0, n)
	req = append(req, e.paramsHead...)
	req = appendJSONArray(req, e.items)
	return append(req, e.paramsTail...)
}

func (e *episode) setIncomplete() {
	if e.traj != nil {
		e.traj.status = "incomplete"
	}
}

// termination is an episode its model ended with neither a tool call nor
// a message: its response is incomplete, and says why in its metadata.
type termination struct{ reason string }

func (t *termination) mark(resp string) (string, error) {
	out, err := sjson.Set(resp, "status", "incomplete")
	if md := gjson.Get(out, "metadata"); err == nil && !md.IsObject() {
		out, err = sjson.SetRaw(out, "metadata", "{}")
	}
	if err == nil {
		out, err = sjson.Set(out, "metadata.ng_termination_reason", t.reason)
	}
	if err == nil {
		out, err = sjson.Set(out, "metadata.ng_termination_message", emptyTurnMessage)
	}
	return out, err
}

// toolResult is what a tool call gave: what the model gets back, and, for
// the trajectory, how it went.
type toolResult struct {
	output            string
	status, errorType string
}

// callTool runs one function call on the resources server. Only a call
// that never got an answer is an error: a tool's error status is an
// answer, fed to the model like any other, and so are arguments that are
// not JSON.
func (e *episode) callTool(ctx context.Context, c toolCall) (toolResult, error) {
	if err := json.Unmarshal([]byte(c.arguments), new(json.RawMessage)); err != nil {
		return toolResult{output: `{"error": ` + jsonString("Invalid tool call arguments: "+err.Error()) + `}`, status: "failed", errorType: "JSONDecodeError"}, nil
	}
	body, set, err := e.a.SingleTry.PostJSON(ctx, e.a.resourcesURL+"/"+url.PathEscape(c.name), []byte(c.arguments), e.resourcesCookies)
	var ue *server.UpstreamError
	switch {
	case errors.As(err, &ue):
		return toolResult{output: string(ue.Body), status: "failed", errorType: "http_" + strconv.Itoa(ue.Status)}, nil
	case err != nil:
		return toolResult{}, fmt.Errorf("calling tool %q: %w", c.name, err)
	}
	e.resourcesCookies = agent.RelayCookies(e.resourcesCookies, set)
	return toolResult{output: string(body), status: "completed"}, nil
}

// turn is what the loop needs from one model response.
type turn struct {
	raw string
	// Where the output and the usage (End 0 when it has none) are in raw.
	output, usageAt jsonl.Span
	items           []string
	calls           []toolCall
	answered        bool // an assistant message among the items
	incomplete      bool
	usage           openai.Usage
}

type toolCall struct {
	name      string
	callID    string // raw JSON string
	arguments string
}

// parseTurn reads a model response as far as NeMoGymResponse validation
// matters to the loop: an object whose output is a list of typed items,
// function calls with a name, call_id and arguments.
func parseTurn(body []byte) (turn, error) {
	var scratch [16]jsonl.Member
	members, object, valid := jsonl.Members(body, scratch[:0])
	switch {
	case !valid:
		return turn{}, errors.New("not JSON")
	case !object:
		return turn{}, errors.New("not a JSON object")
	}
	// The first of each member the loop reads, in one pass.
	output, incomplete, usage := -1, -1, -1
	for i, m := range members {
		switch string(m.Name(body)) {
		case "output":
			output = firstIndex(output, i)
		case "incomplete_details":
			incomplete = firstIndex(incomplete, i)
		case "usage":
			usage = firstIndex(usage, i)
		}
	}
	if output < 0 || body[members[output].ValueStart] != '[' {
		return turn{}, errors.New("output is not a list")
	}
	// The turn's strings are cut from one copy of the response.
	open := jsonl.SkipSpace(body, 0)
	t := turn{raw: string(body[open:])}
	t.output = jsonl.Span{Start: members[output].ValueStart - open, End: members[output].ValueEnd - open}
	cut := func(start, end int) string { return t.raw[start-open : end-open] }
	var elements [8]jsonl.Span
	var itemScratch [16]jsonl.Member
	items, _ := jsonl.Elements(body, members[output].ValueStart, elements[:0])
	for i, e := range items {
		var item []jsonl.Member
		if body[e.Start] == '{' {
			item, _ = jsonl.MembersAt(body, e.Start, itemScratch[:0])
		}
		text := func(name string) (string, bool) {
			j := jsonl.Lookup(body, item, name)
			if j < 0 || body[item[j].ValueStart] != '"' {
				return "", false
			}
			return jsonText(cut(item[j].ValueStart, item[j].ValueEnd)), true
		}
		typ, ok := text("type")
		if !ok {
			return turn{}, fmt.Errorf("output[%d] has no type", i)
		}
		raw := cut(e.Start, e.End)
		switch typ {
		case "function_call":
			name, nameOK := text("name")
			args, argsOK := text("arguments")
			callID := jsonl.Lookup(body, item, "call_id")
			if !nameOK || !argsOK || callID < 0 || body[item[callID].ValueStart] != '"' {
				return turn{}, fmt.Errorf("output[%d] is a function_call without a string name, call_id and arguments", i)
			}
			t.calls = append(t.calls, toolCall{name: name, callID: cut(item[callID].ValueStart, item[callID].ValueEnd), arguments: args})
		case "message":
			role, _ := text("role")
			t.answered = t.answered || role == "assistant"
		case "reasoning":
			// NeMo Gym's reasoning item has no status: OpenAI answers with
			// status null and then rejects the item replayed with one.
			if jsonl.Lookup(body, item, "status") >= 0 {
				raw, _ = sjson.Delete(raw, "status") // a fixed, valid path
			}
		}
		t.items = append(t.items, raw)
	}
	if incomplete >= 0 && string(members[incomplete].Value(body)) != "null" {
		t.incomplete = true
	}
	if usage >= 0 {
		m := members[usage]
		t.usage = openai.ParseResponsesUsage(m.Value(body))
		t.usageAt = jsonl.Span{Start: m.ValueStart - open, End: m.ValueEnd - open}
	}
	return t, nil
}

// firstIndex is found, or i when nothing was found before it.
func firstIndex(found, i int) int {
	if found < 0 {
		return i
	}
	return found
}

// response is the turn's response with its output and usage replaced, as
// sjson.SetRaw sets the one and then the other.
func (t turn) response(output []byte, usage string) (string, error) {
	if t.usageAt.End == 0 {
		out := t.raw[:t.output.Start] + string(output) + t.raw[t.output.End:]
		return sjson.SetRaw(out, "usage", usage)
	}
	first, second := t.output, t.usageAt
	firstValue, secondValue := string(output), usage
	if second.Start < first.Start {
		first, second = second, first
		firstValue, secondValue = secondValue, firstValue
	}
	var b strings.Builder
	b.Grow(len(t.raw) + len(output) + len(usage))
	b.WriteString(t.raw[:first.Start])
	b.WriteString(firstValue)
	b.WriteString(t.raw[first.End:second.Start])
	b.WriteString(secondValue)
	b.WriteString(t.raw[second.End:])
	return b.String(), nil
}

// jsonText is a JSON string's text, as gjson reads it: its escapes, if
// any, decoded.
func jsonText(quoted string) string {
	if strings.IndexByte(quoted, '\\') < 0 {
		return quoted[1 : len(quoted)-1]
	}
	return gjson.Parse(quoted).Str
}

// appendJSONArray appends the array of the raw JSON items to dst.
func appendJSONArray(dst []byte, items []string) []byte {
	dst = append(dst, '[')
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, it...)
	}
	return append(dst, ']')
}

// jsonString quotes s as NeMo Gym's orjson does: no HTML escaping.
func jsonString(s string) string { return string(openai.AppendJSONString(nil, s)) }
