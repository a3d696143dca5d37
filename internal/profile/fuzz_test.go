package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzProfile: whatever the two files hold, Run returns an *Error or
// writes outputs that are JSON, one group per task with a rollout.
func FuzzProfile(f *testing.F) {
	f.Add([]byte(happyInputs), []byte(happyRollouts), false)
	f.Add([]byte(partialInputs), []byte(partialRollouts), true)
	f.Add([]byte(`{"_ng_task_index":0,"_ng_rollout_index":0,"agent_ref":{"name":"a"},"_ng_task_index":1}`),
		[]byte(`{"_ng_task_index":1,"_ng_rollout_index":0,"response":{"usage":{"n":1e400,"m":-0}},"b":true,"b":"x"}`), false)
	f.Add([]byte("\n"), []byte("{"), false)
	f.Add([]byte(`{"_ng_task_index":-9223372036854775808,"_ng_rollout_index":0,"agent_ref":{"name":"\u00e9\ud800"}}`+"\r\n"),
		[]byte(`{"_ng_task_index":-9223372036854775808,"_ng_rollout_index":0,"response":{},"reward":null}`), true)
	f.Fuzz(func(t *testing.T, inputs, rollouts []byte, allowPartial bool) {
		fx := writeFixture(t, string(inputs), string(rollouts))
		s, err := Run(context.Background(), Options{InputsPath: fx.inputs, RolloutsPath: fx.rollouts, AllowPartial: allowPartial})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%T %v, want an *Error", err, err)
			}
			return
		}
		groups, err := os.ReadFile(s.RewardProfilingPath)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(groups, []byte("\n"))
		if last := lines[len(lines)-1]; len(last) != 0 {
			t.Fatalf("the group lines do not end with a newline: %q", last)
		}
		lines = lines[:len(lines)-1]
		for i, l := range lines {
			if !json.Valid(l) {
				t.Fatalf("group line %d is not JSON: %s", i+1, l)
			}
		}
		if want := s.Tasks - s.MissingTasks; len(lines) != want {
			t.Errorf("%d group lines, want %d", len(lines), want)
		}
		agents, err := os.ReadFile(filepath.Join(fx.dir, "rollouts_agent_metrics.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(agents) {
			t.Fatalf("agent metrics are not JSON: %s", agents)
		}
	})
}
