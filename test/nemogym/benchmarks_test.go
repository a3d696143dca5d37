package nemogym

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// benchmarkSlice is a few rows of one of NeMo Gym's benchmarks, written in
// the shape its prepare.py writes (the Hub is out of reach here), and what
// the scripted model answers to each: right, wrong, and spelled the ways
// the verifiers must agree on.
type benchmarkSlice struct {
	name      string
	resources string // the resources server the benchmark runs on
	dataFile  string // the benchmark's jsonl_fpath
	rows      []benchmarkRow
}

type benchmarkRow struct {
	fields map[string]any // the prepared row; "[[<id>]]" marks its question
	answer string         // what the scripted model says
}

func mcqRow(id, question string, choices []string, sep, expected, answer string) benchmarkRow {
	letters := "ABCDEFGHIJ"
	var options []map[string]string
	var lines []string
	for i, c := range choices {
		l := string(letters[i])
		options = append(options, map[string]string{l: c})
		lines = append(lines, l+sep+c)
	}
	q := question + " [[" + id + "]]"
	text := strings.Join(lines, "\n")
	return benchmarkRow{
		fields: map[string]any{"question": q, "options_text": text, "problem": q + "\n" + text, "options": options, "expected_answer": expected, "uuid": id},
		answer: answer,
	}
}

func mathRow(id, question, expected, answer string) benchmarkRow {
	return benchmarkRow{fields: map[string]any{"question": question + " [[" + id + "]]", "expected_answer": expected}, answer: answer}
}

var benchmarkSlices = []benchmarkSlice{
	{name: "gpqa", resources: "mcqa", dataFile: "benchmarks/gpqa/data/gpqa_diamond_benchmark.jsonl", rows: []benchmarkRow{
		mcqRow("gpqa-0", "Which particle mediates the strong force?", []string{"photon", "gluon", "W boson", "graviton"}, ": ", "B", "The strong force is carried by gluons.\nAnswer: B"),
		mcqRow("gpqa-1", "What is the spin of an electron?", []string{"1/2", "1", "0", "3/2"}, ": ", "A", "**Answer:** A"),
		mcqRow("gpqa-2", "Which gas is most abundant in air?", []string{"oxygen", "argon", "nitrogen", "carbon dioxide"}, ": ", "C", "It is oxygen.\nAnswer: A"),
		mcqRow("gpqa-3", "Which is a noble gas?", []string{"neon", "sodium", "iron", "chlorine"}, ": ", "A", "The answer is \\boxed{A}"),
		mcqRow("gpqa-4", "Which is a prime?", []string{"4", "6", "9", "7"}, ": ", "D", "I cannot tell."),
	}},
	{name: "mmlu_pro", resources: "mcqa", dataFile: "benchmarks/mmlu_pro/data/mmlu_pro_benchmark.jsonl", rows: []benchmarkRow{
		mcqRow("mmlu-0", "2 + 2 = ?", []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}, ") ", "D", "Answer: D"),
		mcqRow("mmlu-1", "3 * 3 = ?", []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}, ") ", "I", "answer: i"),
		mcqRow("mmlu-2", "10 - 1 = ?", []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}, ") ", "I", "Answer: (I)"),
		mcqRow("mmlu-3", "5 + 5 = ?", []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}, ") ", "J", "Answer: E\n\nWait, no.\nAnswer: J"),
	}},
	{name: "aime24", resources: "math_with_judge", dataFile: "benchmarks/aime24/data/aime24_benchmark.jsonl", rows: []benchmarkRow{
		mathRow("aime-0", "Find 12 * 17.", "204", "So the product is \\boxed{204}."),
		mathRow("aime-1", "Find 5 * 5.", "25", "\\boxed{25.0}"),
		mathRow("aime-2", "Find 100 + 13.", "113", "The answer is 113."),
		mathRow("aime-3", "Find 66 / 2.", "33", "\\boxed{\\frac{66}{2}}"),
	}},
	{name: "gsm8k", resources: "math_with_judge", dataFile: "benchmarks/gsm8k/data/gsm8k_benchmark.jsonl", rows: []benchmarkRow{
		mathRow("gsm-0", "Janet sells 9 eggs at $2. How much does she make?", "18", "She makes \\boxed{18} dollars."),
		mathRow("gsm-1", "A pen costs $3. What is its price?", "3", "\\boxed{\\$3}"),
		mathRow("gsm-2", "What is 70 thousand?", "70000", "\\boxed{70,000}"),
		mathRow("gsm-3", "What is 54 * 10?", "540", "\\boxed{54}"),
	}},
	{name: "math-500", resources: "math_with_judge", dataFile: "benchmarks/math-500/data/math-500_benchmark.jsonl", rows: []benchmarkRow{
		mathRow("m500-0", "Compute 14/3.", "\\frac{14}{3}", "\\boxed{\\dfrac{14}{3}}"),
		mathRow("m500-1", "Convert (0,3) to polar.", "\\left( 3, \\frac{\\pi}{2} \\right)", "\\boxed{(3, \\frac{\\pi}{2})}"),
		mathRow("m500-2", "Simplify p - q.", "p - q", "\\boxed{p-q}"),
		mathRow("m500-3", "Compute 3 + 6.", "9", "\\boxed{10}"),
		mathRow("m500-4", "Solve x^2 = 4 for x > 0.", "2", "\\boxed{x = 2}"),
	}},
}

// scriptedModel is an OpenAI Responses endpoint that answers each question
// with the answer its row is scripted to get, found by the row's marker.
type scriptedModel struct {
	answers map[string]string // marker -> answer
	calls   atomic.Int64
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/v1/responses" {
		http.Error(w, "only /v1/responses is scripted", http.StatusNotFound)
		return
	}
	marker := regexp.MustCompile(`\[\[([a-z0-9-]+)\]\]`).FindSubmatch(body)
	answer, ok := "", false
	if marker != nil {
		answer, ok = m.answers[string(marker[1])]
	}
	if !ok {
		http.Error(w, "no scripted answer for "+string(body), http.StatusBadRequest)
		return
	}
	n := m.calls.Add(1)
	text, _ := json.Marshal(answer)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"resp_%[1]d","object":"response","created_at":1756093415.0,"model":"scripted","status":"completed",`+
		`"error":null,"incomplete_details":null,"instructions":null,"metadata":{},"parallel_tool_calls":true,"temperature":1.0,"top_p":1.0,"tool_choice":"auto","tools":[],`+
		`"output":[{"id":"msg_%[1]d","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":%[2]s,"annotations":[]}]}],`+
		`"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":15}}`, n, text)
}

// (4) Five of NeMo Gym's benchmarks as its users run them: NeMo Gym's own
// `eval run` (its Python mcqa / math_with_judge, simple_agent, legacy_agent
// relay and openai_model, in front of a scripted model) on a small prepared
// slice; then the same benchmarks through gym with `--search-dir` at the
// NeMo Gym tree, `--builtin-servers prefer` and `--model-type replay_model`
// replaying NeMo Gym's rollouts, with nothing but gym on PATH. Every
// rollout's reward and the aggregate metrics must be NeMo Gym's.
func TestBenchmarksOnGoServersMatchNeMoGym(t *testing.T) {
	h := newHarness(t)
	for _, dir := range []string{"benchmarks/prompts", "resources_servers/mcqa", "resources_servers/math_with_judge",
		"responses_api_agents/simple_agent", "environment_servers/legacy_agent", "responses_api_models/openai_model", "responses_api_models/vllm_model"} {
		h.copyShipped(dir)
	}
	model := &scriptedModel{answers: map[string]string{}}
	for _, b := range benchmarkSlices {
		h.copyShipped("benchmarks/" + b.name)
		// The metrics nemo-gym ships beside a benchmark's data describe
		// the whole prepared dataset (and in 0.7.0 an older config: its
		// own eval run refuses mmlu_pro and aime24 over them), not this
		// slice; without them NeMo Gym writes the slice's own.
		stale, _ := filepath.Glob(filepath.Join(h.work, "benchmarks", b.name, "data", "*_metrics.json"))
		for _, f := range stale {
			os.Remove(f)
		}
		var data bytes.Buffer
		for _, r := range b.rows {
			line, err := json.Marshal(r.fields)
			if err != nil {
				t.Fatal(err)
			}
			data.Write(append(line, '\n'))
			model.answers[regexp.MustCompile(`\[\[(.+)\]\]`).FindStringSubmatch(r.fields["question"].(string))[1]] = r.answer
		}
		h.write(b.dataFile, data.String(), 0o644)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upstream := &http.Server{Handler: model}
	go upstream.Serve(ln)
	t.Cleanup(func() { upstream.Close() })

	for _, b := range benchmarkSlices {
		t.Run(b.name, func(t *testing.T) {
			stem := strings.ReplaceAll(b.name, "-", "_")
			start := time.Now()
			out, err := h.run(context.Background(), "ng eval run --benchmark "+b.name+" --model-type openai_model --split benchmark"+
				" +policy_base_url=http://"+ln.Addr().String()+"/v1 +policy_api_key=unused +policy_model_name=scripted"+
				" ++uv_cache_dir=/var/cache/uv ++head_server.port="+strconv.Itoa(freePort(t))+" -o ng_"+stem+".jsonl")
			if err != nil {
				t.Fatalf("NeMo Gym's eval run --benchmark %s: %v\n%s", b.name, err, out)
			}
			t.Logf("NeMo Gym's eval run --benchmark %s: %s", b.name, time.Since(start).Round(time.Second))

			start = time.Now()
			gym := exec.Command(filepath.Join(buildDir, "gym"), "eval", "run", "--benchmark", b.name, "--search-dir", h.work,
				"--builtin-servers", "prefer", "--model-type", "replay_model", "--split", "benchmark", "-o", "gym_"+stem+".jsonl",
				"++policy_model.responses_api_models.replay_model.rollouts_jsonl_fpath="+filepath.Join(h.work, "ng_"+stem+".jsonl"),
				"++head_server.port="+strconv.Itoa(freePort(t)))
			gym.Dir = h.work
			gym.Env = []string{"PATH=" + buildDir, "HOME=" + filepath.Join(h.work, "home"), "NO_COLOR=1"}
			gymOut, err := gym.CombinedOutput()
			if err != nil {
				t.Fatalf("gym eval run --benchmark %s with only gym on PATH: %v\n%s", b.name, err, gymOut)
			}
			t.Logf("gym eval run --benchmark %s: %s", b.name, time.Since(start).Round(time.Millisecond))
			if regexp.MustCompile(`(?m)runs .*app\.py with Python`).Match(gymOut) {
				t.Errorf("a server ran with Python:\n%s", gymOut)
			}

			ngRewards, gymRewards := rewardsByRollout(t, h.work, "ng_"+stem+".jsonl"), rewardsByRollout(t, h.work, "gym_"+stem+".jsonl")
			if len(ngRewards) == 0 || len(ngRewards) != len(gymRewards) {
				t.Fatalf("NeMo Gym wrote %d rollouts, gym %d", len(ngRewards), len(gymRewards))
			}
			for k, want := range ngRewards {
				if got, ok := gymRewards[k]; !ok || got != want {
					t.Errorf("rollout %s: gym's reward %v, NeMo Gym's %v", k, got, want)
				}
			}
			ngMetrics, gymMetrics := agentMetrics(t, h.work, "ng_"+stem), agentMetrics(t, h.work, "gym_"+stem)
			diffs := metricDiffs(ngMetrics, gymMetrics)
			for _, diff := range diffs {
				t.Error(diff)
			}
			t.Logf("benchmark %s: %d rollouts with NeMo Gym's rewards; %d of its %d agent and key metrics equal (mean/reward %v)",
				b.name, len(ngRewards), len(ngMetrics)-len(diffs), len(ngMetrics), ngMetrics["agent_metrics.mean/reward"])
		})
	}
}

// rewardsByRollout maps "<task>/<rollout>" to the reward of a rollouts file.
func rewardsByRollout(t *testing.T, dir, file string) map[string]float64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			Task    *int     `json:"_ng_task_index"`
			Rollout *int     `json:"_ng_rollout_index"`
			Reward  *float64 `json:"reward"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Task == nil || r.Rollout == nil || r.Reward == nil {
			t.Fatalf("%s line %d: no task, rollout index and reward (%v): %.200s", file, i+1, err, line)
		}
		out[fmt.Sprintf("%d/%d", *r.Task, *r.Rollout)] = *r.Reward
	}
	return out
}

// agentMetrics flattens the agent_metrics and key_metrics of a run's
// aggregate metrics file (one agent) to "agent_metrics.<name>" -> value.
func agentMetrics(t *testing.T, dir, stem string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, stem+"_aggregate_metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil || len(entries) != 1 {
		t.Fatalf("%s_aggregate_metrics.json: want one agent's entry (%v):\n%s", stem, err, data)
	}
	out := map[string]any{}
	for _, section := range []string{"agent_metrics", "key_metrics"} {
		var m map[string]any
		if err := json.Unmarshal(entries[0][section], &m); err != nil {
			t.Fatalf("%s_aggregate_metrics.json %s: %v", stem, section, err)
		}
		for k, v := range m {
			out[section+"."+k] = v
		}
	}
	return out
}

// metricDiffs lists what differs between two flattened metric sets;
// numbers are equal within a relative 1e-9 (the two sum in other orders).
func metricDiffs(want, got map[string]any) []string {
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var diffs []string
	for _, k := range slices.Compact(keys) {
		w, wok := want[k]
		g, gok := got[k]
		switch {
		case !gok:
			diffs = append(diffs, fmt.Sprintf("%s: NeMo Gym has %v, gym nothing", k, w))
		case !wok:
			diffs = append(diffs, fmt.Sprintf("%s: gym has %v, NeMo Gym nothing", k, g))
		default:
			wf, wnum := w.(float64)
			gf, gnum := g.(float64)
			if wnum && gnum {
				if math.Abs(wf-gf) > 1e-9*math.Max(1, math.Abs(wf)) {
					diffs = append(diffs, fmt.Sprintf("%s: gym %v, NeMo Gym %v", k, gf, wf))
				}
			} else if fmt.Sprint(w) != fmt.Sprint(g) {
				diffs = append(diffs, fmt.Sprintf("%s: gym %v, NeMo Gym %v", k, g, w))
			}
		}
	}
	return diffs
}
