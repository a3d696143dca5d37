package rollout

import (
	"bufio"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// roundSpill holds materialized rollouts in a temporary file beside the
// output while materialization runs, so interleave_repeats can write them
// round by round without keeping the rows in memory: only each line's
// place and rollout index are kept.
type roundSpill struct {
	f     *os.File
	w     *bufio.Writer
	lines []spilledLine
	size  int64
}

type spilledLine struct {
	rollout     int
	offset, len int64
}

func newRoundSpill(output string) (*roundSpill, error) {
	f, err := jsonl.SpillFile(filepath.Dir(output), "."+filepath.Base(output)+".rounds-*")
	if err != nil {
		return nil, err
	}
	return &roundSpill{f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
}

// round records that the next n bytes written are one line of rollout index r.
func (s *roundSpill) round(r, n int) {
	s.lines = append(s.lines, spilledLine{rollout: r, offset: s.size, len: int64(n)})
	s.size += int64(n)
}

func (s *roundSpill) Write(p []byte) (int, error) { return s.w.Write(p) }

// writeRounds copies the lines to w ordered by rollout index, each round
// in the order the lines were written, as NeMo Gym's stable sort orders them.
func (s *roundSpill) writeRounds(w io.Writer) error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	sort.SliceStable(s.lines, func(i, j int) bool { return s.lines[i].rollout < s.lines[j].rollout })
	var buf []byte
	for _, l := range s.lines {
		if int64(cap(buf)) < l.len {
			buf = make([]byte, l.len)
		}
		buf = buf[:l.len]
		if _, err := s.f.ReadAt(buf, l.offset); err != nil {
			return err
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

func (s *roundSpill) Close() error { return s.f.Close() }
