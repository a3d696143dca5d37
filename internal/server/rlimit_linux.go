package server

import "syscall"

// raiseFileLimit lifts the soft RLIMIT_NOFILE to want, or to the hard limit
// when that is lower, as NeMo Gym does before serving: every concurrent
// rollout holds sockets. Go's runtime usually has raised it to the hard
// limit already; this makes the guarantee explicit and reports the result.
func raiseFileLimit(want uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	target := min(want, lim.Max)
	if lim.Cur >= target {
		return lim.Cur, nil
	}
	lim.Cur = target
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return target, nil
}

// openFileLimit is the soft RLIMIT_NOFILE, read without changing it: a
// process that merely hosts a server (the launcher) keeps its limits.
func openFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, nil
}
