package launcher

import "syscall"

// childSysProcAttr puts the child in a new process group, and has the
// kernel send it deathSignal should gym itself die without a chance to
// clean up.
func childSysProcAttr(deathSignal syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSignal}
}

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
const prSetChildSubreaper = 36

// becomeSubreaper makes orphaned descendants of our children re-parent to
// gym instead of init, so gym reaps them and knows when a group is empty
// even where PID 1 never reaps (containers).
func becomeSubreaper() error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
