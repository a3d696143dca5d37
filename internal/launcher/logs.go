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

// pumpLines copies a child's output to out, one whole line at a time with
// the `(<instance>) ` prefix, into the tail, into logFile when set, and to
// notify when set. A line the server prefixed itself (NeMo Gym's servers
// do) is not prefixed twice. It returns when r reaches EOF (every writer of
// the pipe has exited).
func pumpLines(r io.Reader, instance string, colored bool, out *syncWriter, t *tail, logFile *os.File, notify func(string)) {
	own := "(" + instance + ") "
	prefix := own
	if colored {
		c := prefixColor(instance)
		c.EnableColor()
		prefix = c.Sprint("("+instance+")") + " "
	}
	// ReadSlice bounds memory: a line longer than the buffer is passed on
	// in pieces rather than held whole.
	br := bufio.NewReaderSize(r, 64*1024)
	logFailed := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			line := strings.TrimPrefix(strings.TrimRight(string(chunk), "\r\n"), own)
			out.writeLine(prefix + line + "\n")
			if notify != nil {
				notify(line)
			}
			t.add(line)
			if logFile != nil && !logFailed {
				if _, err := logFile.WriteString(line + "\n"); err != nil {
					logFailed = true
					out.writeLine(prefix + "warning: cannot write its log file (" + err.Error() + "); its lines go on here only\n")
				}
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}
