package jsonl

import (
	"unsafe"

	"github.com/tidwall/gjson"
)

// ParseInPlace is gjson.ParseBytes without its copy of b: the result's
// strings are b's own bytes, so b must not change while they are in use.
// Bodies and rows are read far more often than they are kept, and
// gjson.ParseBytes and gjson.GetBytes copy what they read.
func ParseInPlace(b []byte) gjson.Result {
	return gjson.Parse(unsafe.String(unsafe.SliceData(b), len(b)))
}

// GetInPlace is gjson.GetBytes without its copy of the value it finds, on
// the same terms as ParseInPlace.
func GetInPlace(b []byte, path string) gjson.Result {
	return gjson.Get(unsafe.String(unsafe.SliceData(b), len(b)), path)
}
