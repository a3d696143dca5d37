// Package mathwithjudge is NeMo Gym's math_with_judge resources server in
// Go. It extracts the model's final answer (the last \boxed{} first) and
// checks it against the expected answer natively — numbers, fractions,
// surds, π, closed forms compared at high precision, sets, intervals,
// equations — where NeMo Gym runs HF Math-Verify and SymPy. When that check
// fails and should_use_judge is on, an LLM judge (judge_model_server) is
// asked whether the two answers are equivalent, in both orders.
package mathwithjudge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/resources"
	"github.com/nemo-gym-go/gym/internal/server"
)

// Kind and ClassName as NeMo Gym names them.
const (
	Kind      = "resources_servers/math_with_judge"
	ClassName = "LibraryJudgeMathResourcesServer"
)

func init() {
	server.Register(Kind, ClassName, New, "judge_model_server", "judge_responses_create_params", "should_use_judge", "library_verifier_timeout_seconds", "library_verifier_max_concurrency")
}

var fields = []resources.FieldSpec{
	{Name: "question", Kind: resources.String, Required: true},
	{Name: "expected_answer", Kind: resources.String, Required: true, NumberAsString: true},
}

// The judge prompt, adapted by NeMo Gym from Arena Hard.
const (
	judgeSystemMessage = `Please act as an impartial judge and evaluate the equivalence of the solutions given by two AI assistants to the mathematical problem displayed below. You will be given AI assistant A's answer and AI assistant B's answer. Your job is to evaluate whether assistant A's answer is equivalent to assistant B's answer.

Consider the mathematical equivalence of the AI assistants' answers above all other considerations. If the problem requests special formatting instructions, you may disregard any formatting considerations when evaluating the answers -- consider only mathematical equivalence.

After evaluating both answers for equivalence, you must output only one of the following choices as your final verdict with a label:

1.  The AI assistants' answers are equivalent: [[A=B]]
2.  The AI assistants' answers are different: [[A!=B]]

Example output: "My final verdict is different [[A!=B]]".`
	judgeEqualLabel    = "[[A=B]]"
	judgeNotEqualLabel = "[[A!=B]]"
)

func judgePrompt(question, first, second string) string {
	return "<|Problem|>\n" + question +
		"\n\n<|Start of Assistant A's Answer|>\n" + first + "\n<|End of Assistant A's Answer|>" +
		"\n\n<|Start of Assistant B's Answer|>\n" + second + "\n<|End of Assistant B's Answer|>"
}

type mathServer struct {
	useJudge    bool
	judgeName   string
	judgeURL    string          // http://host:port of the judge model server
	judgeParams json.RawMessage // judge_responses_create_params
	// correlate forwards a request's rollout id to the judge model, as
	// NeMo Gym's client prefixes model calls made while serving a rollout
	// when observability is on.
	correlate bool
	timeout   time.Duration
	slots     chan struct{}
	client    *server.Client
}

// New builds the server's handler from its config: judge_model_server,
// judge_responses_create_params, should_use_judge (default true, as in
// NeMo Gym's class), library_verifier_timeout_seconds (10) and
// library_verifier_max_concurrency (32).
func New(rt *server.Runtime) (http.Handler, error) {
	cfg := resources.Config{Instance: rt.Instance, Node: rt.Config}
	m := &mathServer{client: rt.Client}
	var err error
	if m.judgeName, err = cfg.ServerRef("judge_model_server", "responses_api_models"); err != nil {
		return nil, err
	}
	if m.judgeParams, err = cfg.RequiredJSONObject("judge_responses_create_params"); err != nil {
		return nil, err
	}
	if m.useJudge, err = cfg.Bool("should_use_judge", true); err != nil {
		return nil, err
	}
	seconds, err := cfg.PositiveFloat("library_verifier_timeout_seconds", 10)
	if err != nil {
		return nil, err
	}
	m.timeout = time.Duration(seconds * float64(time.Second))
	slots, err := cfg.PositiveInt("library_verifier_max_concurrency", 32)
	if err != nil {
		return nil, err
	}
	m.slots = make(chan struct{}, slots)
	if m.useJudge {
		if m.judgeURL, err = server.ServerURL(rt.Global, m.judgeName); err != nil {
			return nil, fmt.Errorf("%s.judge_model_server: %w", rt.Instance, err)
		}
		m.correlate = enabled(rt.Global, "observability_enabled") || enabled(rt.Global, "rollout_correlation")
	}
	if m.client == nil {
		m.client = server.NewClient(server.ClientOptions{Logger: rt.Logger})
	}
	return resources.NewHandler(rt, resources.Options{
		Verify:  m.verify,
		Fields:  fields,
		Metrics: resources.MetricsHooks{ComputeMetrics: computeMetrics, KeyMetrics: keyMetrics},
	})
}

func enabled(global *tree.Node, key string) bool {
	n := global.Get(key)
	return n != nil && n.Kind == tree.Bool && n.Bool
}

func (m *mathServer) verify(ctx context.Context, req *resources.VerifyRequest) (*resources.Verdict, error) {
	question, expected := req.String("question"), req.String("expected_answer")
	generated := req.OutputText()
	if boxed, ok := lastBoxed(generated); !ok || resources.PyStrip(boxed) == "" {
		// NeMo Gym 0.7.0 scores an answer without a complete, non-empty
		// last \boxed{} 0, asking neither the library nor the judge.
		return &resources.Verdict{Reward: 0, Fields: []resources.Field{
			{Name: "expected_answer", Value: expected},
			{Name: "extracted_answer", Value: nil},
			{Name: "library_reward", Value: 0.0},
			{Name: "judge_evaluations", Value: nil},
		}}, nil
	}
	libraryReward, extracted, err := m.library(ctx, expected, generated)
	if err != nil {
		return nil, err
	}
	reward := libraryReward
	var evaluations any // null when the judge is not asked
	if m.useJudge && libraryReward <= 0.5 {
		answer := generated
		if extracted != nil && *extracted != "" {
			answer = *extracted
		}
		var evals []*resources.Metrics
		if reward, evals, err = m.judge(ctx, req.RolloutID, question, expected, answer); err != nil {
			return nil, err
		}
		evaluations = evals
	}
	var extractedValue any // null
	if extracted != nil {
		extractedValue = *extracted
	}
	return &resources.Verdict{Reward: reward, Fields: []resources.Field{
		{Name: "expected_answer", Value: expected},
		{Name: "extracted_answer", Value: extractedValue},
		{Name: "library_reward", Value: libraryReward},
		{Name: "judge_evaluations", Value: evaluations},
	}}, nil
}

// lastBoxed is what the last \boxed{ of text holds, up to its matching
// brace; false when there is none, or it is never closed.
func lastBoxed(text string) (string, bool) {
	start := strings.LastIndex(text, `\boxed{`)
	if start < 0 {
		return "", false
	}
	content := start + len(`\boxed{`)
	depth := 1
	for i := content; i < len(text); i++ {
		switch text[i] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return text[content:i], true
			}
		}
	}
	return "", false
}

// library runs the native check within library_verifier_timeout_seconds
// and library_verifier_max_concurrency. A check that runs out of time
// scores 0 with no extracted answer, as NeMo Gym's timed-out subprocess
// does.
func (m *mathServer) library(ctx context.Context, expected, generated string) (float64, *string, error) {
	select {
	case m.slots <- struct{}{}:
		defer func() { <-m.slots }()
	case <-ctx.Done():
		return 0, nil, fmt.Errorf("waiting for a verifier slot: %w", ctx.Err())
	}
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	reward, extracted := grade(ctx, expected, generated)
	if ctx.Err() != nil {
		return 0, nil, nil
	}
	return reward, extracted, nil
}

// grade is Math-Verify's math_metric as NeMo Gym uses it: reward 1 when
// any extracted gold candidate matches any predicted one (parsed answers
// by value, fallback texts as strings), and the extracted answer: the
// first predicted candidate (printed) equal as a string to a gold
// candidate, else the first one.
func grade(ctx context.Context, expected, generated string) (float64, *string) {
	gold := extractGold(expected)
	if !gold.found() {
		return 0, nil
	}
	pred := extractPred(generated)
	c := &comparer{ctx: ctx}
	reward := 0.0
	if (gold.ans != nil && pred.ans != nil && c.equal(gold.ans, pred.ans)) ||
		(gold.fallback != "" && pred.fallback != "" && resources.PyStrip(gold.fallback) == resources.PyStrip(pred.fallback)) {
		reward = 1
	}
	goldStrings, predStrings := candidateStrings(gold), candidateStrings(pred)
	for _, p := range predStrings {
		for _, g := range goldStrings {
			if sp := resources.PyStrip(p); sp != "" && sp == resources.PyStrip(g) {
				return reward, &p
			}
		}
	}
	if len(predStrings) > 0 {
		return reward, &predStrings[0]
	}
	return reward, nil
}

func candidateStrings(x extracted) []string {
	var out []string
	if x.ans != nil {
		out = append(out, printAnswer(x.ans))
	}
	if x.fallback != "" {
		out = append(out, x.fallback)
	}
	return out
}

// judge asks the judge model whether the expected and generated answers
// are equivalent, and again with the answers swapped only if it said yes:
// reward 1 needs both verdicts.
func (m *mathServer) judge(ctx context.Context, rolloutID, question, expected, generated string) (float64, []*resources.Metrics, error) {
	equal, first, err := m.judgeOnce(ctx, rolloutID, question, expected, generated)
	if err != nil {
		return 0, nil, err
	}
	if !equal {
		return 0, []*resources.Metrics{first}, nil
	}
	equal, second, err := m.judgeOnce(ctx, rolloutID, question, generated, expected)
	if err != nil {
		return 0, nil, err
	}
	reward := 0.0
	if equal {
		reward = 1
	}
	return reward, []*resources.Metrics{first, second}, nil
}

func (m *mathServer) judgeOnce(ctx context.Context, rolloutID, question, first, second string) (bool, *resources.Metrics, error) {
	input, err := json.Marshal([]map[string]string{
		{"role": "system", "content": judgeSystemMessage},
		{"role": "user", "content": judgePrompt(question, first, second)},
	})
	if err != nil {
		return false, nil, fmt.Errorf("encoding the judge prompt: %w", err)
	}
	body, err := sjson.SetRawBytes(bytes.Clone(m.judgeParams), "input", input)
	if err != nil {
		return false, nil, fmt.Errorf("building the judge request from judge_responses_create_params: %w", err)
	}
	path := "/v1/responses"
	if m.correlate && rolloutID != "" {
		path = "/ng-rollout/" + url.PathEscape(rolloutID) + path
	}
	target := m.judgeURL + path
	reply, _, err := m.client.PostJSON(ctx, target, body, nil)
	if err != nil {
		return false, nil, &resources.JudgeError{Err: fmt.Errorf("judge model %s (POST %s): %w", m.judgeName, target, err)}
	}
	output := gjson.GetBytes(reply, "output")
	if !jsonl.Valid(reply) || !output.IsArray() || len(output.Array()) == 0 {
		return false, nil, &resources.JudgeError{Err: fmt.Errorf("judge model %s (POST %s) answered without output items: %.200s", m.judgeName, target, reply)}
	}
	evaluation := resources.NewMetrics()
	evaluation.Set("responses_create_params", json.RawMessage(body))
	evaluation.Set("response", json.RawMessage(reply))

	// A verdict in any other shape counts as "different", as upstream:
	// only the last part of the last output item is read.
	items := output.Array()
	last := items[len(items)-1]
	if last.Get("type").Str != "message" {
		return false, evaluation, nil
	}
	parts := last.Get("content").Array()
	if len(parts) == 0 || parts[len(parts)-1].Get("type").Str != "output_text" {
		return false, evaluation, nil
	}
	text := parts[len(parts)-1].Get("text").Str
	eq, ne := strings.Index(text, judgeEqualLabel), strings.Index(text, judgeNotEqualLabel)
	return eq >= 0 && (ne < 0 || eq < ne), evaluation, nil
}

func mathScores(r resources.Rollout) []resources.Score {
	var out []resources.Score
	if v, ok := r.Number("library_reward"); ok {
		out = append(out, resources.Score{Name: "symbolic_accuracy", Value: v})
	}
	if v, ok := r.Value("judge_evaluations"); ok && string(v) != "null" {
		if reward, ok := r.Number("reward"); ok {
			out = append(out, resources.Score{Name: "judge_accuracy", Value: reward})
		}
	}
	return out
}

func computeMetrics(tasks resources.Tasks) (*resources.Metrics, error) {
	return resources.PassMajorityMetrics(tasks, mathScores, "extracted_answer")
}

func keyMetrics(agent *resources.Metrics) *resources.Metrics {
	key := resources.NewMetrics()
	for _, name := range []string{"mean/input_tokens", "mean/output_tokens"} {
		if v, ok := agent.Get(name); ok {
			key.Set(name, v)
		}
	}
	noAnswer := []string{"no_answer"}
	key.Update(resources.HighestKMetrics(agent, "pass@1[avg-of-{k}]", nil, nil))
	key.Update(resources.HighestKMetrics(agent, "pass@{k}", nil, noAnswer))
	key.Update(resources.HighestKMetrics(agent, "majority@{k}", nil, noAnswer))
	return key
}
