// Package graphwalks is NeMo Gym's GraphWalks resources server in Go
// (OpenAI's graphwalks benchmark): the model lists the parents of a node,
// or the nodes at a given BFS depth, of a graph given as an edge list, and
// ends with `Final Answer: [n1, n2, ...]`. The reward is the F1 score of
// the predicted node set against the expected one.
package graphwalks

import (
	"context"
	"net/http"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/resources"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Kind and ClassName as NeMo Gym names them.
const (
	Kind      = "resources_servers/graphwalks"
	ClassName = "GraphWalksResourcesServer"
)

// It reads no config key of its own; expose_tools_over_mcp, which the
// resources base reads only to refuse true, keeps NeMo Gym's server under
// builtin_servers: prefer.
func init() { server.Register(Kind, ClassName, New) }

var fields = []resources.FieldSpec{
	{Name: "expected_answer", Kind: resources.String, Required: true},
	{Name: "problem_type", Kind: resources.String, Required: true},
	{Name: "n_tokens", Kind: resources.Int, Nullable: true},
	{Name: "prompt_chars", Kind: resources.Int, Nullable: true},
}

// New builds the server's handler.
func New(rt *server.Runtime) (http.Handler, error) {
	return resources.NewHandler(rt, resources.Options{
		// NeMo Gym 0.7.0's server declares no reverify mode: "unknown".
		Verify:  verify,
		Fields:  fields,
		Metrics: resources.MetricsHooks{ComputeMetrics: computeMetrics, KeyMetrics: keyMetrics},
	})
}

func verify(_ context.Context, req *resources.VerifyRequest) (*resources.Verdict, error) {
	predicted, failed := ParseNodeList(req.OutputText())
	f1 := F1(predicted, ExpectedNodes(req.String("expected_answer")), failed)
	v := &resources.Verdict{Reward: f1, Fields: req.Echo("expected_answer", "problem_type", "n_tokens", "prompt_chars")}
	v.Fields = append(v.Fields,
		resources.Field{Name: "f1", Value: f1},
		resources.Field{Name: "parse_failed", Value: failed},
		resources.Field{Name: "predicted_nodes", Value: predicted})
	return v, nil
}

var finalAnswer = regexp.MustCompile(`Final Answer:` + resources.PySpaceClass + `*\[(.*)\]`)

// ParseNodeList reads `Final Answer: [n1, n2, ...]` from the last non-blank
// line. failed is true when that line has no such list; an empty list is a
// valid answer. Items keep any quotes they were written with.
func ParseNodeList(text string) (nodes []string, failed bool) {
	var last string
	for _, line := range strings.Split(resources.PyStrip(text), "\n") {
		if resources.PyStrip(line) != "" {
			last = line
		}
	}
	if last == "" {
		return []string{}, true
	}
	m := finalAnswer.FindStringSubmatch(last)
	if m == nil {
		return []string{}, true
	}
	nodes = []string{}
	if resources.PyStrip(m[1]) == "" {
		return nodes, false
	}
	for _, item := range strings.Split(m[1], ",") {
		if item = resources.PyStrip(item); item != "" {
			nodes = append(nodes, item)
		}
	}
	return nodes, false
}

// ExpectedNodes is the set Python's set(json.loads(expected_answer))
// gives, as comparable keys: a list gives its items, a string its
// characters, an object its keys; anything else, or a list holding lists or
// objects (unhashable), gives the empty set.
func ExpectedNodes(expected string) map[string]bool {
	set := map[string]bool{}
	if !jsonl.ValidString(expected) {
		return set
	}
	v := gjson.Parse(expected)
	switch {
	case v.IsArray():
		for _, it := range v.Array() {
			k, ok := hashKey(it)
			if !ok {
				return map[string]bool{}
			}
			set[k] = true
		}
	case v.Type == gjson.String:
		for _, r := range v.Str {
			set["s"+string(r)] = true
		}
	case v.IsObject():
		v.ForEach(func(k, _ gjson.Result) bool {
			set["s"+k.Str] = true
			return true
		})
	}
	return set
}

// hashKey gives JSON scalars the equality Python's set gives them: numbers
// by value, with true and false equal to 1 and 0.
func hashKey(v gjson.Result) (string, bool) {
	switch v.Type {
	case gjson.String:
		return "s" + v.Str, true
	case gjson.Number:
		return "n" + tree.PythonFloatRepr(v.Num), true
	case gjson.True:
		return "n1.0", true
	case gjson.False:
		return "n0.0", true
	case gjson.Null:
		return "None", true
	}
	return "", false
}

// F1 of the predicted node set (duplicates collapse) against the expected
// set: 0 on a parse failure, 1 when both are empty, 0 when one is.
func F1(predicted []string, expected map[string]bool, parseFailed bool) float64 {
	if parseFailed {
		return 0
	}
	pred := map[string]bool{}
	for _, p := range predicted {
		pred["s"+p] = true
	}
	if len(pred) == 0 && len(expected) == 0 {
		return 1
	}
	if len(pred) == 0 || len(expected) == 0 {
		return 0
	}
	tp := 0
	for p := range pred {
		if expected[p] {
			tp++
		}
	}
	if tp == 0 {
		return 0
	}
	precision := float64(tp) / float64(len(pred))
	recall := float64(tp) / float64(len(expected))
	return 2 * precision * recall / (precision + recall)
}

// computeMetrics is pass@k over the (continuous) F1 reward, overall and per
// problem_type, the subset keys spelled problem_type=<value>/....
func computeMetrics(tasks resources.Tasks) (*resources.Metrics, error) {
	m, err := resources.PassMajorityMetrics(tasks, resources.RewardAccuracy, "")
	if err != nil {
		return nil, err
	}
	sub, err := resources.SubsetMetrics(tasks, "problem_type", resources.RewardAccuracy, "")
	if err != nil {
		return nil, err
	}
	for _, k := range sub.Keys() {
		v, _ := sub.Get(k)
		if strings.Contains(k, "/") {
			k = "problem_type=" + k
		}
		m.Set(k, v)
	}
	return m, nil
}

func keyMetrics(agent *resources.Metrics) *resources.Metrics {
	key := resources.NewMetrics()
	for _, name := range []string{"mean/input_tokens", "mean/output_tokens"} {
		if v, ok := agent.Get(name); ok {
			key.Set(name, v)
		}
	}
	key.Update(resources.HighestKMetrics(agent, "pass@1[avg-of-{k}]", nil, nil))
	key.Update(resources.HighestKMetrics(agent, "pass@{k}", nil, nil))
	return key
}
