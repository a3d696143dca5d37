//go:build !unix

package flock

import (
	"context"
	"os"
)

// Lock only opens path where flock does not exist; NeMo Gym runs on
// Unix only.
func Lock(_ context.Context, path string, _ func()) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
}
