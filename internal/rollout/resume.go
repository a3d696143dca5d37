package rollout

import (
	"fmt"
	"io"
)

// key identifies one rollout: (task index, rollout index).
type key struct{ task, rollout int64 }

func (k key) String() string { return fmt.Sprintf("(%d, %d)", k.task, k.rollout) }

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
	err := eachRecord(outputPath, func(lr *lineReader, row *record) error {
		if k, ok := row.key(); ok {
			st.done[k] = struct{}{}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachRecord(failuresPath, func(lr *lineReader, row *record) error {
		k, ok := row.key()
		if !ok {
			return nil
		}
		st.attempts[k]++
		if row.peek("_ng_failure_terminal").Bool() {
			st.terminal[k] = struct{}{}
		}
		return nil
	})
	return st, err
}
