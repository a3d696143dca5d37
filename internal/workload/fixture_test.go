package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scoring is a fake verifier: the reward is the request's "score", a
// request with "fail" is rejected with that message, and with "flaky" the
// reward changes on every call.
type scoring struct{ calls int }

func (s *scoring) Verify(_ context.Context, request json.RawMessage, reseed bool) (float64, error) {
	s.calls++
	var r struct {
		Score *float64 `json:"score"`
		Fail  string   `json:"fail"`
		Flaky bool     `json:"flaky"`
		Setup bool     `json:"setup"`
	}
	json.Unmarshal(request, &r)
	switch {
	case r.Setup:
		return 0, &SetupError{Err: errors.New("no server")}
	case r.Fail != "":
		return 0, errors.New(r.Fail)
	case r.Flaky:
		return float64(s.calls), nil
	case r.Score == nil:
		return 0, errors.New("field required: score")
	}
	return *r.Score, nil
}

const goodCases = `{"name": "full", "kind": "full_reward", "request": {"score": 1}, "expected_reward": 1.0}
{"name": "zero", "kind": "zero_reward", "request": {"score": 0}, "expected_reward": 0}

{"name": "bad", "kind": "malformed", "request": {}, "expected_error": "score"}
{"name": "same", "kind": "determinism", "request": {"score": 0.5}, "expected_reward": 0.5}
`

func writeCases(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "verifier_cases.jsonl")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExerciseFixture(t *testing.T) {
	unit := Contract{Low: 0, High: 1, HigherIsBetter: true, Determinism: "unknown"}
	cases := []struct {
		name     string
		cases    string
		contract Contract
		want     []string // substrings of the error; none: it passes
		results  int
	}{
		{name: "passes; determinism skipped unless seeded", cases: goodCases, contract: unit, results: 3},
		{name: "seeded runs determinism twice", cases: goodCases, contract: Contract{High: 1, HigherIsBetter: true, Determinism: "seeded"}, results: 4},
		{name: "lower is better swaps the endpoints", cases: goodCases, contract: Contract{High: 1, Determinism: "unknown"}, want: []string{
			":1: full: Full-reward case 'full' does not pin the lower endpoint: expected 0.0, observed 1.0",
			":2: zero: Zero-reward case 'zero' does not pin the upper endpoint: expected 1.0, observed 0.0"}},
		{name: "a reward outside the range", cases: strings.Replace(goodCases, `{"score": 1}, "expected_reward": 1.0`, `{"score": 2}, "expected_reward": 2`, 1), contract: unit,
			want: []string{":1: full: Case 'full' returned reward 2.0 outside declared range [0.0, 1.0]"}},
		{name: "a reward mismatch", cases: strings.Replace(goodCases, `"expected_reward": 0.5`, `"expected_reward": 0.25`, 1), contract: Contract{High: 1, HigherIsBetter: true, Determinism: "seeded"},
			want: []string{":5: same: Case 'same' reward mismatch: expected 0.25, observed 0.5"}},
		{name: "a malformed case that passes verification", cases: strings.Replace(goodCases, `"request": {}, "expected_error"`, `"request": {"score": 1}, "expected_error"`, 1), contract: unit,
			want: []string{":4: bad: Malformed case 'bad' did not raise an error"}},
		{name: "a malformed case failing otherwise", cases: strings.Replace(goodCases, `"request": {}, "expected_error"`, `"request": {"fail": "boom"}, "expected_error"`, 1), contract: unit,
			want: []string{":4: bad: Malformed case 'bad' error did not contain 'score': boom"}},
		{name: "a verifier error", cases: strings.Replace(goodCases, `{"score": 0}`, `{"fail": "judge down"}`, 1), contract: unit,
			want: []string{":2: zero: Case 'zero' failed: judge down"}},
		{name: "a flaky seeded case", cases: strings.Replace(goodCases, `{"score": 0.5}`, `{"flaky": true}`, 1), contract: Contract{High: 10, HigherIsBetter: true, Determinism: "seeded"},
			want: []string{"same: Determinism case 'same' changed on a fresh server"}},
		{name: "missing kinds", cases: `{"name": "full", "kind": "full_reward", "request": {"score": 1}, "expected_reward": 1}`, contract: Contract{High: 1, HigherIsBetter: true, Determinism: "seeded"},
			want: []string{"the fixture is missing required cases: determinism, malformed, zero_reward"}},
		{name: "no cases", cases: "\n\n", contract: unit, want: []string{"contains no cases"}},
		{name: "bad lines, all named", cases: `{"name": "", "kind": "full_reward", "request": {}, "expected_reward": 1}
not json
{"name": "x", "kind": "full_reward", "request": [], "expected_reward": 1}
{"name": "x", "kind": "full_reward", "request": {}}
{"name": "x", "kind": "full_reward", "request": {}, "expected_reward": "1"}
{"name": "x", "kind": "malformed", "request": {}, "expected_error": "  "}
{"name": "x", "kind": "zero_reward", "request": {}, "expected_reward": 0, "expected_error": "e"}
{"name": "x", "kind": "zero_reward", "request": {}, "expected_reward": 0, "extra": 1}
`, contract: unit, want: []string{
			":1: Invalid verifier fixture case: name: String should have at least 1 character",
			":2: Invalid verifier fixture case: Invalid JSON",
			":3: Invalid verifier fixture case: request: Input should be a valid dictionary",
			":4: Invalid verifier fixture case: Value error, a full_reward case requires expected_reward and forbids expected_error",
			":5: Invalid verifier fixture case: expected_reward: Input should be a valid number",
			":6: Invalid verifier fixture case: Value error, a malformed case requires expected_error",
			":7: Invalid verifier fixture case: Value error, a zero_reward case requires expected_reward and forbids expected_error",
			":8: Invalid verifier fixture case: extra: Extra inputs are not permitted"}},
		{name: "an unknown determinism", cases: goodCases, contract: Contract{High: 1, Determinism: "sometimes"}, want: []string{"Unsupported determinism value: 'sometimes'"}},
		{name: "a server that cannot be made", cases: strings.Replace(goodCases, `{"score": 1}`, `{"setup": true}`, 1), contract: unit, want: []string{"Case 'full' could not create a fresh server: no server"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeCases(t, tc.cases)
			results, err := ExerciseFixture(context.Background(), path, &scoring{}, tc.contract, false)
			if len(tc.want) == 0 {
				if err != nil || len(results) != tc.results {
					t.Fatalf("results = %+v, err = %v", results, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, results %+v", results)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestExerciseFixtureUpdate(t *testing.T) {
	path := writeCases(t, strings.Replace(goodCases, `"expected_reward": 0}`, `"expected_reward": 0.75}`, 1))
	if _, err := ExerciseFixture(context.Background(), path, &scoring{}, Contract{High: 1, HigherIsBetter: true, Determinism: "unknown"}, true); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	// NeMo Gym's json.dumps(..., sort_keys=True) of each case, blank lines
	// dropped, the observed reward in.
	want := `{"expected_reward": 1.0, "kind": "full_reward", "name": "full", "request": {"score": 1}}
{"expected_reward": 0.0, "kind": "zero_reward", "name": "zero", "request": {"score": 0}}
{"expected_error": "score", "kind": "malformed", "name": "bad", "request": {}}
{"expected_reward": 0.5, "kind": "determinism", "name": "same", "request": {"score": 0.5}}
`
	if string(data) != want {
		t.Errorf("fixture now\n%s\nwant\n%s", data, want)
	}
	// Nothing changed: the file is left alone.
	info, _ := os.Stat(path)
	if _, err := ExerciseFixture(context.Background(), path, &scoring{}, Contract{High: 1, HigherIsBetter: true, Determinism: "unknown"}, true); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Stat(path); !again.ModTime().Equal(info.ModTime()) {
		t.Error("an unchanged fixture was rewritten")
	}
	// A symlinked fixture is not replaced.
	link := filepath.Join(t.TempDir(), "cases.jsonl")
	os.Symlink(path, link)
	os.WriteFile(path, []byte(strings.Replace(want, `"expected_reward": 0.5`, `"expected_reward": 0.25`, 1)), 0o644)
	if _, err := ExerciseFixture(context.Background(), link, &scoring{}, Contract{High: 1, HigherIsBetter: true, Determinism: "seeded"}, true); err == nil || !strings.Contains(err.Error(), "Refusing to replace non-regular verifier fixture") {
		t.Errorf("err = %v", err)
	}
}

func TestPyJSON(t *testing.T) {
	cases := map[string]string{
		`{"b": [1, 2.50, 1e3, -0.0], "a": "é\u2028\ud83d\ude00\"\\", "c": null, "d": true}`: `{"a": "\u00e9\u2028\ud83d\ude00\"\\", "b": [1, 2.5, 1000.0, -0.0], "c": null, "d": true}`,
		`{"z": {"y": 1, "x": {}}}`: `{"z": {"x": {}, "y": 1}}`,
		// Python escapes DEL, writes an overflowing float as Infinity and
		// keeps big ints (values printed by Python 3.11's json.dumps).
		`{"b": "x\u007fy", "a": 1e400, "c": [1.0, 2, 12345678901234567890123], "d": "\u00e9"}`: `{"a": Infinity, "b": "x\u007fy", "c": [1.0, 2, 12345678901234567890123], "d": "\u00e9"}`,
	}
	for in, want := range cases {
		var b bytes.Buffer
		if err := pyJSON(&b, []byte(in)); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("%s\n got %s\nwant %s", in, b.String(), want)
		}
	}
}

func FuzzParseCase(f *testing.F) {
	for _, line := range strings.Split(goodCases, "\n") {
		f.Add(line)
	}
	f.Add(`{"name": 1}`)
	f.Fuzz(func(t *testing.T, line string) {
		c, msg := parseCase([]byte(line))
		if msg != "" {
			return
		}
		if c.Name == "" || (c.Kind == CaseMalformed) != (c.ExpectedError != "") || (c.Kind == CaseMalformed) == (c.ExpectedReward != nil) {
			t.Fatalf("accepted an invalid case %q: %+v", line, c)
		}
	})
}

func FuzzParseManifest(f *testing.F) {
	f.Add(baseManifest)
	f.Add("name: [\n")
	f.Add("reward: {range: [1, x]}\ndatasets: [{type: benchmark}]\nlicensing: MIT AND\n")
	f.Fuzz(func(t *testing.T, data string) {
		m, problems := ParseManifest([]byte(data), "manifest.yaml")
		for _, p := range problems {
			if p.File != "manifest.yaml" || p.Message == "" {
				t.Fatalf("problem without a place or message: %+v", p)
			}
		}
		if len(problems) == 0 && (m.Name == "" || len(m.Datasets) == 0 || len(m.Authors) == 0) {
			t.Fatalf("accepted %q without its required fields: %+v", data, m)
		}
	})
}
