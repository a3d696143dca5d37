package simpleagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/agent"
	"github.com/nemo-gym-go/gym/internal/openai"
	"github.com/nemo-gym-go/gym/internal/server"
)

// maxEmptyTurns ends an episode after this many model turns in a row with
// neither a function call nor an assistant message (only reasoning, or
// nothing). NeMo Gym calls the model again after such a turn with no limit,
// which spins forever on a model that keeps answering that way; a model
// that merely paused to think answers within a turn or two.
const maxEmptyTurns = 3

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
}

// run calls the model until it answers, returning the last response with
// output set to the episode's new items and usage to their sum.
func (e *episode) run(ctx context.Context) ([]byte, error) {
	client := e.a.Runtime.Client
	var last string
	empty := 0
	for step := 1; ; step++ {
		req, err := sjson.SetRaw(e.params, "input", jsonArray(e.items))
		if err != nil {
			return nil, fmt.Errorf("building model request %d: %w", step, err)
		}
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
		e.items = append(e.items, t.items...)
		e.usage = e.usage.Add(t.usage)
		if t.incomplete || (len(t.calls) == 0 && t.answered) {
			break
		}
		for _, c := range t.calls {
			out, err := e.callTool(ctx, c)
			if err != nil {
				return nil, err
			}
			e.items = append(e.items, `{"type":"function_call_output","call_id":`+c.callID+`,"output":`+jsonString(out)+`}`)
		}
		if e.a.maxSteps > 0 && step >= e.a.maxSteps {
			break
		}
		if len(t.calls) > 0 {
			empty = 0
			continue
		}
		empty++
		if empty >= maxEmptyTurns {
			e.a.Logger().Warn("ending an episode whose model keeps answering with neither a tool call nor a message",
				"turns_in_a_row", empty, "model_calls", step, "url", e.modelURL)
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
	if err != nil {
		return nil, fmt.Errorf("building the episode's response: %w", err)
	}
	return []byte(final), nil
}

// callTool runs one function call on the resources server and returns what
// the model gets back. Only a call that never got an answer is an error:
// a tool's error status is an answer, fed to the model like any other, and
// so are arguments that are not JSON.
func (e *episode) callTool(ctx context.Context, c toolCall) (string, error) {
	if err := json.Unmarshal([]byte(c.arguments), new(json.RawMessage)); err != nil {
		return `{"error": ` + jsonString("Invalid tool call arguments: "+err.Error()) + `}`, nil
	}
	body, set, err := e.a.SingleTry.PostJSON(ctx, e.a.resourcesURL+"/"+url.PathEscape(c.name), []byte(c.arguments), e.resourcesCookies)
	var ue *server.UpstreamError
	switch {
	case errors.As(err, &ue):
		return string(ue.Body), nil
	case err != nil:
		return "", fmt.Errorf("calling tool %q: %w", c.name, err)
	}
	e.resourcesCookies = agent.RelayCookies(e.resourcesCookies, set)
	return string(body), nil
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
	if !gjson.ValidBytes(body) {
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
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
