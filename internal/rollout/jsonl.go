package rollout

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/nemo-gym-go/gym/internal/jsonl"
)

// InputError is bad input data: a file that is missing or a line that is
// not what it must be. Where says which file (and line), so the user can
// go and fix it.
type InputError struct {
	Path string
	Line int // 1-based; 0 when the error is about the whole file
	Msg  string
}

func (e *InputError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// lineReader is a JSONL reader whose errors are InputErrors at its line.
type lineReader struct{ *jsonl.Reader }

func newLineReader(r io.Reader, path string) *lineReader {
	return &lineReader{jsonl.NewReader(r, path)}
}

// each calls fn with every line, its newline included (the last line may
// have none), until the end or fn's error.
func (lr *lineReader) each(fn func(line []byte) error) error {
	for {
		line, err := lr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(line); err != nil {
			return err
		}
	}
}

func (lr *lineReader) errorf(format string, args ...any) *InputError {
	return &InputError{Path: lr.Path, Line: lr.Line, Msg: fmt.Sprintf(format, args...)}
}

// appender appends whole lines to a file. Each line goes to the kernel in
// a single write on an O_APPEND descriptor, so a process killed at any
// instant leaves at worst one torn last line, which repairTail removes
// before the file is read again. Data reaches the disk every syncEvery and
// on Close, so even a machine crash loses at most that window.
type appender struct {
	mu      sync.Mutex
	f       *os.File
	buf     []byte
	dirty   bool
	err     error
	stop    chan struct{}
	stopped chan struct{}
	// durable run once the lines written before them are on disk.
	durable []func()
}

const syncEvery = time.Second

func openAppender(path string) (*appender, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	a := &appender{f: f, stop: make(chan struct{}), stopped: make(chan struct{})}
	go a.syncLoop()
	return a, nil
}

func (a *appender) syncLoop() {
	defer close(a.stopped)
	t := time.NewTicker(syncEvery)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
			a.mu.Lock()
			then := a.syncLocked()
			a.mu.Unlock()
			runAll(then)
		}
	}
}

// syncLocked syncs what was written and hands back what waited for it;
// after a failed sync nothing is run.
func (a *appender) syncLocked() []func() {
	if a.dirty && a.err == nil {
		a.err = a.f.Sync()
		a.dirty = false
	}
	then := a.durable
	a.durable = nil
	if a.err != nil {
		return nil
	}
	return then
}

func runAll(fns []func()) {
	for _, fn := range fns {
		fn()
	}
}

// writeLine appends line (which must not contain a newline) and a newline.
func (a *appender) writeLine(line []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	a.buf = append(append(a.buf[:0], line...), '\n')
	if _, err := a.f.Write(a.buf); err != nil {
		a.err = fmt.Errorf("writing %s: %w", a.f.Name(), err)
		return a.err
	}
	a.dirty = true
	return nil
}

// writeLineThen is writeLine, with then run once the line is on disk (at
// the next sync, with the others that wait for it).
func (a *appender) writeLineThen(line []byte, then func()) error {
	if err := a.writeLine(line); err != nil {
		return err
	}
	a.mu.Lock()
	a.durable = append(a.durable, then)
	a.mu.Unlock()
	return nil
}

func (a *appender) Close() error {
	close(a.stop)
	<-a.stopped
	a.mu.Lock()
	then := a.syncLocked()
	err := errors.Join(a.err, a.f.Close())
	a.mu.Unlock()
	runAll(then)
	return err
}

// repairTail cuts a torn last line (one without its newline, left by a
// process killed mid-write) off the file, and reports how many bytes went.
// A missing file is left missing.
func repairTail(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := info.Size()
	keep := size
	buf := make([]byte, 64<<10)
	for keep > 0 {
		n := int64(len(buf))
		if keep < n {
			n = keep
		}
		if _, err := f.ReadAt(buf[:n], keep-n); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			keep = keep - n + int64(i) + 1
			break
		}
		keep -= n
	}
	if keep == size {
		return 0, nil
	}
	if err := f.Truncate(keep); err != nil {
		return 0, err
	}
	return size - keep, f.Sync()
}
