package replaymodel

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	ioai "github.com/nemo-gym-go/gym/internal/openai"
)

// Every recorded rollout of example_single_tool_call replays exactly when
// driven turn by turn as simple_agent drives it: the first turn answers
// with the function call, the second with the message once the tool's
// output is appended. The tool output may be the recorded item itself or
// what gym's Go tool and agent send (compact JSON, no id or status), and
// the input may come from the recording or from the task row (example.jsonl,
// whose messages have no type).
func TestReplayExampleRollouts(t *testing.T) {
	url, logs := startReplay(t, pathLine(exampleRollouts))
	rows := map[string]gjson.Result{} // by user text
	for _, row := range readJSONL(t, exampleRows) {
		rows[lastUserText(row.Get("responses_create_params"))] = row
	}
	for i, rec := range readJSONL(t, exampleRollouts) {
		recParams := rec.Get("responses_create_params")
		task, ok := rows[lastUserText(recParams)]
		if !ok {
			t.Fatalf("rollout %d: no task row asks %q", i, lastUserText(recParams))
		}
		for _, tc := range []struct {
			name   string
			params string
			tool   toolFunc
			exact  bool // every item, tool outputs included, as recorded
		}{
			{"recorded input, recorded tool output", recParams.Raw, recordedTool(t, rec), true},
			{"recorded input, live tool output", recParams.Raw, liveTool(t, rec), false},
			{"task row input, live tool output", task.Get("responses_create_params").Raw, liveTool(t, rec), false},
		} {
			t.Run(lastUserText(recParams)+"/"+tc.name, func(t *testing.T) {
				ep := drive(t, url, tc.params, tc.tool)
				checkReplay(t, rec, ep, tc.exact)
			})
		}
	}
	if !strings.Contains(logs.String(), "example_rollouts.jsonl:4 turn 2") {
		t.Errorf("a replayed turn is not logged at debug level: %s", logs)
	}
}

// checkReplay checks an episode against its recording: the model's items
// byte for byte, one answer per recorded turn, the recorded id, status and
// usage on the last answer only, so their sum is the recorded usage.
func checkReplay(t *testing.T, rec gjson.Result, ep episode, exact bool) {
	t.Helper()
	resp := rec.Get("response")
	recorded := resp.Get("output").Array()
	if len(ep.items) != len(recorded) {
		t.Fatalf("%d items, want %d:\n%s", len(ep.items), len(recorded), strings.Join(ep.items, "\n"))
	}
	for i, it := range recorded {
		if toolProduced(it) && !exact {
			continue
		}
		want := it.Raw
		if it.Get("type").Str == "reasoning" {
			want = must(sjson.Delete(string(ioai.FixReasoningItem([]byte(want))), "status"))
		}
		if ep.items[i] != want {
			t.Errorf("item %d:\n got %s\nwant %s", i, ep.items[i], want)
		}
	}
	if want := len(splitTurns(recorded)); len(ep.answers) != want {
		t.Errorf("%d model calls, want one per recorded turn (%d)", len(ep.answers), want)
	}
	var usage ioai.Usage
	for k, a := range ep.answers {
		usage = usage.Add(ioai.ParseResponsesUsage([]byte(a.Get("usage").Raw)))
		if k < len(ep.answers)-1 {
			if a.Get("status").Str != "completed" || a.Get("usage").Type != gjson.Null || a.Get("id").Str != resp.Get("id").Str+"_turn"+strconv.Itoa(k+1) {
				t.Errorf("turn %d: status %s, usage %s, id %s; want completed, null and the recorded id with _turn%d", k+1, a.Get("status").Raw, a.Get("usage").Raw, a.Get("id").Raw, k+1)
			}
			continue
		}
		for _, key := range []string{"id", "model", "created_at", "usage", "incomplete_details", "tools"} {
			if a.Get(key).Raw != resp.Get(key).Raw {
				t.Errorf("last turn %s = %s, want the recorded %s", key, a.Get(key).Raw, resp.Get(key).Raw)
			}
		}
	}
	if want := ioai.ParseResponsesUsage([]byte(resp.Get("usage").Raw)); usage != want {
		t.Errorf("summed usage %+v, want the recorded %+v", usage, want)
	}
}

func lastUserText(params gjson.Result) string {
	var text string
	forEachInputItem(params.Get("input"), func(it gjson.Result) {
		if it.Get("role").Str == "user" {
			text = textOf(it.Get("content"))
		}
	})
	return text
}

// Reasoning items replay with the provider reasoning fix applied, and match
// when the agent sends them back without their status. Recordings that end
// incomplete (ruler: reasoning only, cut at max_output_tokens) end the
// same way.
func TestReplayReasoning(t *testing.T) {
	url, _ := startReplay(t, pathLine(reasoningFile, mathRollouts, rulerRollouts))
	t.Run("two turns with reasoning", func(t *testing.T) {
		rec := readJSONL(t, reasoningFile)[0]
		ep := drive(t, url, rec.Get("responses_create_params").Raw, liveTool(t, rec))
		checkReplay(t, rec, ep, false)
		first := ep.answers[0].Get("output.0")
		if first.Get("content.0.type").Str != "reasoning_text" || first.Get("status").Type != gjson.Null {
			t.Errorf("first reasoning item %s: want its output_text part fixed to reasoning_text and its status kept", first.Raw)
		}
		if got := ep.answers[1].Get("output.1.content.0.text").Str; got != "The capital of France is Paris." {
			t.Errorf("final answer %q", got)
		}
	})
	for name, path := range map[string]string{"math_with_judge": mathRollouts, "ruler": rulerRollouts} {
		for i, rec := range readJSONL(t, path) {
			t.Run(name+"/"+strconv.Itoa(i), func(t *testing.T) {
				ep := drive(t, url, rec.Get("responses_create_params").Raw, recordedTool(t, rec))
				checkReplay(t, rec, ep, true)
				last := ep.answers[len(ep.answers)-1]
				want := rec.Get("response.status").Str
				if want == "" {
					want = "incomplete"
				}
				if last.Get("status").Str != want {
					t.Errorf("status %s, want %s", last.Get("status").Raw, want)
				}
			})
		}
	}
}

func TestMissError(t *testing.T) {
	url, logs := startReplay(t, pathLine(exampleRollouts))
	rec := readJSONL(t, exampleRollouts)[3] // "what's it like in sf?", which calls get_weather
	params := rec.Get("responses_create_params").Raw
	call := rec.Get("response.output.0").Raw

	for _, tc := range []struct {
		name, input string
		want        []string
	}{{
		name:  "another question",
		input: must(sjson.Set(params, "input.1.content", "what's it like in nyc?")),
		want: []string{
			"no recorded turn follows this input (2 items)",
			"the closest recording is " + exampleRollouts + ":4",
			`first differs at input[1]: this input has message (user) "what's it like in nyc?", the recording has message (user) "what's it like in sf?"`,
		},
	}, {
		name:  "tool output missing",
		input: must(sjson.SetRaw(params, "input.-1", call)),
		want: []string{
			"no recorded turn follows this input (3 items)",
			exampleRollouts + ":4, which this input follows to its end but where it is not the model's turn: the recording goes on with function_call_output for call_InsFzlr0gt1hNYb3vvavZcrF",
		},
	}, {
		name:  "other instructions",
		input: must(sjson.Set(params, "instructions", "Answer in French.")),
		want:  []string{`first differs at the instructions: this input has instructions "Answer in French.", the recording has no instructions`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, url+"/v1/responses", tc.input)
			if status != http.StatusNotFound {
				t.Fatalf("HTTP %d, want 404: %s", status, body)
			}
			e := gjson.Get(body, "error")
			if e.Get("type").Str != "not_found_error" || e.Get("code").Str != "replay_not_found" || e.Get("param").Str != "input" {
				t.Errorf("error %s", e.Raw)
			}
			for _, w := range tc.want {
				if !strings.Contains(e.Get("message").Str, w) {
					t.Errorf("message %q\nlacks %q", e.Get("message").Str, w)
				}
			}
		})
	}
	if !strings.Contains(logs.String(), "no recorded turn follows this input") {
		t.Errorf("misses are not logged: %s", logs)
	}

	status, body := post(t, url+"/v1/responses", `{"input":{"not":"a list"}}`)
	if status != http.StatusBadRequest || gjson.Get(body, "error.param").Str != "input" {
		t.Errorf("bad input: HTTP %d %s", status, body)
	}
}

func TestMissEcho(t *testing.T) {
	url, _ := startReplay(t, pathLine(exampleRollouts), "on_miss: echo", "model: echo-model")
	for _, stream := range []bool{false, true} {
		body := `{"input":[{"role":"user","content":"first"},{"type":"message","role":"user","content":[{"type":"input_text","text":"say this back"}]}],"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `}`
		status, out := post(t, url+"/v1/responses", body)
		if status != http.StatusOK {
			t.Fatalf("stream=%v: HTTP %d %s", stream, status, out)
		}
		resp := gjson.Parse(out)
		if stream {
			resp = completedResponse(t, out)
		}
		if got := resp.Get("output.0.content.0.text").Str; got != "say this back" {
			t.Errorf("stream=%v: echoed %q", stream, got)
		}
		if resp.Get("model").Str != "echo-model" || resp.Get("status").Str != "completed" || resp.Get("usage").Type != gjson.Null {
			t.Errorf("stream=%v: %s", stream, out)
		}
	}
	// A hit is still a hit.
	rec := readJSONL(t, exampleRollouts)[0]
	ep := drive(t, url, rec.Get("responses_create_params").Raw, recordedTool(t, rec))
	if ep.answers[0].Get("model").Str != "echo-model" || ep.items[0] != rec.Get("response.output.0").Raw {
		t.Errorf("hit with on_miss echo: %s", ep.answers[0].Raw)
	}
}

// completedResponse is the response of a stream's response.completed event.
func completedResponse(t *testing.T, sse string) gjson.Result {
	t.Helper()
	var last gjson.Result
	sc := bufio.NewScanner(strings.NewReader(sse))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			last = gjson.Parse(data)
		}
	}
	if last.Get("type").Str != "response.completed" {
		t.Fatalf("the stream does not end with response.completed: %s", sse)
	}
	return last.Get("response")
}

// A streaming call gets the same turn as synthesized SSE events.
func TestStreaming(t *testing.T) {
	url, _ := startReplay(t, pathLine(exampleRollouts))
	rec := readJSONL(t, exampleRollouts)[3]
	params := rec.Get("responses_create_params").Raw
	_, whole := post(t, url+"/v1/responses", params)
	resp, err := http.Post(url+"/v1/responses", "application/json", strings.NewReader(must(sjson.Set(params, "stream", true))))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	sse := string(must(io.ReadAll(resp.Body)))
	for _, ev := range []string{"response.created", "response.output_item.added", "response.function_call_arguments.delta", "response.output_item.done", "response.completed"} {
		if !strings.Contains(sse, "event: "+ev+"\n") {
			t.Errorf("no %s event in\n%s", ev, sse)
		}
	}
	if got, want := completedResponse(t, sse).Get("output").Raw, gjson.Get(whole, "output").Raw; got != want {
		t.Errorf("streamed output %s\nwant %s", got, want)
	}
}

// The official Go client replays a whole episode, streamed and not.
func TestOpenAIGoClient(t *testing.T) {
	url, _ := startReplay(t, pathLine(exampleRollouts))
	client := openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	rec := readJSONL(t, exampleRollouts)[3]
	input := rec.Get("responses_create_params.input").Raw
	params := responses.ResponseNewParams{Model: "any"}

	first, err := client.Responses.New(t.Context(), params, option.WithJSONSet("input", json.RawMessage(input)))
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Output) != 1 || first.Output[0].Type != "function_call" || first.Output[0].Name != "get_weather" {
		t.Fatalf("first turn %s", first.RawJSON())
	}
	fc := first.Output[0]
	input = must(sjson.SetRaw(input, "-1", fc.RawJSON()))
	input = must(sjson.SetRaw(input, "-1", `{"type":"function_call_output","call_id":"`+fc.CallID+`","output":"{\"city\":\"San Francisco\",\"weather_description\":\"The weather in San Francisco is cold.\"}"}`))

	stream := client.Responses.NewStreaming(t.Context(), params, option.WithJSONSet("input", json.RawMessage(input)))
	defer stream.Close()
	var text strings.Builder
	var final responses.Response
	for stream.Next() {
		switch ev := stream.Current(); ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	want := rec.Get("response.output.2.content.0.text").Str
	if text.String() != want || final.OutputText() != want || final.ID != rec.Get("response.id").Str || final.Usage.TotalTokens != rec.Get("response.usage.total_tokens").Int() {
		t.Errorf("streamed text %q, final %q (id %s, usage %+v); want %q", text.String(), final.OutputText(), final.ID, final.Usage, want)
	}
}

// Repeats of one task (the same input recorded more than once) replay by
// the rollout index of the rollout id; a call without one gets the first.
func TestRepeatsFollowTheRolloutIndex(t *testing.T) {
	url, _ := startReplay(t, pathLine(reasoningFile))
	params := readJSONL(t, reasoningFile)[0].Get("responses_create_params").Raw
	for prefix, want := range map[string]string{
		"":                       "resp_reasoning_turn1",
		"/ng-rollout/7-0":        "resp_reasoning_turn1",
		"/ng-rollout/7-1":        "resp_repeat",
		"/ng-rollout/7-3-a2":     "resp_repeat",
		"/ng-rollout/7-2-a1":     "resp_reasoning_turn1",
		"/ng-rollout/my-rollout": "resp_reasoning_turn1",
	} {
		status, body := post(t, url+prefix+"/v1/responses", params)
		if got := gjson.Get(body, "id").Str; status != http.StatusOK || got != want {
			t.Errorf("%s: HTTP %d, id %q, want %q", prefix, status, got, want)
		}
	}
}

func TestOtherRoutes(t *testing.T) {
	// A recording made through the Responses API with instructions, as an
	// Anthropic client's system prompt arrives.
	rollouts := filepath.Join(t.TempDir(), "rollouts.jsonl")
	row := `{"responses_create_params":{"instructions":"Be brief.","input":"hello"},"response":{"id":"resp_hi","model":"m","output":[{"type":"message","id":"msg_hi","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hi!","annotations":[]}]}],"usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5}}}`
	if err := os.WriteFile(rollouts, []byte(row+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url, _ := startReplay(t, pathLine(rollouts))

	status, body := post(t, url+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hello"}]}`)
	if status != http.StatusNotImplemented || gjson.Get(body, "error.code").Str != "unsupported_endpoint" || !strings.Contains(body, "/v1/responses") {
		t.Errorf("chat completions: HTTP %d %s", status, body)
	}
	status, body = post(t, url+"/v1/messages", `{"model":"claude","max_tokens":100,"system":"Be brief.","messages":[{"role":"user","content":[{"type":"text","text":"hello"}]}]}`)
	if status != http.StatusOK || gjson.Get(body, "content.0.text").Str != "Hi!" || gjson.Get(body, "usage.output_tokens").Int() != 2 {
		t.Errorf("messages: HTTP %d %s", status, body)
	}
	// The recording is complete: it reports the fields OpenAI's Response
	// requires even though the recording lacks them.
	_, body = post(t, url+"/v1/responses", `{"instructions":"Be brief.","input":[{"role":"user","content":"hello"}]}`)
	for _, key := range []string{"object", "created_at", "parallel_tool_calls", "tool_choice", "tools"} {
		if !gjson.Get(body, key).Exists() {
			t.Errorf("no %s in %s", key, body)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		lines []string
		want  string
	}{
		{nil, "policy_model.rollouts_jsonl_fpath: a path or a list of paths to recorded rollouts (JSONL) is required"},
		{[]string{"rollouts_jsonl_fpath: []"}, "policy_model.rollouts_jsonl_fpath: the list is empty"},
		{[]string{"rollouts_jsonl_fpath: {a: 1}"}, "policy_model.rollouts_jsonl_fpath: a path or a list of paths is required, got map"},
		{[]string{"rollouts_jsonl_fpath: [a.jsonl, 3]"}, "policy_model.rollouts_jsonl_fpath[1]: a string is required, got int 3"},
		{[]string{pathLine(exampleRollouts), "on_miss: ignore"}, `policy_model.on_miss: must be "error" (answer 404) or "echo" (answer with the last user message), got "ignore"`},
		{[]string{pathLine(exampleRollouts), "model: 5"}, "policy_model.model: a string is required, got int"},
		{[]string{pathLine("nowhere/rollouts.jsonl")}, "policy_model.rollouts_jsonl_fpath[0]: nowhere/rollouts.jsonl was not found. Looked in:"},
		{[]string{pathLine(write("bad.jsonl", "{\"responses_create_params\":{\"input\":[]},\"response\":{\"output\":[]}}\n\n{oops\n"))}, "policy_model.rollouts_jsonl_fpath: " + dir + "/bad.jsonl:3: not valid JSON"},
		{[]string{pathLine(write("noparams.jsonl", `{"response":{"output":[]}}`))}, "noparams.jsonl:1: no responses_create_params object"},
		{[]string{pathLine(write("noresponse.jsonl", `{"responses_create_params":{"input":"hi"}}`))}, "noresponse.jsonl:1: no response object with an output list"},
		{[]string{pathLine(write("empty.jsonl", "\n"))}, "no recorded rollouts in " + dir + "/empty.jsonl"},
	} {
		rt := runtimeFor(t, &syncBuffer{}, tc.lines...)
		_, err := newBackend(t.Context(), rt, files{lookupEnv: func(k string) (string, bool) {
			if k == installRootEnv {
				return dir, true
			}
			return "", false
		}, cwd: dir})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v\nwant %q", tc.lines, err, tc.want)
		}
	}
}

// A relative path is looked up under NEMO_GYM_EXTRA_ROOTS, then the
// working directory, then the install root.
func TestResolvePaths(t *testing.T) {
	extra, cwd, install := t.TempDir(), t.TempDir(), t.TempDir()
	put := func(root, rel string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put(extra, "data/a.jsonl")
	put(cwd, "data/a.jsonl")
	put(cwd, "data/b.jsonl")
	put(install, "data/b.jsonl")
	put(install, "data/c.jsonl")
	env := map[string]string{"NEMO_GYM_EXTRA_ROOTS": "/does/not/exist" + string(os.PathListSeparator) + extra, installRootEnv: install}
	fs := files{lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, cwd: cwd}
	got, err := fs.resolve("m", []string{"data/a.jsonl", "data/b.jsonl", "data/c.jsonl", "/abs/d.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(extra, "data/a.jsonl"), filepath.Join(cwd, "data/b.jsonl"), filepath.Join(install, "data/c.jsonl"), "/abs/d.jsonl"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("resolved\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	_, err = fs.resolve("m", []string{"data/e.jsonl"})
	for _, p := range []string{"/does/not/exist/data/e.jsonl", extra, cwd, install} {
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("error %v does not list %s", err, p)
		}
	}
}
