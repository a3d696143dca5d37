package rollout

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/tidwall/gjson"
)

// key identifies one rollout: (task index, rollout index).
type key struct{ task, rollout int64 }

func (k key) String() string { return fmt.Sprintf("(%d, %d)", k.task, k.rollout) }

// rowKey reads a row's key; ok is false when either index is missing.
func rowKey(row gjson.Result) (key, bool) {
	// One walk, as far as both members (the first of each, as Get finds).
	var t, r gjson.Result
	row.ForEach(func(k, v gjson.Result) bool {
		switch {
		case k.Str == TaskIndexKey && !t.Exists():
			t = v
		case k.Str == RolloutIndexKey && !r.Exists():
			r = v
		}
		return !t.Exists() || !r.Exists()
	})
	if t.Type != gjson.Number || r.Type != gjson.Number {
		return key{}, false
	}
	return key{t.Int(), r.Int()}, true
}

// resumeState is what earlier runs left: the rollouts already written, the
// failed attempts per rollout, and the rollouts whose failure was final.
type resumeState struct {
	done     map[key]struct{}
	attempts map[key]int
	terminal map[key]struct{}
	// Torn last lines cut off the output and failures files.
	repaired int64
}

func newResumeState() *resumeState {
	return &resumeState{done: map[key]struct{}{}, attempts: map[key]int{}, terminal: map[key]struct{}{}}
}

// standing is where a rollout stands after the earlier runs.
type standing int

const (
	standingToRun standing = iota
	standingDone
	standingTerminal // failed for good
	standingMaxed    // out of attempts
)

func (st *resumeState) standing(k key, maxAttempts int) standing {
	if _, ok := st.done[k]; ok {
		return standingDone
	}
	if _, ok := st.terminal[k]; ok {
		return standingTerminal
	}
	if maxAttempts > 0 && st.attempts[k] >= maxAttempts {
		return standingMaxed
	}
	return standingToRun
}

// Standings counts rollouts by where the earlier runs left them.
type Standings struct {
	Cached   int // already in the output from an earlier run
	Terminal int // failed for good in an earlier run
	Maxed    int // out of attempts
}

// count adds where k stands to s.
func (s *Standings) count(st *resumeState, k key, maxAttempts int) {
	switch st.standing(k, maxAttempts) {
	case standingDone:
		s.Cached++
	case standingTerminal:
		s.Terminal++
	case standingMaxed:
		s.Maxed++
	}
}

// logResume tells what a resumed run of n rollouts (described by what)
// finds: done, failed, out of attempts, and what is left to run.
func (st *resumeState) logResume(w io.Writer, n int, what string, s Standings, maxAttempts int) {
	fmt.Fprintf(w, "Resuming: %d rollouts %s; %d already done; %d failed attempts before; %d failed for good; %d out of attempts (NEMO_GYM_MAX_ROLLOUT_ATTEMPTS=%d); %d to run.\n",
		n, what, s.Cached, sumValues(st.attempts), s.Terminal, s.Maxed, maxAttempts, n-s.Cached-s.Terminal-s.Maxed)
	if st.repaired > 0 {
		fmt.Fprintf(w, "Cut %d bytes of a line torn by an interrupted write off the end of the results.\n", st.repaired)
	}
}

// readResume reads the output and failures files of an earlier run, first
// cutting off a line torn by a kill. A malformed complete line is an error
// naming it: the files are the run's results, and guessing past damage
// could run a rollout twice or lose one.
func readResume(outputPath, failuresPath string) (*resumeState, error) {
	st := newResumeState()
	for _, p := range []string{outputPath, failuresPath} {
		n, err := repairTail(p)
		if err != nil {
			return nil, err
		}
		st.repaired += n
	}
	err := eachRow(outputPath, func(lr *lineReader, row gjson.Result) error {
		if k, ok := rowKey(row); ok {
			st.done[k] = struct{}{}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachRow(failuresPath, func(lr *lineReader, row gjson.Result) error {
		k, ok := rowKey(row)
		if !ok {
			return nil
		}
		st.attempts[k]++
		if row.Get("_ng_failure_terminal").Bool() {
			st.terminal[k] = struct{}{}
		}
		return nil
	})
	return st, err
}

// eachRow calls fn with every non-blank line of a JSONL file, parsed; a
// missing file has no rows.
func eachRow(path string, fn func(lr *lineReader, row gjson.Result) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	lr := newLineReader(f, path)
	for {
		line, err := lr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !jsonl.Valid(line) {
			return lr.errorf("Malformed JSON in '%s' at line %d: %s", path, lr.Line, jsonError(line))
		}
		if err := fn(lr, gjson.ParseBytes(line)); err != nil {
			return err
		}
	}
}
