package dataset

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/pyjson"
	"github.com/nemo-gym-go/gym/internal/rollout"
)

// TestRenderAsNeMoGym renders testdata/toy/render.jsonl (duplicate keys,
// unicode, a lone surrogate, big integers, 1e400, -0.0, an empty input)
// and compares with what NeMo Gym 0.7.0 wrote.
func TestRenderAsNeMoGym(t *testing.T) {
	dir := t.TempDir()
	promptPath := filepath.Join(dir, "p", "toy.yaml")
	os.MkdirAll(filepath.Dir(promptPath), 0o755)
	data, _ := os.ReadFile("testdata/toy/resources_servers/toy/prompts/toy.yaml")
	os.WriteFile(promptPath, data, 0o644)
	prompt, err := rollout.LoadPrompt(promptPath)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "new", "dir", "out.jsonl")
	n, err := Render(context.Background(), RenderOptions{Input: "testdata/toy/render.jsonl", Prompt: prompt, PromptUsed: promptPath, Output: out})
	if err != nil || n != 3 {
		t.Fatalf("Render = %d, %v", n, err)
	}
	got, _ := os.ReadFile(out)
	golden, _ := os.ReadFile("testdata/render.golden.jsonl")
	want := bytes.ReplaceAll(golden, []byte("PROMPT_PATH"), []byte(promptPath))
	if !bytes.Equal(got, want) {
		t.Errorf("render differs from NeMo Gym's:\n gym: %s\n  ng: %s", got, want)
	}
}

func TestRenderErrors(t *testing.T) {
	prompt := &rollout.Prompt{Path: "p.yaml", User: "Q: {question}", System: "S", HasSystem: true}
	for _, tc := range []struct{ name, input, want string }{
		{"rows with an input are all listed", "{\"question\": \"a\", \"responses_create_params\": {\"input\": \"x\"}}\n{\"question\": \"b\"}\n{\"question\": \"c\", \"responses_create_params\": {\"input\": [{\"role\": \"user\", \"content\": \"x\"}]}}\n",
			"These are mutually exclusive. Use one or the other. Violating rows: [0, 2]"},
		{"a missing field", "{\"q\": 1, \"n\": 2}\n", "in.jsonl:1: Prompt template references field 'question' but the data row only has fields: ['q', 'n']"},
		{"params that are not an object", "{\"question\": \"a\"}\n{\"question\": \"a\", \"responses_create_params\": null}\n", "in.jsonl:2: responses_create_params is null, not a JSON object"},
		{"a row that is not an object", "[1, 2]\n", "in.jsonl:1: the row is a list, not a JSON object"},
		{"a line that is not JSON", "{\"question\": \"a\"}\n{\"question\" \"a\"}\n", "in.jsonl:2: not a JSON value: Expecting ':' delimiter: line 1 column 13 (char 12)"},
		{"a lone CR ends a line, as in Python", "{\"question\":\r\"a\"}\n", "in.jsonl:1: not a JSON value: Expecting value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.jsonl")
			os.WriteFile(in, []byte(tc.input), 0o644)
			out := filepath.Join(dir, "out.jsonl")
			_, err := Render(context.Background(), RenderOptions{Input: in, Prompt: prompt, PromptUsed: "p.yaml", Output: out})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant one containing %q", err, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("output written despite the error")
			}
		})
	}
}

// FuzzRows feeds arbitrary lines through what collate and render do to a
// row: no panic, and whatever is written reads back as JSON.
func FuzzRows(f *testing.F) {
	for _, s := range []string{
		`{"responses_create_params": {"input": [{"role": "user", "content": "a"}], "tools": [], "temperature": 1}, "k": [1, "x"]}`,
		`{"question": "q", "responses_create_params": {"input": ""}, "question": "dup"}`,
		`{"responses_create_params": {"input": 5}, "b": true}`, `[{"a": 1}]`, `"s"`, `{"question": "{x}"}`,
		`{"task_id": {"taskset": "a", "task_id": "b"}, "task_input": {}}`, `{"problem_id": [1, {"a": null}], "_ng_task_index": 2}`,
	} {
		f.Add([]byte(s))
	}
	prompt := &rollout.Prompt{Path: "p.yaml", User: "{question}", System: "s {{x}}", HasSystem: true}
	f.Fuzz(func(t *testing.T, line []byte) {
		row, err := pyjson.Loads(line)
		if err != nil {
			return
		}
		if s, problem := checkSample(row); problem == "" {
			m := newDatasetMetrics()
			m.addSample(s)
			_ = m.observeOthers(row.(pyjson.Object))
			if _, err := pyjson.DumpsIndent(m.dump(), 4); err != nil {
				t.Fatal(err)
			}
		}
		if obj, ok := row.(pyjson.Object); ok {
			if isMaterializedTask(obj) {
				materializedParts(obj)
			}
			if task, err := materializeTask(obj, "t:s", 3); err == nil {
				if _, err := pyjson.Dumps(task, false); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := hasInput(row); err != nil {
			return
		}
		out, err := applyPrompt(row.(pyjson.Object), prompt)
		if err != nil {
			return
		}
		b, err := pyjson.Dumps(out, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pyjson.Loads(b); err != nil {
			t.Fatalf("wrote %s, which does not read back: %v", b, err)
		}
	})
}
