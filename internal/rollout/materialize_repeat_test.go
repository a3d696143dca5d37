package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// repeatByCompacting is how a repeat's line was made before rows were
// compacted once: the indexes (and seed) set on the row as read, then the
// whole line compacted.
func repeatByCompacting(row []byte, task int64, rollout int, seed bool) ([]byte, error) {
	out, err := sjson.SetBytes(row, TaskIndexKey, task)
	if err != nil {
		return nil, err
	}
	if out, err = sjson.SetBytes(out, RolloutIndexKey, rollout); err != nil {
		return nil, err
	}
	if seed {
		if out, err = addSeed(out, rollout); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	err = json.Compact(&b, out)
	return b.Bytes(), err
}

func sameRepeat(t *testing.T, row string, task int64, rollout int, seed bool) {
	t.Helper()
	want, wantErr := repeatByCompacting([]byte(row), task, rollout, seed)
	got, gotErr := stampRepeat(parsedRecord(string(compactValid(nil, []byte(row)))), task, rollout, seed)
	if (gotErr != nil) != (wantErr != nil) || (gotErr == nil && !bytes.Equal(got, want)) {
		t.Fatalf("row %q (%d, %d, seed %v):\n got %s %v\nwant %s %v", row, task, rollout, seed, got, gotErr, want, wantErr)
	}
}

func TestStampRepeatIsCompactingAfter(t *testing.T) {
	for _, row := range []string{
		`{"responses_create_params": {"input": "q"}}`,
		"{ \"responses_create_params\" : { \"input\" : [ 1 , 2 ] } ,\n\t\"_ng_task_index\" : 4 , \"_ng_rollout_index\" : { \"a\" : 1 } }",
		`{"_ng_rollout_index":1,"_ng_rollout_index":2,"s":"a  b\" {"}`,
		`{"responses_create_params": {"metadata": {"extra_body": { "temperature" : 0.5 }}}}`,
		`{"responses_create_params": {"metadata": {"extra_body": "{\"top_p\": 1}"}}}`,
		`{"responses_create_params": {"metadata": {"extra_body": 3}}}`,
		`{}`,
		"{\"k\\u0065y\": \"\u00e9\"}",
	} {
		for _, seed := range []bool{false, true} {
			sameRepeat(t, row, 7, 2, seed)
		}
	}
}

func FuzzStampRepeat(f *testing.F) {
	f.Add(`{"responses_create_params": {"input": "q"}, "x": [1, 2]}`, int64(3), 1, true)
	f.Add("{\n \"_ng_task_index\" : 1 }", int64(0), 0, false)
	f.Fuzz(func(t *testing.T, row string, task int64, rollout int, seed bool) {
		if !gjson.Valid(row) || !gjson.Parse(row).IsObject() {
			return
		}
		sameRepeat(t, row, task, rollout, seed)
	})
}

// materializedBySetting is what Materialize wrote for a one-row file before
// a row's agent_ref was added in place and a compact row went uncompacted:
// the agent_ref and the overrides set with sjson, then each repeat made by
// compacting (task 0 unless the row has its own).
func materializedBySetting(row []byte, agent string, overrides []byte, repeats int, seed bool) ([]byte, error) {
	var err error
	if agent != "" && !gjson.GetBytes(row, AgentRefKey).Exists() {
		if row, err = sjson.SetRawBytes(row, AgentRefKey, []byte(`{"name":`+string(mustJSON(agent))+`}`)); err != nil {
			return nil, err
		}
	}
	if len(overrides) > 0 {
		merged := []byte(gjson.GetBytes(row, ParamsKey).Raw)
		gjson.ParseBytes(overrides).ForEach(func(k, v gjson.Result) bool {
			merged, err = sjson.SetRawBytes(merged, gjson.Escape(k.Str), []byte(v.Raw))
			return err == nil
		})
		if err != nil {
			return nil, err
		}
		if row, err = sjson.SetRawBytes(row, ParamsKey, merged); err != nil {
			return nil, err
		}
	}
	task := gjson.GetBytes(row, TaskIndexKey).Int()
	var out []byte
	for rollout := range repeats {
		line, err := repeatByCompacting(row, task, rollout, seed)
		if err != nil {
			return nil, err
		}
		out = append(append(out, line...), '\n')
	}
	return out, nil
}

// sameMaterialized materializes the one row and holds what it wrote to
// materializedBySetting; a row Materialize refuses passes unless mustTake.
func sameMaterialized(t *testing.T, row string, overrides []byte, seed, mustTake bool) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(row+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := MaterializeOptions{InputPath: in, OutputPath: filepath.Join(dir, "out.jsonl"), AgentName: "a\"b", Repeats: Repeats{All: 2}, AddSeed: seed, Overrides: overrides}
	if _, err := Materialize(context.Background(), o); err != nil {
		if mustTake {
			t.Fatalf("row %q refused: %v", row, err)
		}
		return // refused rows are FuzzMaterialize's
	}
	got, err := os.ReadFile(o.OutputPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err := materializedBySetting([]byte(row), o.AgentName, overrides, 2, seed)
	if err != nil {
		t.Fatalf("row %q: the reference failed (%v) where Materialize wrote %s", row, err, got)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("row %q, overrides %s, seed %v:\n got %s\nwant %s", row, overrides, seed, got, want)
	}
}

func TestMaterializedRowIsSettingThenCompacting(t *testing.T) {
	for _, row := range []string{
		`{"responses_create_params":{"input":"q"}}`,
		`{"responses_create_params": {"input": "q"}}`,
		` {"responses_create_params":{"input":"q"}} `,
		`{"responses_create_params":{"input":"q"} }`,
		`{"responses_create_params":{"input":"q"},"agent_ref":{"name":"own"}}`,
		`{"responses_create_params":{"input":"q"},"agent_ref":{"type":"x", "name":"own"}}`,
		`{"responses_create_params":{"input":"q"},"agent\u005fref":{"name":"escaped"}}`,
		`{"responses_create_params":{"input":"q"},"_ng_task_index":5,"s":"a  b\" }"}`,
		`{"responses_create_params":{"input":"q","temperature":1},"x":[1, 2]}`,
	} {
		for _, overrides := range [][]byte{nil, []byte(`{"temperature":0.5}`), []byte(`{"top_p" : 1}`)} {
			for _, seed := range []bool{false, true} {
				sameMaterialized(t, row, overrides, seed, true)
			}
		}
	}
}

func FuzzMaterializedRow(f *testing.F) {
	f.Add(`{"responses_create_params":{"input":"q"}}`, false, true)
	f.Add(`{ "responses_create_params" : { } , "agent_ref" : null }`, true, false)
	f.Fuzz(func(t *testing.T, row string, override, seed bool) {
		if !gjson.Valid(row) || !gjson.Parse(row).IsObject() || bytes.ContainsAny([]byte(row), "\r\n") {
			return
		}
		var overrides []byte
		if override {
			overrides = []byte(`{"temperature":0.5}`)
		}
		sameMaterialized(t, row, overrides, seed, false)
	})
}
