package rollout

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"io"
	"os"
	"slices"
)

// refSorter puts rollout locations in (task, rollout) order, stably (equal
// keys keep the order they were added in), holding at most chunk of them:
// each full chunk is sorted and spilled to a temporary file in dir as a
// run, and the runs are merged as they are read back. A run of any size
// sorts in the memory of one chunk.
type refSorter struct {
	dir   string
	chunk int
	refs  []rowRef
	spill *os.File
	w     *bufio.Writer
	runs  []int64 // where each run ends in spill
	n     int
}

// sortChunk is how many locations a refSorter holds (40 bytes each); a
// variable only so that tests can make the sorters spill.
var sortChunk = 1 << 16

// refRecord is a spilled location: task, rollout, file, offset, size.
const refRecord = 8 + 8 + 4 + 8 + 4

func newRefSorter(dir string) *refSorter { return &refSorter{dir: dir, chunk: sortChunk} }

func (s *refSorter) add(r rowRef) error {
	s.refs = append(s.refs, r)
	s.n++
	if len(s.refs) < s.chunk {
		return nil
	}
	return s.flush()
}

// flush sorts the chunk held and writes it out as a run.
func (s *refSorter) flush() error {
	if len(s.refs) == 0 {
		return nil
	}
	if s.spill == nil {
		f, err := jsonl.SpillFile(s.dir, ".sort-*.bin")
		if err != nil {
			return err
		}
		s.spill, s.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	sortRefs(s.refs)
	var rec [refRecord]byte
	for _, r := range s.refs {
		binary.LittleEndian.PutUint64(rec[0:], uint64(r.k.task))
		binary.LittleEndian.PutUint64(rec[8:], uint64(r.k.rollout))
		binary.LittleEndian.PutUint32(rec[16:], uint32(r.file))
		binary.LittleEndian.PutUint64(rec[20:], uint64(r.off))
		binary.LittleEndian.PutUint32(rec[28:], uint32(r.size))
		if _, err := s.w.Write(rec[:]); err != nil {
			return err
		}
	}
	var end int64
	if len(s.runs) > 0 {
		end = s.runs[len(s.runs)-1]
	}
	s.runs = append(s.runs, end+int64(len(s.refs))*refRecord)
	s.refs = s.refs[:0]
	return nil
}

func sortRefs(refs []rowRef) {
	slices.SortStableFunc(refs, func(a, b rowRef) int {
		switch {
		case less(a.k, b.k):
			return -1
		case less(b.k, a.k):
			return 1
		}
		return 0
	})
}

// finish ends the adding: the locations held are sorted, or spilled as the
// last run.
func (s *refSorter) finish() error {
	if s.spill == nil {
		sortRefs(s.refs)
		return nil
	}
	if err := s.flush(); err != nil {
		return err
	}
	return s.w.Flush()
}

// each passes every location in order, after finish. It is safe for
// concurrent use.
func (s *refSorter) each(fn func(rowRef) error) error {
	if s.spill == nil {
		for _, r := range s.refs {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	h := make(runHeap, 0, len(s.runs))
	var start int64
	for i, end := range s.runs {
		r := &run{index: i, r: bufio.NewReaderSize(io.NewSectionReader(s.spill, start, end-start), 16<<10)}
		start = end
		ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			h = append(h, r)
		}
	}
	heap.Init(&h)
	for len(h) > 0 {
		r := h[0]
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

func (s *refSorter) close() {
	if s.spill != nil {
		s.spill.Close()
		os.Remove(s.spill.Name())
	}
}

// run is one sorted run being read back, and its next location.
type run struct {
	index int
	r     *bufio.Reader
	head  rowRef
	rec   [refRecord]byte
}

func (r *run) next() (bool, error) {
	if _, err := io.ReadFull(r.r, r.rec[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, err
	}
	b := r.rec[:]
	r.head = rowRef{
		k:    key{int64(binary.LittleEndian.Uint64(b[0:])), int64(binary.LittleEndian.Uint64(b[8:]))},
		file: int(binary.LittleEndian.Uint32(b[16:])),
		off:  int64(binary.LittleEndian.Uint64(b[20:])),
		size: int(binary.LittleEndian.Uint32(b[28:])),
	}
	return true, nil
}

// runHeap orders the runs by their next location; of equal keys, the
// earlier run's comes first, which keeps the sort stable.
type runHeap []*run

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.head.k != b.head.k {
		return less(a.head.k, b.head.k)
	}
	return a.index < b.index
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*run)) }
func (h *runHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	*h = old[:len(old)-1]
	return r
}
