package openai

import (
	"testing"
)

func TestIsStreaming(t *testing.T) {
	for in, want := range map[string]bool{
		`{"stream":true}`:               true,
		`{"a":1, "stream" : true }`:     true,
		`{"stream":"true"}`:             false,
		`{"stream":1}`:                  false,
		`{"stream":false}`:              false,
		`{"stream":null}`:               false,
		`{}`:                            false,
		`not json`:                      false,
		`{"x":{"stream":true}}`:         false,
		`{"stream_options":{"a":true}}`: false,
	} {
		if got := IsStreaming([]byte(in)); got != want {
			t.Errorf("IsStreaming(%s) = %v, want %v", in, got, want)
		}
	}
}

func TestSetModel(t *testing.T) {
	for _, tc := range []struct{ in, model, want string }{
		{`{"model":"client","input":"hi"}`, "gpt-5", `{"model":"gpt-5","input":"hi"}`},
		{`{"input":"hi", "model" : null , "z":{"model":"keep"}}`, "m", `{"input":"hi", "model" : "m" , "z":{"model":"keep"}}`},
		{`{"input":"hi"}`, "m", `{"input":"hi","model":"m"}`},
		{` {}`, "m", ` {"model":"m"}`},
		{`{"model":1}`, `a"b<c>`, `{"model":"a\"b<c>"}`},
		// Whitespace after the object (a file's final newline) stays after
		// it: the model goes inside the braces.
		{"{\"input\":\"hi\"}\n", "m", "{\"input\":\"hi\",\"model\":\"m\"}\n"},
		{"{}\r\n ", "m", "{\"model\":\"m\"}\r\n "},
		{"{\"model\":\"x\"} \n", "m", "{\"model\":\"m\"} \n"},
	} {
		got, err := SetModel([]byte(tc.in), tc.model)
		if err != nil || string(got) != tc.want {
			t.Errorf("SetModel(%s, %q) = %s, %v; want %s", tc.in, tc.model, got, err, tc.want)
		}
	}
	for _, in := range []string{`[1]`, `{`, ``} {
		if _, err := SetModel([]byte(in), "m"); err == nil {
			t.Errorf("SetModel(%q) accepted a body that is not a JSON object", in)
		}
	}
}

func TestMergeUnder(t *testing.T) {
	for _, tc := range []struct{ body, extra, want string }{
		// The request wins; extra's other keys go first, as in Python's extra_body | body.
		{`{"model":"m","max_output_tokens":100}`, `{"max_output_tokens":null,"top_k":20}`, `{"top_k":20,"model":"m","max_output_tokens":100}`},
		// OpenAI's shipped configs: extra_body {max_output_tokens: null} fills an absent key.
		{`{"model":"m"}`, `{"max_output_tokens":null}`, `{"max_output_tokens":null,"model":"m"}`},
		// Shallow: the request's object replaces extra's whole object.
		{`{"metadata":{"a":"1"}}`, `{"metadata":{"b":"2"},"seed":1}`, `{"seed":1,"metadata":{"a":"1"}}`},
		// An explicit null in the request is a value the client sent; it wins.
		{`{"temperature":null}`, `{"temperature":0.7}`, `{"temperature":null}`},
		{`{}`, `{"a":1}`, `{"a":1}`},
		{` { "a" : 1 }`, `{"b":[1, 2]}`, ` {"b":[1, 2], "a" : 1 }`},
		{`{"a":1}`, `{}`, `{"a":1}`},
		{`{"a":1}`, `null`, `{"a":1}`},
		{`{"a":1}`, ``, `{"a":1}`},
		{`{"a":1}`, `{"b":1,"b":2}`, `{"b":1,"a":1}`},
	} {
		got, err := MergeUnder([]byte(tc.body), []byte(tc.extra))
		if err != nil || string(got) != tc.want {
			t.Errorf("MergeUnder(%s, %s) = %s, %v; want %s", tc.body, tc.extra, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ body, extra string }{{`[]`, `{}`}, {`{}`, `[1]`}, {`{}`, `{`}, {`{`, `{}`}} {
		if _, err := MergeUnder([]byte(tc.body), []byte(tc.extra)); err == nil {
			t.Errorf("MergeUnder(%s, %s) accepted non-objects", tc.body, tc.extra)
		}
	}
}

func TestDropInputReasoning(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"input":[{"type":"message","role":"user","content":"q"},{"type":"reasoning","id":"rs_1","summary":[]},{"type":"function_call","call_id":"c"}],"model":"m"}`,
			`{"input":[{"type":"message","role":"user","content":"q"},{"type":"function_call","call_id":"c"}],"model":"m"}`},
		{`{"input":[{"type":"reasoning"}]}`, `{"input":[]}`},
		{`{"input":"just text"}`, `{"input":"just text"}`},
		{`{"input":[{"role":"user","content":"no reasoning"}], "x": 1}`, `{"input":[{"role":"user","content":"no reasoning"}], "x": 1}`},
		{`{"input":[{"type":"reasoning_summary"},"reasoning",{"type":["reasoning"]}]}`, `{"input":[{"type":"reasoning_summary"},"reasoning",{"type":["reasoning"]}]}`},
		{`{"model":"m"}`, `{"model":"m"}`},
	} {
		got, err := DropInputReasoning([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("DropInputReasoning(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := DropInputReasoning([]byte(`[`)); err == nil {
		t.Error("DropInputReasoning accepted invalid JSON")
	}
}
