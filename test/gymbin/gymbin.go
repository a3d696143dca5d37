// Package gymbin builds the gym binary the integration suites run: static,
// so it also runs inside the debootstrapped NeMo Gym root.
package gymbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Build builds ./cmd/gym of this repository into dir and returns its path.
func Build(dir string) (string, error) {
	_, here, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(here), "..", "..")
	gym := filepath.Join(dir, "gym")
	cmd := exec.Command("go", "build", "-o", gym, "./cmd/gym")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/gym: %v\n%s", err, out)
	}
	return gym, nil
}
