package rollout

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/nemo-gym-go/gym/internal/jsonl"
)

// stampBySetting is stamp's meaning written the plain way: compact, then
// set each identity key the row has (replaced where the result has it,
// appended at the end otherwise).
func stampBySetting(result []byte, row gjson.Result) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, result); err != nil {
		return nil, err
	}
	out := buf.Bytes()
	var err error
	for _, k := range identityKeys {
		if v := row.Get(k); v.Exists() {
			if out, err = sjson.SetRawBytes(out, k, []byte(v.Raw)); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

const stampRow = `{"responses_create_params":{"input":"q"},"_ng_task_index":3,"_ng_rollout_index":1,"agent_ref":{"type":"responses_api_agents","name":"a"},"_ng_attempt_index":2,"_ng_rollout_id":"r-3-1"}`

func TestStampIsSettingEachKey(t *testing.T) {
	for name, result := range map[string]string{
		"none of the keys":            `{"reward": 1.0, "response": {"output": []}}`,
		"some keys, kept in place":    `{"_ng_rollout_index": 9, "reward": 0, "agent_ref": {"name": "other"}}`,
		"all keys":                    `{"_ng_task_index":0,"_ng_rollout_index":0,"agent_ref":null,"skills_ref":1,"_ng_attempt_index":0,"_ng_rollout_id":"x","z":[1,{"_ng_task_index":5}]}`,
		"a duplicate key":             `{"_ng_task_index": 1, "_ng_task_index": 2}`,
		"escapes and white space":     "{\n  \"k\\u0065y\" : \"v\\\"\" ,\n \"_ng_rollout_id\":\t\"old\"\n}",
		"an escaped key":              `{"_ng_task_inde\u0078": 7, "a": 1}`,
		"an empty object":             `{}`,
		"a key that only looks alike": `{"_ng_task_indexx": 1, "x_ng_task_index": 2}`,
	} {
		t.Run(name, func(t *testing.T) {
			for _, rowText := range []string{
				stampRow,
				`{"_ng_rollout_index":1,"_ng_rollout_index":2,"input":"q"}`,
				`{"_ng_task_inde\u0078":4,"agent_ref":{"name":"b"},"skills_ref":[1]}`,
				`{"input":"no identity"}`,
			} {
				want, err := stampBySetting([]byte(result), gjson.Parse(rowText))
				if err != nil {
					t.Fatal(err)
				}
				got, r, err := stamp([]byte(result), parsedRecord(rowText))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("row %s:\ngot  %s\nwant %s", rowText, got, want)
				}
				if wantRoute := routeOf(got); r != wantRoute {
					t.Errorf("row %s: stamp's route %+v, the line's %+v", rowText, r, wantRoute)
				}
			}
		})
	}
	for _, bad := range []string{`[1]`, `"s"`, `{"a":`, ``} {
		if _, _, err := stamp([]byte(bad), parsedRecord(stampRow)); err == nil {
			t.Errorf("stamp(%q) took it", bad)
		}
	}
}

func FuzzStamp(f *testing.F) {
	f.Add(`{"reward": 1.0}`, stampRow)
	f.Add(`{"_ng_task_index": 1, "_ng_task_index": 2, "a": {"_ng_rollout_id": 3}}`, `{"_ng_rollout_id": "x", "skills_ref": [1]}`)
	f.Fuzz(func(t *testing.T, result, row string) {
		if !gjson.Valid(row) {
			return
		}
		want, wantErr := stampBySetting([]byte(result), gjson.Parse(row))
		got, r, err := stamp([]byte(result), parsedRecord(row))
		if err != nil {
			return
		}
		if wantErr != nil {
			t.Fatalf("stamp(%q) took what json.Compact refuses: %v", result, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("stamp(%q, %q)\n got %s\nwant %s", result, row, got, want)
		}
		if wantRoute := routeOf(got); r != wantRoute {
			t.Errorf("stamp(%q): route %+v, the line's %+v", result, r, wantRoute)
		}
	})
}

// BenchmarkStamp: the collector's per-result work on a recorded rollout,
// beside the way stamp did it before (json.Compact, then one sjson rewrite
// per key).
func BenchmarkStamp(b *testing.B) {
	data, err := os.ReadFile("../../resources_servers/example_single_tool_call/data/example_rollouts.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	result := bytes.SplitN(data, []byte("\n"), 2)[0]
	row := gjson.Parse(stampRow)
	rec := parsedRecord(stampRow)
	for _, way := range []struct {
		name  string
		stamp func([]byte, gjson.Result) ([]byte, error)
	}{{"one_pass", func(result []byte, _ gjson.Result) ([]byte, error) {
		out, _, err := stamp(result, rec)
		return out, err
	}}, {"by_setting", stampBySetting}} {
		b.Run(way.name, func(b *testing.B) {
			b.SetBytes(int64(len(result)))
			b.ReportAllocs()
			for range b.N {
				if _, err := way.stamp(result, row); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// parsedRecord is s read as a record.
func parsedRecord(s string) *record {
	var r record
	r.parse([]byte(s))
	return &r
}

// routeOf reads what gjson.Get reads, in one walk.
func TestRouteOfIsGet(t *testing.T) {
	for _, result := range []string{
		`{"reward":1.0}`,
		`{"_ng_no_persist":true,"reward":0}`,
		`{"_ng_no_persist":false,"_ng_no_persist":true}`,
		`{"_ng_failure_class":null,"reward":"x"}`,
		`{"_ng_failure_class":"timeout","_ng_failure_class":null}`,
		`{"r\u0065ward":2,"reward":3}`,
		`{"nested":{"reward":1}}`,
		`{}`,
	} {
		res := gjson.Parse(result)
		want := route{noPersist: res.Get("_ng_no_persist").Bool(),
			failed: res.Get("_ng_failure_class").Exists() && res.Get("_ng_failure_class").Type != gjson.Null,
			reward: res.Get("reward").Num, hasReward: res.Get("reward").Type == gjson.Number}
		if got := routeOf([]byte(result)); got != want {
			t.Errorf("%s: routeOf = %+v, Get gives %+v", result, got, want)
		}
	}
}

// A record's key is the indexes as gjson.Get finds them.
func TestRecordKeyIsGet(t *testing.T) {
	for _, row := range []string{
		`{"_ng_task_index":3,"_ng_rollout_index":1}`,
		`{"_ng_rollout_index":1,"x":{"_ng_task_index":9},"_ng_task_index":2,"_ng_task_index":5}`,
		`{"_ng_task_index":"3","_ng_rollout_index":1}`,
		`{"_ng_task_index":3}`,
		`{"_ng_task_inde\u0078":3,"_ng_rollout_index":0}`,
		`{"_ng_task_index":1.5e3,"_ng_rollout_index":-0}`,
		`{}`,
	} {
		r := gjson.Parse(row)
		tk, rk := r.Get(TaskIndexKey), r.Get(RolloutIndexKey)
		want, wantOK := key{tk.Int(), rk.Int()}, tk.Type == gjson.Number && rk.Type == gjson.Number
		if got, ok := parsedRecord(row).key(); ok != wantOK || (ok && got != want) {
			t.Errorf("%s: key = %v %v, Get gives %v %v", row, got, ok, want, wantOK)
		}
	}
}

// compactValid is json.Compact of valid JSON.
func FuzzCompactValid(f *testing.F) {
	for _, s := range []string{`{"a" : "b \" c\\\\", "d":[1, 2 ,{ }]}`, "\t[ \"\\\\\\\"\" ]\n", `"x y"`, ` 1 `} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		if json.Compact(&want, []byte(s)) != nil {
			return
		}
		if got := compactValid(nil, []byte(s)); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("compactValid(%q) = %q, json.Compact %q", s, got, want.Bytes())
		}
	})
}

// A row read by parse and written by appendCompact is json.Compact of it:
// the same bytes after what dst held, and the same verdict on validity.
func FuzzRecordAppendCompact(f *testing.F) {
	for _, s := range append(slices.Clone(jsonSeeds), `{"a":1} x`, `{"a":`, "{\"a\":\"\x01\"}", ``, ` `, `{"a":1}{}`, `{"b":"\xff"}`) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		wantErr := json.Compact(&want, []byte(s))
		var r record
		if ok := r.parse([]byte(s)); ok != (wantErr == nil) {
			t.Fatalf("parse(%q) = %v, json.Compact error %v", s, ok, wantErr)
		}
		if wantErr != nil {
			return
		}
		if got := r.appendCompact([]byte("kept")); string(got) != "kept"+want.String() {
			t.Fatalf("appendCompact of %q = %q, want %q after what dst held", s, got, "kept"+want.String())
		}
	})
}

// At and past the nesting limit parse agrees with json.Compact too.
func TestRecordParseNestingLimit(t *testing.T) {
	for _, depth := range []int{jsonl.MaxDepth - 1, jsonl.MaxDepth, jsonl.MaxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			closer := map[string]string{"[": "]", `{"a":`: "}"}[open]
			s := strings.Repeat(open, depth) + "1" + strings.Repeat(closer, depth)
			wantErr := json.Compact(new(bytes.Buffer), []byte(s))
			var r record
			if ok := r.parse([]byte(s)); ok != (wantErr == nil) {
				t.Errorf("depth %d of %s: parse = %v, json.Compact error %v", depth, open, ok, wantErr)
			}
		}
	}
}
