// Package ruler is NeMo Gym's RULER resources server in Go. RULER probes
// long-context recall: the model must repeat needles (keys, values,
// variable names, words) hidden in a long haystack. The reward is the share
// of reference strings found in the answer, or for the QA subsets whether
// any reference is found; matching is case-insensitive substring search.
package ruler

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nemo-gym-go/gym/gymserver"
	"github.com/nemo-gym-go/gym/internal/resources"
)

// Kind and ClassName as NeMo Gym names them.
const (
	Kind      = "resources_servers/ruler"
	ClassName = "RulerResourcesServer"
)

// It reads no config key of its own; expose_tools_over_mcp, which the
// resources base reads only to refuse true, keeps NeMo Gym's server under
// builtin_servers: prefer.
func init() { gymserver.Register(Kind, ClassName, Server.Handler) }

// subsets are RULER's task families. The reply carries one field per
// subset, null except the row's own, so each subset gets its own mean in
// the aggregate metrics.
var subsets = []string{
	"cwe", "fwe", "niah_multikey_1", "niah_multikey_2", "niah_multikey_3", "niah_multiquery",
	"niah_multivalue", "niah_single_1", "niah_single_2", "niah_single_3", "qa_1", "qa_2", "vt",
}

// Server is the resources server, on the public gymserver package.
var Server = gymserver.ResourcesServer{
	ClassName: ClassName,
	Verify:    verify,
	Fields: []gymserver.Field{
		{Name: "outputs", Type: gymserver.List, Items: gymserver.String, Required: true},
		{Name: "length", Type: gymserver.Int, Required: true},
		{Name: "subset", Type: gymserver.String, Required: true},
	},
}

func verify(_ context.Context, req *gymserver.VerifyRequest) (*gymserver.Verdict, error) {
	var refs []string
	json.Unmarshal(req.Field("outputs"), &refs)
	subset := req.String("subset")
	reward, err := Score(req.OutputText(), refs, subset)
	if err != nil {
		return nil, err
	}
	v := &gymserver.Verdict{Reward: reward, Fields: req.Echo("outputs", "length", "subset")}
	for _, s := range subsets {
		var val any // null
		if s == subset {
			val = reward
		}
		v.Fields = append(v.Fields, gymserver.ReplyField{Name: s, Value: val})
	}
	return v, nil
}

// Score is RULER's string match (NeMo Skills' string_match_part for qa_1
// and qa_2, string_match_all otherwise) of the stripped, lowercased answer
// against the references.
func Score(text string, refs []string, subset string) (float64, error) {
	if len(refs) == 0 {
		return 0, fmt.Errorf("ruler: outputs is empty, so there is no reference to match the answer against")
	}
	pred := strings.ToLower(resources.PyStrip(text))
	found := 0
	for _, r := range refs {
		if strings.Contains(pred, strings.ToLower(r)) {
			found++
		}
	}
	if subset == "qa_1" || subset == "qa_2" {
		if found > 0 {
			return 1, nil
		}
		return 0, nil
	}
	return float64(found) / float64(len(refs)), nil
}
