package ruler

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/resources/resourcestest"
	"github.com/nemo-gym-go/gym/internal/server"
)

func TestScore(t *testing.T) {
	refs := []string{"NRBQA", "KMLJX", "LDENQ", "QXUMV"}
	tests := []struct {
		name, text, subset string
		refs               []string
		want               float64
	}{
		{"all found", "NRBQA, KMLJX, LDENQ and QXUMV", "vt", refs, 1},
		{"case-insensitive", "  nrbqa kmljx ldenq qxumv\n", "vt", refs, 1},
		{"half found", "NRBQA and KMLJX", "vt", refs, 0.5},
		{"none found", "I could not find them.", "niah_single_1", refs, 0},
		{"empty answer", "", "vt", refs, 0},
		{"white space only", " \n\t", "vt", refs, 0},
		{"qa: any reference counts", "the answer is ldenq", "qa_1", refs, 1},
		{"qa: none found", "no idea", "qa_2", refs, 0},
		{"substring match", "xNRBQAx", "cwe", []string{"NRBQA"}, 1},
		{"empty reference matches anything", "", "vt", []string{""}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Score(tc.text, tc.refs, tc.subset)
			if err != nil || got != tc.want {
				t.Errorf("Score(%q, %q) = %v, %v; want %v", tc.text, tc.subset, got, err, tc.want)
			}
		})
	}
	if _, err := Score("x", nil, "vt"); err == nil {
		t.Error("Score with no references: want an error")
	}
}

func start(t testing.TB) *resourcestest.Server {
	cfg, err := os.ReadFile("configs/ruler.yaml")
	if err != nil {
		t.Fatal(err)
	}
	factory, ok := server.Lookup(Kind)
	if !ok {
		t.Fatalf("%s is not registered", Kind)
	}
	return resourcestest.Start(t, string(cfg), "ruler_resources_server", ClassName, factory)
}

func response(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"output": []any{map[string]any{
		"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
	}}})
	return b
}

func TestVerifyReply(t *testing.T) {
	s := start(t)
	rows := resourcestest.ReadJSONL(t, "data/example.jsonl")
	row := resourcestest.Merge(rows[0], map[string]json.RawMessage{"response": response("NRBQA KMLJX")})
	status, body := s.Post("/verify", row)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var reply map[string]json.RawMessage
	json.Unmarshal(body, &reply)
	want := map[string]string{"reward": "0.4", "vt": "0.4", "qa_1": "null", "cwe": "null", "length": "262065", "subset": `"vt"`}
	for k, v := range want {
		if string(reply[k]) != v {
			t.Errorf("%s = %s, want %s", k, reply[k], v)
		}
	}
	if len(reply) != 3+3+13 {
		t.Errorf("reply has %d fields, want responses_create_params, response, reward, outputs, length, subset and the 13 subsets", len(reply))
	}

	bad := []struct{ name, body, want string }{
		{"missing outputs", `{"responses_create_params":{},"response":{"output":[]},"length":1,"subset":"vt"}`, `"loc":["body","outputs"]`},
		{"outputs not strings", `{"responses_create_params":{},"response":{"output":[]},"outputs":[1],"length":1,"subset":"vt"}`, `"loc":["body","outputs",0]`},
		{"length not an integer", `{"responses_create_params":{},"response":{"output":[]},"outputs":["a"],"length":1.5,"subset":"vt"}`, `"type":"int_from_float"`},
	}
	for _, tc := range bad {
		if status, body := s.Post("/verify", tc.body); status != 422 || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s: %d %s", tc.name, status, body)
		}
	}
	if status, body := s.Post("/verify", `{"responses_create_params":{},"response":{"output":[]},"outputs":[],"length":1,"subset":"vt"}`); status != 500 {
		t.Errorf("empty outputs: %d %s, want a 500 as upstream's ZeroDivisionError", status, body)
	}
}

// TestRecordedRollouts re-verifies every recorded rollout. The recordings
// predate the outputs, length and subset fields (errata E2), so each row is
// completed with the task family its prompt names (variable tracking, vt)
// and the references of an example row; the model's answer is empty in
// all five (it ran out of tokens while reasoning), so any reference gives
// the recorded 0.0.
func TestRecordedRollouts(t *testing.T) {
	s := start(t)
	examples := resourcestest.ReadJSONL(t, "data/example.jsonl")
	for i, row := range resourcestest.ReadJSONL(t, "data/example_rollouts.jsonl") {
		if !strings.Contains(resourcestest.InputText(t, row), "Find all variables that are assigned the value") {
			t.Fatalf("row %d is not a variable-tracking task", i+1)
		}
		req := resourcestest.Merge(row, map[string]json.RawMessage{
			"outputs": examples[0]["outputs"], "length": examples[0]["length"], "subset": json.RawMessage(`"vt"`),
		})
		status, body := s.Post("/verify", req)
		if status != 200 {
			t.Fatalf("row %d: %d %s", i+1, status, body)
		}
		var reply map[string]json.RawMessage
		json.Unmarshal(body, &reply)
		if string(reply["reward"]) != string(row["reward"]) {
			t.Errorf("row %d: reward %s, recorded %s", i+1, reply["reward"], row["reward"])
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	s := start(b)
	rows := resourcestest.ReadJSONL(b, "data/example.jsonl")
	body, _ := json.Marshal(resourcestest.Merge(rows[0], map[string]json.RawMessage{"response": response("NRBQA KMLJX LDENQ")}))
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
