//go:build !unix

package config

import "time"

var processStart = time.Now()

// cpuTime falls back to wall time where getrusage is missing.
func cpuTime() time.Duration { return time.Since(processStart) }
