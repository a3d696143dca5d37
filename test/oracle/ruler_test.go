package oracle

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/resources/resourcestest"
	"github.com/nemo-gym-go/gym/internal/server"
	"github.com/nemo-gym-go/gym/resources_servers/ruler"
)

// TestRulerMatchesNeMoGym holds gym's ruler verify to NeMo Gym's on
// generated answers: every reference found, some, none, in other cases,
// for the all-references subsets and the any-reference ones (qa_1, qa_2).
func TestRulerMatchesNeMoGym(t *testing.T) {
	e := setup(t)
	factory, ok := server.Lookup(ruler.Kind)
	if !ok {
		t.Fatalf("%s is not registered", ruler.Kind)
	}
	srv := resourcestest.Start(t, "ruler:\n  resources_servers:\n    ruler:\n      entrypoint: app.py\n", "ruler", ruler.ClassName, factory)
	r := rand.New(rand.NewPCG(5, 1))
	refs := []string{"7741", "Blue Whale", "ÉCOLE", "x-ray", "İstanbul", "42", "the key"}
	subsets := []string{"niah_single_1", "niah_multikey_2", "vt", "cwe", "fwe", "qa_1", "qa_2"}
	var cases []verifyCase
	for i := 0; i < 2000; i++ {
		var outputs, said []string
		for _, ref := range refs[:1+r.IntN(4)] {
			outputs = append(outputs, ref)
			switch r.IntN(4) {
			case 0:
				said = append(said, ref)
			case 1:
				said = append(said, strings.ToLower(ref))
			case 2:
				said = append(said, strings.ToUpper(ref))
			}
		}
		answer := "The answers are: " + strings.Join(said, ", ") + []string{"", ".", "\n", "  "}[r.IntN(4)]
		out, _ := json.Marshal(outputs)
		body := fmt.Sprintf(`{"responses_create_params":{"input":"q"},"response":{"id":"r","created_at":0,"model":"m","object":"response","output":[{"id":"msg","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":%s,"annotations":[]}]}],"parallel_tool_calls":false,"tool_choice":"none","tools":[]},"outputs":%s,"subset":%q,"length":4096}`,
			quote(answer), out, subsets[r.IntN(len(subsets))])
		cases = append(cases, verifyCase{Config: map[string]any{}, Body: json.RawMessage(body)})
	}
	differ, theirs := differentVerdicts(t, e, "ruler", "resources_servers.ruler.app", "RulerResourcesServer", "RulerVerifyRequest", nil, cases,
		func(c verifyCase) (int, []byte) { return srv.Post("/verify", c.Body) })
	partial := 0
	for _, v := range theirs {
		if f := string(v["reward"]); f != "0.0" && f != "1.0" {
			partial++
		}
	}
	t.Logf("ruler: %d of %d generated answers scored as NeMo Gym scores them (%d partly right)", len(cases)-len(differ), len(cases), partial)
	if partial == 0 {
		t.Error("the generated answers do not exercise partial scores")
	}
}
