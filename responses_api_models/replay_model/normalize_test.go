package replaymodel

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestItemIdentity(t *testing.T) {
	hs := newHasher()
	for _, tc := range []struct {
		why  string
		a, b string
		same bool
	}{
		{"a message's type is implied, string content is one text part",
			`{"role":"user","content":"hi"}`,
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}`, true},
		{"ids, status, annotations and logprobs do not count",
			`{"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"annotations":[],"text":"ok","type":"output_text","logprobs":[]}]}`,
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}`, true},
		{"a reasoning item replayed without its status, fixed part type",
			`{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"s"}],"content":[{"type":"output_text","text":"t"}],"status":null}`,
			`{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"s"}],"content":[{"type":"reasoning_text","text":"t"}]}`, true},
		{"arguments compare as JSON",
			`{"type":"function_call","call_id":"c","name":"f","arguments":"{\"city\": \"SF\", \"n\": 1.0}"}`,
			`{"type":"function_call","call_id":"c","name":"f","arguments":"{\"n\":1,\"city\":\"\\u0053F\"}"}`, true},
		{"a Python tool's output and a Go tool's",
			`{"call_id":"c","output":"{\"city\": \"San Francisco\", \"weather_description\": \"cold\"}","type":"function_call_output","id":null,"status":null}`,
			`{"type":"function_call_output","call_id":"c","output":"{\"city\":\"San Francisco\",\"weather_description\":\"cold\"}"}`, true},
		{"a rich tool output is its parts",
			`{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}`,
			`{"type":"function_call_output","call_id":"c","output":[{"type":"output_text","text":"x"}]}`, true},
		{"roles differ", `{"role":"user","content":"hi"}`, `{"role":"developer","content":"hi"}`, false},
		{"texts differ", `{"role":"user","content":"hi"}`, `{"role":"user","content":"hi "}`, false},
		{"two parts are not their concatenation",
			`{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]}`,
			`{"role":"user","content":"ab"}`, false},
		{"a text output keeps its spaces",
			`{"type":"function_call_output","call_id":"c","output":"a b"}`,
			`{"type":"function_call_output","call_id":"c","output":"ab"}`, false},
		{"a JSON string output is not the bare text",
			`{"type":"function_call_output","call_id":"c","output":"\"x\""}`,
			`{"type":"function_call_output","call_id":"c","output":"x"}`, false},
		{"call ids differ",
			`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}`,
			`{"type":"function_call","call_id":"c2","name":"f","arguments":"{}"}`, false},
		{"names differ",
			`{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}`,
			`{"type":"function_call","call_id":"c","name":"g","arguments":"{}"}`, false},
		{"argument values differ",
			`{"type":"function_call","call_id":"c","name":"f","arguments":"{\"a\":[1,2]}"}`,
			`{"type":"function_call","call_id":"c","name":"f","arguments":"{\"a\":[2,1]}"}`, false},
		{"an image part counts whole",
			`{"role":"user","content":[{"type":"input_image","image_url":"data:a"}]}`,
			`{"role":"user","content":[{"type":"input_image","image_url":"data:b"}]}`, false},
		{"a custom tool call's input counts",
			`{"type":"custom_tool_call","call_id":"c","name":"f","input":"x"}`,
			`{"type":"custom_tool_call","call_id":"c","name":"f","input":"y"}`, false},
	} {
		a, b := hs.item(gjson.Parse(tc.a)), hs.item(gjson.Parse(tc.b))
		if (a == b) != tc.same {
			t.Errorf("%s: equal %v, want %v\n a %s\n b %s", tc.why, a == b, tc.same, tc.a, tc.b)
		}
	}
}

func TestInstructionsIdentity(t *testing.T) {
	hs := newHasher()
	none := hs.instructions(gjson.Result{})
	for _, body := range []string{`{}`, `{"instructions":null}`, `{"instructions":""}`} {
		if hs.instructions(gjson.Get(body, "instructions")) != none {
			t.Errorf("%s is not the same as no instructions", body)
		}
	}
	if hs.instructions(gjson.Get(`{"instructions":"x"}`, "instructions")) == none {
		t.Error("instructions do not count")
	}
}

func TestSplitTurns(t *testing.T) {
	for _, tc := range []struct {
		types string // item types, space-separated
		want  [][2]int
	}{
		{"message", [][2]int{{0, 1}}},
		{"reasoning function_call function_call_output function_call_output reasoning message", [][2]int{{0, 2}, {4, 6}}},
		{"function_call function_call_output", [][2]int{{0, 1}}},
		{"function_call_output message", [][2]int{{1, 2}}},
		{"reasoning", [][2]int{{0, 1}}},
		{"", nil},
	} {
		var items []gjson.Result
		for _, typ := range strings.Fields(tc.types) {
			items = append(items, gjson.Parse(`{"type":"`+typ+`"}`))
		}
		got := splitTurns(items)
		if len(got) != len(tc.want) {
			t.Errorf("%q: %v, want %v", tc.types, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: %v, want %v", tc.types, got, tc.want)
			}
		}
	}
}
