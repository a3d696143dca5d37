package rollout

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// skipString reads a string's remaining bytes after its opening quote,
// returning them when keep is set.
func (s *byteScanner) skipString(keep bool) ([]byte, error) {
	var b []byte
	escaped := false
	for {
		c, err := s.next()
		if err != nil {
			return nil, unexpected(err)
		}
		if keep {
			b = append(b, c)
		}
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			return b, nil
		}
	}
}

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
		for depth := 1; depth > 0; {
			c, err := s.next()
			if err != nil {
				return 0, 0, unexpected(err)
			}
			switch c {
			case '"':
				if _, err := s.skipString(false); err != nil {
					return 0, 0, err
				}
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
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
// Python's json.dumps(indent=...)) lays it out, one byte at a time, so a
// document of any size is indented in constant memory. Whitespace outside
// strings is dropped first; src must be valid JSON.
func indentStream(dst io.Writer, src io.Reader, indent string) error {
	r := bufio.NewReaderSize(src, 64<<10)
	w := bufio.NewWriterSize(dst, 64<<10)
	depth := 0
	newline := func() {
		w.WriteByte('\n')
		for range depth {
			w.WriteString(indent)
		}
	}
	nextSignificant := func() (byte, error) {
		for {
			c, err := r.ReadByte()
			if err != nil || !isSpace(c) {
				return c, err
			}
		}
	}
	for {
		c, err := nextSignificant()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch c {
		case '"':
			w.WriteByte(c)
			escaped := false
			for {
				b, err := r.ReadByte()
				if err != nil {
					return unexpected(err)
				}
				w.WriteByte(b)
				if escaped {
					escaped = false
				} else if b == '\\' {
					escaped = true
				} else if b == '"' {
					break
				}
			}
		case '{', '[':
			w.WriteByte(c)
			n, err := nextSignificant()
			if err != nil {
				return unexpected(err)
			}
			if n == '}' || n == ']' {
				w.WriteByte(n)
				continue
			}
			r.UnreadByte()
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			w.WriteByte(c)
		case ',':
			w.WriteByte(c)
			newline()
		case ':':
			w.WriteString(": ")
		default:
			w.WriteByte(c)
		}
	}
	return w.Flush()
}
