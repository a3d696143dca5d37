//go:build !linux

package launcher

import "syscall"

func childSysProcAttr(syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// becomeSubreaper is Linux-only; elsewhere orphans go to init, which reaps
// them, and groupAlive sees them go.
func becomeSubreaper() error { return nil }
