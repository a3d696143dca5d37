//go:build !unix

package python

import (
	"context"
	"os"
)

// lockFile only opens path where flock does not exist; NeMo Gym runs on
// Unix only.
func lockFile(_ context.Context, path string, _ func()) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
}
