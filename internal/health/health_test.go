package health

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// testdata/mixed.jsonl has a rollout for every check; nemogym_*/ are the
// reports nemo-gym 0.7.0's run_health_checks wrote for it (workers=1,
// the path given as testdata/mixed.jsonl), with no check ignored and with
// four ignored.
func TestReportsAreNeMoGyms(t *testing.T) {
	for _, tt := range []struct {
		dir     string
		ignored []string
	}{
		{"nemogym_all", nil},
		{"nemogym_ignored", []string{"rollout_token_count_mismatch", "task_consistently_unhealthy", "check_execution_error", "rollout_duplicate_identity"}},
	} {
		// A chunk of 3 spills the records and task rows in many runs.
		for _, chunk := range []int{sortChunk, 3} {
			t.Run(tt.dir+"/chunk="+strconv.Itoa(chunk), func(t *testing.T) {
				defer func(n int) { sortChunk = n }(sortChunk)
				sortChunk = chunk
				out := t.TempDir()
				res, err := Run(context.Background(), Options{Rollouts: []string{"testdata/mixed.jsonl"}, OutputDir: out, Workers: 3, Ignored: tt.ignored})
				if err != nil {
					t.Fatal(err)
				}
				defer res.Close()
				for _, name := range []string{SummaryFile, VerdictsFile} {
					got, _ := os.ReadFile(filepath.Join(out, name))
					want, _ := os.ReadFile(filepath.Join("testdata", tt.dir, name))
					if string(got) != string(want) {
						t.Errorf("%s differs from NeMo Gym's:\n got %s\nwant %s", name, got, want)
					}
				}
				var compact bytes.Buffer
				want, _ := os.ReadFile(filepath.Join("testdata", tt.dir, SummaryFile))
				json.Compact(&compact, want)
				if got := res.SummaryJSON(); !bytes.Equal(got, compact.Bytes()) {
					t.Errorf("--json summary differs from NeMo Gym's compacted:\n got %s\nwant %s", got, compact.Bytes())
				}
			})
		}
	}
}

// rollout is a record with one turn answering through model call "c".
func rollout(task, repeat int, callMeta, tokens, extraTraj string) string {
	return `{"_ng_task_index":` + itoa(task) + `,"_ng_rollout_index":` + itoa(repeat) + `,"response":{"usage":{"input_tokens":10,"output_tokens":5}},` +
		`"ng_trajectory":{"task_id":"t","rollout_id":"r","turns":[{"invocation_id":"root","task_id":"t","rollout_id":"r","turn_no":1,"timestamp":1,"step_count":0,` +
		`"answer":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}],"model_calls":[{"model_call_id":"c"}]}],` +
		`"model_calls":[{"model_call_id":"c","response_metadata":{"model_ref":{"type":"responses_api_models","name":"p"}` + callMeta + `},"token_stats":` + tokens + `,"response":{"output_text":"hi"}}]` + extraTraj + `}}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

const okTokens = `{"prompt_tokens":10,"completion_tokens":5}`

// Each check, on a run made to trip it (or not).
func TestChecks(t *testing.T) {
	for _, tt := range []struct {
		name     string
		lines    []string
		ignored  []string
		verdicts string   // per line, in file order
		findings []string // every finding's check, in file order
		detail   string   // in the verdicts file
	}{
		{name: "healthy", lines: []string{rollout(0, 0, "", okTokens, "")}, verdicts: "healthy"},
		{name: "no trajectory: unobserved", lines: []string{`{"_ng_task_index":0}`}, verdicts: "unobserved"},
		{name: "unreadable record", lines: []string{`{"_ng_task_index":`}, verdicts: "unhealthy", findings: []string{"record_unreadable"},
			detail: `"detail":{"reason":"rollout record is unreadable","error":"JSONDecodeError"}`},
		{name: "a record that is not an object", lines: []string{`"x"`}, verdicts: "unhealthy", findings: []string{"record_unreadable"}, detail: `"error":"ValueError"`},
		{name: "a trajectory with an unknown field", lines: []string{`{"ng_trajectory":{"task_id":"t","rollout_id":"r","extra":1}}`}, verdicts: "unhealthy",
			findings: []string{"record_unreadable"}, detail: `"detail":{"reason":"canonical trajectory is unreadable","error":"ValidationError"}`},
		{name: "duplicate identity", lines: []string{`{"_ng_task_index":1}`, `{"_ng_task_index":1}`}, verdicts: "unhealthy unhealthy",
			findings: []string{"rollout_duplicate_identity", "rollout_duplicate_identity"}, detail: `"detail":{"duplicate_count":2}`},
		{name: "duplicate identity ignored", lines: []string{`{"_ng_task_index":1}`, `{"_ng_task_index":1}`}, ignored: []string{"rollout_duplicate_identity"}, verdicts: "unobserved unobserved"},
		{name: "failed call, at the end", lines: []string{rollout(0, 0, `,"status_code":500`, okTokens, "")}, verdicts: "unhealthy",
			findings: []string{"rollout_ended_on_failed_model_call", "model_call_failed", "task_no_successful_model_calls"},
			detail:   `{"check":"model_call_failed","locator":{"call_id":"c"},"detail":{"status":500,"error_category":null,"terminal":true}}`},
		{name: "zero completion tokens", lines: []string{rollout(0, 0, "", `{"prompt_tokens":10,"completion_tokens":0}`, "")}, verdicts: "unhealthy",
			findings: []string{"model_call_zero_completion_tokens", "rollout_token_count_mismatch"}},
		{name: "missing token counts", lines: []string{rollout(0, 0, "", `{"completion_tokens":5}`, "")}, verdicts: "unhealthy",
			findings: []string{"model_call_missing_token_counts"}, detail: `"detail":{"missing":["prompt_tokens"]}`},
		{name: "runaway generation", lines: []string{strings.Replace(rollout(0, 0, `,"finish_reason":"length"`, okTokens, ""), `"response":{"output_text":"hi"}`, `"response":{"output":[]}`, 1)},
			verdicts: "unhealthy", findings: []string{"model_call_runaway_generation"}},
		{name: "a length stop with content is fine", lines: []string{rollout(0, 0, `,"finish_reason":"length"`, okTokens, "")}, verdicts: "healthy"},
		{name: "capture mismatch from a gap", lines: []string{rollout(0, 0, "", okTokens, `,"gaps":[{"code":"model_call_reference_ambiguous","detail":"turn:1:c"}]`)},
			verdicts: "unhealthy", findings: []string{"trajectory_capture_mismatch"},
			detail: `"locator":{"call_id":"c"},"detail":{"kind":"duplicated_captured_call","observation_gap":"model_call_reference_ambiguous","invocation_id":null}`},
		{name: "an incomplete capture leaves the call checks unobserved", lines: []string{rollout(0, 0, `,"status_code":500`, okTokens, `,"gaps":[{"code":"model_calls_unavailable"}]`)},
			verdicts: "unobserved", findings: []string{"task_no_successful_model_calls"}},
		{name: "ignored checks give no findings", lines: []string{rollout(0, 0, `,"status_code":500`, okTokens, "")},
			ignored: []string{"model_call_failed", "rollout_ended_on_failed_model_call", "task_no_successful_model_calls"}, verdicts: "healthy"},
		{name: "task: every repeat unhealthy, none succeeded", lines: []string{rollout(0, 0, `,"status_code":500`, okTokens, ""), rollout(0, 1, `,"error_category":"timeout"`, okTokens, "")},
			verdicts: "unhealthy unhealthy", findings: []string{"rollout_ended_on_failed_model_call", "model_call_failed", "rollout_ended_on_failed_model_call", "model_call_failed", "task_consistently_unhealthy", "task_no_successful_model_calls"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "rollouts.jsonl")
			os.WriteFile(p, []byte(strings.Join(tt.lines, "\n")+"\n"), 0o644)
			res, err := Run(context.Background(), Options{Rollouts: []string{p}, Workers: 1, Ignored: tt.ignored})
			if err != nil {
				t.Fatal(err)
			}
			defer res.Close()
			var verdicts, findings []string
			for _, l := range verdictLines(t, res) {
				verdicts = append(verdicts, l.Verdict)
				for _, f := range l.Findings {
					findings = append(findings, f.Check)
				}
			}
			for _, row := range taskRows(t, res.summary) {
				findings = append(findings, row.flags...)
			}
			if got := strings.Join(verdicts, " "); got != tt.verdicts {
				t.Errorf("verdicts %q, want %q", got, tt.verdicts)
			}
			if !slices.Equal(findings, tt.findings) {
				t.Errorf("findings %q, want %q", findings, tt.findings)
			}
			raw, _ := os.ReadFile(filepath.Join(dir, VerdictsFile))
			if !strings.Contains(string(raw), tt.detail) {
				t.Errorf("verdicts file lacks %s:\n%s", tt.detail, raw)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rollouts.jsonl")
	os.WriteFile(p, []byte(`{"_ng_task_index":1.5}`+"\n"), 0o644)
	var usage *UsageError
	for _, tt := range []struct {
		name  string
		run   func() error
		want  string
		usage bool
	}{
		{"unknown check", func() error {
			_, err := RunDir(context.Background(), dir, "", 1, []string{"nope", "model_call_failed", "also"})
			return err
		}, "Unknown rollout health check(s): also, nope", true},
		{"no run directory", func() error { _, err := RunDir(context.Background(), filepath.Join(dir, "x"), "", 1, nil); return err }, "Run directory not found: " + filepath.Join(dir, "x"), true},
		{"no rollouts file", func() error { _, err := RunDir(context.Background(), dir, "other.jsonl", 1, nil); return err }, "Rollout JSONL not found: " + filepath.Join(dir, "other.jsonl"), true},
		{"no workers", func() error { _, err := RunDir(context.Background(), dir, "", -1, nil); return err }, "workers must be at least 1", true},
		{"an index that is neither integer nor string", func() error { _, err := RunDir(context.Background(), dir, "", 1, nil); return err }, p + ":1: _ng_task_index is 1.5", false},
	} {
		err := tt.run()
		if err == nil || !strings.Contains(err.Error(), tt.want) || errors.As(err, &usage) != tt.usage {
			t.Errorf("%s: err = %v, want %q (usage %v)", tt.name, err, tt.want, tt.usage)
		}
	}
}

func TestReportLine(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "rollouts.jsonl"), []byte(rollout(0, 0, "", okTokens, "")+"\n\n"+`{"_ng_task_index":1}`+"\n"), 0o644)
	res, err := RunDir(context.Background(), dir, "", 0, []string{"agent_turn_hollow"})
	if err != nil {
		t.Fatal(err)
	}
	want := "Rollout health: 2 checked, 1 healthy, 0 unhealthy, 1 unobserved (ignored: agent_turn_hollow)\nQuality summary: " + filepath.Join(dir, SummaryFile)
	if got := Report(res); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if summary := res.SummaryJSON(); !json.Valid(summary) || strings.Contains(string(summary), "\n") {
		t.Errorf("--json summary %s", summary)
	}
}

func FuzzDigest(f *testing.F) {
	raw, _ := os.ReadFile("testdata/mixed.jsonl")
	for _, l := range strings.Split(string(raw), "\n") {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := digest("x", line{lineNumber: 1}, []byte(s), map[string]bool{})
		if err == nil && d.Verdict == "" {
			t.Fatal("no verdict")
		}
	})
}

// Lines longer than the reader's buffer, and blank lines that are, are
// read whole and numbered right.
func TestLongLines(t *testing.T) {
	dir := t.TempDir()
	long := `{"_ng_task_index":0,"pad":"` + strings.Repeat("x", 200_000) + `"}`
	blank := strings.Repeat(" ", 100_000)
	os.WriteFile(filepath.Join(dir, "rollouts.jsonl"), []byte(long+"\n"+blank+"\n"+`{"_ng_task_index":`+"\n"), 0o644)
	res, err := RunDir(context.Background(), dir, "", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	if l := verdictLines(t, res); len(l) != 2 || l[0].Verdict != "unobserved" || l[1].Task != "__unreadable_record__:input-0:line-3" {
		t.Errorf("verdicts %+v", l)
	}
}

// BenchmarkRun checks the fixture's rollouts, most with a captured
// trajectory; BenchmarkRunTranscripts checks rollouts as gym eval run
// writes them for example_single_tool_call, without one.
func BenchmarkRun(b *testing.B) { benchmarkRun(b, "testdata/mixed.jsonl") }

func BenchmarkRunTranscripts(b *testing.B) {
	benchmarkRun(b, "../../resources_servers/example_single_tool_call/data/example_rollouts.jsonl")
}

func benchmarkRun(b *testing.B, fixture string) {
	raw, err := os.ReadFile(fixture)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	p := filepath.Join(dir, "rollouts.jsonl")
	// Every rollout the fixture has, a hundred times.
	os.WriteFile(p, []byte(strings.Repeat(string(raw), 100)), 0o644)
	b.SetBytes(int64(len(raw) * 100))
	for b.Loop() {
		if _, err := Run(context.Background(), Options{Rollouts: []string{p}, OutputDir: dir}); err != nil {
			b.Fatal(err)
		}
	}
}

// A digest keeps its unobserved checks as bits of a uint32.
func TestRegistryFitsTheUnobservedBits(t *testing.T) {
	if len(Registry) > 32 {
		t.Fatalf("%d checks; Digest.unobserved holds 32", len(Registry))
	}
	d := &Digest{}
	d.markUnobserved("model_call_failed")
	d.markUnobserved("record_unreadable")
	if got := d.Unobserved(); !slices.Equal(got, []string{"record_unreadable", "model_call_failed"}) {
		t.Errorf("Unobserved() = %v", got)
	}
}

// reduce's task rows and duplicate findings are what grouping the records
// by key in first-seen order, as NeMo Gym does, gives: the order of the
// records does not change them.
func TestTaskRowsIgnoreRecordOrder(t *testing.T) {
	verdicts := []string{"healthy", "unhealthy", "unobserved"}
	keyAt := func(i int) key {
		switch i % 7 {
		case 0:
			return key{isStr: true, s: strconv.Itoa(i % 5)}
		case 1:
			return key{none: true}
		case 2:
			return key{isStr: true, s: "None"}
		}
		return key{n: int64(i % 5)}
	}
	for _, n := range []int{1, 5, 40, 300} {
		var digests []*Digest
		for i := range n {
			digests = append(digests, &Digest{Task: keyAt(i * 3), Rollout: keyAt(i), Stage: keyAt(i / 2),
				Verdict: verdicts[(i*i)%3], policyCallsObserved: i%4 != 0, successfulCalls: i % 3})
		}
		// The reference: records by task, then by rollout, first seen first.
		type rep struct {
			verdict     string
			policyCalls bool
			successful  int
		}
		var taskOrder []key
		byTask := map[key][]*Digest{}
		for _, d := range digests {
			if _, ok := byTask[d.Task]; !ok {
				taskOrder = append(taskOrder, d.Task)
			}
			byTask[d.Task] = append(byTask[d.Task], d)
		}
		want := map[string]taskRow{}
		for _, tk := range taskOrder {
			var order []key
			by := map[key][]*Digest{}
			for _, d := range byTask[tk] {
				if _, ok := by[d.Rollout]; !ok {
					order = append(order, d.Rollout)
				}
				by[d.Rollout] = append(by[d.Rollout], d)
			}
			row := taskRow{name: tk.String(), isStr: tk.isStr, repeats: len(order), flags: []string{}}
			var reps []rep
			for _, r := range order {
				copies := by[r]
				x := rep{copies[0].Verdict, true, 0}
				for _, c := range copies {
					if c.Verdict != x.verdict {
						x.verdict = "unobserved"
					}
					x.policyCalls = x.policyCalls && c.policyCallsObserved
					x.successful = max(x.successful, c.successfulCalls)
				}
				reps = append(reps, x)
				switch x.verdict {
				case "healthy":
					row.healthy++
				case "unhealthy":
					row.unhealthy++
				default:
					row.un++
				}
			}
			computable, unhealthy := 0, 0
			for _, r := range reps {
				if r.verdict != "unobserved" {
					computable++
					if r.verdict == "unhealthy" {
						unhealthy++
					}
				}
			}
			if computable >= 2 && unhealthy == computable {
				row.flags = append(row.flags, "task_consistently_unhealthy")
			}
			if !slices.ContainsFunc(reps, func(r rep) bool { return !r.policyCalls }) && !slices.ContainsFunc(reps, func(r rep) bool { return r.successful > 0 }) {
				row.flags = append(row.flags, "task_no_successful_model_calls")
			}
			if _, seen := want[row.name]; !seen || tk.isStr {
				want[row.name] = row
			}
		}
		for _, chunk := range []int{sortChunk, 7} {
			func() {
				defer func(n int) { sortChunk = n }(sortChunk)
				sortChunk = chunk
				dir := t.TempDir()
				tl := newTally(dir, nil, map[string]bool{"rollout_duplicate_identity": true})
				defer tl.close()
				for _, d := range digests {
					if err := tl.add(d); err != nil {
						t.Fatal(err)
					}
				}
				if err := tl.finish(filepath.Join(dir, VerdictsFile)); err != nil {
					t.Fatal(err)
				}
				defer tl.s.tasks.Close()
				rows := taskRows(t, tl.s)
				if len(rows) != len(want) {
					t.Fatalf("%d records, chunk %d: %d task rows, want %d", n, chunk, len(rows), len(want))
				}
				for _, row := range rows {
					w := want[row.name]
					w.isStr = row.isStr // the summary's block, which the reference does not keep
					if !reflect.DeepEqual(row, w) {
						t.Errorf("%d records, chunk %d: task %q row %+v, want %+v", n, chunk, row.name, row, w)
					}
				}
			}()
		}
	}
}

// Lines are numbered per file and counted across files, across the
// batches they are read in.
func TestLinesAcrossBatchesAndFiles(t *testing.T) {
	dir := t.TempDir()
	var one strings.Builder
	for i := 1; i <= 2500; i++ {
		switch i {
		case 1100:
			one.WriteString(`{"broken` + "\n")
		case 1300:
			one.WriteString("  \n")
		default:
			one.WriteString(`{"response":{}}` + "\n")
		}
	}
	p1, p2 := filepath.Join(dir, "one.jsonl"), filepath.Join(dir, "two.jsonl")
	os.WriteFile(p1, []byte(one.String()), 0o644)
	os.WriteFile(p2, []byte(`{"response":{}}`+"\n"+`[`+"\n"+`{"_ng_task_index":"t"}`), 0o644)
	res, err := Run(context.Background(), Options{Rollouts: []string{p1, p2}, OutputDir: dir, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	// A record without a task index is the task of its ordinal: its
	// position among the non-blank lines of all the files.
	var want []any
	for ordinal := range 2500 {
		if ordinal != 1099 {
			want = append(want, float64(ordinal))
		}
	}
	want = append(want, "__unreadable_record__:input-0:line-1100", "__unreadable_record__:input-1:line-2", "t")
	var got []any
	for _, l := range verdictLines(t, res) {
		got = append(got, l.Task)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the verdicts' tasks are %v, want %v", got, want)
	}
}

// verdictLine is a line of rollout_verdicts.jsonl.
type verdictLine struct {
	Task     any    `json:"_ng_task_index"`
	Verdict  string `json:"verdict"`
	Findings []struct {
		Check string `json:"check"`
	} `json:"findings"`
}

func verdictLines(t *testing.T, res *Result) []verdictLine {
	t.Helper()
	raw, err := os.ReadFile(res.VerdictsPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []verdictLine
	for _, l := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		if l == "" {
			continue
		}
		var v verdictLine
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		out = append(out, v)
	}
	return out
}

func taskRows(t *testing.T, s *summary) []taskRow {
	t.Helper()
	var rows []taskRow
	if err := s.tasks.Each(func(r taskRow) error { rows = append(rows, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return rows
}

// The verdicts file sorts by task, rollout and stage as NeMo Gym's stable
// sort does: integer stages first; the stage None and the string "None"
// compare equal, so they keep their line order.
func TestVerdictsOrder(t *testing.T) {
	lines := []string{
		`{"_ng_task_index":"x","_ng_rollout_id":"f"}`,
		`{"_ng_task_index":0,"_ng_rollout_index":0,"stage_index":null,"_ng_rollout_id":"a"}`,
		`{"_ng_task_index":0,"_ng_rollout_index":0,"stage_index":"None","_ng_rollout_id":"b"}`,
		`{"_ng_task_index":0,"_ng_rollout_index":0,"stage_index":1,"_ng_rollout_id":"e"}`,
		`{"_ng_task_index":0,"_ng_rollout_index":0,"stage_index":null,"_ng_rollout_id":"c"}`,
		`{"_ng_task_index":0,"_ng_rollout_index":0,"stage_index":"None","_ng_rollout_id":"d"}`,
		`{"_ng_task_index":0,"_ng_rollout_index":"0","_ng_rollout_id":"g"}`,
	}
	for _, chunk := range []int{sortChunk, 2} {
		defer func(n int) { sortChunk = n }(sortChunk)
		sortChunk = chunk
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "rollouts.jsonl"), []byte(strings.Join(lines, "\n")), 0o644)
		res, err := RunDir(context.Background(), dir, "", 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(res.VerdictsPath)
		res.Close()
		var ids []string
		for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var v struct {
				ID string `json:"rollout_id"`
			}
			json.Unmarshal([]byte(l), &v)
			ids = append(ids, v.ID)
		}
		if got := strings.Join(ids, " "); got != "e a b c d g f" {
			t.Errorf("chunk %d: verdicts in order %s, want e a b c d g f", chunk, got)
		}
	}
}

// A verdict line's unobserved list is what the JSON writer made of the
// check IDs, for every set of checks.
func TestAppendUnobservedIsTheWritersList(t *testing.T) {
	for bits := uint32(0); bits < 1<<len(Registry); bits++ {
		ids := unobservedChecks(bits)
		if ids == nil {
			ids = []string{}
		}
		w := &jw{}
		w.value(ids)
		if got := appendUnobserved(nil, bits); string(got) != string(w.B) {
			t.Fatalf("bits %b: %s, the writer %s", bits, got, w.B)
		}
	}
}
