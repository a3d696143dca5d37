package dataset

import (
	"testing"

	"github.com/nemo-gym-go/gym/internal/pyjson"
)

// TestMaterializeTaskIDs checks a task's ID is str() of the row's, as
// Python 3 printed it, and the fallbacks to _ng_task_index and the index.
func TestMaterializeTaskIDs(t *testing.T) {
	for _, tc := range []struct{ row, want string }{
		{`{"task_id": [1, {"a": null}]}`, "[1, {'a': None}]"},
		{`{"problem_id": 2.0}`, "2.0"},
		{`{"instance_id": true}`, "True"},
		{`{"task_id": 1e22}`, "1e+22"},
		{`{"task_id": 12345678901234567890123}`, "12345678901234567890123"},
		{`{"task_id": null, "problem_id": "p"}`, "p"},
		{`{"_ng_task_index": 42}`, "42"},
		{`{"q": 1}`, "9"},
	} {
		v, err := pyjson.Loads([]byte(tc.row))
		if err != nil {
			t.Fatal(err)
		}
		task, err := materializeTask(v.(pyjson.Object), "t:s", 9)
		if err != nil {
			t.Errorf("%s: %v", tc.row, err)
			continue
		}
		id, _ := task.Get("task_id")
		if got, _ := id.(pyjson.Object).Get("task_id"); got != tc.want {
			t.Errorf("%s: task_id %q, want %q", tc.row, got, tc.want)
		}
	}
	for _, bad := range []string{`{"_ng_task_index": -1}`, `{"_ng_task_index": true}`, `{"task_id": ""}`, `{"task_input": {}}`, `{"task_id": {"x": 1}}`} {
		v, _ := pyjson.Loads([]byte(bad))
		if _, err := materializeTask(v.(pyjson.Object), "t:s", 0); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
