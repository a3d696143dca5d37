//go:build !linux

package python

import (
	"os/exec"
	"time"
)

// contain bounds how long a cancelled command's output may keep it alive;
// process groups and death signals are Linux-only here.
func contain(cmd *exec.Cmd) { cmd.WaitDelay = time.Second }
