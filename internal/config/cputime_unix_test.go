//go:build unix

package config

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used. Unlike wall time it does
// not grow when other processes crowd the machine, so a budget on it does
// not fail at random on a busy one.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
