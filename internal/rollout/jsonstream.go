package rollout

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/nemo-gym-go/gym/internal/jsonl"
)

// topLevel locates the values of a JSON object's top-level keys in a
// stream, as byte ranges, without holding the values.
type topLevel struct {
	order []string
	at    map[string][2]int64
}

// byteScanner counts the bytes it has read.
type byteScanner struct {
	r   *bufio.Reader
	off int64
}

func (s *byteScanner) next() (byte, error) {
	c, err := s.r.ReadByte()
	if err == nil {
		s.off++
	}
	return c, err
}

func (s *byteScanner) skipSpace() (byte, error) {
	for {
		c, err := s.next()
		if err != nil || !isSpace(c) {
			return c, err
		}
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// endsScalar is whether c ends a number or literal: white space or a byte
// with a meaning of its own (an invalid document ends one there too).
func endsScalar(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', '[', ']', '{', '}', '"':
		return true
	}
	return false
}

// window is the input buffered ahead: at least a byte, unless it ended.
func (s *byteScanner) window() ([]byte, error) {
	if s.r.Buffered() == 0 {
		if _, err := s.r.Peek(1); err != nil {
			return nil, err
		}
	}
	return s.r.Peek(s.r.Buffered())
}

func (s *byteScanner) advance(n int) {
	s.r.Discard(n)
	s.off += int64(n)
}

// skipString reads a string's remaining bytes after its opening quote,
// returning them when keep is set. It jumps from quote or backslash to the
// next in what is buffered, rather than reading a byte at a time.
func (s *byteScanner) skipString(keep bool) ([]byte, error) {
	var kept []byte
	escaped := false
	for {
		b, err := s.window()
		if err != nil {
			return nil, unexpected(err)
		}
		for i := 0; i < len(b); {
			if escaped {
				escaped = false
				i++
				continue
			}
			j := stringStop(b[i:])
			if j < 0 {
				break
			}
			if i += j; b[i] == '\\' {
				escaped = true
				i++
				continue
			}
			if keep {
				kept = append(kept, b[:i+1]...)
			}
			s.advance(i + 1)
			return kept, nil
		}
		if keep {
			kept = append(kept, b...)
		}
		s.advance(len(b))
	}
}

// stringStop is the index of the first quote or backslash in b, or -1.
func stringStop(b []byte) int { return jsonl.IndexEither(b, '"', '\\') }

// skipValue reads the rest of a value whose first byte was first. It
// returns the offset just past the value and the first non-space byte after
// it (the delimiter).
func (s *byteScanner) skipValue(first byte) (int64, byte, error) {
	switch first {
	case '"':
		if _, err := s.skipString(false); err != nil {
			return 0, 0, err
		}
	case '{', '[':
		depth := 1
	container:
		for {
			b, err := s.window()
			if err != nil {
				return 0, 0, unexpected(err)
			}
			for i, c := range b {
				switch c {
				case '"':
					s.advance(i + 1)
					if _, err := s.skipString(false); err != nil {
						return 0, 0, err
					}
					continue container
				case '{', '[':
					depth++
				case '}', ']':
					if depth--; depth == 0 {
						s.advance(i + 1)
						break container
					}
				}
			}
			s.advance(len(b))
		}
	default: // a number, true, false or null ends at the next delimiter
		for {
			c, err := s.next()
			if err != nil {
				return 0, 0, unexpected(err)
			}
			if c == ',' || c == '}' || c == ']' {
				return s.off - 1, c, nil
			}
			if isSpace(c) {
				end := s.off - 1
				c, err := s.skipSpace()
				return end, c, unexpected(err)
			}
		}
	}
	end := s.off
	c, err := s.skipSpace()
	return end, c, unexpected(err)
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func scanTopLevel(r *bufio.Reader) (*topLevel, error) {
	s := &byteScanner{r: r}
	t := &topLevel{at: map[string][2]int64{}}
	c, err := s.skipSpace()
	if err != nil || c != '{' {
		return nil, fmt.Errorf("expected an object at byte %d", s.off)
	}
	c, err = s.skipSpace()
	if err != nil {
		return nil, unexpected(err)
	}
	if c == '}' {
		return t, nil
	}
	for {
		if c != '"' {
			return nil, fmt.Errorf("expected a key at byte %d", s.off)
		}
		raw, err := s.skipString(true)
		if err != nil {
			return nil, err
		}
		var name string
		if err := json.Unmarshal(append([]byte{'"'}, raw...), &name); err != nil {
			return nil, fmt.Errorf("bad key at byte %d: %w", s.off, err)
		}
		if c, err = s.skipSpace(); err != nil || c != ':' {
			return nil, fmt.Errorf("expected ':' at byte %d", s.off)
		}
		if c, err = s.skipSpace(); err != nil {
			return nil, unexpected(err)
		}
		start := s.off - 1
		end, delim, err := s.skipValue(c)
		if err != nil {
			return nil, err
		}
		c = delim
		if _, dup := t.at[name]; !dup {
			t.order = append(t.order, name)
		}
		t.at[name] = [2]int64{start, end}
		switch c {
		case '}':
			return t, nil
		case ',':
			if c, err = s.skipSpace(); err != nil {
				return nil, unexpected(err)
			}
		default:
			return nil, fmt.Errorf("expected ',' or '}' at byte %d", s.off)
		}
	}
}

// indentStream copies JSON from src to dst indented as json.Indent (and
// Python's json.dumps(indent=...)) lays it out, a buffer at a time, so a
// document of any size is indented in constant memory. Whitespace outside
// strings is dropped first; src must be valid JSON.
func indentStream(dst io.Writer, src io.Reader, indent string) error {
	w := bufio.NewWriterSize(dst, 64<<10)
	buf := make([]byte, 64<<10)
	depth := 0
	// lines holds a newline and the indents of the deepest line so far;
	// each line's start is a prefix of it, written in one call.
	lines := []byte{'\n'}
	newline := func() {
		n := 1 + max(depth, 0)*len(indent)
		for len(lines) < n {
			lines = append(lines, indent...)
		}
		w.Write(lines[:n])
	}
	// inString and escaped say where the last buffer ended; opened, that
	// it ended after a '{' or '[' (which closes at once or opens a line).
	inString, escaped, opened := false, false, false
	for {
		n, err := src.Read(buf)
		chunk := buf[:n]
		for i := 0; i < len(chunk); {
			if inString {
				if escaped {
					w.WriteByte(chunk[i])
					escaped = false
					i++
					continue
				}
				j := stringStop(chunk[i:])
				if j < 0 {
					w.Write(chunk[i:])
					break
				}
				w.Write(chunk[i : i+j+1])
				if chunk[i+j] == '\\' {
					escaped = true
				} else {
					inString = false
				}
				i += j + 1
				continue
			}
			c := chunk[i]
			i++
			if isSpace(c) {
				continue
			}
			if opened {
				opened = false
				if c == '}' || c == ']' {
					w.WriteByte(c)
					continue
				}
				depth++
				newline()
			}
			switch c {
			case '"':
				w.WriteByte(c)
				inString = true
			case '{', '[':
				w.WriteByte(c)
				opened = true
			case '}', ']':
				depth--
				newline()
				w.WriteByte(c)
			case ',':
				w.WriteByte(c)
				newline()
			case ':':
				w.WriteString(": ")
			default: // a number or a literal, up to the next byte with a meaning of its own
				j := i
				for j < len(chunk) && !endsScalar(chunk[j]) {
					j++
				}
				w.Write(chunk[i-1 : j])
				i = j
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if inString || opened {
		return io.ErrUnexpectedEOF
	}
	return w.Flush()
}
