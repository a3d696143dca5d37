//go:build !linux

package server

// raiseFileLimit reports the limit as met: outside Linux the launcher's
// platforms leave file limits to the user (and Go raises them on Unix).
func raiseFileLimit(want uint64) (uint64, error) { return want, nil }

// openFileLimit reports the limit Serve would have raised to, for the same
// reason.
func openFileLimit() (uint64, error) { return wantedFileLimit, nil }
