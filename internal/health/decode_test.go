package health

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"reflect"
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

// checkedPart is what the checks read of a whole record: of its usage,
// only the token counts.
func checkedPart(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := map[string]any{}
	for _, k := range []string{"_ng_task_index", "_ng_rollout_index", "stage_index", "_ng_rollout_id", "ng_trajectory"} {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	if resp, ok := m["response"].(map[string]any); ok {
		kept := map[string]any{}
		if u, ok := resp["usage"]; ok {
			kept["usage"] = u
			if usage, ok := u.(map[string]any); ok {
				tokens := map[string]any{}
				for _, k := range tokenKeys {
					if n, ok := usage[k]; ok {
						tokens[k] = n
					}
				}
				kept["usage"] = tokens
			}
		}
		out["response"] = kept
	}
	return out
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
		if m, err := decode(raw); m != nil || err != "JSONDecodeError" {
			t.Errorf("depth %d: %v, %q", depth, m != nil, err)
		}
	}
}
