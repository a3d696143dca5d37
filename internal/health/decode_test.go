package health

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// decodeWhole is how records were read before decode kept only what the
// checks use: the whole record into maps with encoding/json.
func decodeWhole(raw []byte) (map[string]any, string) {
	raw = trimASCII(raw)
	if !utf8.Valid(raw) {
		return nil, "JSONDecodeError"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, "JSONDecodeError"
	}
	if dec.More() {
		return nil, "JSONDecodeError"
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, "JSONDecodeError"
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, "ValueError"
	}
	return m, ""
}

// checkedPart is what the checks read of a whole record, read from its
// maps as the checks read them before decode kept only that.
func checkedPart(m map[string]any) recordFields {
	var f recordFields
	f.task, f.hasTask = m["_ng_task_index"]
	f.rollout, f.hasRollout = m["_ng_rollout_index"]
	f.stage, f.rolloutID, f.trajectory = m["stage_index"], m["_ng_rollout_id"], m["ng_trajectory"]
	resp, _ := m["response"].(map[string]any)
	usage, ok := resp["usage"].(map[string]any)
	if !ok {
		return f
	}
	pick := func(a, b string) (int64, bool) {
		v, ok := usage[a]
		if !ok {
			v = usage[b]
		}
		n, isNum := v.(json.Number)
		if !isNum || !isIntText(string(n)) {
			return 0, false
		}
		x, err := strconv.ParseInt(string(n), 10, 64)
		return x, err == nil && x >= 0
	}
	p, pok := pick("input_tokens", "prompt_tokens")
	c, cok := pick("output_tokens", "completion_tokens")
	f.usage = tokenUsage{prompt: p, completion: c, present: pok && cok}
	return f
}

func sameDecoding(t *testing.T, raw []byte) {
	t.Helper()
	want, wantErr := decodeWhole(raw)
	got, gotErr := decode(raw)
	if gotErr != wantErr || !reflect.DeepEqual(got, checkedPart(want)) {
		t.Fatalf("decode(%q) = %v, %q; the whole record gives %v, %q", raw, got, gotErr, checkedPart(want), wantErr)
	}
}

func TestDecodeKeepsWhatChecksRead(t *testing.T) {
	for _, raw := range []string{
		`{"_ng_task_index":3,"_ng_rollout_index":1.0,"response":{"output":[1,2],"usage":{"input_tokens":5,"output_tokens":2}},"reward":1}`,
		`  {"response":{"usage":1,"usage":{"prompt_tokens":1e2}}}` + "\x0b\n",
		`{"response":{"usage":{}},"response":"text"}`,
		`{"response":"text","response":{"id":"x"}}`,
		`{"_ng_task_index":1,"_ng_task_index":"a","stage_index":null,"_ng_rollout_id":"r"}`,
		`{"_ng_task\u005findex":7,"ng_trajectory":{"schema_version":"v1","calls":[{"a":[1,{"b":null}]}]}}`,
		`{"response":{"usage":{"input_tokens":12345678901234567890123}}}`,
		`{"response":{"usage":{"input_tokens":5}}}`,
		`{"response":{"usage":{"prompt_tokens":3,"completion_tokens":4}}}`,
		`{"response":{"usage":{"input_tokens":null,"prompt_tokens":3,"output_tokens":1}}}`,
		`{"response":{"usage":{"input_tokens":1,"output_tokens":2},"usage":3}}`,
		`{"response":{"usage":{"input_tokens":-1,"output_tokens":2.0}}}`,
		`{"response":{"usage":{"input_tokens":-1,"output_tokens":2}}}`,
		`{"response":{"usage":{"input_tokens":-0,"output_tokens":0,"output_tokens":"7"}}}`,
		`{"response":{"us\u0061ge":{"input_\u0074okens":1,"output_tokens":2}}}`,
		`{"response":{"usage":{"input_tokens":1,"output_tokens":2}},"response":null}`,
		`{"s":"\ud800","_ng_rollout_id":"\udc00x"}`,
		`[1]`, `"x"`, `1`, `null`, ``, `{`, `{"a":1}{}`, `{"a":1} x`, `{"a":01}`, `{"a":"` + "\x01" + `"}`,
		`{"a":NaN}`, `{"a":1,}`, `{'a':1}`, "{\"a\":\"\xff\"}", `{"a":1e}`, `{"a":-}`, `{"a":"\x"}`, `{"a":tru}`,
	} {
		sameDecoding(t, []byte(raw))
	}
	fixture, err := os.ReadFile("testdata/mixed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for line := range bytes.Lines(fixture) {
		sameDecoding(t, line)
	}
}

func FuzzDecode(f *testing.F) {
	fixture, err := os.ReadFile("testdata/mixed.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	for line := range bytes.Lines(fixture) {
		f.Add(line)
	}
	f.Add([]byte(`{"response":{"usage":{"input_tokens":1}},"response":{}}`))
	f.Fuzz(func(t *testing.T, raw []byte) { sameDecoding(t, raw) })
}

// Nesting past encoding/json's limit is an unreadable record, as it was,
// and ten million levels are no stack overflow.
func TestDecodeDeepNesting(t *testing.T) {
	for _, depth := range []int{10001, 10_000_000} {
		raw := []byte(`{"ng_trajectory":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`)
		if f, err := decode(raw); !reflect.DeepEqual(f, recordFields{}) || err != "JSONDecodeError" {
			t.Errorf("depth %d: %+v, %q", depth, f, err)
		}
	}
}
