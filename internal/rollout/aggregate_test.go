package rollout

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A reward the metrics cannot read is an input error at its line, not a
// rollout the metrics leave out in silence.
func TestReadMetricsRowsRefusesARewardThatIsNotANumber(t *testing.T) {
	const agent = `"agent_ref":{"name":"a"},"_ng_task_index":0,"_ng_rollout_index":0`
	tests := []struct {
		reward string
		want   string // "" when the row is accepted
	}{
		{`1.0`, ""},
		{`0`, ""},
		{`true`, ""},
		{`-2.5e-3`, ""},
		{`"1.0"`, `reward is "1.0", not a number`},
		{`null`, `reward is null, not a number`},
		{`[1]`, `reward is [1], not a number`},
		{`{"v":1}`, `reward is {"v":1}, not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.reward, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rollouts.jsonl")
			good := `{` + agent + `,"reward":1}` + "\n"
			if err := os.WriteFile(path, []byte(good+`{`+agent+`,"reward":`+tt.reward+`}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			rows, err := ReadMetricsRows(filepath.Dir(path), path)
			if tt.want == "" {
				if err != nil || rows.Rows() != 2 {
					t.Fatalf("rows %v, err %v", rows, err)
				}
				return
			}
			var ie *InputError
			if !errors.As(err, &ie) || ie.Line != 2 || ie.Path != path || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want an input error at %s:2 saying %q", err, path, tt.want)
			}
		})
	}
}

// A rollout without a reward is read as before: NeMo Gym's profiler has
// nothing to leave out of it.
func TestReadMetricsRowsAcceptsARolloutWithoutReward(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rollouts.jsonl")
	if err := os.WriteFile(path, []byte(`{"agent_ref":{"name":"a"},"_ng_task_index":0,"_ng_rollout_index":0}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rows, err := ReadMetricsRows(filepath.Dir(path), path); err != nil || rows.Rows() != 1 {
		t.Fatalf("rows %v, err %v", rows, err)
	}
}

// Rollouts already in (task, rollout) order are not located one by one:
// nothing per rollout is held for them. Out of order, they are.
func TestReadMetricsRowsLocatesOnlyRowsOutOfOrder(t *testing.T) {
	dir := t.TempDir()
	row := func(agent string, task, rollout int) string {
		return `{"agent_ref":{"name":"` + agent + `"},"_ng_task_index":` + strconv.Itoa(task) + `,"_ng_rollout_index":` + strconv.Itoa(rollout) + `,"reward":1}` + "\n"
	}
	// a is in order across both files (a repeated key too); b is not.
	first := writeFile(t, dir, "0.jsonl", row("a", 0, 0)+row("b", 3, 0)+row("a", 0, 1)+row("b", 1, 0))
	second := writeFile(t, dir, "1.jsonl", row("a", 0, 1)+row("a", 2, 0)+row("b", 5, 0))
	rows, err := ReadMetricsRows(dir, first, second)
	if err != nil {
		t.Fatal(err)
	}
	a, b := rows.agents["a"], rows.agents["b"]
	defer rows.Close()
	if !a.sorted || a.refs != nil || a.n != 4 || a.first != (key{0, 0}) {
		t.Errorf("a: %+v, want 4 rollouts in order and none located", *a)
	}
	if b.sorted || b.refs == nil || b.refs.Len() != 3 || b.n != 3 || b.first != (key{1, 0}) {
		t.Errorf("b: %+v, want 3 rollouts located, the first (1, 0)", *b)
	}
}
