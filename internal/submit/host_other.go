//go:build !linux

package submit

import "syscall"

// masterAttr: off Linux nothing ends the SSH master if gym is killed;
// Close ends it on every other path.
func masterAttr() *syscall.SysProcAttr { return nil }
