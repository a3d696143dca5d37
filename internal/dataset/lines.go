// Package dataset is gym's `dataset collate` and `dataset render`: NeMo
// Gym's data preparation (train_data_utils.TrainDataProcessor) and prompt
// materialization (prompt.materialize_prompts), writing the files NeMo Gym
// writes, byte for byte, without Python.
package dataset

import (
	"bufio"
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
}

func openLines(path string) (*lineReader, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	return &lineReader{path: path, r: bufio.NewReaderSize(f, 1<<16)}, f, nil
}

// next returns the next line without its ending, or io.EOF.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	for {
		c, err := lr.r.ReadByte()
		if err == io.EOF {
			if len(lr.buf) == 0 {
				return nil, io.EOF
			}
			break
		}
		if err != nil {
			return nil, err
		}
		if c == '\n' {
			break
		}
		if c == '\r' {
			if b, err := lr.r.Peek(1); err == nil && b[0] == '\n' {
				lr.r.ReadByte()
			}
			break
		}
		lr.buf = append(lr.buf, c)
	}
	lr.line++
	if !utf8.Valid(lr.buf) {
		return nil, lr.errorf("not UTF-8 text (Python's reading of the file fails here)")
	}
	return lr.buf, nil
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
