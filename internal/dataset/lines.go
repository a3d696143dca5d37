// Package dataset is gym's `dataset collate` and `dataset render`: NeMo
// Gym's data preparation (train_data_utils.TrainDataProcessor) and prompt
// materialization (prompt.materialize_prompts), writing the files NeMo Gym
// writes, byte for byte, without Python.
package dataset

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/nemo-gym-go/gym/internal/pyjson"
	"github.com/nemo-gym-go/gym/internal/rollout"
)

// lineReader yields a text file's lines as Python's `for line in open(p)`
// does: \n, \r\n and a lone \r each end a line (universal newlines), and
// the text must be UTF-8.
type lineReader struct {
	path string
	r    *bufio.Reader
	line int
	buf  []byte
	// pending is what is left of the last read after a lone \r.
	pending []byte
}

func openLines(path string) (*lineReader, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	return &lineReader{path: path, r: bufio.NewReaderSize(f, 1<<16)}, f, nil
}

// next returns the next line without its ending, or io.EOF. The line is
// valid until the next call.
func (lr *lineReader) next() ([]byte, error) {
	if lr.pending == nil {
		chunk, err := lr.r.ReadSlice('\n')
		for err == bufio.ErrBufferFull {
			lr.buf = append(lr.buf[:0], chunk...)
			for err == bufio.ErrBufferFull {
				chunk, err = lr.r.ReadSlice('\n')
				lr.buf = append(lr.buf, chunk...)
			}
			chunk = lr.buf
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		if len(chunk) == 0 {
			return nil, io.EOF
		}
		lr.pending = chunk
	}
	line := lr.pending
	lr.pending = nil
	end := len(line)
	if end > 0 && line[end-1] == '\n' {
		end--
	}
	if k := bytes.IndexByte(line[:end], '\r'); k >= 0 {
		// A lone \r ends a line too; what follows it is the next one.
		rest := line[k+1:]
		if k+1 == end && end < len(line) {
			rest = nil // \r\n
		}
		if len(rest) > 0 {
			lr.pending = rest
		}
		end = k
	}
	lr.line++
	if !utf8.Valid(line[:end]) {
		return nil, lr.errorf("not UTF-8 text (Python's reading of the file fails here)")
	}
	return line[:end], nil
}

func (lr *lineReader) errorf(format string, args ...any) error {
	return &rollout.InputError{Path: lr.path, Line: lr.line, Msg: fmt.Sprintf(format, args...)}
}

// loadRow is json.loads(line): any JSON value, as Python builds it.
func (lr *lineReader) loadRow(line []byte) (any, error) {
	v, err := pyjson.Loads(line)
	if err != nil {
		return nil, lr.errorf("not a JSON value: %v", err)
	}
	return v, nil
}
