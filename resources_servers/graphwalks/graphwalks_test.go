package graphwalks

import (
	"encoding/json"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/resources/resourcestest"
	"github.com/nemo-gym-go/gym/internal/server"
)

func TestScoring(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		expected string
		nodes    []string
		failed   bool
		f1       float64
	}{
		{"exact", "reasoning...\nFinal Answer: [node_1, node_2]", `["node_1", "node_2"]`, []string{"node_1", "node_2"}, false, 1},
		{"order does not matter", "Final Answer: [b, a]", `["a", "b"]`, []string{"b", "a"}, false, 1},
		{"half right", "Final Answer: [node_1, node_3]", `["node_1", "node_2"]`, []string{"node_1", "node_3"}, false, 0.5},
		{"duplicates collapse", "Final Answer: [a, a, b]", `["a", "b"]`, []string{"a", "a", "b"}, false, 1},
		{"superset", "Final Answer: [a, b, c, d]", `["a", "b"]`, []string{"a", "b", "c", "d"}, false, 2 * 0.5 * 1 / 1.5},
		{"quotes are kept", "Final Answer: ['a', 'b']", `["a", "b"]`, []string{"'a'", "'b'"}, false, 0},
		{"empty list is an answer", "Final Answer: []", `[]`, []string{}, false, 1},
		{"blank list", "Final Answer: [  ]", `["a"]`, []string{}, false, 0},
		{"empty items dropped", "Final Answer: [a, , b,]", `["a", "b"]`, []string{"a", "b"}, false, 1},
		{"not on the last line", "Final Answer: [a]\nThat is all.", `["a"]`, []string{}, true, 0},
		{"trailing blank lines ignored", "Final Answer: [a]\n\n  \n", `["a"]`, []string{"a"}, false, 1},
		{"greedy to the last bracket", "Final Answer: [a] or [b]", `["a] or [b"]`, []string{"a] or [b"}, false, 1},
		{"no final answer", "The parents are a and b.", `["a", "b"]`, []string{}, true, 0},
		{"empty output", "", `["a"]`, []string{}, true, 0},
		{"answer but nothing expected", "Final Answer: [a]", `[]`, []string{"a"}, false, 0},
		{"expected not JSON", "Final Answer: [a]", `a`, []string{"a"}, false, 0},
		{"expected a number", "Final Answer: [1]", `1`, []string{"1"}, false, 0},
		{"expected a string is its characters", "Final Answer: [a, b]", `"ab"`, []string{"a", "b"}, false, 1},
		{"expected unhashable", "Final Answer: [a]", `[["a"]]`, []string{"a"}, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes, failed := ParseNodeList(tc.text)
			if !reflect.DeepEqual(nodes, tc.nodes) || failed != tc.failed {
				t.Errorf("ParseNodeList = %q, %v; want %q, %v", nodes, failed, tc.nodes, tc.failed)
			}
			if f1 := F1(nodes, ExpectedNodes(tc.expected), failed); math.Abs(f1-tc.f1) > 1e-12 {
				t.Errorf("F1 = %v, want %v", f1, tc.f1)
			}
		})
	}
}

func start(t testing.TB) *resourcestest.Server {
	cfg, err := os.ReadFile("configs/graphwalks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return resourcestest.Start(t, string(cfg), "graphwalks", ClassName, New)
}

// TestRecordedRollouts re-verifies every recorded rollout: the reward, f1,
// parse_failed and predicted_nodes all reproduce, and the reply echoes the
// declared row fields.
func TestRecordedRollouts(t *testing.T) {
	s := start(t)
	for i, row := range resourcestest.ReadJSONL(t, "data/example_rollouts.jsonl") {
		status, body := s.Post("/verify", row)
		if status != 200 {
			t.Fatalf("row %d: %d %s", i+1, status, body)
		}
		var reply map[string]json.RawMessage
		json.Unmarshal(body, &reply)
		for _, k := range []string{"reward", "f1", "parse_failed", "predicted_nodes", "expected_answer", "problem_type", "n_tokens", "prompt_chars"} {
			if !resourcestest.JSONEqual(reply[k], row[k]) {
				t.Errorf("row %d: %s = %s, recorded %s", i+1, k, reply[k], row[k])
			}
		}
		if _, ok := reply["agent_ref"]; ok {
			t.Errorf("row %d: undeclared field agent_ref echoed", i+1)
		}
	}
}

func TestVerifyValidation(t *testing.T) {
	s := start(t)
	row := resourcestest.ReadJSONL(t, "data/example.jsonl")[0]
	delete(row, "problem_type")
	if status, body := s.Post("/verify", resourcestest.Merge(row, map[string]json.RawMessage{"response": json.RawMessage(`{"output":[]}`)})); status != 422 || !strings.Contains(string(body), `"loc":["body","problem_type"]`) {
		t.Errorf("missing problem_type: %d %s", status, body)
	}
}

func TestAggregateMetrics(t *testing.T) {
	s := start(t)
	rows := []string{
		`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"problem_type":"bfs","response":{"usage":{"input_tokens":100,"output_tokens":10}}}`,
		`{"_ng_task_index":0,"_ng_rollout_index":1,"reward":0.5,"problem_type":"bfs","response":{"usage":{"input_tokens":100,"output_tokens":20}}}`,
		`{"_ng_task_index":1,"_ng_rollout_index":0,"reward":0.0,"problem_type":"parents","response":{"usage":{"input_tokens":50,"output_tokens":5}}}`,
		`{"_ng_task_index":1,"_ng_rollout_index":1,"reward":1.0,"problem_type":"parents","response":{"usage":{"input_tokens":50,"output_tokens":7}}}`,
	}
	status, body := s.Post("/aggregate_metrics", `{"verify_responses":[`+strings.Join(rows, ",")+`]}`)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var out struct {
		AgentMetrics map[string]any `json:"agent_metrics"`
		KeyMetrics   map[string]any `json:"key_metrics"`
	}
	json.Unmarshal(body, &out)
	want := map[string]float64{
		"pass@2/accuracy":                                (1.0 + 1.0) / 2 * 100, // F1 is not 0/1, so pass@k is max of the first k
		"pass@1/accuracy":                                (1.0 + 0.5) / 2 * 100, // task 1 scores 0 and 1: 1 - C(1,1)/C(2,1)
		"pass@1[avg-of-2]/accuracy":                      (0.75 + 0.5) / 2 * 100,
		"problem_type=bfs/pass@2/accuracy":               100,
		"problem_type=parents/pass@1/accuracy":           50,
		"problem_type=parents/pass@1[avg-of-2]/accuracy": 50,
	}
	for k, v := range want {
		if got, ok := out.AgentMetrics[k].(float64); !ok || math.Abs(got-v) > 1e-9 {
			t.Errorf("agent_metrics[%q] = %v, want %v", k, out.AgentMetrics[k], v)
		}
	}
	wantKeys := []string{"mean/input_tokens", "mean/output_tokens", "pass@1[avg-of-2]/accuracy", "pass@2/accuracy"}
	if len(out.KeyMetrics) != len(wantKeys) {
		t.Errorf("key_metrics = %v, want keys %v", out.KeyMetrics, wantKeys)
	}
	for _, k := range wantKeys {
		if _, ok := out.KeyMetrics[k]; !ok {
			t.Errorf("key_metrics lacks %s: %v", k, out.KeyMetrics)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	s := start(b)
	body, _ := json.Marshal(resourcestest.ReadJSONL(b, "data/example_rollouts.jsonl")[0])
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
