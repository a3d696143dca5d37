package resources

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// decodeByUnmarshal is decodeObject's meaning: json.Unmarshal into a map.
func decodeByUnmarshal(body []byte) (map[string]json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return nil, false
	}
	return obj, true
}

func TestDecodeObjectIsUnmarshal(t *testing.T) {
	for _, body := range []string{
		`{"a": 1, "b": {"c": [1, 2]}, "s": "x\"y"}`,
		`{"a": 1, "a": 2}`,
		` {"k\u0065y" : true } `,
		`{}`, `null`, `[]`, `"s"`, `{"a":`, `{"a" 1}`, ``, `{"a": 01}`, `{"a": 1} x`,
		"{\"bad\xffkey\": 1, \"response\": 2}",
		"{\"s\": \"raw\ttab\"}",
	} {
		want, wantOK := decodeByUnmarshal([]byte(body))
		got, err := decodeObject([]byte(body))
		if (err == nil) != wantOK || (wantOK && !reflect.DeepEqual(got, want)) {
			t.Errorf("%q: got %v, %v; want %v, %v", body, got, err, want, wantOK)
		}
	}
}

func FuzzDecodeObject(f *testing.F) {
	f.Add(`{"responses_create_params": {"input": []}, "response": {"output": []}, "x": 1.5e3}`)
	f.Add(`{"a": 1, "a": [true, null]}`)
	f.Fuzz(func(t *testing.T, body string) {
		want, wantOK := decodeByUnmarshal([]byte(body))
		got, err := decodeObject([]byte(body))
		if (err == nil) != wantOK {
			t.Fatalf("%q: decodeObject err %v, json.Unmarshal ok %v", body, err, wantOK)
		}
		if wantOK && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %v\nwant %v", body, got, want)
		}
	})
}

// BenchmarkDecodeObject: the top-level members of a recorded /verify body.
func BenchmarkDecodeObject(b *testing.B) {
	data, err := os.ReadFile("../../resources_servers/example_single_tool_call/data/example_rollouts.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	var body []byte
	for i, c := range data {
		if c == '\n' {
			body = data[:i]
			break
		}
	}
	b.Run("decodeObject", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for range b.N {
			if _, err := decodeObject(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for range b.N {
			if _, ok := decodeByUnmarshal(body); !ok {
				b.Fatal("refused")
			}
		}
	})
}
