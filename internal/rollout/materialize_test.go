package rollout

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMaterialize(t *testing.T) {
	tests := []struct {
		name   string
		input  string
		prompt string
		opts   MaterializeOptions
		want   string
	}{
		{
			name:  "spec example: agent, repeats, temperature override and seeds",
			input: `{"responses_create_params":{"input":[]},"x":0}` + "\n",
			opts: MaterializeOptions{AgentName: "a", Repeats: Repeats{All: 2}, AddSeed: true,
				Overrides: []byte(`{"temperature":0.1}`)},
			want: `{"responses_create_params":{"input":[],"temperature":0.1,"metadata":{"extra_body":"{\"seed\": 0}"}},"x":0,"agent_ref":{"name":"a"},"_ng_task_index":0,"_ng_rollout_index":0}
{"responses_create_params":{"input":[],"temperature":0.1,"metadata":{"extra_body":"{\"seed\": 1}"}},"x":0,"agent_ref":{"name":"a"},"_ng_task_index":0,"_ng_rollout_index":1}
`,
		},
		{
			name:  "identical lines are one task; the rollout counter goes on across them",
			input: "{\"responses_create_params\": {}, \"q\": 1}\n{\"responses_create_params\": {}, \"q\": 1}\n{\"responses_create_params\": {}, \"q\": 2}\n",
			opts:  MaterializeOptions{AgentName: "a"},
			want: `{"responses_create_params":{},"q":1,"agent_ref":{"name":"a"},"_ng_task_index":0,"_ng_rollout_index":0}
{"responses_create_params":{},"q":1,"agent_ref":{"name":"a"},"_ng_task_index":0,"_ng_rollout_index":1}
{"responses_create_params":{},"q":2,"agent_ref":{"name":"a"},"_ng_task_index":1,"_ng_rollout_index":0}
`,
		},
		{
			name:  "a row's own agent_ref and task index are kept; limit counts raw lines",
			input: `{"responses_create_params":{},"agent_ref":{"name":"b"},"_ng_task_index":7}` + "\n" + `{"responses_create_params":{}}` + "\n",
			opts:  MaterializeOptions{AgentName: "a", Limit: 1},
			want: `{"responses_create_params":{},"agent_ref":{"name":"b"},"_ng_task_index":7,"_ng_rollout_index":0}
`,
		},
		{
			name: "interleave_repeats writes round by round (abcabc), each round in input order; a task with fewer repeats drops out",
			input: `{"responses_create_params":{},"agent_ref":{"name":"b"},"q":"a"}` + "\n" +
				`{"responses_create_params":{},"agent_ref":{"name":"c"},"q":"b"}` + "\n" +
				`{"responses_create_params":{},"agent_ref":{"name":"b"},"q":"c"}` + "\n",
			opts: MaterializeOptions{Interleave: true, Repeats: Repeats{PerAgent: map[string]int{"b": 3, "c": 1}}},
			want: `{"responses_create_params":{},"agent_ref":{"name":"b"},"q":"a","_ng_task_index":0,"_ng_rollout_index":0}
{"responses_create_params":{},"agent_ref":{"name":"c"},"q":"b","_ng_task_index":1,"_ng_rollout_index":0}
{"responses_create_params":{},"agent_ref":{"name":"b"},"q":"c","_ng_task_index":2,"_ng_rollout_index":0}
{"responses_create_params":{},"agent_ref":{"name":"b"},"q":"a","_ng_task_index":0,"_ng_rollout_index":1}
{"responses_create_params":{},"agent_ref":{"name":"b"},"q":"c","_ng_task_index":2,"_ng_rollout_index":1}
{"responses_create_params":{},"agent_ref":{"name":"b"},"q":"a","_ng_task_index":0,"_ng_rollout_index":2}
{"responses_create_params":{},"agent_ref":{"name":"b"},"q":"c","_ng_task_index":2,"_ng_rollout_index":2}
`,
		},
		{
			name:  "per-agent repeats with a default",
			input: `{"responses_create_params":{},"agent_ref":{"name":"b"}}` + "\n" + `{"responses_create_params":{},"agent_ref":{"name":"c"}}` + "\n",
			opts:  MaterializeOptions{Repeats: Repeats{PerAgent: map[string]int{"b": 2, "_default": 1}}},
			want: `{"responses_create_params":{},"agent_ref":{"name":"b"},"_ng_task_index":0,"_ng_rollout_index":0}
{"responses_create_params":{},"agent_ref":{"name":"b"},"_ng_task_index":0,"_ng_rollout_index":1}
{"responses_create_params":{},"agent_ref":{"name":"c"},"_ng_task_index":1,"_ng_rollout_index":0}
`,
		},
		{
			name:   "a prompt config builds the input from the row and keeps the other params",
			input:  `{"question":"2+2?","responses_create_params":{"temperature":0}}` + "\n",
			prompt: "system: Be brief.\nuser: \"Solve {question} and box it: \\\\boxed{{}}\"\n",
			opts:   MaterializeOptions{AgentName: "a"},
			want: `{"question":"2+2?","responses_create_params":{"temperature":0,"input":[{"role":"system","content":"Be brief."},{"role":"user","content":"Solve 2+2? and box it: \\boxed{}"}]},"agent_ref":{"name":"a"},"_ng_task_index":0,"_ng_rollout_index":0}
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			o := tt.opts
			o.InputPath = writeFile(t, dir, "in.jsonl", tt.input)
			o.OutputPath = filepath.Join(dir, "out.jsonl")
			if tt.prompt != "" {
				p, err := LoadPrompt(writeFile(t, dir, "prompt.yaml", tt.prompt))
				if err != nil {
					t.Fatal(err)
				}
				o.Prompt = p
			}
			if _, err := Materialize(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(o.OutputPath)
			if string(got) != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestMaterializeErrors(t *testing.T) {
	tests := []struct {
		name, input, prompt string
		opts                MaterializeOptions
		want                string // substring of the error
		line                int
	}{
		{name: "malformed line", input: "{\"responses_create_params\":{}}\n{\"a\": \n", opts: MaterializeOptions{AgentName: "a"}, want: "Malformed JSON in", line: 2},
		{name: "blank line", input: "{\"responses_create_params\":{}}\n\n", opts: MaterializeOptions{AgentName: "a"}, want: "the line is blank", line: 2},
		{name: "invalid UTF-8", input: "{\"responses_create_params\":{}}\n{\"q\":\"caf\xe9\",\"responses_create_params\":{}}\n", opts: MaterializeOptions{AgentName: "a"}, want: "is not valid UTF-8", line: 2},
		{name: "not an object", input: "[1]\n", opts: MaterializeOptions{AgentName: "a"}, want: "must be a JSON object", line: 1},
		{name: "no responses_create_params", input: "{\"question\":\"q\"}\n", opts: MaterializeOptions{AgentName: "a"}, want: "has no responses_create_params", line: 1},
		{name: "no agent", input: "{\"responses_create_params\":{}}\n{\"responses_create_params\":{}}\n", want: "No agent specified for rows [0, 1]"},
		{name: "agent missing from per-agent repeats", input: "{\"responses_create_params\":{},\"agent_ref\":{\"name\":\"z\"}}\n", opts: MaterializeOptions{Repeats: Repeats{PerAgent: map[string]int{"b": 2}}}, want: "num_repeats has no entry for agents z"},
		{name: "prompt and pre-baked input", input: "{\"q\":1,\"responses_create_params\":{\"input\":\"hi\"}}\n", prompt: "user: '{q}'\n", opts: MaterializeOptions{AgentName: "a"}, want: "rows [0] already have a non-empty responses_create_params.input"},
		{name: "prompt field missing", input: "{\"q\":1}\n", prompt: "user: '{question}'\n", opts: MaterializeOptions{AgentName: "a"}, want: "Prompt template references field 'question' but the data row only has fields: ['q']", line: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			o := tt.opts
			o.InputPath = writeFile(t, dir, "in.jsonl", tt.input)
			o.OutputPath = filepath.Join(dir, "out.jsonl")
			if tt.prompt != "" {
				p, err := LoadPrompt(writeFile(t, dir, "prompt.yaml", tt.prompt))
				if err != nil {
					t.Fatal(err)
				}
				o.Prompt = p
			}
			_, err := Materialize(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			var ie *InputError
			if !errors.As(err, &ie) || ie.Line != tt.line || ie.Path != o.InputPath {
				t.Errorf("error %#v: want an InputError at %s line %d", err, o.InputPath, tt.line)
			}
			if _, err := os.Stat(o.OutputPath); !os.IsNotExist(err) {
				t.Errorf("a failed materialization left %s behind", o.OutputPath)
			}
		})
	}
}

func TestMaterializeMissingInput(t *testing.T) {
	dir := t.TempDir()
	_, err := Materialize(context.Background(), MaterializeOptions{InputPath: filepath.Join(dir, "nope.jsonl"), InputFlag: "--input", OutputPath: filepath.Join(dir, "o.jsonl")})
	if err == nil || !strings.Contains(err.Error(), "Input file not found") || !strings.Contains(err.Error(), "(--input)") {
		t.Fatalf("got %v", err)
	}
}

func TestFormatMap(t *testing.T) {
	row := []byte(`{"q":"x","n":3,"f":0.5,"b":true,"z":null,"l":[1,"a"],"d":{"k":"v","n":{"m":1}}}`)
	tests := []struct{ tmpl, want, err string }{
		{tmpl: "{q} {n} {f} {b} {z}", want: "x 3 0.5 True None"},
		{tmpl: "{{literal}} {q}", want: "{literal} x"},
		{tmpl: "{l} {d}", want: "[1, 'a'] {'k': 'v', 'n': {'m': 1}}"},
		{tmpl: "{l[1]} {d[k]} {d[n][m]}", want: "a v 1"},
		{tmpl: "{q!r} {q!s}", want: "'x' x"},
		{tmpl: "[{q:>3}] [{q:*^5}] [{n:4}] [{q:.0}]", want: "[  x] [**x**] [   3] []"},
		{tmpl: "{missing}", err: "Prompt template references field 'missing'"},
		{tmpl: "{}", err: "positional"},
		{tmpl: "{0}", err: "positional"},
		{tmpl: "a } b", err: "Single '}'"},
		{tmpl: "{q", err: "Single '{'"},
		{tmpl: "{d.k}", err: "no attribute"},
		{tmpl: "{n:.2f}", err: "not supported"},
	}
	for _, tt := range tests {
		got, err := formatMap(tt.tmpl, parse(row))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.tmpl, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: got %q, %v; want %q", tt.tmpl, got, err, tt.want)
		}
	}
}

func TestFormatMapRepr(t *testing.T) {
	for in, want := range map[string]string{
		`"plain"`:               "'plain'",
		`"it's"`:                `"it's"`,
		`"both '\""`:            `'both \'"'`,
		`"tab\there"`:           `'tab\there'`,
		`"é"`:                   "'é'",
		`"\u0001"`:              `'\x01'`,
		`-0`:                    "0",
		`{"k":[1.5,null,true]}`: "{'k': [1.5, None, True]}",
		// Python's json keeps integers of any size as ints.
		`123456789012345678901234567890`: "123456789012345678901234567890",
	} {
		got, err := formatMap("{v!r}", gjson.Parse(`{"v":`+in+`}`))
		if err != nil || got != want {
			t.Errorf("{v!r} of %s = %s, %v; want %s", in, got, err, want)
		}
	}
}

func TestRepairTail(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ in, want string }{
		{"a\nb\n", "a\nb\n"},
		{"a\nb\n{\"torn", "a\nb\n"},
		{"{\"torn", ""},
		{"", ""},
	} {
		p := writeFile(t, dir, "f.jsonl", tt.in)
		if _, err := repairTail(p); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(p)
		if !bytes.Equal(got, []byte(tt.want)) {
			t.Errorf("repairTail(%q) left %q, want %q", tt.in, got, tt.want)
		}
	}
	if _, err := repairTail(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("a missing file: %v", err)
	}
}

func parse(b []byte) gjson.Result { return gjson.ParseBytes(b) }

func TestStem(t *testing.T) {
	for path, stem := range map[string]string{
		"results/rollouts.jsonl": "results/rollouts",
		"a.b.jsonl":              "a.b",
		"/r/rollouts.jsonl.bak":  "/r/rollouts.jsonl",
		"noext":                  "noext",
		"results/.hidden":        "results/.hidden",
		"trailing.":              "trailing.",
		"dir.d/noext":            "dir.d/noext",
	} {
		if got := Stem(path); got != stem {
			t.Errorf("Stem(%q) = %q, want %q", path, got, stem)
		}
	}
}
