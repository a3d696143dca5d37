// Package extsort sorts more values than should be held in memory: a
// Sorter holds a chunk of them, sorts each full chunk and spills it to an
// unlinked scratch file as a run, and merges the runs as they are read
// back. The sort is stable: values that compare equal come out in the
// order they were added.
package extsort

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/nemo-gym-go/gym/internal/jsonl"
)

// Codec writes a value into a run and reads it back. Decode is given a
// buffer that is reused: what it keeps, it copies.
type Codec[T any] struct {
	Append func(b []byte, v T) []byte
	Decode func(b []byte) (T, error)
}

// Sorter puts values in Compare's order, stably, holding at most Chunk of
// them at a time.
type Sorter[T any] struct {
	dir     string
	pattern string
	chunk   int
	compare func(a, b T) int
	codec   Codec[T]
	held    []T
	spill   *os.File
	w       *bufio.Writer
	runs    []int64 // where each run ends in spill
	buf     []byte
	n       int
	done    bool

	size     func(T) int // bytes a value holds, for budget
	budget   int
	heldSize int
	err      error // the first failure to spill: every later call returns it
}

// New is a Sorter that spills into dir (named by pattern, as
// os.CreateTemp's) once more than chunk values are added.
func New[T any](dir, pattern string, chunk int, compare func(a, b T) int, codec Codec[T]) *Sorter[T] {
	return &Sorter[T]{dir: dir, pattern: pattern, chunk: max(chunk, 1), compare: compare, codec: codec}
}

// Budget also spills a chunk once the values held take budget bytes, as
// size counts them: values whose size varies widely are bounded by
// memory, not only by number.
func (s *Sorter[T]) Budget(budget int, size func(T) int) *Sorter[T] {
	s.budget, s.size = budget, size
	return s
}

// Len is how many values were added.
func (s *Sorter[T]) Len() int { return s.n }

// Add adds a value; it may not be called after Finish.
func (s *Sorter[T]) Add(v T) error {
	if s.err != nil {
		return s.err
	}
	if s.done {
		return errors.New("extsort: Add after Finish")
	}
	if len(s.held) == cap(s.held) {
		// Doubled up to the chunk: append grows a long slice by a quarter,
		// and each growth copies all that is held (up to 10.5 MiB for the
		// health check's chunk of records).
		held := make([]T, len(s.held), min(max(2*len(s.held), 16), s.chunk))
		copy(held, s.held)
		s.held = held
	}
	s.held = append(s.held, v)
	s.n++
	if s.size != nil {
		s.heldSize += s.size(v)
	}
	if len(s.held) < s.chunk && (s.size == nil || s.heldSize < s.budget) {
		return nil
	}
	s.err = s.flush()
	return s.err
}

// flush sorts the chunk held and writes it out as a run: each value is
// its encoded length, as a uvarint, and its encoding.
func (s *Sorter[T]) flush() error {
	if len(s.held) == 0 {
		return nil
	}
	if s.spill == nil {
		f, err := jsonl.SpillFile(s.dir, s.pattern)
		if err != nil {
			return err
		}
		s.spill, s.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	slices.SortStableFunc(s.held, s.compare)
	var size int64
	for _, v := range s.held {
		s.buf = s.codec.Append(s.buf[:0], v)
		var prefix [binary.MaxVarintLen64]byte
		n := binary.PutUvarint(prefix[:], uint64(len(s.buf)))
		if _, err := s.w.Write(prefix[:n]); err != nil {
			return err
		}
		if _, err := s.w.Write(s.buf); err != nil {
			return err
		}
		size += int64(n + len(s.buf))
	}
	var end int64
	if len(s.runs) > 0 {
		end = s.runs[len(s.runs)-1]
	}
	s.runs = append(s.runs, end+size)
	clear(s.held)
	s.held, s.heldSize = s.held[:0], 0
	return nil
}

// Finish ends the adding: the values held are sorted, or spilled as the
// last run. After it, Each is safe for concurrent use.
func (s *Sorter[T]) Finish() error {
	if s.done || s.err != nil {
		return s.err
	}
	s.done = true
	if s.spill == nil {
		slices.SortStableFunc(s.held, s.compare)
		return nil
	}
	if s.err = s.flush(); s.err == nil {
		s.err = s.w.Flush()
	}
	return s.err
}

// Each passes every value in order, calling Finish first. It may be
// called again to read the values once more.
func (s *Sorter[T]) Each(fn func(T) error) error {
	if err := s.Finish(); err != nil {
		return err
	}
	if s.spill == nil {
		for _, v := range s.held {
			if err := fn(v); err != nil {
				return err
			}
		}
		return nil
	}
	h := runHeap[T]{compare: s.compare}
	var start int64
	for i, end := range s.runs {
		r := &run[T]{index: i, r: bufio.NewReaderSize(io.NewSectionReader(s.spill, start, end-start), 16<<10), decode: s.codec.Decode}
		start = end
		ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			h.runs = append(h.runs, r)
		}
	}
	heap.Init(&h)
	for len(h.runs) > 0 {
		r := h.runs[0]
		if err := fn(r.head); err != nil {
			return err
		}
		ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return nil
}

// Close releases the scratch file.
func (s *Sorter[T]) Close() {
	if s.spill != nil {
		s.spill.Close()
		s.spill = nil
	}
	s.held = nil
}

// run is one sorted run being read back, and its next value.
type run[T any] struct {
	index  int
	r      *bufio.Reader
	head   T
	buf    []byte
	decode func([]byte) (T, error)
}

func (r *run[T]) next() (bool, error) {
	size, err := binary.ReadUvarint(r.r)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading a sorted run back: %w", err)
	}
	if uint64(cap(r.buf)) < size {
		r.buf = make([]byte, size)
	}
	r.buf = r.buf[:size]
	if _, err := io.ReadFull(r.r, r.buf); err != nil {
		return false, fmt.Errorf("reading a sorted run back: %w", err)
	}
	r.head, err = r.decode(r.buf)
	return err == nil, err
}

// runHeap orders the runs by their next value; of equal values, the
// earlier run's comes first, which keeps the sort stable.
type runHeap[T any] struct {
	runs    []*run[T]
	compare func(a, b T) int
}

func (h *runHeap[T]) Len() int { return len(h.runs) }
func (h *runHeap[T]) Less(i, j int) bool {
	a, b := h.runs[i], h.runs[j]
	if c := h.compare(a.head, b.head); c != 0 {
		return c < 0
	}
	return a.index < b.index
}
func (h *runHeap[T]) Swap(i, j int) { h.runs[i], h.runs[j] = h.runs[j], h.runs[i] }
func (h *runHeap[T]) Push(x any)    { h.runs = append(h.runs, x.(*run[T])) }
func (h *runHeap[T]) Pop() any {
	r := h.runs[len(h.runs)-1]
	h.runs = h.runs[:len(h.runs)-1]
	return r
}
