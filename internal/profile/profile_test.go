package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// The two tasks of the happy path: task 0 is answered by qa_agent, task 1
// by math_agent. Task 0's rows differ by seed, and its rollout 1 comes
// first in the file, so the sample shows which row was picked.
var (
	happyInputs = lines(
		`{"_ng_task_index": 0, "_ng_rollout_index": 1, "question": "Capital of France?", "seed": 1, "agent_ref": {"name": "qa_agent"}}`,
		`{"_ng_task_index": 0, "_ng_rollout_index": 0, "question": "Capital of France?", "seed": 0, "agent_ref": {"name": "qa_agent"}}`,
		`{"_ng_task_index":1,"_ng_rollout_index":0,"responses_create_params":{"input":[{"role":"user","content":"2+2?"}]},"agent_ref":{"name":"math_agent"}}`,
		`{"_ng_task_index":1,"_ng_rollout_index":1,"responses_create_params":{"input":[{"role":"user","content":"2+2?"}]},"agent_ref":{"name":"math_agent"}}`,
	)
	// Out of order; judge_score shows up first in the file but last in
	// (task, rollout) order, which is the column order NeMo Gym profiles in.
	happyRollouts = lines(
		`{"_ng_task_index":1,"_ng_rollout_index":1,"judge_score":0.25,"reward":0.0,"extracted_answer":"5","responses_create_params":{"input":[{"role":"user","content":"2+2?"}]},"response":{"id":"resp_4","output":[{"type":"message","content":[{"type":"output_text","text":"5"}]}],"usage":{"input_tokens":20,"output_tokens":8,"total_tokens":28}},"agent_ref":{"name":"math_agent"}}`,
		`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"response":{"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}}`,
		`{"_ng_task_index":1,"_ng_rollout_index":0,"reward":1.0,"response":{"usage":{"input_tokens":20,"output_tokens":6,"total_tokens":26}}}`,
		`{"_ng_task_index":0,"_ng_rollout_index":1,"reward":0.0,"parse_failed":true,"response":{"usage":{"input_tokens":10,"output_tokens":7,"total_tokens":17}}}`,
	)
)

const (
	task0Stats = `"mean/reward":0.5,"mean/input_tokens":10.0,"mean/output_tokens":6.0,"mean/total_tokens":16.0,"mean/parse_failed":1.0,` +
		`"max/reward":1.0,"max/input_tokens":10,"max/output_tokens":7,"max/total_tokens":17,"max/parse_failed":1.0,` +
		`"min/reward":0.0,"min/input_tokens":10,"min/output_tokens":5,"min/total_tokens":15,"min/parse_failed":1.0,` +
		`"median/reward":0.5,"median/input_tokens":10.0,"median/output_tokens":6.0,"median/total_tokens":16.0,"median/parse_failed":1.0,` +
		`"std/reward":0.7071067811865476,"std/input_tokens":0.0,"std/output_tokens":1.4142135623730951,"std/total_tokens":1.4142135623730951`
	task1Stats = `"mean/reward":0.5,"mean/input_tokens":20.0,"mean/output_tokens":7.0,"mean/total_tokens":27.0,"mean/judge_score":0.25,` +
		`"max/reward":1.0,"max/input_tokens":20,"max/output_tokens":8,"max/total_tokens":28,"max/judge_score":0.25,` +
		`"min/reward":0.0,"min/input_tokens":20,"min/output_tokens":6,"min/total_tokens":26,"min/judge_score":0.25,` +
		`"median/reward":0.5,"median/input_tokens":20.0,"median/output_tokens":7.0,"median/total_tokens":27.0,"median/judge_score":0.25,` +
		`"std/reward":0.7071067811865476,"std/input_tokens":0.0,"std/output_tokens":1.4142135623730951,"std/total_tokens":1.4142135623730951`
	task0Infos = `[{"rollout_id":"0:0","_ng_task_index":0,"_ng_rollout_index":0,"reward":1.0,"input_tokens":10,"output_tokens":5,"total_tokens":15},` +
		`{"rollout_id":"0:1","_ng_task_index":0,"_ng_rollout_index":1,"reward":0.0,"input_tokens":10,"output_tokens":7,"total_tokens":17,"parse_failed":1}]`
	task1Infos = `[{"rollout_id":"1:0","_ng_task_index":1,"_ng_rollout_index":0,"reward":1.0,"input_tokens":20,"output_tokens":6,"total_tokens":26},` +
		`{"rollout_id":"1:1","_ng_task_index":1,"_ng_rollout_index":1,"reward":0.0,"input_tokens":20,"output_tokens":8,"total_tokens":28,"judge_score":0.25}]`
	task0Sample = `{"question":"Capital of France?","seed":0,"agent_ref":{"name":"qa_agent"}}`
	task1Sample = `{"responses_create_params":{"input":[{"role":"user","content":"2+2?"}]},"agent_ref":{"name":"math_agent"}}`
)

type fixture struct {
	dir, inputs, rollouts string
}

func writeFixture(t testing.TB, inputs, rollouts string) fixture {
	t.Helper()
	dir := t.TempDir()
	fx := fixture{dir, filepath.Join(dir, "rollouts_materialized_inputs.jsonl"), filepath.Join(dir, "rollouts.jsonl")}
	if err := os.WriteFile(fx.inputs, []byte(inputs), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fx.rollouts, []byte(rollouts), 0o644); err != nil {
		t.Fatal(err)
	}
	return fx
}

func (fx fixture) run(t *testing.T, allowPartial bool) (*Summary, string, error) {
	t.Helper()
	var out bytes.Buffer
	s, err := Run(context.Background(), Options{InputsPath: fx.inputs, RolloutsPath: fx.rollouts, AllowPartial: allowPartial, Out: &out})
	return s, out.String(), err
}

func (fx fixture) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fx.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRunHappyPath(t *testing.T) {
	fx := writeFixture(t, happyInputs, happyRollouts)
	s, out, err := fx.run(t, false)
	if err != nil {
		t.Fatal(err)
	}

	wantGroups := lines(
		`{"_ng_task_index":0,`+task0Stats+`,"sample":`+task0Sample+`,"num_rollouts":2,"expected_num_rollouts":2,"missing_num_rollouts":0,"reward_profile_completion_pct":100.0,"rollout_infos":`+task0Infos+`}`,
		`{"_ng_task_index":1,`+task1Stats+`,"sample":`+task1Sample+`,"num_rollouts":2,"expected_num_rollouts":2,"missing_num_rollouts":0,"reward_profile_completion_pct":100.0,"rollout_infos":`+task1Infos+`}`,
	)
	if got := fx.read(t, "rollouts_reward_profiling.jsonl"); got != wantGroups {
		t.Errorf("reward profiling\n got %s\nwant %s", got, wantGroups)
	}
	// Agents in name order, each with its statistics across its two
	// repeats, agent_ref last where NeMo Gym appends it.
	got := fx.read(t, "rollouts_agent_metrics.json")
	for _, want := range []string{`[{` + task1Stats + `,"mean_across_repeats/mean/input_tokens":20.0,`, `"agent_ref":{"name":"math_agent"}},{` + task0Stats + `,"mean_across_repeats/`, `"agent_ref":{"name":"qa_agent"}}]`} {
		if !strings.Contains(got, want) {
			t.Errorf("agent metrics\n%s\nlack %s", got, want)
		}
	}
	var repeats []struct {
		Agent   struct{ Name string } `json:"agent_ref"`
		Rollout int                   `json:"_ng_rollout_index"`
		Samples int                   `json:"sample_count"`
		Missing int                   `json:"missing_count"`
		Reward  float64               `json:"mean/reward"`
	}
	if err := json.Unmarshal([]byte(fx.read(t, "rollouts_repeat_level_metrics.json")), &repeats); err != nil || len(repeats) != 4 ||
		repeats[0].Agent.Name != "math_agent" || repeats[0].Rollout != 0 || repeats[0].Samples != 1 || repeats[0].Missing != 0 || repeats[3].Agent.Name != "qa_agent" || repeats[3].Rollout != 1 {
		t.Errorf("repeat-level metrics %+v (%v), want math_agent's repeats 0 and 1 of one task each, then qa_agent's", repeats, err)
	}

	groups := filepath.Join(fx.dir, "rollouts_reward_profiling.jsonl")
	agents := filepath.Join(fx.dir, "rollouts_agent_metrics.json")
	repeatLevel := filepath.Join(fx.dir, "rollouts_repeat_level_metrics.json")
	wantOut := "Profiling outputs:\n" +
		"Reward profile completion: 4/4 rollout rows (100.00%)\n" +
		"Input rows: 2 total; 2 complete; 0 partial; 0 without rollouts dropped from output.\n" +
		"Reward profiling outputs: " + groups + "\n" +
		"Agent-level metrics: " + agents + "\n" +
		"Repeat-level metrics: " + repeatLevel + "\n"
	if out != wantOut {
		t.Errorf("printed\n%s\nwant\n%s", out, wantOut)
	}
	want := Summary{ExpectedRollouts: 4, CompletedRollouts: 4, CompletionPct: 100, Tasks: 2, CompleteTasks: 2,
		RewardProfilingPath: groups, AgentMetricsPath: agents, RepeatLevelMetricsPath: repeatLevel}
	if *s != want {
		t.Errorf("summary %+v, want %+v", *s, want)
	}

	entries, _ := os.ReadDir(fx.dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if info, _ := e.Info(); strings.HasPrefix(e.Name(), "rollouts_") && !strings.Contains(e.Name(), "materialized") && info.Mode().Perm() != 0o644 {
			t.Errorf("%s has mode %v, want 0644", e.Name(), info.Mode().Perm())
		}
	}
	if want := []string{"rollouts.jsonl", "rollouts_agent_metrics.json", "rollouts_materialized_inputs.jsonl", "rollouts_repeat_level_metrics.json", "rollouts_reward_profiling.jsonl"}; !slices.Equal(names, want) {
		t.Errorf("directory holds %v, want %v (no temp files left)", names, want)
	}

	// A second run replaces the outputs rather than appending to them.
	if _, _, err := fx.run(t, false); err != nil {
		t.Fatal(err)
	}
	if got := fx.read(t, "rollouts_reward_profiling.jsonl"); got != wantGroups {
		t.Errorf("rerun reward profiling\n got %s", got)
	}
}

// partialInputs has three tasks of two rows; partialRollouts completes
// task 0, half of task 1 (only its rollout 1) and none of task 2.
var (
	partialInputs = lines(
		`{"_ng_task_index":0,"_ng_rollout_index":0,"q":"a","agent_ref":{"name":"agent"}}`,
		`{"_ng_task_index":0,"_ng_rollout_index":1,"q":"a","agent_ref":{"name":"agent"}}`,
		`{"_ng_task_index":1,"_ng_rollout_index":0,"q":"b","seed":0,"agent_ref":{"name":"agent"}}`,
		`{"_ng_task_index":1,"_ng_rollout_index":1,"q":"b","seed":1,"agent_ref":{"name":"agent"}}`,
		// Rows without rollouts need no agent.
		`{"_ng_task_index":2,"_ng_rollout_index":0,"q":"c"}`,
		`{"_ng_task_index":2,"_ng_rollout_index":1,"q":"c"}`,
	)
	partialRollouts = lines(
		`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1,"response":{}}`,
		`{"_ng_task_index":0,"_ng_rollout_index":1,"reward":0,"response":{}}`,
		`{"_ng_task_index":1,"_ng_rollout_index":1,"reward":1,"response":{}}`,
	)
)

func TestRunPartialAllowed(t *testing.T) {
	fx := writeFixture(t, partialInputs, partialRollouts)
	s, out, err := fx.run(t, true)
	if err != nil {
		t.Fatal(err)
	}
	want := lines(
		`{"_ng_task_index":0,"mean/reward":0.5,"max/reward":1,"min/reward":0,"median/reward":0.5,"std/reward":0.7071067811865476,"sample":{"q":"a","agent_ref":{"name":"agent"}},`+
			`"num_rollouts":2,"expected_num_rollouts":2,"missing_num_rollouts":0,"reward_profile_completion_pct":100.0,`+
			`"rollout_infos":[{"rollout_id":"0:0","_ng_task_index":0,"_ng_rollout_index":0,"reward":1},{"rollout_id":"0:1","_ng_task_index":0,"_ng_rollout_index":1,"reward":0}]}`,
		`{"_ng_task_index":1,"mean/reward":1.0,"max/reward":1,"min/reward":1,"median/reward":1.0,"std/reward":0.0,"sample":{"q":"b","seed":1,"agent_ref":{"name":"agent"}},`+
			`"num_rollouts":1,"expected_num_rollouts":2,"missing_num_rollouts":1,"reward_profile_completion_pct":50.0,`+
			`"rollout_infos":[{"rollout_id":"1:1","_ng_task_index":1,"_ng_rollout_index":1,"reward":1}]}`,
	)
	if got := fx.read(t, "rollouts_reward_profiling.jsonl"); got != want {
		t.Errorf("reward profiling\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(out, "Reward profile completion: 3/6 rollout rows (50.00%)\n"+
		"Input rows: 3 total; 1 complete; 1 partial; 1 without rollouts dropped from output.\n") {
		t.Errorf("printed\n%s", out)
	}
	if s.CompletedRollouts != 3 || s.ExpectedRollouts != 6 || s.CompletionPct != 50 || s.Tasks != 3 ||
		s.CompleteTasks != 1 || s.PartialTasks != 1 || s.MissingTasks != 1 {
		t.Errorf("summary %+v", *s)
	}
}

func TestRunEmpty(t *testing.T) {
	for _, tc := range []struct {
		name, inputs, out string
	}{
		{"no rows", "", "Reward profile completion: 0/0 rollout rows (100.00%)\nInput rows: 0 total; 0 complete; 0 partial; 0 without rollouts dropped from output.\n"},
		{"no rollouts", partialInputs, "Reward profile completion: 0/6 rollout rows (0.00%)\nInput rows: 3 total; 0 complete; 0 partial; 3 without rollouts dropped from output.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := writeFixture(t, tc.inputs, "")
			_, out, err := fx.run(t, true)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, tc.out) {
				t.Errorf("printed\n%s", out)
			}
			if got := fx.read(t, "rollouts_reward_profiling.jsonl"); got != "" {
				t.Errorf("reward profiling %q", got)
			}
			if got := fx.read(t, "rollouts_agent_metrics.json"); got != "[]" {
				t.Errorf("agent metrics %q", got)
			}
		})
	}
}

// TestRunLineEndings: CRLF lines and a last line without a newline are
// ordinary lines.
func TestRunLineEndings(t *testing.T) {
	fx := writeFixture(t,
		strings.ReplaceAll(strings.TrimSuffix(partialInputs, "\n"), "\n", "\r\n"),
		strings.TrimSuffix(partialRollouts, "\n"))
	s, _, err := fx.run(t, true)
	if err != nil {
		t.Fatal(err)
	}
	if s.CompletedRollouts != 3 || s.ExpectedRollouts != 6 {
		t.Errorf("summary %+v", *s)
	}
	if got := fx.read(t, "rollouts_reward_profiling.jsonl"); !strings.Contains(got, `"sample":{"q":"b","seed":1,"agent_ref":{"name":"agent"}}`) {
		t.Errorf("sample of a CRLF row:\n%s", got)
	}
}

func TestRunErrors(t *testing.T) {
	const (
		in00 = `{"_ng_task_index":0,"_ng_rollout_index":0,"agent_ref":{"name":"a"}}`
		in01 = `{"_ng_task_index":0,"_ng_rollout_index":1,"agent_ref":{"name":"a"}}`
		r00  = `{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1,"response":{}}`
		r01  = `{"_ng_task_index":0,"_ng_rollout_index":1,"reward":1,"response":{}}`
	)
	for _, tc := range []struct {
		name             string
		inputs, rollouts string
		allowPartial     bool
		kind             Kind
		file             string // "inputs" or "rollouts": the Path the error names
		line             int
		msg              []string // substrings of the message
	}{
		{name: "partial not allowed", inputs: lines(in00, in01), rollouts: lines(r00), kind: Mismatch,
			msg: []string{"lacks rollout results for 1 materialized input rows of '", "Missing rollout keys: [(0, 1)]", "++allow_partial_rollouts=true"}},
		{name: "duplicate input", inputs: lines(in00, in01, in00), rollouts: lines(r00, r01), kind: Mismatch, file: "inputs", line: 3,
			msg: []string{"Duplicate materialized input row for rollout key (0, 0)", "lines 1 and 3"}},
		{name: "duplicate rollout", inputs: lines(in00, in01), rollouts: lines(r01, r00, r01), kind: Mismatch, file: "rollouts", line: 3,
			msg: []string{"Duplicate rollout row for rollout key (0, 1)", "lines 1 and 3"}},
		{name: "duplicate unmatched rollout", inputs: lines(in00), rollouts: lines(r00, r01, r01), kind: Mismatch, file: "rollouts", line: 3,
			msg: []string{"Duplicate rollout row for rollout key (0, 1)", "lines 2 and 3"}},
		{name: "unmatched rollout", inputs: lines(in00), rollouts: lines(r00, `{"_ng_task_index":7,"_ng_rollout_index":0,"response":{}}`, r01),
			allowPartial: true, kind: Mismatch, file: "rollouts", line: 2,
			msg: []string{"no matching materialized input rows", "Found 2 extra rollout rows, the first at line 2", "Extra rollout keys: [(0, 1), (7, 0)]"}},
		{name: "blank input line", inputs: in00 + "\n\n" + in01 + "\n", rollouts: lines(r00, r01), kind: BadRow, file: "inputs", line: 2,
			msg: []string{"Malformed JSON in '", "' at line 2: the line is blank"}},
		{name: "whitespace line", inputs: lines(in00, in01), rollouts: lines(r00, " \t", r01), kind: BadRow, file: "rollouts", line: 2,
			msg: []string{"at line 2: the line is blank"}},
		{name: "malformed rollout", inputs: lines(in00, in01), rollouts: lines(r00, r01, `{"_ng_task_index":0,"reward":tru}`), kind: BadRow, file: "rollouts", line: 3,
			msg: []string{"Malformed JSON in '", "' at line 3: invalid character '}' in literal true (expecting 'e'): ", `"{\"_ng_task_index\":0,\"reward\":tru}"`}},
		{name: "long malformed line is cut", inputs: lines(in00, `{"x":"`+strings.Repeat("é", 100)), rollouts: "", kind: BadRow, file: "inputs", line: 2,
			msg: []string{"at line 2: ", `"{\"x\":\"` + strings.Repeat("é", 37) + `"…`}},
		{name: "row not an object", inputs: lines(in00, `[1,2]`), rollouts: "", kind: BadRow, file: "inputs", line: 2,
			msg: []string{"Invalid row in '", "' at line 2: the row must be a JSON object: \"[1,2]\""}},
		{name: "no task index", inputs: lines(in00), rollouts: lines(`{"_ng_rollout_index":0,"response":{}}`), kind: BadRow, file: "rollouts", line: 1,
			msg: []string{"at line 1: no _ng_task_index"}},
		{name: "bad rollout index", inputs: lines(`{"_ng_task_index":0,"_ng_rollout_index":"1"}`), kind: BadRow, file: "inputs", line: 1,
			msg: []string{`at line 1: _ng_rollout_index must be an integer, got "1"`}},
		{name: "float index", inputs: lines(`{"_ng_task_index":0.5,"_ng_rollout_index":0}`), kind: BadRow, file: "inputs", line: 1,
			msg: []string{`_ng_task_index must be an integer, got 0.5`}},
		{name: "no response", inputs: lines(in00, in01), rollouts: lines(r00, `{"_ng_task_index":0,"_ng_rollout_index":1,"reward":1}`), kind: BadRow, file: "rollouts", line: 2,
			msg: []string{`at line 2: no "response"`}},
		{name: "null response", inputs: lines(in00, in01), rollouts: lines(r00, `{"_ng_task_index":0,"_ng_rollout_index":1,"response":null}`), kind: BadRow, file: "rollouts", line: 2,
			msg: []string{`"response" must be a JSON object, got null`}},
		{name: "no agent", inputs: lines(in00, `{"_ng_task_index":0,"_ng_rollout_index":1,"agent_ref":{}}`), rollouts: lines(r00, r01), kind: BadRow, file: "inputs", line: 2,
			msg: []string{"at line 2: agent_ref.name must be a non-empty string (the row of rollout key (0, 1))"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := writeFixture(t, tc.inputs, tc.rollouts)
			_, out, err := fx.run(t, tc.allowPartial)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v (%T), want an *Error", err, err)
			}
			wantPath := map[string]string{"inputs": fx.inputs, "rollouts": fx.rollouts}[tc.file]
			if e.Kind != tc.kind || e.Path != wantPath || e.Line != tc.line {
				t.Errorf("got kind %d at %q:%d, want kind %d at %q:%d", e.Kind, e.Path, e.Line, tc.kind, wantPath, tc.line)
			}
			for _, m := range tc.msg {
				if !strings.Contains(e.Error(), m) {
					t.Errorf("message %q\nlacks %q", e.Error(), m)
				}
			}
			if wantPath != "" && !strings.Contains(e.Error(), wantPath) {
				t.Errorf("message %q does not name %s", e.Error(), wantPath)
			}
			if out != "" {
				t.Errorf("printed %q on error", out)
			}
			if entries, _ := os.ReadDir(fx.dir); len(entries) != 2 {
				t.Errorf("%d files in the directory after an error, want only the 2 inputs", len(entries))
			}
		})
	}
}

func TestRunMissingFiles(t *testing.T) {
	fx := writeFixture(t, "", "")
	absent := filepath.Join(fx.dir, "absent.jsonl")
	for _, tc := range []struct {
		inputs, rollouts, msg string
	}{
		{absent, fx.rollouts, "Input file not found: '" + absent + "' (--inputs). Check the path is spelled correctly."},
		{fx.inputs, absent, "Input file not found: '" + absent + "' (--rollouts). Check the path is spelled correctly."},
		{absent, absent, "(--inputs)"},
	} {
		_, err := Run(context.Background(), Options{InputsPath: tc.inputs, RolloutsPath: tc.rollouts})
		var e *Error
		if !errors.As(err, &e) || e.Kind != FileNotFound || e.Path != absent || !strings.Contains(e.Error(), tc.msg) {
			t.Errorf("Run(%s, %s) = %v, want FileNotFound %q", tc.inputs, tc.rollouts, err, tc.msg)
		}
	}
}

func TestRunCancelled(t *testing.T) {
	fx := writeFixture(t, happyInputs, happyRollouts)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Options{InputsPath: fx.inputs, RolloutsPath: fx.rollouts}); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// TestSampleKeepsValues: the sample is the row as written, compacted,
// without its indices wherever they sit, a repeated key in its first place
// with its last value.
func TestSampleKeepsValues(t *testing.T) {
	fx := writeFixture(t,
		lines(`{ "a" : 1.50 , "_ng_rollout_index":0, "s": "x\u00e9/\"", "a": [ 1, {"b" : null} ], "agent_ref":{"name":"n"}, "_ng_task_index":0 }`),
		lines(`{"_ng_task_index":0,"_ng_rollout_index":0,"response":{}}`))
	if _, _, err := fx.run(t, false); err != nil {
		t.Fatal(err)
	}
	var g struct{ Sample json.RawMessage }
	if err := json.Unmarshal([]byte(fx.read(t, "rollouts_reward_profiling.jsonl")), &g); err != nil {
		t.Fatal(err)
	}
	if want := `{"a":[1,{"b":null}],"s":"x\u00e9/\"","agent_ref":{"name":"n"}}`; string(g.Sample) != want {
		t.Errorf("sample %s, want %s", g.Sample, want)
	}
}

// BenchmarkRun10k profiles 10k rollouts of 1,250 tasks whose responses
// carry a few KB of text each, as real ones do.
func BenchmarkRun10k(b *testing.B) {
	text := strings.Repeat("lorem ipsum ", 200)
	var inputs, rollouts strings.Builder
	for i := range 10000 {
		task, r := i/8, i%8
		fmt.Fprintf(&inputs, `{"_ng_task_index":%d,"_ng_rollout_index":%d,"responses_create_params":{"input":[{"role":"user","content":%q}]},"agent_ref":{"name":"agent_%d"}}`+"\n",
			task, r, text, task%3)
		fmt.Fprintf(&rollouts, `{"_ng_task_index":%d,"_ng_rollout_index":%d,"reward":%d.0,"extracted_answer":"%c","response":{"output":[{"type":"message","content":[{"type":"output_text","text":%q}]}],"usage":{"input_tokens":%d,"output_tokens":%d,"total_tokens":%d}}}`+"\n",
			task, r, i%3%2, 'A'+i%4, text, 200+i%50, 1000+i%700, 1200+i%750)
	}
	fx := writeFixture(b, inputs.String(), rollouts.String())
	b.SetBytes(int64(inputs.Len() + rollouts.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(context.Background(), Options{InputsPath: fx.inputs, RolloutsPath: fx.rollouts}); err != nil {
			b.Fatal(err)
		}
	}
}
