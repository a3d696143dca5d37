// Package iostreams holds the streams a command talks through and what it
// may do with them: whether each is a terminal, whether colour is allowed,
// and how rollout progress is shown. Commands get an *IOStreams instead of
// probing the process, so every one of them runs in a test without a
// terminal, or as if it had one.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/nemo-gym-go/gym/internal/progress"
)

// IOStreams are a command's standard streams.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdoutTTY, stderrTTY bool
	noColor              bool
}

// System is the process's own streams, probed once.
func System(lookupEnv func(string) (string, bool)) *IOStreams {
	_, noColor := lookupEnv("NO_COLOR")
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		stdoutTTY: isTerminal(os.Stdout),
		stderrTTY: isTerminal(os.Stderr),
		noColor:   noColor,
	}
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// Test is streams over buffers, none of them a terminal until the test says
// so with SetStdoutTTY or SetStderrTTY.
func Test() (ios *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// IsStdoutTTY says whether Out is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY says whether ErrOut is a terminal.
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// SetStdoutTTY makes Out count as a terminal or not.
func (s *IOStreams) SetStdoutTTY(tty bool) { s.stdoutTTY = tty }

// SetStderrTTY makes ErrOut count as a terminal or not.
func (s *IOStreams) SetStderrTTY(tty bool) { s.stderrTTY = tty }

// SetNoColor forbids colour, as NO_COLOR does.
func (s *IOStreams) SetNoColor(noColor bool) { s.noColor = noColor }

// ColorEnabled says whether Out may carry colour: a terminal, and no
// NO_COLOR (https://no-color.org).
func (s *IOStreams) ColorEnabled() bool { return s.stdoutTTY && !s.noColor }

// ProgressMode is how rollout progress is shown on ErrOut: JSON lines when
// asked for, a live bar on a terminal, sparse plain lines anywhere else.
func (s *IOStreams) ProgressMode(jsonLines bool) progress.Mode {
	switch {
	case jsonLines:
		return progress.JSON
	case s.stderrTTY:
		return progress.Terminal
	}
	return progress.Plain
}

// WithErrOut is a copy whose ErrOut is w, the terminal flags kept: a live
// bar's Screen takes over stderr this way.
func (s *IOStreams) WithErrOut(w io.Writer) *IOStreams {
	c := *s
	c.ErrOut = w
	return &c
}
