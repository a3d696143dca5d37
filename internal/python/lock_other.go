//go:build !unix

package python

import "context"

// lockFile is a no-op where flock does not exist; NeMo Gym runs on Unix only.
func lockFile(context.Context, string) (func(), bool, error) { return func() {}, false, nil }
