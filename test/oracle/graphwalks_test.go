package oracle

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/resources/resourcestest"
	"github.com/nemo-gym-go/gym/resources_servers/graphwalks"
)

// graphwalksAnswer is a node-list answer as models write them: the final
// line right or not, extra text after it, spacing, duplicates, empty lists.
func graphwalksAnswer(r *rand.Rand, nodes []string) string {
	pick := func() string {
		var out []string
		for _, n := range nodes {
			if r.IntN(2) == 0 {
				out = append(out, n)
			}
		}
		if r.IntN(5) == 0 && len(out) > 0 {
			out = append(out, out[0])
		}
		return strings.Join(out, []string{", ", ",", " , ", ",  "}[r.IntN(4)])
	}
	shapes := []string{
		"Final Answer: [" + pick() + "]", "Final Answer:[" + pick() + "]", "Final Answer: []", "Final Answer: [ ]",
		"final answer: [" + pick() + "]", "Final Answer: " + pick(), "The nodes are " + pick(), "Final Answer: [" + pick() + "] done",
		"Final Answer: [[" + pick() + "]]", "", "\n\n", "Final Answer: [" + pick() + "]\nThat is all.",
	}
	s := shapes[r.IntN(len(shapes))]
	if r.IntN(3) == 0 {
		s = "Let me walk the graph.\nFinal Answer: [" + pick() + "]\n" + s
	}
	if r.IntN(4) == 0 {
		s += "\n  "
	}
	return s
}

// TestGraphwalksMatchesNeMoGym holds gym's graphwalks verify to NeMo
// Gym's on generated answers: the same F1 reward, parse failure and nodes.
func TestGraphwalksMatchesNeMoGym(t *testing.T) {
	e := setup(t)
	srv := resourcestest.Start(t, "gw:\n  resources_servers:\n    graphwalks:\n      entrypoint: app.py\n", "gw", graphwalks.ClassName, graphwalks.New)
	r := rand.New(rand.NewPCG(3, 9))
	pool := []string{"a1b2", "c3d4", "e5f6", "0aa1", "ffee", "x y", "Ä"}
	var cases []verifyCase
	for i := 0; i < 2000; i++ {
		nodes := pool[:2+r.IntN(len(pool)-2)]
		var expected []string
		for _, n := range nodes {
			if r.IntN(2) == 0 {
				expected = append(expected, n)
			}
		}
		exp, _ := json.Marshal(expected)
		if r.IntN(20) == 0 {
			exp = []byte(`not json`)
		}
		body := fmt.Sprintf(`{"responses_create_params":{"input":"q"},"response":{"id":"r","created_at":0,"model":"m","object":"response","output":[{"id":"msg","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":%s,"annotations":[]}]}],"parallel_tool_calls":false,"tool_choice":"none","tools":[]},"expected_answer":%s,"problem_type":"bfs"}`,
			quote(graphwalksAnswer(r, nodes)), quote(string(exp)))
		cases = append(cases, verifyCase{Config: map[string]any{}, Body: json.RawMessage(body)})
	}
	differ, theirs := differentVerdicts(t, e, "graphwalks", "resources_servers.graphwalks.app", "GraphWalksResourcesServer", "GraphWalksVerifyRequest",
		[]string{"f1", "parse_failed", "predicted_nodes"}, cases, func(c verifyCase) (int, []byte) { return srv.Post("/verify", c.Body) })
	parsed, partial := 0, 0
	for _, v := range theirs {
		if string(v["parse_failed"]) == "false" {
			parsed++
		}
		if f := string(v["f1"]); f != "0.0" && f != "1.0" {
			partial++
		}
	}
	t.Logf("graphwalks: %d of %d generated answers scored as NeMo Gym scores them (%d parsed, %d with a partial F1)", len(cases)-len(differ), len(cases), parsed, partial)
	if parsed < len(cases)/4 || partial == 0 {
		t.Errorf("the generated answers do not exercise scoring: %d parsed, %d partial", parsed, partial)
	}
}
