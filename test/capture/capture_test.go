// Package capture proves model-call capture end to end, through the real
// gym binary and its real servers: what the capture files and the joined
// rows say about each rollout's model calls is, call for call, what a fake
// upstream model recorded.
package capture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nemo-gym-go/gym/test/gymbin"
)

// exchange is one call as the fake upstream saw it.
type exchange struct {
	request, response json.RawMessage
	status            int
}

// upstream is a Responses API model that calls get_weather when it has a
// tool and no tool output yet, answers once it has one, gives every judge
// prompt the verdict "equal", answers math wrongly (so that the judge is
// asked), and fails every call of rollouts in failFirst on their first
// attempt. It records each call under the session key openai_model sends
// (the rollout's capture key).
type upstream struct {
	mu        sync.Mutex
	calls     map[string][]exchange
	failFirst map[string]bool
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get("X-Rollout-Key")
	text := string(body)
	status := 200
	var answer string
	switch {
	case u.failFirst[key]:
		status, answer = 500, `{"error":{"message":"the upstream fell over","type":"server_error"}}`
	case strings.Contains(text, "[[A=B]]"):
		answer = message("judge-"+key, "The answers are the same. My final verdict is [[A=B]]")
	case strings.Contains(text, "function_call_output"):
		answer = message("final-"+key, "It is sunny in San Francisco.")
	case strings.Contains(text, "get_weather"):
		answer = `{"id":"resp_call_` + key + `","object":"response","created_at":1,"model":"fake-1","status":"completed","output":[{"type":"function_call","id":"fc_1","call_id":"call_` + key + `","name":"get_weather","arguments":"{\"city\": \"San Francisco\"}","status":"completed"}],"usage":{"input_tokens":20,"output_tokens":7,"total_tokens":27,"input_tokens_details":{"cached_tokens":4},"output_tokens_details":{"reasoning_tokens":0}}}`
	default:
		answer = message("math-"+key, `The answer is \boxed{12345}.`)
	}
	u.mu.Lock()
	u.calls[key] = append(u.calls[key], exchange{request: body, response: json.RawMessage(answer), status: status})
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, answer)
}

func message(id, text string) string {
	t, _ := json.Marshal(text)
	return `{"id":"resp_` + id + `","object":"response","created_at":1,"model":"fake-1","status":"completed","output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":` + string(t) + `,"annotations":[]}]}],"usage":{"input_tokens":11,"output_tokens":5,"total_tokens":16}}`
}

func readLines(t *testing.T, path string) []map[string]json.RawMessage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	return out
}

// same reports whether two JSON texts hold the same value.
func same(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// A multi-turn tool-calling benchmark (two model calls per rollout, one
// rollout failing its first attempt and retried with --resume) and a
// judged one (the policy's call and the judge's two, through the same
// model server), on openai_model in front of a fake upstream: every call the
// upstream saw is in the rollout's capture file, in order, with the
// response it gave; every captured call reached the upstream; and the
// rows' ng_model_call_capture counts and sums them.
func TestCapturesMatchTheUpstream(t *testing.T) {
	gym, err := gymbin.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	up := &upstream{calls: map[string][]exchange{}, failFirst: map[string]bool{"2-0": true}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	work := t.TempDir()
	run := func(benchmark, calls string, extra ...string) string {
		t.Helper()
		args := append([]string{"eval", "run", "--benchmark", benchmark, "--model-type", "openai_model", "--split", "benchmark", "-o", benchmark + "/r.jsonl",
			"++head_server.port=0", "++observability_enabled=true", "++model_call_capture_dir=" + calls,
			"+policy_base_url=" + srv.URL + "/v1", "+policy_api_key=fake-key", "+policy_model_name=fake-1",
			"++policy_model.responses_api_models.openai_model.session_key_headers=[X-Rollout-Key]",
			"++policy_model.responses_api_models.openai_model.max_retries=0", "++rollout_max_retries=0"}, extra...)
		cmd := exec.Command(gym, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GYM_INSTALL_ROOT="+repo, "NEMO_GYM_EXTRA_ROOTS=", "NO_COLOR=1")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	taken := func() map[string][]exchange {
		up.mu.Lock()
		defer up.mu.Unlock()
		calls := up.calls
		up.calls, up.failFirst = map[string][]exchange{}, map[string]bool{}
		return calls
	}

	toolCalls := filepath.Join(work, "tool-calls")
	if out := run("example_single_tool_call", toolCalls); !strings.Contains(out, "1 of 5 rollouts failed to run") {
		t.Fatalf("the first run should lose rollout 2-0:\n%s", out)
	}
	firstAttempt := taken()
	if out := run("example_single_tool_call", toolCalls, "--resume"); !strings.Contains(out, "1 to run") {
		t.Fatalf("the resumed run:\n%s", out)
	}
	resumed := taken()
	rows := readLines(t, filepath.Join(work, "example_single_tool_call", "r.jsonl"))
	seen := map[string][]exchange{}
	for k, v := range firstAttempt {
		if k != "2-0" {
			seen[k] = v
		}
	}
	for k, v := range resumed {
		seen[k] = v
	}
	check(t, rows, toolCalls, seen, map[string]int{"0-0": 2, "1-0": 2, "2-0-a1": 2, "3-0": 2, "4-0": 2})
	// The failed first attempt was captured under its own key, apart from
	// the retried rollout's.
	if failed := readLines(t, filepath.Join(toolCalls, "2-0.capture.jsonl")); len(failed) != len(firstAttempt["2-0"]) || !strings.Contains(string(failed[0]["error_category"]), "upstream_error") {
		t.Errorf("the failed attempt's capture: %d records for %d calls", len(failed), len(firstAttempt["2-0"]))
	}
	if _, err := os.Stat(filepath.Join(toolCalls, "2-0.capture.incomplete")); err != nil {
		t.Errorf("the attempt that ended early is not marked incomplete: %v", err)
	}
	if _, err := os.Stat(filepath.Join(toolCalls, "2-0-a1.capture.incomplete")); err == nil {
		t.Error("the retried attempt, which completed, is marked incomplete")
	}

	mathCalls := filepath.Join(work, "math-calls")
	out := run("math_example", mathCalls, "++math_example_math_with_judge_resources_server.resources_servers.math_with_judge.should_use_judge=true")
	judged := taken()
	rows = readLines(t, filepath.Join(work, "math_example", "r.jsonl"))
	if len(rows) != 5 {
		t.Fatalf("%d math rows:\n%s", len(rows), out)
	}
	// The policy's answer, then the judge asked twice (the two answers
	// swapped), all through the one model server under the rollout's key.
	check(t, rows, mathCalls, judged, map[string]int{"0-0": 3, "1-0": 3, "2-0": 3, "3-0": 3, "4-0": 3})
	for key, calls := range judged {
		if key == "" {
			continue // the launcher's readiness probe of the endpoint
		}
		if len(calls) != 3 || strings.Contains(string(calls[0].request), "[[A=B]]") || !strings.Contains(string(calls[1].request), "[[A=B]]") || !strings.Contains(string(calls[2].request), "[[A=B]]") {
			t.Errorf("rollout %s: not the policy's call and then two of the judge's", key)
		}
	}
}

// check holds each row's capture against the calls the upstream saw under
// its key.
func check(t *testing.T, rows []map[string]json.RawMessage, dir string, upstreamCalls map[string][]exchange, want map[string]int) {
	t.Helper()
	if len(rows) != len(want) {
		t.Errorf("%d rows, want %d", len(rows), len(want))
	}
	for _, row := range rows {
		var capture struct {
			RolloutID string `json:"rollout_id"`
			Metrics   struct {
				NumCalls int  `json:"num_calls"`
				TokensIn *int `json:"tokens_in"`
			} `json:"metrics"`
			Calls []struct {
				ModelCallID string `json:"model_call_id"`
			} `json:"calls"`
		}
		if err := json.Unmarshal(row["ng_model_call_capture"], &capture); err != nil {
			t.Fatalf("a row without ng_model_call_capture: %v", err)
		}
		key := capture.RolloutID
		seen := upstreamCalls[key]
		if len(seen) != want[key] {
			t.Errorf("rollout %s: the upstream saw %d calls, want %d", key, len(seen), want[key])
		}
		records := readLines(t, filepath.Join(dir, key+".capture.jsonl"))
		if len(records) != len(seen) || capture.Metrics.NumCalls != len(seen) || len(capture.Calls) != len(seen) {
			t.Errorf("rollout %s: %d captured, %d joined (num_calls %d), %d at the upstream", key, len(records), len(capture.Calls), capture.Metrics.NumCalls, len(seen))
			continue
		}
		tokensIn := 0
		for i, rec := range records {
			var status int
			json.Unmarshal(rec["status_code"], &status)
			if !same(rec["response"], seen[i].response) || status != seen[i].status {
				t.Errorf("rollout %s call %d: captured %d %s, the upstream answered %d %s", key, i, status, rec["response"], seen[i].status, seen[i].response)
			}
			var sent, got map[string]json.RawMessage
			json.Unmarshal(rec["request"], &sent)
			json.Unmarshal(seen[i].request, &got)
			if !same(sent["input"], got["input"]) {
				t.Errorf("rollout %s call %d: the model server got input %s, the upstream %s", key, i, sent["input"], got["input"])
			}
			var usage struct {
				Usage struct {
					InputTokens int `json:"input_tokens"`
				} `json:"usage"`
			}
			json.Unmarshal(seen[i].response, &usage)
			tokensIn += usage.Usage.InputTokens
			var id string
			json.Unmarshal(rec["model_call_id"], &id)
			if capture.Calls[i].ModelCallID != id {
				t.Errorf("rollout %s call %d: joined %s, captured %s", key, i, capture.Calls[i].ModelCallID, id)
			}
		}
		if capture.Metrics.TokensIn == nil || *capture.Metrics.TokensIn != tokensIn {
			t.Errorf("rollout %s: tokens_in %v, the upstream's usage adds up to %d", key, capture.Metrics.TokensIn, tokensIn)
		}
	}
}
