package workload

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/pyjson"
)

// Case kinds of a verifier fixture (nemo_gym/verifier_fixture.py).
const (
	CaseFullReward  = "full_reward"
	CaseZeroReward  = "zero_reward"
	CaseMalformed   = "malformed"
	CaseDeterminism = "determinism"
)

var caseKinds = []string{CaseFullReward, CaseZeroReward, CaseMalformed, CaseDeterminism}

// FixtureFile is where a resources server keeps its verifier fixture,
// relative to its directory (where NeMo Gym's scaffold puts it).
const FixtureFile = "tests/verifier_cases.jsonl"

// Case is one verifier fixture case.
type Case struct {
	Name           string
	Kind           string
	Request        json.RawMessage
	ExpectedReward *float64
	ExpectedError  string
	Line           int
	raw            map[string]json.RawMessage
}

// LoadFixture reads a verifier fixture: one case a line (blank lines
// skipped), each checked as NeMo Gym's VerifierFixtureCase. Every bad line
// is a problem.
func LoadFixture(path string) ([]Case, []Problem, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("Could not read verifier fixture '%s': %w", path, err)
	}
	var cases []Case
	var problems []Problem
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		c, msg := parseCase([]byte(line))
		if msg != "" {
			problems = append(problems, Problem{File: path, Line: i + 1, Message: "Invalid verifier fixture case: " + msg})
			continue
		}
		c.Line = i + 1
		cases = append(cases, c)
	}
	if len(cases) == 0 && len(problems) == 0 {
		problems = append(problems, Problem{File: path, Message: fmt.Sprintf("Verifier fixture '%s' contains no cases", path)})
	}
	return cases, problems, nil
}

func parseCase(line []byte) (Case, string) {
	var c Case
	if err := json.Unmarshal(line, &c.raw); err != nil || c.raw == nil {
		if err == nil {
			err = errors.New("expected a JSON object")
		}
		return c, "Invalid JSON: " + err.Error()
	}
	keys := make([]string, 0, len(c.raw))
	for k := range c.raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains([]string{"name", "kind", "request", "expected_reward", "expected_error"}, k) {
			return c, k + ": Extra inputs are not permitted"
		}
	}
	str := func(key string) (string, bool) {
		var s string
		raw, ok := c.raw[key]
		if !ok || string(raw) == "null" {
			return "", false
		}
		return s, json.Unmarshal(raw, &s) == nil
	}
	name, ok := str("name")
	if _, present := c.raw["name"]; !present {
		return c, "name: Field required"
	}
	if !ok {
		return c, "name: Input should be a valid string"
	}
	if c.Name = strings.TrimSpace(name); c.Name == "" {
		return c, "name: String should have at least 1 character"
	}
	kind, _ := str("kind")
	if !slices.Contains(caseKinds, strings.TrimSpace(kind)) {
		return c, "kind: Input should be 'full_reward', 'zero_reward', 'malformed' or 'determinism'"
	}
	c.Kind = strings.TrimSpace(kind)
	var request map[string]json.RawMessage
	if raw, ok := c.raw["request"]; !ok {
		return c, "request: Field required"
	} else if json.Unmarshal(raw, &request) != nil || request == nil {
		return c, "request: Input should be a valid dictionary"
	}
	c.Request = c.raw["request"]
	if raw, ok := c.raw["expected_reward"]; ok && string(raw) != "null" {
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || raw[0] == '"' {
			return c, "expected_reward: Input should be a valid number"
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return c, "expected_reward: Input should be a finite number"
		}
		c.ExpectedReward = &f
	}
	if raw, ok := c.raw["expected_error"]; ok && string(raw) != "null" {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return c, "expected_error: Input should be a valid string"
		}
		c.ExpectedError = strings.TrimSpace(s)
	}
	_, hasError := c.raw["expected_error"]
	hasError = hasError && string(c.raw["expected_error"]) != "null"
	if c.Kind == CaseMalformed {
		if c.ExpectedError == "" || c.ExpectedReward != nil {
			return c, "Value error, a malformed case requires expected_error and forbids expected_reward"
		}
	} else if c.ExpectedReward == nil || hasError {
		return c, fmt.Sprintf("Value error, a %s case requires expected_reward and forbids expected_error", c.Kind)
	}
	return c, ""
}

// Verifier scores one fixture request on a fresh resources server.
type Verifier interface {
	// Verify returns the reward of request; reseed seeds the fresh server
	// first (for determinism cases). A *SetupError is a server that could
	// not be made; any other error is the verifier rejecting the request.
	Verify(ctx context.Context, request json.RawMessage, reseed bool) (float64, error)
}

// SetupError is a fixture that could not be exercised at all.
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// CaseResult is one exercised case, as NeMo Gym's VerifierFixtureResult.
type CaseResult struct {
	Name            string    `json:"name"`
	Kind            string    `json:"kind"`
	ObservedRewards []float64 `json:"observed_rewards"`
}

// Contract is what the manifest promises about rewards.
type Contract struct {
	Low, High      float64
	HigherIsBetter bool
	Determinism    string
}

// FixtureError is a fixture whose cases do not hold: every failing case.
type FixtureError struct {
	Path     string
	Problems []Problem
}

func (e *FixtureError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "verifier fixture %s failed:", e.Path)
	for _, p := range e.Problems {
		b.WriteString("\n  - " + strings.ReplaceAll(p.String(), "\n", "\n    "))
	}
	return b.String()
}

// ExerciseFixture runs every case of the fixture at path against v as
// NeMo Gym's exercise_verifier_fixture does: the required case kinds are
// present, a full-reward case scores the better endpoint of the declared
// range and a zero-reward case the worse one, every reward is inside the
// range, a malformed request fails with the expected error, a determinism
// case (seeded workloads only) scores the same on two fresh servers, and
// each observed reward equals the expected one, or, with update, becomes
// it (the file is rewritten only when every case passed and one changed).
func ExerciseFixture(ctx context.Context, path string, v Verifier, c Contract, update bool) ([]CaseResult, error) {
	cases, problems, err := LoadFixture(path)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, &FixtureError{Path: path, Problems: problems}
	}
	if !slices.Contains(determinisms, c.Determinism) {
		return nil, fmt.Errorf("Unsupported determinism value: %s", pyRepr(c.Determinism))
	}
	if c.Low > c.High || math.IsInf(c.Low, 0) || math.IsInf(c.High, 0) || math.IsNaN(c.Low) || math.IsNaN(c.High) {
		return nil, errors.New("reward_range must contain finite endpoints with lower <= upper")
	}
	required := []string{CaseFullReward, CaseMalformed, CaseZeroReward}
	if c.Determinism == "seeded" {
		required = []string{CaseDeterminism, CaseFullReward, CaseMalformed, CaseZeroReward}
	}
	var missing []string
	for _, k := range required {
		if !slices.ContainsFunc(cases, func(x Case) bool { return x.Kind == k }) {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, &FixtureError{Path: path, Problems: []Problem{{File: path, Message: "the fixture is missing required cases: " + strings.Join(missing, ", ")}}}
	}
	full, zero, fullEnd, zeroEnd := c.High, c.Low, "upper", "lower"
	if !c.HigherIsBetter {
		full, zero, fullEnd, zeroEnd = c.Low, c.High, "lower", "upper"
	}
	var results []CaseResult
	updates := map[int]float64{}
	fail := func(cs Case, format string, args ...any) {
		problems = append(problems, Problem{File: path, Line: cs.Line, Field: cs.Name, Message: fmt.Sprintf(format, args...)})
	}
	for i, cs := range cases {
		if cs.Kind == CaseDeterminism && c.Determinism != "seeded" {
			continue
		}
		if cs.Kind == CaseMalformed {
			_, err := v.Verify(ctx, cs.Request, false)
			var setup *SetupError
			switch {
			case errors.As(err, &setup):
				return nil, fmt.Errorf("Case '%s' could not create a fresh server: %w", cs.Name, err)
			case err == nil:
				fail(cs, "Malformed case '%s' did not raise an error", cs.Name)
			case !strings.Contains(err.Error(), cs.ExpectedError):
				fail(cs, "Malformed case '%s' error did not contain %s: %v", cs.Name, pyRepr(cs.ExpectedError), err)
			default:
				results = append(results, CaseResult{Name: cs.Name, Kind: cs.Kind, ObservedRewards: []float64{}})
			}
			continue
		}
		observed, err := v.Verify(ctx, cs.Request, cs.Kind == CaseDeterminism)
		var setup *SetupError
		if errors.As(err, &setup) {
			return nil, fmt.Errorf("Case '%s' could not create a fresh server: %w", cs.Name, err)
		}
		if err != nil {
			fail(cs, "Case '%s' failed: %v", cs.Name, err)
			continue
		}
		if observed < c.Low || observed > c.High {
			fail(cs, "Case '%s' returned reward %s outside declared range [%s, %s]", cs.Name, pyFloat(observed), pyFloat(c.Low), pyFloat(c.High))
			continue
		}
		observations := []float64{observed}
		switch cs.Kind {
		case CaseFullReward:
			if observed != full {
				fail(cs, "Full-reward case '%s' does not pin the %s endpoint: expected %s, observed %s", cs.Name, fullEnd, pyFloat(full), pyFloat(observed))
				continue
			}
		case CaseZeroReward:
			if observed != zero {
				fail(cs, "Zero-reward case '%s' does not pin the %s endpoint: expected %s, observed %s", cs.Name, zeroEnd, pyFloat(zero), pyFloat(observed))
				continue
			}
		case CaseDeterminism:
			again, err := v.Verify(ctx, cs.Request, true)
			if err != nil {
				fail(cs, "Case '%s' failed: %v", cs.Name, err)
				continue
			}
			observations = append(observations, again)
			if again != observed {
				fail(cs, "Determinism case '%s' changed on a fresh server: expected %s, observed %s", cs.Name, pyFloat(observed), pyFloat(again))
				continue
			}
		}
		if update {
			updates[i] = observed
		} else if observed != *cs.ExpectedReward {
			fail(cs, "Case '%s' reward mismatch: expected %s, observed %s", cs.Name, pyFloat(*cs.ExpectedReward), pyFloat(observed))
			continue
		}
		results = append(results, CaseResult{Name: cs.Name, Kind: cs.Kind, ObservedRewards: observations})
	}
	if len(problems) > 0 {
		return nil, &FixtureError{Path: path, Problems: problems}
	}
	if update {
		changed := false
		for i, r := range updates {
			if *cases[i].ExpectedReward != r {
				changed = true
			}
		}
		if changed {
			if err := writeFixture(path, cases, updates); err != nil {
				return nil, err
			}
		}
	}
	return results, nil
}

// writeFixture rewrites the fixture as NeMo Gym's _write_fixture does:
// each case a line of json.dumps(..., sort_keys=True), the updated rewards
// in. A symlink or other non-regular file is refused.
func writeFixture(path string, cases []Case, updates map[int]float64) error {
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("Refusing to replace non-regular verifier fixture '%s'", path)
	}
	var out bytes.Buffer
	for i, cs := range cases {
		obj := map[string]json.RawMessage{}
		for k, v := range cs.raw {
			if string(v) != "null" {
				obj[k] = v
			}
		}
		obj["name"], _ = json.Marshal(cs.Name)
		obj["kind"], _ = json.Marshal(cs.Kind)
		if r, ok := updates[i]; ok {
			obj["expected_reward"] = json.RawMessage(pyFloat(r))
		} else if cs.ExpectedReward != nil {
			obj["expected_reward"] = json.RawMessage(pyFloat(*cs.ExpectedReward))
		}
		if cs.ExpectedError != "" {
			obj["expected_error"], _ = json.Marshal(cs.ExpectedError)
		}
		raw, _ := json.Marshal(obj)
		if err := pyJSON(&out, raw); err != nil {
			return fmt.Errorf("Could not update verifier fixture '%s': %w", path, err)
		}
		out.WriteByte('\n')
	}
	err := jsonl.WriteFileAtomic(path, func(w *bufio.Writer) error {
		_, err := w.Write(out.Bytes())
		return err
	})
	if err != nil {
		return fmt.Errorf("Could not update verifier fixture '%s': %w", path, err)
	}
	return nil
}

// pyFloat is Python's repr of a float.
func pyFloat(f float64) string { return tree.PythonFloatRepr(f) }

// pyJSON writes JSON as Python's json.dumps(json.loads(raw), sort_keys=True)
// does.
func pyJSON(out *bytes.Buffer, raw []byte) error {
	v, err := pyjson.Loads(raw)
	if err != nil {
		return err
	}
	b, err := pyjson.Dumps(v, true)
	if err != nil {
		return err
	}
	out.Write(b)
	return nil
}
