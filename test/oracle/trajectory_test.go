package oracle

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/capture"
)

// A simple_agent rollout's own trajectory as NeMo Gym's agent sends it
// with observability on (two model calls, one tool call), in pydantic's
// canonical dump: every field, in declared order.
const producerTrajectory = `{"schema_version":"1.0","task_id":"%[2]s","rollout_id":"%[1]s",` +
	`"invocations":[{"kind":"agent_invocation","invocation_id":"root","parent_invocation_id":null,"spawned_by_tool_call_id":null,"status":"completed","duration_ms":null,"error_type":null,` +
	`"model_calls":[{"model_call_id":null,"model_ref":{"type":"responses_api_models","name":"policy_model"},"response_id":"resp_1"},{"model_call_id":null,"model_ref":{"type":"responses_api_models","name":"policy_model"},"response_id":"resp_2"}],` +
	`"conversation":[{"content":"Weather in Paris?","role":"user","type":"message","phase":null},{"arguments":"{\"city\": \"Paris\"}","call_id":"call_1","name":"get_weather","type":"function_call","id":"fc_1","status":"completed","namespace":null},{"call_id":"call_1","output":"{\"temp_c\": 21}","type":"function_call_output","id":null,"status":null},{"id":"msg_1","content":[{"annotations":[],"text":"It is sunny.","type":"output_text","logprobs":null}],"role":"assistant","status":"completed","type":"message","phase":null}]}],` +
	`"turns":[{"invocation_id":"root","task_id":"%[2]s","rollout_id":"%[1]s","turn_no":1,"timestamp":1800000000.0,"question":[{"content":"Weather in Paris?","role":"user","type":"message","phase":null}],"answer":[{"arguments":"{\"city\": \"Paris\"}","call_id":"call_1","name":"get_weather","type":"function_call","id":"fc_1","status":"completed","namespace":null}],"reasoning_content":null,"resolved":null,"step_count":1,"model_calls":[{"model_call_id":null,"model_ref":{"type":"responses_api_models","name":"policy_model"},"response_id":"resp_1"}]},` +
	`{"invocation_id":"root","task_id":"%[2]s","rollout_id":"%[1]s","turn_no":2,"timestamp":1800000000.75,"question":null,"answer":[{"id":"msg_1","content":[{"annotations":[],"text":"It is sunny.","type":"output_text","logprobs":null}],"role":"assistant","status":"completed","type":"message","phase":null}],"reasoning_content":null,"resolved":true,"step_count":1,"model_calls":[{"model_call_id":null,"model_ref":{"type":"responses_api_models","name":"policy_model"},"response_id":"resp_2"}]}],` +
	`"model_calls":[],` +
	`"tool_calls":[{"kind":"tool_call","invocation_id":"root","tool_call_id":"call_1","sandbox_id":null,"tool_name":"get_weather","started_at":1800000000.25,"completed_at":1800000000.5,"duration_ms":125.0,"timing_source":"executor","status":"completed","error_type":null,"output":"{\"temp_c\": 21}"}],` +
	`"gaps":[]}`

// exchangeLine is an exchange line as a model server writes it.
func exchangeLine(id, responseID string, started float64, in, out int) string {
	return fmt.Sprintf(`{"model_call_id":"%s","dialect":"responses","model_ref":{"type":"responses_api_models","name":"policy_model"},"started_at":%.1f,"completed_at":%.2f,"latency_ms":1250.0,"latency_ttft_ms":null,"status_code":200,"error_category":null,`+
		`"request":{"input":"q"},"response":{"id":"%s","model":"m1","status":"completed","output":[],"usage":{"input_tokens":%d,"output_tokens":%d,"total_tokens":%d,"input_tokens_details":{"cached_tokens":2}}}}`,
		id, started, started+1.25, responseID, in, out, in+out)
}

// TestProducerTrajectoryMatchesNeMoGym holds gym's collector to NeMo Gym's
// on rows whose agent sent its own ng_trajectory: the trajectory checked
// and merged with the captured calls, the payloads stripped, ng_perf from
// the invocations' calls; and each way NeMo Gym refuses or repairs one.
func TestProducerTrajectoryMatchesNeMoGym(t *testing.T) {
	e := setup(t)
	dir := filepath.Join(e.tmp, "producer-calls")
	store, err := capture.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	type tcase struct {
		name      string
		task      int
		traj      string // the agent's ng_trajectory, "" for none
		lines     []string
		latencyMS *float64
		extra     string
	}
	// valid is the trajectory of rollout key, of task key's first number.
	valid := func(key string) string {
		task, _, _ := strings.Cut(key, "-")
		return fmt.Sprintf(producerTrajectory, key, task)
	}
	edit := func(doc, path, raw string) string {
		out, err := sjson.SetRaw(doc, path, raw)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	twoCalls := []string{exchangeLine("mc-1", "resp_1", 1700000001.0, 10, 5), exchangeLine("mc-2", "resp_2", 1700000003.0, 30, 7)}
	latency := 4321.5
	cases := []tcase{
		{name: "the agent's own trajectory and its two calls", task: 0, traj: valid("0-0"), lines: twoCalls, latencyMS: &latency},
		{name: "an unknown key", task: 1, traj: edit(valid("1-0"), "turns.0.mood", `"happy"`), lines: twoCalls},
		{name: "a list, not a trajectory", task: 2, traj: `[1,2]`, lines: twoCalls},
		{name: "no capture", task: 3, traj: valid("3-0"), latencyMS: &latency},
		{name: "identity only", task: 4, traj: `{"task_id":"4","rollout_id":"4-0"}`, lines: twoCalls},
		{name: "turns out of order", task: 5, traj: edit(valid("5-0"), "turns.0.timestamp", `1900000000.0`), lines: twoCalls},
		{name: "one response id for both calls", task: 6, traj: valid("6-0"), lines: []string{exchangeLine("mc-1", "resp_1", 1700000001.0, 10, 5), exchangeLine("mc-2", "resp_1", 1700000003.0, 30, 7)}},
		{name: "a producer call the capture completes", task: 7, traj: edit(valid("7-0"), "model_calls", `[{"model_call_id":"mc-x"},{"model_call_id":"mc-1","response_metadata":{"finish_reason":"stop"},"token_stats":{"prompt_tokens":999}}]`), lines: twoCalls},
		{name: "an empty conversation", task: 8, traj: edit(valid("8-0"), "invocations.0.conversation", `[]`), lines: twoCalls},
		{name: "another attempt's identity", task: 9, traj: valid("9-0"), lines: twoCalls, extra: `"_ng_attempt_index":1`},
		{name: "a repeated model call id", task: 10, traj: valid("10-0"), lines: []string{exchangeLine("mc-1", "resp_1", 1700000001.0, 10, 5), exchangeLine("mc-1", "resp_2", 1700000003.0, 30, 7)}},
		{name: "lax numbers", task: 11, traj: edit(edit(valid("11-0"), "turns.0.turn_no", `"1"`), "tool_calls.0.duration_ms", `125`), lines: twoCalls},
		{name: "a turn before its tool started", task: 12, traj: edit(valid("12-0"), "tool_calls.0.completed_at", `1.0`), lines: twoCalls},
		{name: "a turn numbered 0", task: 13, traj: edit(valid("13-0"), "turns.1.turn_no", `0`), lines: twoCalls},
	}
	var rows strings.Builder
	var ours []string
	for _, c := range cases {
		row := fmt.Sprintf(`{"responses_create_params":{"input":"Weather in Paris?"},"_ng_task_index":%d,"_ng_rollout_index":0,"agent_ref":{"type":"responses_api_agents","name":"simple_agent"}`, c.task)
		if c.extra != "" {
			row += "," + c.extra
		}
		row += "}"
		key, err := capture.Key([]byte(row))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.lines) > 0 {
			if err := os.WriteFile(filepath.Join(dir, key+".capture.jsonl"), []byte(strings.Join(c.lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		result := `{"responses_create_params":{"input":"Weather in Paris?"},"response":{"id":"resp_2","output":[]},"reward":1.0,"mask_sample":null,"failure_kind":null,"failure_reason":null,` + row[1:len(row)-1]
		if c.traj != "" {
			result += `,"ng_trajectory":` + c.traj
		}
		result += "}"
		line := fmt.Sprintf(`{"row":%s,"result":%s`, row, result)
		if c.latencyMS != nil {
			line += fmt.Sprintf(`,"rollout_latency_ms":%s`, strings.TrimSuffix(fmt.Sprintf("%v", *c.latencyMS), ".0"))
		}
		rows.WriteString(line + "}\n")
		joined, _, err := capture.Join([]byte(result), []byte(row), []*capture.Store{store}, c.latencyMS)
		if err != nil {
			t.Fatal(err)
		}
		ours = append(ours, string(joined))
	}
	theirs := e.runScript(t, "join", captureJoinScript, map[string][]byte{"producer-cases.jsonl": []byte(rows.String())}, "producer-nemo.jsonl",
		dir, "producer-cases.jsonl", "producer-nemo.jsonl")
	if len(theirs) != len(ours) {
		t.Fatalf("NeMo Gym wrote %d rows for %d", len(theirs), len(ours))
	}
	for i, c := range cases {
		if ours[i] != theirs[i] {
			t.Errorf("%s differs:\nNeMo Gym: %s\ngym:      %s\nfirst difference at byte %d", c.name, theirs[i], ours[i], firstDiff(theirs[i], ours[i]))
		}
	}
	for i, want := range map[int]string{
		1:  `{"code":"producer_trajectory_invalid","invocation_id":null,"detail":"ValidationError"}`,
		9:  `{"code":"producer_trajectory_identity_mismatch","invocation_id":null,"detail":"rollout_id"}`,
		10: `"gaps":[{"code":"trajectory_projection_failed","detail":"ValidationError"}]`,
		12: `producer_trajectory_invalid`,
		13: `producer_trajectory_invalid`,
	} {
		if !strings.Contains(ours[i], want) {
			t.Errorf("%s: no %s in %s", cases[i].name, want, ours[i])
		}
	}
	if !strings.Contains(ours[0], `"ng_perf":{"num_turns":2,"num_tool_calls":1,"token_observability_coverage":1.0,"prompt_tokens":40,"cached_prompt_tokens":4,"completion_tokens":12,"total_latency_ms":4321.5}`) {
		t.Errorf("the first rollout's ng_perf: %s", ours[0])
	}
}
