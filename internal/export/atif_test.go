package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const toolRow = `{"responses_create_params":{"input":[{"role":"developer","content":"be brief"},{"role":"user","content":"weather in sf?"}]},` +
	`"response":{"model":"m1","output":[%s],"usage":{"input_tokens":30,"output_tokens":9,"input_tokens_details":{"cached_tokens":2}}},` +
	`"reward":1.0,"_ng_task_index":%d,"_ng_rollout_index":0,"agent_ref":{"type":"responses_api_agents","name":"weather_agent"}}`

func row(task int, output string) string { return fmt.Sprintf(toolRow, output, task) }

const callItems = `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"use the tool"}]},` +
	`{"type":"function_call","id":"fc_1","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"SF\"}","status":"completed"},` +
	`{"type":"function_call_output","call_id":"c1","output":"cold"},` +
	`{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"It is cold.","annotations":[]}]}`

func export(t *testing.T, strict bool, rows ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "r.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "atif")
	_, err := ExportATIF(in, out, ATIFOptions{SessionID: "s", AgentVersion: "1", ExporterVersion: "test", Strict: strict})
	return out, err
}

// A tool-calling rollout: system, user, the agent's tool call with its
// result as observation and the reasoning that led to it, and the answer.
func TestATIFSteps(t *testing.T) {
	out, err := export(t, true, row(0, callItems))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SchemaVersion string `json:"schema_version"`
		TrajectoryID  string `json:"trajectory_id"`
		Steps         []struct {
			Source           string          `json:"source"`
			Message          json.RawMessage `json:"message"`
			ReasoningContent *string         `json:"reasoning_content"`
			ToolCalls        []struct {
				ID        string         `json:"tool_call_id"`
				Arguments map[string]any `json:"arguments"`
			} `json:"tool_calls"`
			Observation *struct {
				Results []struct {
					SourceCallID string `json:"source_call_id"`
					Content      string `json:"content"`
				} `json:"results"`
			} `json:"observation"`
		} `json:"steps"`
		FinalMetrics struct {
			Prompt int `json:"total_prompt_tokens"`
			Steps  int `json:"total_steps"`
		} `json:"final_metrics"`
	}
	data, err := os.ReadFile(filepath.Join(out, "0-0.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range doc.Steps {
		d := s.Source + ":" + string(s.Message)
		if s.ReasoningContent != nil {
			d += " reasoning=" + *s.ReasoningContent
		}
		for _, tc := range s.ToolCalls {
			d += " call=" + tc.ID
		}
		if s.Observation != nil {
			d += " result=" + s.Observation.Results[0].SourceCallID + ":" + s.Observation.Results[0].Content
		}
		got = append(got, d)
	}
	want := []string{`system:"be brief"`, `user:"weather in sf?"`, `agent:"" reasoning=use the tool call=c1 result=c1:cold`, `agent:"It is cold."`}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if doc.SchemaVersion != "ATIF-v1.7" || doc.TrajectoryID != "s:0:0" || doc.FinalMetrics.Prompt != 30 || doc.FinalMetrics.Steps != 4 {
		t.Errorf("document %s", data)
	}
	manifest, _ := os.ReadFile(filepath.Join(out, "manifest.jsonl"))
	if !strings.HasPrefix(string(manifest), `{"_ng_rollout_index":0,"_ng_task_index":0,"expected_sha256":"`) {
		t.Errorf("manifest %s", manifest)
	}
}

// What ATIF cannot represent: --strict names the row, the item and the
// field; without it, the export keeps it under extra.
func TestATIFStrictRules(t *testing.T) {
	tests := []struct{ name, items, refusal string }{
		{"program item", `{"type":"program","id":"p1","code":"x=1"}`, "line 1: response.output[0]: a program item of programmatic tool calling"},
		{"program output", `{"type":"program_output","id":"po1","output":"1"}`, "line 1: response.output[0]: a program_output item of programmatic tool calling"},
		{"caller on a call", `{"type":"function_call","call_id":"c1","name":"f","arguments":"{}","caller":{"type":"program","program_id":"p1"}},{"type":"function_call_output","call_id":"c1","output":"ok"}`, "line 1: response.output[0].caller: a tool call issued by a program (caller is not null)"},
		{"caller on a result", `{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"ok","caller":{"type":"program"}}`, "line 1: response.output[1].caller: a tool result for a program (caller is not null)"},
		{"unknown item", `{"type":"custom_tool_call","call_id":"c1","input":"x"}`, `line 1: response.output[0]: a "custom_tool_call" item, which has no ATIF step`},
		{"annotations", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x","annotations":[{"type":"url_citation"}]}]}`, "line 1: response.output[0].content[0].annotations: annotations"},
		{"non-text part", `{"type":"message","role":"assistant","content":[{"type":"output_image","image_url":"x"}]}`, `line 1: response.output[0].content[0]: a "output_image" content part`},
		{"encrypted reasoning", `{"type":"reasoning","id":"r","summary":[],"encrypted_content":"abc"},{"type":"message","role":"assistant","content":"ok"}`, "line 1: response.output[0].encrypted_content: encrypted reasoning"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := export(t, true, row(0, tt.items))
			var ae *ATIFError
			if !errors.As(err, &ae) || !strings.Contains(err.Error(), tt.refusal) {
				t.Fatalf("strict: %v\nwant %q", err, tt.refusal)
			}
			out, err := export(t, false, row(0, tt.items))
			if err != nil {
				t.Fatalf("without --strict: %v", err)
			}
			data, _ := os.ReadFile(filepath.Join(out, "0-0.json"))
			if !strings.Contains(string(data), `"unrepresented"`) {
				t.Errorf("without --strict nothing kept under extra:\n%s", data)
			}
		})
	}
	// A null caller is a direct call: representable.
	if _, err := export(t, true, row(0, `{"type":"function_call","call_id":"c1","name":"f","arguments":"{}","caller":null},{"type":"function_call_output","call_id":"c1","output":"ok"}`)); err != nil {
		t.Errorf("a null caller: %v", err)
	}
}

// Bad rows are all reported, and nothing is written.
func TestATIFRefusesBadFiles(t *testing.T) {
	out, err := export(t, false, row(0, callItems), "", "[1]", row(0, callItems), strings.Replace(row(1, callItems), `"_ng_task_index":1`, `"_ng_task_index":-1`, 1))
	for _, want := range []string{"line 2: a blank line is not a rollout", "line 3: not a JSON object", "line 4: rollout (0, 0) is also line 1", "line 5: _ng_task_index and _ng_rollout_index must be non-negative integers"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v; want it to say %q", err, want)
		}
	}
	if _, statErr := os.Stat(out); statErr == nil {
		t.Error("a refused export wrote its directory")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(filepath.Dir(out), "r.jsonl")
	if _, err := ExportATIF(in, out, ATIFOptions{SessionID: "s"}); err == nil || !strings.Contains(err.Error(), "output path already exists") {
		t.Errorf("an existing directory: %v", err)
	}
}
