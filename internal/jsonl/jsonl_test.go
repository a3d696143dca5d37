package jsonl

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReaderLinesAndPositions(t *testing.T) {
	long := strings.Repeat("x", 600<<10) // longer than the read buffer
	input := "a\r\n\n" + long + "\nlast"
	r := NewReader(strings.NewReader(input), "f.jsonl")
	want := []string{"a\r\n", "\n", long + "\n", "last"}
	for i, w := range want {
		line, err := r.Next()
		if err != nil || string(line) != w {
			t.Fatalf("line %d: %.20q, %v; want %.20q", i+1, line, err, w)
		}
		if r.Line != i+1 || input[r.Start:r.Start+int64(r.Size)] != w {
			t.Fatalf("line %d: Line %d, Start %d, Size %d do not locate it", i+1, r.Line, r.Start, r.Size)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the last line: %v, want io.EOF", err)
	}
}

func TestExcerpt(t *testing.T) {
	if got := Excerpt([]byte("{\"a\":1}\n")); got != `"{\"a\":1}"` {
		t.Errorf("short: %s", got)
	}
	got := Excerpt([]byte(strings.Repeat("é", 100)))
	if !strings.HasSuffix(got, "…") || strings.Contains(got, `\x`) {
		t.Errorf("long: cut off a character or did not say it cut: %s", got)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if err := WriteFileAtomic(path, func(w *bufio.Writer) error { _, err := w.WriteString("new"); return err }); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o644 {
		t.Fatalf("written file: %v, %v; want mode 0644", info, err)
	}
	boom := errors.New("boom")
	if err := WriteFileAtomic(path, func(w *bufio.Writer) error { w.WriteString("half"); return boom }); err != boom {
		t.Fatalf("a failed write: %v", err)
	}
	data, _ := os.ReadFile(path)
	entries, _ := os.ReadDir(dir)
	if string(data) != "new" || len(entries) != 1 {
		t.Errorf("a failed write changed the file (%q) or left a temporary one (%d entries)", data, len(entries))
	}
}

// An atomically written file gets the mode any new file gets: 0644 through
// the process umask, so `umask 077` keeps outputs private.
func TestWriteFileAtomicHonoursTheUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "out.jsonl")
	if err := WriteFileAtomic(path, func(w *bufio.Writer) error { _, err := w.WriteString("{}\n"); return err }); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("mode %o under umask 077, want 600", mode)
	}
}

// A spill file is usable and already gone from its directory.
func TestSpillFile(t *testing.T) {
	dir := t.TempDir()
	f, err := SpillFile(dir, ".spill-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("x"); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%d entries left in the directory", len(entries))
	}
}
