package oracle

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nemo-gym-go/gym/internal/capture"
	"github.com/nemo-gym-go/gym/internal/server"
)

//go:embed testdata/nemo_gym_capture_join.py
var captureJoinScript []byte

// scenario is what the stand-in model server answers a captured call
// with, chosen by the request's "scenario" field.
type scenario func(w http.ResponseWriter, r *http.Request)

func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		io.WriteString(w, e)
		http.NewResponseController(w).Flush()
	}
}

func jsonAnswer(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

var scenarios = map[string]scenario{
	"responses": func(w http.ResponseWriter, _ *http.Request) {
		jsonAnswer(w, 200, `{"id":"resp_1","object":"response","created_at":1E9,"model":"m1","status":"completed","output":[{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}]},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\": \"SF\", \"t\": 1.50}","id":"fc_1"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"h\u00e9llo \u2028 <&>","annotations":[]}]}],"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15,"input_tokens_details":{"cached_tokens":3},"output_tokens_details":{"reasoning_tokens":2}},"temperature":0.00001,"top_p":1e-7,"seed_scale":12345678901234567890.0,"budget":1e16,"a":1,"a":2}`)
	},
	"responses_stream": func(w http.ResponseWriter, _ *http.Request) {
		sse(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_2\",\"status\":\"in_progress\"}}\n\n",
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n",
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_2\",\"model\":\"m2\",\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":4,\"output_tokens\":1}}}\n\n")
	},
	"chat_stream": func(w http.ResponseWriter, _ *http.Request) {
		sse(w, ": keep-alive\n\n",
			`data: {"id":"c1","model":"m3","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"r1"}}]}`+"\n\n",
			`data: {"id":"c1","model":"m3","choices":[{"index":0,"delta":{"content":"Hi"}}]}`+"\n\n",
			`data: {"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t1","function":{"name":"f","arguments":"{\"a\""}}]}}]}`+"\n\n",
			`data: {"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10,"prompt_tokens_details":{"cached_tokens":0}}}`+"\n\n",
			"data: [DONE]\n\n")
	},
	"messages": func(w http.ResponseWriter, _ *http.Request) {
		jsonAnswer(w, 200, `{"id":"msg_1","type":"message","role":"assistant","model":"claude","stop_reason":"tool_use","content":[{"type":"thinking","thinking":"hmm"},{"type":"tool_use","id":"tu1","name":"bash","input":{"cmd":"ls"}}],"usage":{"input_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":20,"output_tokens":9}}`)
	},
	"messages_stream": func(w http.ResponseWriter, _ *http.Request) {
		sse(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude\",\"usage\":{\"input_tokens\":3}}}\n\n",
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\n",
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"tu2\",\"name\":\"bash\",\"input\":{}}}\n\n",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"cmd\\\": \\\"pwd\\\"}\"}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":6}}\n\n",
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	},
	"rate_limited": func(w http.ResponseWriter, r *http.Request) {
		body := `{"error":{"message":"slow down","type":"rate_limit"}}`
		capture.ReportFailure(r.Context(), capture.Failure{Status: 429, Body: []byte(body)})
		jsonAnswer(w, 429, body)
	},
	"unreachable": func(w http.ResponseWriter, r *http.Request) {
		capture.ReportFailure(r.Context(), capture.Failure{Timeout: true})
		jsonAnswer(w, 504, `{"error":{"message":"upstream timed out","type":"upstream_timeout"}}`)
	},
	"bad_request": func(w http.ResponseWriter, _ *http.Request) {
		jsonAnswer(w, 400, `{"error":{"message":"max_tokens is too large","type":"invalid_request_error"}}`)
	},
	"truncated": func(w http.ResponseWriter, _ *http.Request) {
		sse(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_3\",\"status\":\"in_progress\"}}\n\n")
	},
	"failed_stream": func(w http.ResponseWriter, _ *http.Request) {
		sse(w, "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_4\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\"}}}\n\n")
	},
	"not_json": func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(200)
		io.WriteString(w, "hello \xe2\x82 world")
	},
}

// call is one captured call of a rollout: the route, and the body sent.
type capturedCall struct {
	path, body string
	session    []string
}

// Gym's capture of a rollout's calls, joined into the result by gym, is
// what NeMo Gym's own collector makes of the same capture files and rows,
// byte for byte: ng_model_call_capture (metrics, calls, gaps) and
// ng_trajectory, across the three dialects, streamed and whole, errors,
// truncated streams, text that is not JSON, an attempt's key, a damaged
// file and a rollout with no capture at all.
func TestCaptureJoinMatchesNeMoGym(t *testing.T) {
	e := setup(t)
	dir := filepath.Join(e.tmp, "calls")
	store, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, route := range []string{"/v1/responses", "/v1/chat/completions", "/v1/messages"} {
		mux.HandleFunc(route, func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var req struct{ Scenario string }
			json.Unmarshal(body, &req)
			s, ok := scenarios[req.Scenario]
			if !ok {
				jsonAnswer(w, 422, `{"detail":[{"type":"json_invalid","loc":["body"],"msg":"JSON decode error"}]}`)
				return
			}
			s(w, r)
		})
	}
	rt := &server.Runtime{Instance: "policy_model", ServerType: "responses_api_models", Implementation: "stand_in", ClassName: "SimpleModelServer"}
	srv := httptest.NewServer(server.Wrap(rt, (&capture.Recorder{Store: store, Server: "policy_model"}).Wrap(mux)))
	defer srv.Close()

	rollouts := []struct {
		task, rollout int
		extra         string // more keys of the row
		calls         []capturedCall
	}{
		{0, 0, `"task_id":"q-17"`, []capturedCall{{path: "/v1/responses", body: `{"scenario":"responses","model":"m1","input":[{"role":"user","content":"hi"}],"temperature":1E2}`, session: []string{"sess-1"}}}},
		{0, 1, "", []capturedCall{
			{path: "/v1/chat/completions", body: `{"scenario":"chat_stream","model":"m3","stream":true,"messages":[{"role":"user","content":"x"}]}`},
			{path: "/v1/messages", body: `{"scenario":"messages","model":"claude","max_tokens":10,"messages":[]}`, session: []string{"a", "b"}},
		}},
		{1, 0, "", []capturedCall{{path: "/v1/responses", body: `{"scenario":"responses_stream","stream":true}`}, {path: "/v1/messages", body: `{"scenario":"messages_stream","stream":true}`}}},
		{1, 1, "", []capturedCall{{path: "/v1/responses", body: `{"scenario":"rate_limited"}`}, {path: "/v1/responses", body: `{"scenario":"unreachable"}`}, {path: "/v1/responses", body: `{"scenario":"bad_request"}`}}},
		{2, 0, "", []capturedCall{{path: "/v1/responses", body: `not json at all`}, {path: "/v1/responses", body: `[1,2]`}}},
		{2, 1, "", []capturedCall{{path: "/v1/responses", body: `{"scenario":"truncated","stream":true}`}, {path: "/v1/responses", body: `{"scenario":"failed_stream","stream":true}`}, {path: "/v1/responses", body: `{"scenario":"not_json"}`}}},
		{3, 0, `"_ng_attempt_index":2`, []capturedCall{{path: "/v1/responses", body: `{"scenario":"responses"}`}}},
		{3, 1, `"_ng_rollout_id":"explicit.id_7"`, []capturedCall{{path: "/v1/responses", body: `{"scenario":"responses_stream","stream":true}`}}},
		{4, 0, "", nil},
		{4, 1, "", []capturedCall{{path: "/v1/responses", body: `{"scenario":"responses"}`}}},
	}
	var cases bytes.Buffer
	var ours []string
	for _, ro := range rollouts {
		row := fmt.Sprintf(`{"responses_create_params":{"input":"hi"},"_ng_task_index":%d,"_ng_rollout_index":%d,"agent_ref":{"type":"responses_api_agents","name":"a"}`, ro.task, ro.rollout)
		if ro.extra != "" {
			row += "," + ro.extra
		}
		row += "}"
		key, err := capture.Key([]byte(row))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range ro.calls {
			req, _ := http.NewRequestWithContext(context.Background(), "POST", srv.URL+"/ng-rollout/"+key+c.path, strings.NewReader(c.body))
			for _, s := range c.session {
				req.Header.Add("X-Session-Id", s)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if ro.task == 4 && ro.rollout == 1 {
			// A damaged file: a torn line, a blank one, a non-object, a
			// record of the wrong shape; and the incomplete marker.
			f, err := os.OpenFile(filepath.Join(dir, key+".capture.jsonl"), os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("{broken\n\n[1]\n{\"status_code\":\"abc\"}\n{}\n")
			f.Close()
			store.MarkIncomplete(key)
		}
		result := `{"responses_create_params":{"input":"hi"},"response":{"id":"r","output":[]},"reward":1.0,` + row[1:]
		fmt.Fprintf(&cases, `{"row":%s,"result":%s}`+"\n", row, result)
		joined, _, err := capture.Join([]byte(result), []byte(row), []*capture.Store{store}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ours = append(ours, string(joined))
	}
	time.Sleep(10 * time.Millisecond)
	script := filepath.Join(e.tmp, "join.py")
	rowsPath, outPath := filepath.Join(e.tmp, "cases.jsonl"), filepath.Join(e.tmp, "nemo.jsonl")
	for path, data := range map[string][]byte{script: captureJoinScript, rowsPath: cases.Bytes()} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stdout, stderr, code, err := e.run(ctx, e.tmp, nil, "/opt/nemo-gym/bin/python", script, dir, rowsPath, outPath)
	if err != nil || code != 0 {
		t.Fatalf("NeMo Gym's join: exit %d, %v\n%s\n%s", code, err, stdout, stderr)
	}
	data, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	theirs := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(theirs) != len(ours) {
		t.Fatalf("NeMo Gym wrote %d rows for %d", len(theirs), len(ours))
	}
	for i := range ours {
		if !strings.Contains(ours[i], `"ng_model_call_capture"`) || !strings.Contains(ours[i], `"ng_trajectory"`) {
			t.Errorf("rollout %d-%d: gym joined nothing: %s", rollouts[i].task, rollouts[i].rollout, ours[i])
		}
		if ours[i] != theirs[i] {
			t.Errorf("rollout %d-%d differs:\nNeMo Gym: %s\ngym:      %s\nfirst difference at byte %d", rollouts[i].task, rollouts[i].rollout, theirs[i], ours[i], firstDiff(theirs[i], ours[i]))
		}
	}
}

func firstDiff(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
