//go:build !unix

package capture

import (
	"errors"
	"os"
)

// appendLine appends line to path in one write.
func appendLine(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(line)
	return errors.Join(err, f.Close())
}

// withLock: without flock, records from one process are still whole
// (one write each); writers in several processes may interleave.
func withLock(_ *os.File, _ bool, fn func() error) error { return fn() }
