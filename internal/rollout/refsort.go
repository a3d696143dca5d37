package rollout

import (
	"encoding/binary"
	"fmt"

	"github.com/nemo-gym-go/gym/internal/extsort"
)

// refSorter puts rollout locations in (task, rollout) order, stably (equal
// keys keep the order they were added in), holding at most sortChunk of
// them and spilling sorted runs to a temporary file in its directory.
type refSorter = extsort.Sorter[rowRef]

// sortChunk is how many locations a refSorter holds (40 bytes each); a
// variable only so that tests can make the sorters spill.
var sortChunk = 1 << 16

func newRefSorter(dir string) *refSorter {
	return extsort.New(dir, ".sort-*.bin", sortChunk, compareRefs, extsort.Codec[rowRef]{Append: appendRef, Decode: decodeRef})
}

func compareRefs(a, b rowRef) int {
	switch {
	case less(a.k, b.k):
		return -1
	case less(b.k, a.k):
		return 1
	}
	return 0
}

// refRecord is a spilled location: task, rollout, file, offset, size
// (a line may pass 4 GiB).
const refRecord = 8 + 8 + 4 + 8 + 8

func appendRef(b []byte, r rowRef) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(r.k.task))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.k.rollout))
	b = binary.LittleEndian.AppendUint32(b, uint32(r.file))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.off))
	return binary.LittleEndian.AppendUint64(b, uint64(r.size))
}

func decodeRef(b []byte) (rowRef, error) {
	if len(b) != refRecord {
		return rowRef{}, fmt.Errorf("a sorted location is %d bytes, not %d", len(b), refRecord)
	}
	return rowRef{
		k:    key{int64(binary.LittleEndian.Uint64(b[0:])), int64(binary.LittleEndian.Uint64(b[8:]))},
		file: int(int32(binary.LittleEndian.Uint32(b[16:]))), // strippedFile too
		off:  int64(binary.LittleEndian.Uint64(b[20:])),
		size: int(binary.LittleEndian.Uint64(b[28:])),
	}, nil
}
