//go:build !unix

package capture

import "os"

// withLock: without flock, records from one process are still whole
// (one write each); writers in several processes may interleave.
func withLock(_ *os.File, _ bool, fn func() error) error { return fn() }
