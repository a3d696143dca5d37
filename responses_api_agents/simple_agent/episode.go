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
	var body json.RawMessage
	if err := server.DecodeJSON(r, &body); err != nil {
		return err
	}
	v := gjson.ParseBytes(body)
	if err := checkParams(v, []any{"body"}); err != nil {
		return err
	}
	e := &episode{
		a:                a,
		params:           v.Raw,
		modelURL:         a.modelURL + agent.URLPathForRequest("/v1/responses", r),
		resourcesCookies: r.Cookies(),
	}
	if id := server.RolloutID(r); id != "" && a.Correlation.Observability {
		e.traj = newTrajectory(id, a.modelServer)
	}
	if in := v.Get("input"); in.Type == gjson.String {
		// A bare string is one user message (NeMoGymEasyInputMessage, type
		// left implied as NeMo Gym sends it).
		e.items = []string{`{"role":"user","content":` + in.Raw + `}`}
	} else {
		in.ForEach(func(_, item gjson.Result) bool {
			e.items = append(e.items, item.Raw)
			return true
		})
	}
	e.inputLen = len(e.items)
	final, err := e.run(r.Context())
	if err != nil {
		return err
	}
	agent.SetCookies(w.Header(), e.resourcesCookies)
	agent.SetCookies(w.Header(), e.modelCookies)
	return agent.WriteJSON(w, final)
}

// checkParams holds a request to what NeMoGymResponseCreateParamsNonStreaming
// requires of the fields the loop relies on; the rest goes to the model
// server untouched.
func checkParams(v gjson.Result, loc []any) error {
	at := func(key string) []any { return append(append([]any{}, loc...), key) }
	if !v.IsObject() {
		return invalid("model_attributes_type", loc, "Input should be a valid dictionary or object to extract fields from", json.RawMessage(v.Raw))
	}
	switch in := v.Get("input"); {
	case !in.Exists():
		return invalid("missing", at("input"), "Field required", json.RawMessage(v.Raw))
	case in.Type != gjson.String && !in.IsArray():
		return invalid("list_type", at("input"), "Input should be a valid string or list", json.RawMessage(in.Raw))
	}
	// The loop reads whole responses; it cannot relay a stream.
	if s := v.Get("stream"); s.Exists() && s.Type != gjson.False && s.Type != gjson.Null {
		return invalid("literal_error", at("stream"), "Input should be False", json.RawMessage(s.Raw))
	}
	return nil
}

// episode is one run of the tool loop. Items stay raw JSON, so what the
// model said is replayed to it byte for byte.
type episode struct {
	a        *simpleAgent
	params   string
	modelURL string
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
	var last string
	var ended *termination
	for step := 1; ; step++ {
		req, err := sjson.SetRaw(e.params, "input", jsonArray(e.items))
		if err != nil {
			return nil, fmt.Errorf("building model request %d: %w", step, err)
		}
		started := time.Now()
		resp, set, err := client.PostJSON(ctx, e.modelURL, []byte(req), e.modelCookies)
		if err != nil {
			return nil, fmt.Errorf("calling the model (step %d): %w", step, err)
		}
		e.modelCookies = agent.RelayCookies(e.modelCookies, set)
		t, err := parseTurn(resp)
		if err != nil {
			return nil, fmt.Errorf("received an invalid response from the model server (%v): %s", err, short(resp))
		}
		last = t.raw
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
	final, err := sjson.SetRaw(last, "output", jsonArray(e.items[e.inputLen:]))
	if err == nil {
		final, err = sjson.SetRaw(final, "usage", usage)
	}
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
	raw        string
	items      []string
	calls      []toolCall
	answered   bool // an assistant message among the items
	incomplete bool
	usage      openai.Usage
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
	if !jsonl.Valid(body) {
		return turn{}, errors.New("not JSON")
	}
	v := gjson.ParseBytes(body)
	if !v.IsObject() {
		return turn{}, errors.New("not a JSON object")
	}
	output := v.Get("output")
	if !output.IsArray() {
		return turn{}, errors.New("output is not a list")
	}
	t := turn{raw: v.Raw}
	var bad error
	i := 0
	output.ForEach(func(_, item gjson.Result) bool {
		typ := item.Get("type")
		if !item.IsObject() || typ.Type != gjson.String {
			bad = fmt.Errorf("output[%d] has no type", i)
			return false
		}
		raw := item.Raw
		switch typ.Str {
		case "function_call":
			name, callID, args := item.Get("name"), item.Get("call_id"), item.Get("arguments")
			if name.Type != gjson.String || callID.Type != gjson.String || args.Type != gjson.String {
				bad = fmt.Errorf("output[%d] is a function_call without a string name, call_id and arguments", i)
				return false
			}
			t.calls = append(t.calls, toolCall{name: name.Str, callID: callID.Raw, arguments: args.Str})
		case "message":
			t.answered = t.answered || item.Get("role").Str == "assistant"
		case "reasoning":
			// NeMo Gym's reasoning item has no status: OpenAI answers with
			// status null and then rejects the item replayed with one.
			if item.Get("status").Exists() {
				raw, _ = sjson.Delete(raw, "status") // a fixed, valid path
			}
		}
		t.items = append(t.items, raw)
		i++
		return true
	})
	if bad != nil {
		return turn{}, bad
	}
	if d := v.Get("incomplete_details"); d.Exists() && d.Type != gjson.Null {
		t.incomplete = true
	}
	if u := v.Get("usage"); u.Exists() {
		t.usage = openai.ParseResponsesUsage([]byte(u.Raw))
	}
	return t, nil
}

func jsonArray(items []string) string {
	n := 2 + len(items)
	for _, it := range items {
		n += len(it)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(it)
	}
	b.WriteByte(']')
	return b.String()
}

// jsonString quotes s as NeMo Gym's orjson does: no HTML escaping.
func jsonString(s string) string { return string(openai.AppendJSONString(nil, s)) }
