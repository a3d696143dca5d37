// Package jsonl reads and writes the JSONL files of an evaluation the way
// its promises need: lines of any length read with their numbers and byte
// positions (so a bad one can be named, and a good one read again later
// without being held), and files written whole or not at all.
package jsonl

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf8"
)

// Reader reads a JSONL file a line at a time, whatever the line length (a
// graphwalks row holds a whole graph).
type Reader struct {
	r    *bufio.Reader
	Path string
	// Line is the current line's number, from 1.
	Line int
	// Start and Size locate the current line, newline included.
	Start int64
	Size  int
	buf   []byte
}

func NewReader(r io.Reader, path string) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 256<<10), Path: path}
}

// Next returns the next line, newline included (the last line may have
// none), valid until the next call; io.EOF after the last line.
func (r *Reader) Next() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.r.ReadSlice('\n')
		r.buf = append(r.buf, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("reading '%s': %w", r.Path, err)
		}
		if len(r.buf) == 0 {
			return nil, io.EOF
		}
		r.Line++
		r.Start += int64(r.Size)
		r.Size = len(r.buf)
		return r.buf, nil
	}
}

// Excerpt is the start of a bad line for an error message, quoted: it may
// hold anything.
func Excerpt(line []byte) string {
	head, cut := Clip(string(bytes.TrimRight(line, "\r\n")))
	if cut {
		return strconv.Quote(head) + "…"
	}
	return strconv.Quote(head)
}

// Clip returns the first 80 bytes of s or a little less, on a character
// boundary, and whether that cut anything off.
func Clip(s string) (string, bool) {
	const n = 80
	if len(s) <= n {
		return s, false
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], true
}

// WriteFileAtomic replaces path with what write produces, so that however
// the process ends the file is the old one or the whole new one, never a
// torn one: a temporary file beside it, synced, renamed, the directory
// synced.
func WriteFileAtomic(path string, write func(w *bufio.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := createTemp(dir, "."+filepath.Base(path)+".", ".tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	w := bufio.NewWriterSize(f, 256<<10)
	if err = write(w); err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	// The rename is durable once the directory is synced. Some file
	// systems refuse to sync a directory; the data itself is already safe.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// createTemp is os.CreateTemp with an ordinary file's mode: 0644 through the
// process umask (CreateTemp's 0600 would make every output private, and a
// chmod to 0644 would override a umask that asks for privacy).
func createTemp(dir, prefix, suffix string) (*os.File, error) {
	for range 100 {
		var random [8]byte
		if _, err := rand.Read(random[:]); err != nil {
			return nil, err
		}
		name := filepath.Join(dir, prefix+hex.EncodeToString(random[:])+suffix)
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("cannot create a temporary file in %s", dir)
}

// RemoveStaleTemps removes the temporary files WriteFileAtomic leaves
// beside path when the process is killed mid-write.
func RemoveStaleTemps(path string) {
	pattern := filepath.Join(filepath.Dir(path), "."+globEscape(filepath.Base(path))+".*.tmp")
	matches, _ := filepath.Glob(pattern)
	for _, m := range matches {
		os.Remove(m)
	}
}

// globEscape quotes the characters filepath.Match treats specially.
func globEscape(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		if r == '*' || r == '?' || r == '[' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// SpillFile is a scratch file in dir (named by pattern, as os.CreateTemp
// names it), unlinked at once where the system allows it, so that nothing
// is left behind however the process ends; it lives until closed.
func SpillFile(dir, pattern string) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	return f, nil
}

// FileSize is the size of the file at path, 0 when there is none: a
// resumable download's .part.
func FileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// ReadString is the file at path as a string, "" when it cannot be read:
// a download's .etag, a token file.
func ReadString(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}
