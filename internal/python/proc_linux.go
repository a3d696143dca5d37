package python

import (
	"os/exec"
	"syscall"
	"time"
)

// contain runs cmd in a process group of its own that dies with gym and
// is killed whole on cancellation, so an installer and whatever it starts
// never outlive the setup.
func contain(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
}
