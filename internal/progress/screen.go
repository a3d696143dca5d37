package progress

import (
	"bytes"
	"io"
	"sync"
)

// maxPartialLine bounds how much of an unfinished line a writer may leave
// waiting for its newline; past it the line is written as it is.
const maxPartialLine = 64 << 10

// clearLine returns the cursor to the start of the line and erases it.
const clearLine = "\r\x1b[K"

// Screen owns a terminal that a status line (the progress bar) shares with
// lines from any number of writers: server output, the rollout log, retry
// warnings. Each writer holding its own lock would let a line land in the
// middle of the bar; through a Screen a line first erases the bar, is
// written whole, and the bar is drawn again below it.
type Screen struct {
	mu      sync.Mutex
	out     io.Writer
	status  []byte // the bar's line as last drawn, after its last \r or \n
	partial []byte // the start of a line whose newline has not come yet
}

// NewScreen returns a Screen writing to out, a terminal.
func NewScreen(out io.Writer) *Screen { return &Screen{out: out} }

// Write takes lines from any writer: complete lines are written at once,
// an unfinished one waits for the rest of it (or for Flush).
func (s *Screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, p...)
	end := bytes.LastIndexByte(s.partial, '\n') + 1
	if end == 0 && len(s.partial) < maxPartialLine {
		return len(p), nil
	}
	if end == 0 {
		s.partial = append(s.partial, '\n')
		end = len(s.partial)
	}
	err := s.writeLines(s.partial[:end])
	s.partial = append(s.partial[:0], s.partial[end:]...)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes an unfinished line left by a writer, ended with a newline,
// so that nothing written to the Screen is lost.
func (s *Screen) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.partial) == 0 {
		return nil
	}
	err := s.writeLines(append(s.partial, '\n'))
	s.partial = s.partial[:0]
	return err
}

// writeLines writes lines above the bar; s.mu is held.
func (s *Screen) writeLines(lines []byte) error {
	buf := make([]byte, 0, len(clearLine)+len(lines)+len(s.status))
	if len(s.status) > 0 {
		buf = append(buf, clearLine...)
	}
	buf = append(buf, lines...)
	buf = append(buf, s.status...)
	_, err := s.out.Write(buf)
	return err
}

// statusWriter is the bar's own way onto the Screen: what it writes goes
// out as written and is remembered as the status line, so that it can be
// drawn again under each line from the others.
type statusWriter struct{ s *Screen }

func (w statusWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if i := bytes.LastIndexAny(p, "\r\n"); i >= 0 {
		w.s.status = append(w.s.status[:0], p[i+1:]...)
	} else {
		w.s.status = append(w.s.status, p...)
	}
	return w.s.out.Write(p)
}
