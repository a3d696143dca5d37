package submit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A job id is looked up in the records it may belong to, never taken for
// the run directory the command happens to run in.
func TestFindRecordByJobIDIgnoresTheCurrentDirectory(t *testing.T) {
	root := t.TempDir()
	write := func(name, jobID string) string {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(Record{GymJobID: name, RunDir: dir, SchemaVersion: 1, Benchmarks: []BenchmarkJob{{Benchmark: "b", JobID: jobID}}})
		if err := os.WriteFile(filepath.Join(dir, RecordFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a := write("gym-job-a", "1111")
	write("gym-job-b", "9999")
	t.Chdir(a)
	rec, err := FindRecord("9999", []string{root})
	if err != nil || rec.GymJobID != "gym-job-b" {
		t.Fatalf("FindRecord(9999) = %+v, %v; want run b", rec, err)
	}
	if _, err := FindRecord("5555", []string{root}); err == nil || !strings.Contains(err.Error(), "no submission under") {
		t.Errorf("an unknown job id: %v", err)
	}
	if rec, err := FindRecord(a, nil); err != nil || rec.GymJobID != "gym-job-a" {
		t.Errorf("FindRecord(run dir) = %+v, %v", rec, err)
	}
}
