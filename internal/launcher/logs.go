package launcher

import (
	"bufio"
	"hash/fnv"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/fatih/color"
)

// palette holds the colours instance prefixes cycle through; an instance
// always gets the same one, so its lines are easy to follow across runs.
var palette = []color.Attribute{
	color.FgCyan, color.FgGreen, color.FgYellow, color.FgMagenta, color.FgBlue,
	color.FgHiCyan, color.FgHiGreen, color.FgHiYellow, color.FgHiMagenta, color.FgHiBlue,
}

func prefixColor(instance string) *color.Color {
	h := fnv.New32a()
	h.Write([]byte(instance))
	return color.New(palette[h.Sum32()%uint32(len(palette))])
}

// syncWriter serialises whole lines from many children onto one stream.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) writeLine(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, line)
}

// tail keeps the last lines a child printed, for the crash report.
type tail struct {
	mu    sync.Mutex
	lines []string
	max   int
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == t.max {
		t.lines = append(t.lines[:0], t.lines[1:]...)
	}
	t.lines = append(t.lines, line)
}

func (t *tail) get() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.lines...)
}

// instanceLines writes one instance's lines: to out with the
// `(<instance>) ` prefix, into the tail, into logFile when set, and to
// notify when set. A line the server prefixed itself (NeMo Gym's servers
// do) is not prefixed twice.
type instanceLines struct {
	own, prefix string
	out         *syncWriter
	tail        *tail
	logFile     *os.File
	logFailed   bool
	notify      func(string)
}

func newInstanceLines(instance string, colored bool, out *syncWriter, t *tail, logFile *os.File, notify func(string)) *instanceLines {
	w := &instanceLines{own: "(" + instance + ") ", out: out, tail: t, logFile: logFile, notify: notify}
	w.prefix = w.own
	if colored {
		c := prefixColor(instance)
		c.EnableColor()
		w.prefix = c.Sprint("("+instance+")") + " "
	}
	return w
}

func (w *instanceLines) write(line string) {
	line = strings.TrimPrefix(line, w.own)
	w.out.writeLine(w.prefix + line + "\n")
	if w.notify != nil {
		w.notify(line)
	}
	w.tail.add(line)
	if w.logFile != nil && !w.logFailed {
		if _, err := w.logFile.WriteString(line + "\n"); err != nil {
			w.logFailed = true
			w.out.writeLine(w.prefix + "warning: cannot write its log file (" + err.Error() + "); its lines go on here only\n")
		}
	}
}

// pumpLines writes a child's output through instanceLines, one whole line
// at a time. It returns when r reaches EOF (every writer of the pipe has
// exited).
func pumpLines(r io.Reader, instance string, colored bool, out *syncWriter, t *tail, logFile *os.File, notify func(string)) {
	w := newInstanceLines(instance, colored, out, t, logFile, notify)
	// ReadSlice bounds memory: a line longer than the buffer is passed on
	// in pieces rather than held whole.
	br := bufio.NewReaderSize(r, 64*1024)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			w.write(strings.TrimRight(string(chunk), "\r\n"))
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}
