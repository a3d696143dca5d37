package mathwithjudge

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/resources/resourcestest"
	"github.com/nemo-gym-go/gym/internal/server"
)

func startDefault(t testing.TB) *resourcestest.Server {
	cfg, err := os.ReadFile("configs/math_with_judge.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return resourcestest.Start(t, string(cfg), "math_with_judge", ClassName, New)
}

// fakeJudge is a judge model server: it answers each POST /v1/responses
// with the next verdict, and records the requests.
type fakeJudge struct {
	mu       sync.Mutex
	verdicts []string // output_text of each reply; "!500" answers HTTP 500, "!raw:<body>" that body
	requests []judgeRequest
}

type judgeRequest struct {
	path string
	body []byte
}

func (f *fakeJudge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, judgeRequest{r.URL.Path, body})
	verdict := "no verdict left"
	if len(f.verdicts) > 0 {
		verdict, f.verdicts = f.verdicts[0], f.verdicts[1:]
	}
	f.mu.Unlock()
	switch {
	case verdict == "!500":
		http.Error(w, `{"error":"judge overloaded"}`, http.StatusInternalServerError)
	case strings.HasPrefix(verdict, "!raw:"):
		w.Write([]byte(strings.TrimPrefix(verdict, "!raw:")))
	default:
		fmt.Fprintf(w, `{"id":"resp_judge","object":"response","output":[{"type":"reasoning","summary":[]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":%q,"annotations":[]}]}]}`, verdict)
	}
}

// startWithJudge serves math_with_judge with the judge on, pointed at a
// fake judge model instance.
func startWithJudge(t *testing.T, judge *fakeJudge, extra string) *resourcestest.Server {
	js := httptest.NewServer(judge)
	t.Cleanup(js.Close)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(js.URL, "http://"))
	cfg := fmt.Sprintf(`%s
judge_model:
  responses_api_models:
    openai_model:
      entrypoint: app.py
      host: %s
      port: %s
math_with_judge:
  resources_servers:
    math_with_judge:
      entrypoint: app.py
      judge_model_server:
        type: responses_api_models
        name: judge_model
      judge_responses_create_params:
        input: []
        temperature: 0.0
      should_use_judge: true
      domain: math
`, extra, host, port)
	return resourcestest.Start(t, cfg, "math_with_judge", ClassName, New)
}

func response(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"output": []any{map[string]any{
		"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
	}}})
	return b
}

func verifyRequest(question, expected, answer string) map[string]json.RawMessage {
	q, _ := json.Marshal(question)
	e, _ := json.Marshal(expected)
	return map[string]json.RawMessage{
		"responses_create_params": json.RawMessage(`{"input":[{"role":"user","content":"Solve it."}]}`),
		"response":                response(answer),
		"question":                q,
		"expected_answer":         e,
	}
}

func post(t *testing.T, s *resourcestest.Server, path string, body any) map[string]json.RawMessage {
	t.Helper()
	status, reply := s.Post(path, body)
	if status != 200 {
		t.Fatalf("POST %s: %d %s", path, status, reply)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(reply, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// recordedRequests are the recorded rollouts completed with their dataset
// rows' question (the recordings keep only the reply's fields, errata E1).
func recordedRequests(t *testing.T) (requests, rollouts []map[string]json.RawMessage) {
	examples := map[string]map[string]json.RawMessage{}
	for _, row := range resourcestest.ReadJSONL(t, "data/example.jsonl") {
		examples[resourcestest.InputText(t, row)] = row
	}
	rollouts = resourcestest.ReadJSONL(t, "data/example_rollouts.jsonl")
	for i, r := range rollouts {
		row, ok := examples[resourcestest.InputText(t, r)]
		if !ok {
			t.Fatalf("rollout %d matches no example row", i+1)
		}
		requests = append(requests, resourcestest.Merge(r, map[string]json.RawMessage{"question": row["question"]}))
	}
	return requests, rollouts
}

// printedDifferently are recorded rows whose extracted_answer is SymPy's
// str() of an expression this server prints with another term order: row 2
// records "(-(1 - sqrt(3))**4033 + (1 + sqrt(3))**4033)/((2**2017*sqrt(3)))"
// (errata E3). Its reward and library_reward match.
var printedDifferently = map[int]string{
	1: `"((1 + sqrt(3))**4033 - (1 - sqrt(3))**4033)/(2**2017*sqrt(3))"`,
}

// TestRecordedRollouts re-verifies every recorded rollout with the shipped
// config (judge off): rewards, library rewards and extracted answers
// reproduce, including row 2, equal to the gold only symbolically.
func TestRecordedRollouts(t *testing.T) {
	s := startDefault(t)
	requests, rollouts := recordedRequests(t)
	for i, req := range requests {
		reply := post(t, s, "/verify", req)
		wantExtracted := string(rollouts[i]["extracted_answer"])
		if p, ok := printedDifferently[i]; ok {
			wantExtracted = p
		}
		for k, want := range map[string]string{
			"reward": string(rollouts[i]["library_reward"]), "library_reward": string(rollouts[i]["library_reward"]),
			"extracted_answer": wantExtracted, "expected_answer": string(rollouts[i]["expected_answer"]), "judge_evaluations": "null",
		} {
			if string(reply[k]) != want {
				t.Errorf("row %d: %s = %s, want %s", i+1, k, reply[k], want)
			}
		}
		if _, ok := reply["question"]; ok || len(reply) != 7 {
			t.Errorf("row %d: reply fields %d, want the 7 LibraryJudgeMathVerifyResponse declares", i+1, len(reply))
		}
	}
}

// TestRecordedRolloutsWithJudge replays the recordings with the judge on,
// as they were made: the judge is asked only where the library check
// failed (rows 1 and 5), once each since it answered "different", and its
// recorded verdicts give the recorded rewards.
func TestRecordedRolloutsWithJudge(t *testing.T) {
	requests, rollouts := recordedRequests(t)
	judge := &fakeJudge{}
	for _, r := range rollouts {
		gjson.GetBytes(r["judge_evaluations"], "#.response.output.1.content.0.text").ForEach(func(_, v gjson.Result) bool {
			judge.verdicts = append(judge.verdicts, v.Str)
			return true
		})
	}
	if len(judge.verdicts) != 2 {
		t.Fatalf("expected 2 recorded judge verdicts, got %d", len(judge.verdicts))
	}
	s := startWithJudge(t, judge, "")
	for i, req := range requests {
		reply := post(t, s, "/verify", req)
		if string(reply["reward"]) != string(rollouts[i]["reward"]) {
			t.Errorf("row %d: reward %s, recorded %s", i+1, reply["reward"], rollouts[i]["reward"])
		}
		got, want := gjson.ParseBytes(reply["judge_evaluations"]), gjson.ParseBytes(rollouts[i]["judge_evaluations"])
		if len(got.Array()) != len(want.Array()) || got.Type != want.Type {
			t.Errorf("row %d: judge_evaluations %s, recorded %d of them", i+1, reply["judge_evaluations"], len(want.Array()))
		}
	}
	if len(judge.requests) != 2 {
		t.Fatalf("judge asked %d times, want 2", len(judge.requests))
	}
	// The judge sees the extracted answer, and the configured params.
	first := judge.requests[0]
	if first.path != "/v1/responses" || gjson.GetBytes(first.body, "temperature").Raw != "0.0" ||
		!strings.Contains(gjson.GetBytes(first.body, "input.1.content").Str, "<|Start of Assistant B's Answer|>\n83/499\n") ||
		gjson.GetBytes(first.body, "input.0.role").Str != "system" {
		t.Errorf("judge request %s %s", first.path, first.body)
	}
}

func TestJudge(t *testing.T) {
	const question, gold = "What is 1/2?", `\frac{1}{2}`
	tests := []struct {
		name     string
		verdicts []string
		reward   string
		evals    int
	}{
		{"equal both ways", []string{"Equivalent [[A=B]]", "[[A=B]]"}, "1.0", 2},
		{"equal, then different", []string{"[[A=B]]", "[[A!=B]]"}, "0.0", 2},
		{"different: no second call", []string{"[[A!=B]]"}, "0.0", 1},
		{"first label wins", []string{"[[A=B]] not [[A!=B]]", "[[A!=B]] then [[A=B]]"}, "0.0", 2},
		{"no label", []string{"I am not sure."}, "0.0", 1},
		{"reply without a message", []string{`!raw:{"output":[{"type":"reasoning","summary":[]}]}`}, "0.0", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			judge := &fakeJudge{verdicts: tc.verdicts}
			s := startWithJudge(t, judge, "")
			reply := post(t, s, "/verify", verifyRequest(question, gold, `\boxed{one half}`))
			if string(reply["reward"]) != tc.reward || string(reply["library_reward"]) != "0.0" ||
				len(gjson.ParseBytes(reply["judge_evaluations"]).Array()) != tc.evals {
				t.Errorf("reward %s library %s evaluations %s", reply["reward"], reply["library_reward"], reply["judge_evaluations"])
			}
			if len(judge.requests) == 2 {
				// The second question swaps the answers.
				a := gjson.GetBytes(judge.requests[0].body, "input.1.content").Str
				b := gjson.GetBytes(judge.requests[1].body, "input.1.content").Str
				if !strings.Contains(a, "A's Answer|>\n"+gold) || !strings.Contains(b, "B's Answer|>\n"+gold) {
					t.Errorf("answers not swapped:\n%s\n---\n%s", a, b)
				}
			}
		})
	}

	t.Run("library match skips the judge", func(t *testing.T) {
		judge := &fakeJudge{}
		s := startWithJudge(t, judge, "")
		reply := post(t, s, "/verify", verifyRequest(question, gold, `\boxed{0.5}`))
		if string(reply["reward"]) != "1.0" || string(reply["judge_evaluations"]) != "null" || len(judge.requests) != 0 {
			t.Errorf("reward %s evaluations %s, judge asked %d times", reply["reward"], reply["judge_evaluations"], len(judge.requests))
		}
	})
}

// TestJudgeFailsafe: a judge that fails answers 200 with the request, reward
// 0.0 and the failure marked, so rollout collection retries the row.
func TestJudgeFailsafe(t *testing.T) {
	for _, verdict := range []string{"!500", "!raw:not json", `!raw:{"output":[]}`} {
		t.Run(verdict, func(t *testing.T) {
			s := startWithJudge(t, &fakeJudge{verdicts: []string{verdict}}, "")
			reply := post(t, s, "/verify", verifyRequest("What is 1/2?", `\frac{1}{2}`, `\boxed{one half}`))
			if string(reply["reward"]) != "0.0" || string(reply["_ng_failure_class"]) != `"judge_failed"` ||
				!strings.Contains(string(reply["_ng_failure_judge_error"]), "judge model judge_model") ||
				string(reply["question"]) != `"What is 1/2?"` || reply["response"] == nil {
				t.Errorf("failsafe reply: %v", stringMap(reply))
			}
		})
	}
}

// TestJudgeRolloutPrefix: with observability on, a judge call made while
// verifying rollout 7-0 goes to the model under /ng-rollout/7-0, so the
// model server records it with the rollout's calls.
func TestJudgeRolloutPrefix(t *testing.T) {
	judge := &fakeJudge{verdicts: []string{"[[A!=B]]", "[[A!=B]]"}}
	s := startWithJudge(t, judge, "observability_enabled: true")
	post(t, s, "/ng-rollout/7-0/verify", verifyRequest("q", "2", `\boxed{3}`))
	post(t, s, "/verify", verifyRequest("q", "2", `\boxed{3}`))
	if len(judge.requests) != 2 || judge.requests[0].path != "/ng-rollout/7-0/v1/responses" || judge.requests[1].path != "/v1/responses" {
		t.Errorf("judge paths: %+v", judge.requests)
	}
}

func TestLibraryTimeout(t *testing.T) {
	cfg, err := os.ReadFile("configs/math_with_judge.yaml")
	if err != nil {
		t.Fatal(err)
	}
	config := strings.Replace(string(cfg), "      should_use_judge: false\n", "      should_use_judge: false\n      library_verifier_timeout_seconds: 0.000000001\n", 1)
	s := resourcestest.Start(t, config, "math_with_judge", ClassName, New)
	reply := post(t, s, "/verify", verifyRequest("q", "32", `\boxed{32}`))
	if string(reply["reward"]) != "0.0" || string(reply["extracted_answer"]) != "null" {
		t.Errorf("timed-out check: reward %s extracted %s, want 0.0 and null as upstream", reply["reward"], reply["extracted_answer"])
	}
}

func TestVerifyValidation(t *testing.T) {
	s := startDefault(t)
	req := verifyRequest("q", "18", `\boxed{18}`)
	req["expected_answer"] = json.RawMessage("18") // gsm8k writes numbers
	if reply := post(t, s, "/verify", req); string(reply["reward"]) != "1.0" || string(reply["expected_answer"]) != `"18"` {
		t.Errorf("numeric expected_answer: %v", stringMap(reply))
	}
	delete(req, "question")
	if status, body := s.Post("/verify", req); status != 422 || !strings.Contains(string(body), `"loc":["body","question"]`) {
		t.Errorf("missing question: %d %s", status, body)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"judge of the wrong type", "judge_model_server: {type: resources_servers, name: x}", "judge_model_server.type"},
		{"unknown judge instance", "judge_model_server: {type: responses_api_models, name: nowhere}", "nowhere"},
		{"no judge params", "judge_responses_create_params: null", "judge_responses_create_params"},
		{"bad concurrency", "library_verifier_max_concurrency: 0", "library_verifier_max_concurrency"},
		{"bad timeout", "library_verifier_timeout_seconds: -1", "library_verifier_timeout_seconds"},
		{"bad should_use_judge", "should_use_judge: maybe", "should_use_judge"},
		{"MCP", "expose_tools_over_mcp: true", "MCP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := "policy_model:\n  responses_api_models:\n    openai_model: {entrypoint: app.py, host: 127.0.0.1, port: 9}\n" +
				"math_with_judge:\n  resources_servers:\n    math_with_judge:\n      entrypoint: app.py\n      domain: math\n"
			// Each case replaces one key of a valid config.
			base := map[string]string{
				"judge_model_server":            "{type: responses_api_models, name: policy_model}",
				"judge_responses_create_params": "{input: []}",
			}
			for k, v := range base {
				if !strings.HasPrefix(tc.yaml, k+":") {
					cfg += "      " + k + ": " + v + "\n"
				}
			}
			cfg += "      " + tc.yaml + "\n"
			_, err := New(resourcestest.Runtime(t, cfg, "math_with_judge", ClassName))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v; want an error about %s", err, tc.want)
			}
		})
	}
}

func stringMap(m map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if k != "responses_create_params" && k != "response" {
			out[k] = string(v)
		}
	}
	return out
}

// BenchmarkVerify is the recorded row 2: a closed form whose equality with
// the gold needs (2±√3)^2016 evaluated at high precision.
func BenchmarkVerify(b *testing.B) {
	s := startDefault(b)
	rows := resourcestest.ReadJSONL(b, "data/example_rollouts.jsonl")
	body, _ := json.Marshal(resourcestest.Merge(rows[1], map[string]json.RawMessage{"question": json.RawMessage(`"q"`)}))
	b.ResetTimer()
	for b.Loop() {
		if status, reply := s.Post("/verify", body); status != 200 || !strings.Contains(string(reply), `"reward":1.0`) {
			b.Fatalf("%d %.300s", status, reply)
		}
	}
}

// BenchmarkVerifyInteger is the common case: an integer in a box.
func BenchmarkVerifyInteger(b *testing.B) {
	s := startDefault(b)
	body, _ := json.Marshal(verifyRequest("q", "32", strings.Repeat("Some reasoning with numbers 1, 2 and 3. ", 50)+`\boxed{32}`))
	b.ResetTimer()
	for b.Loop() {
		if status, reply := s.Post("/verify", body); status != 200 {
			b.Fatalf("%d %s", status, reply)
		}
	}
}

func TestRegistered(t *testing.T) {
	if _, ok := server.Lookup(Kind); !ok {
		t.Fatalf("%s is not registered", Kind)
	}
}

// As NeMo Gym 0.7.0's, an answer without a complete, non-empty last
// \boxed{} scores 0 and asks neither the library nor the judge.
func TestUnboxedAnswerScoresZero(t *testing.T) {
	judge := &fakeJudge{}
	s := startWithJudge(t, judge, "")
	for _, answer := range []string{"The answer is 1/2.", `\boxed{}`, `\boxed{ }`, `\boxed{1/2`, `\boxed{1/2} and then \boxed{`} {
		reply := post(t, s, "/verify", verifyRequest("What is 1/2?", `\frac{1}{2}`, answer))
		if string(reply["reward"]) != "0.0" || string(reply["extracted_answer"]) != "null" || string(reply["judge_evaluations"]) != "null" {
			t.Errorf("%q: %s", answer, reply)
		}
	}
	if len(judge.requests) != 0 {
		t.Errorf("the judge was asked %d times", len(judge.requests))
	}
}
