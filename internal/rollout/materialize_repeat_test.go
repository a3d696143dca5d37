package rollout

import (
	"bytes"
	"encoding/json"
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
